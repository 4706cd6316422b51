package a2atools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
)

// v03 speaks A2A 0.3 (message/send, message/stream) through a2a-go's
// client.
type v03 struct {
	client *a2aclient.Client
	max    int // the bound on the text of an answer; -1 for none
}

func newV03(ctx context.Context, u string, client *http.Client, max int) (*v03, error) {
	c, err := a2aclient.NewFromEndpoints(ctx, []a2a.AgentInterface{{URL: u, Transport: a2a.TransportProtocolJSONRPC}},
		a2aclient.WithJSONRPCTransport(client))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidCard, err)
	}
	return &v03{client: c, max: max}, nil
}

// send implements remote.
func (c *v03) send(ctx context.Context, msg *outgoing, stream bool, on func(step)) (*outcome, error) {
	m := &a2a.Message{ID: msg.id, ContextID: msg.contextID, TaskID: a2a.TaskID(msg.taskID), Role: a2a.MessageRoleUser,
		Parts: a2a.ContentParts{a2a.TextPart{Text: msg.text}}}
	params := &a2a.MessageSendParams{Message: m}
	g := &gather{max: c.max}
	ctx, tripped := withTrip(ctx)
	fail := func(err error) error {
		if tripped.Load() && !errors.Is(err, ErrMessageTooLarge) {
			return fmt.Errorf("%w: a message from the agent exceeds MaxMessageBytes (%d bytes)", ErrMessageTooLarge, c.max)
		}
		return v03Error(err)
	}
	if !stream {
		res, err := c.client.SendMessage(ctx, params)
		if err != nil {
			return nil, fail(err)
		}
		if err := c.apply(res, g, nil); err != nil {
			return nil, err
		}
		return g.result()
	}
	for ev, err := range c.client.SendStreamingMessage(ctx, params) {
		if err != nil {
			return nil, fail(err)
		}
		if err := c.apply(ev, g, on); err != nil {
			return nil, err
		}
		if g.err != nil {
			return nil, g.err
		}
	}
	return g.result()
}

// apply applies an event (or a send's result) to g, telling on of it.
func (c *v03) apply(ev a2a.Event, g *gather, on func(step)) error {
	tell := func(s step) {
		if on != nil {
			on(s)
		}
	}
	switch e := ev.(type) {
	case *a2a.Task:
		for _, a := range e.Artifacts {
			if a != nil {
				g.artifact(e.ContextID, string(e.ID), string(a.ID), v03Text(a.Parts), false)
			}
		}
		g.status(e.ContextID, string(e.ID), string(e.Status.State), v03MessageText(e.Status.Message))
		tell(step{contextID: e.ContextID, taskID: string(e.ID)})
	case *a2a.Message:
		text := v03Text(e.Parts)
		g.message(e.ContextID, string(e.TaskID), text)
		tell(step{kind: "Stream", text: text, contextID: e.ContextID, taskID: string(e.TaskID)})
	case *a2a.TaskStatusUpdateEvent:
		st, text := string(e.Status.State), v03MessageText(e.Status.Message)
		g.status(e.ContextID, string(e.TaskID), st, text)
		tell(step{kind: "Status", text: statusText(st, text), id: string(e.TaskID), contextID: e.ContextID, taskID: string(e.TaskID)})
	case *a2a.TaskArtifactUpdateEvent:
		if e.Artifact == nil {
			return fmt.Errorf("%w: an artifact update without an artifact", ErrProtocol)
		}
		text := v03Text(e.Artifact.Parts)
		g.artifact(e.ContextID, string(e.TaskID), string(e.Artifact.ID), text, e.Append)
		tell(step{kind: "Artifact", text: text, id: string(e.Artifact.ID), contextID: e.ContextID, taskID: string(e.TaskID)})
	default:
		return fmt.Errorf("%w: an event of type %T", ErrProtocol, ev)
	}
	return nil
}

// cancel implements remote: tasks/cancel.
func (c *v03) cancel(ctx context.Context, taskID string) error {
	if _, err := c.client.CancelTask(ctx, &a2a.TaskIDParams{ID: a2a.TaskID(taskID)}); err != nil {
		return v03Error(err)
	}
	return nil
}

func (c *v03) close() { _ = c.client.Destroy() }

// v03Error classifies an error of a2a-go's client: the connection's
// (ErrUnavailable), the bound's (ErrMessageTooLarge), the deadline's, or
// an error the agent answered with.
func v03Error(err error) error {
	var ue *url.Error
	switch {
	case errors.Is(err, ErrMessageTooLarge), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &ue), strings.Contains(err.Error(), "unexpected HTTP status"):
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	var ae *a2a.Error
	if errors.As(err, &ae) {
		return &RemoteError{Message: ae.Error()}
	}
	return &RemoteError{Message: err.Error()}
}

func v03Text(parts a2a.ContentParts) string {
	var b strings.Builder
	for _, p := range parts {
		switch p := p.(type) {
		case a2a.TextPart:
			b.WriteString(p.Text)
		case *a2a.TextPart:
			b.WriteString(p.Text)
		case a2a.DataPart:
			if raw, err := json.Marshal(p.Data); err == nil {
				b.Write(raw)
			}
		case *a2a.DataPart:
			if raw, err := json.Marshal(p.Data); err == nil {
				b.Write(raw)
			}
		case a2a.FilePart:
			b.WriteString(fileText(p.File))
		case *a2a.FilePart:
			b.WriteString(fileText(p.File))
		}
	}
	return b.String()
}

func fileText(f a2a.FilePartContent) string {
	switch f := f.(type) {
	case a2a.FileURI:
		return fmt.Sprintf("[file %s %s]", f.MimeType, f.URI)
	case a2a.FileBytes:
		return fmt.Sprintf("[file %s %s, %d bytes]", f.Name, f.MimeType, len(f.Bytes)*3/4)
	}
	return "[file]"
}

func v03MessageText(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	return v03Text(m.Parts)
}
