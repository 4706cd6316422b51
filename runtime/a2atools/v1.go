package a2atools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
)

// v1 is this package's client of A2A 1.0 over JSON-RPC: SendMessage and
// SendStreamingMessage, proto-JSON, with the A2A-Version header.
type v1 struct {
	url    string
	client *http.Client // bounded
	max    int          // the bound on the text of an answer; -1 for none
	ids    atomic.Int64
}

// v1Part is a part of a message or an artifact in 1.0's proto-JSON.
type v1Part struct {
	Text      *string         `json:"text,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	URL       string          `json:"url,omitempty"`
	Raw       string          `json:"raw,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
}

type v1Message struct {
	MessageID string   `json:"messageId"`
	ContextID string   `json:"contextId,omitempty"`
	TaskID    string   `json:"taskId,omitempty"`
	Role      string   `json:"role"`
	Parts     []v1Part `json:"parts"`
}

type v1Status struct {
	State   string     `json:"state"`
	Message *v1Message `json:"message,omitempty"`
}

type v1Artifact struct {
	ArtifactID string   `json:"artifactId"`
	Name       string   `json:"name,omitempty"`
	Parts      []v1Part `json:"parts"`
}

type v1Task struct {
	ID        string       `json:"id"`
	ContextID string       `json:"contextId"`
	Status    *v1Status    `json:"status"`
	Artifacts []v1Artifact `json:"artifacts"`
}

// v1Result is the result of a send, or an event of a stream.
type v1Result struct {
	Task         *v1Task    `json:"task"`
	Message      *v1Message `json:"message"`
	StatusUpdate *struct {
		TaskID    string    `json:"taskId"`
		ContextID string    `json:"contextId"`
		Status    *v1Status `json:"status"`
	} `json:"statusUpdate"`
	ArtifactUpdate *struct {
		TaskID    string      `json:"taskId"`
		ContextID string      `json:"contextId"`
		Artifact  *v1Artifact `json:"artifact"`
		Append    bool        `json:"append"`
	} `json:"artifactUpdate"`
}

type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *RemoteError    `json:"error"`
}

// send implements remote.
func (c *v1) send(ctx context.Context, msg *outgoing, stream bool, on func(step)) (*outcome, error) {
	method := "SendMessage"
	if stream {
		method = "SendStreamingMessage"
	}
	text := msg.text
	params := map[string]any{"message": v1Message{MessageID: msg.id, ContextID: msg.contextID, TaskID: msg.taskID,
		Role: "ROLE_USER", Parts: []v1Part{{Text: &text}}}}
	id, resp, err := c.post(ctx, method, params, stream)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	g := &gather{max: c.max}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "text/event-stream" {
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, transportError(err)
		}
		if err := c.apply(raw, id, g, nil); err != nil {
			return nil, err
		}
		return g.result()
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<30) // the transport bounds an event
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if data.Len() > 0 {
				if err := c.apply(data.Bytes(), id, g, on); err != nil {
					return nil, err
				}
				if g.err != nil {
					return nil, g.err
				}
				data.Reset()
			}
			continue
		}
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(d, []byte(" ")))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, transportError(err)
	}
	if data.Len() > 0 {
		if err := c.apply(data.Bytes(), id, g, on); err != nil {
			return nil, err
		}
	}
	if g.out.state == "" && g.out.taskID != "" {
		return nil, fmt.Errorf("%w: the stream ended before the task had a status", ErrUnavailable)
	}
	return g.result()
}

// post posts a JSON-RPC request and returns its id and the response,
// whose status is a success.
func (c *v1) post(ctx context.Context, method string, params any, stream bool) (int64, *http.Response, error) {
	id := c.ids.Add(1)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", Version1)
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil, transportError(err)
	}
	if resp.StatusCode/100 != 2 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		return 0, nil, fmt.Errorf("%w: HTTP status %s", ErrUnavailable, resp.Status)
	}
	return id, resp, nil
}

// cancel implements remote: CancelTask.
func (c *v1) cancel(ctx context.Context, taskID string) error {
	id, resp, err := c.post(ctx, "CancelTask", map[string]string{"id": taskID}, false)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return transportError(err)
	}
	var r rpcResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("%w: the agent's answer is not JSON-RPC: %w", ErrProtocol, err)
	}
	if !sameID(r.ID, id, r.Error != nil) {
		return fmt.Errorf("%w: the agent answered request %s, not %d", ErrProtocol, r.ID, id)
	}
	if r.Error != nil {
		return r.Error
	}
	return nil
}

// sameID reports whether the id of an answer is id (a number or a
// string), or null for an error.
func sameID(got json.RawMessage, id int64, isError bool) bool {
	want := strconv.FormatInt(id, 10)
	return string(got) == want || string(got) == `"`+want+`"` || (isError && string(got) == "null")
}

// apply applies one JSON-RPC response (the send's, or an event of the
// stream) to g, telling on of its steps.
func (c *v1) apply(raw []byte, id int64, g *gather, on func(step)) error {
	var r rpcResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("%w: the agent's answer is not JSON-RPC: %w", ErrProtocol, err)
	}
	if !sameID(r.ID, id, r.Error != nil) {
		return fmt.Errorf("%w: the agent answered request %s, not %d", ErrProtocol, r.ID, id)
	}
	if r.Error != nil {
		return r.Error
	}
	var res v1Result
	if err := json.Unmarshal(r.Result, &res); err != nil {
		return fmt.Errorf("%w: the agent's result: %w", ErrProtocol, err)
	}
	tell := func(s step) {
		if on != nil {
			on(s)
		}
	}
	switch {
	case res.Task != nil:
		t := res.Task
		for _, a := range t.Artifacts {
			g.artifact(t.ContextID, t.ID, a.ArtifactID, v1Text(a.Parts), false)
		}
		if t.Status != nil {
			st := stateName(t.Status.State)
			g.status(t.ContextID, t.ID, st, v1MessageText(t.Status.Message))
		} else {
			g.ids0(t.ContextID, t.ID)
		}
		tell(step{contextID: t.ContextID, taskID: t.ID})
	case res.Message != nil:
		m := res.Message
		text := v1Text(m.Parts)
		g.message(m.ContextID, m.TaskID, text)
		tell(step{kind: "Stream", text: text, contextID: m.ContextID, taskID: m.TaskID})
	case res.StatusUpdate != nil:
		u := res.StatusUpdate
		if u.Status == nil {
			return fmt.Errorf("%w: a status update without a status", ErrProtocol)
		}
		st, text := stateName(u.Status.State), v1MessageText(u.Status.Message)
		g.status(u.ContextID, u.TaskID, st, text)
		tell(step{kind: "Status", text: statusText(st, text), id: u.TaskID, contextID: u.ContextID, taskID: u.TaskID})
	case res.ArtifactUpdate != nil:
		u := res.ArtifactUpdate
		if u.Artifact == nil {
			return fmt.Errorf("%w: an artifact update without an artifact", ErrProtocol)
		}
		text := v1Text(u.Artifact.Parts)
		g.artifact(u.ContextID, u.TaskID, u.Artifact.ArtifactID, text, u.Append)
		tell(step{kind: "Artifact", text: text, id: u.Artifact.ArtifactID, contextID: u.ContextID, taskID: u.TaskID})
	default:
		return fmt.Errorf("%w: a result that is neither a task, a message, nor an update: %.200s", ErrProtocol, r.Result)
	}
	return nil
}

func (c *v1) close() {}

// v1Text is the text of parts: the text parts, the data ones as JSON,
// the files described in brackets.
func v1Text(parts []v1Part) string {
	var b strings.Builder
	for _, p := range parts {
		switch {
		case p.Text != nil:
			b.WriteString(*p.Text)
		case len(p.Data) > 0:
			b.Write(p.Data)
		case p.URL != "":
			fmt.Fprintf(&b, "[file %s %s]", p.MediaType, p.URL)
		case p.Raw != "":
			fmt.Fprintf(&b, "[file %s %s, %d bytes]", p.Filename, p.MediaType, len(p.Raw)*3/4)
		}
	}
	return b.String()
}

func v1MessageText(m *v1Message) string {
	if m == nil {
		return ""
	}
	return v1Text(m.Parts)
}

// statusText is a status step's text: "working: heating".
func statusText(state, text string) string {
	if text == "" {
		return state
	}
	return state + ": " + text
}

// transportError is an error of the connection: ErrMessageTooLarge when
// the bound tripped, else ErrUnavailable.
func transportError(err error) error {
	if errors.Is(err, ErrMessageTooLarge) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}
