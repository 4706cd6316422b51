package a2atools

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync/atomic"
)

// A remote speaks one version of A2A to the agent.
type remote interface {
	// send sends msg (streaming when stream) and returns what the agent
	// answered; on is told of each step of a stream.
	send(ctx context.Context, msg *outgoing, stream bool, on func(step)) (*outcome, error)
	// cancel asks the agent to cancel the task taskID.
	cancel(ctx context.Context, taskID string) error
	close()
}

// outgoing is a message to the agent.
type outgoing struct {
	id, text, contextID, taskID string
}

// step is one step of the agent's work told as it streams.
type step struct {
	kind      string // "Status", "Artifact" or "Stream"; "" for a task, not told to the client
	text      string
	id        string // the artifact's, or for a status the task's
	contextID string
	taskID    string
}

// outcome is the agent's answer to a message: a task in some state, or a
// message (state "").
type outcome struct {
	contextID, taskID string
	state             string   // "completed", "input-required", ... (0.3's names); "" for a message
	status            string   // the text of the status message, or of the message
	artifacts         []string // the text of each artifact, in order
	size              int      // the bytes of text gathered
}

// gather keeps the steps of a task as they come (or a whole task, or a
// message), bounded to max bytes of text.
type gather struct {
	out   outcome
	ids   []string          // the artifacts' ids, in order
	texts map[string]string // by id
	max   int               // -1 for none
	err   error             // past max
}

// status notes a status of the task.
func (g *gather) status(contextID, taskID, state, text string) {
	g.ids0(contextID, taskID)
	g.out.state = state
	g.out.status = text
	g.add(len(text))
}

// artifact notes a chunk of an artifact: a new one, or appended.
func (g *gather) artifact(contextID, taskID, id, text string, appended bool) {
	g.ids0(contextID, taskID)
	if g.texts == nil {
		g.texts = make(map[string]string)
	}
	if id == "" {
		id = fmt.Sprintf("#%d", len(g.ids))
	}
	old, seen := g.texts[id]
	if !seen {
		g.ids = append(g.ids, id)
	}
	if appended {
		g.texts[id] = old + text
	} else {
		g.texts[id] = text
	}
	g.add(len(text))
}

// message notes a message of the agent (its answer, or a partial one in
// a stream).
func (g *gather) message(contextID, taskID, text string) {
	g.ids0(contextID, taskID)
	if g.out.state == "" {
		g.out.status += text
	} else {
		g.out.status = text
	}
	g.add(len(text))
}

func (g *gather) ids0(contextID, taskID string) {
	if contextID != "" {
		g.out.contextID = contextID
	}
	if taskID != "" {
		g.out.taskID = taskID
	}
}

func (g *gather) add(n int) {
	g.out.size += n
	if g.max >= 0 && g.out.size > g.max && g.err == nil {
		g.err = fmt.Errorf("%w: the agent's answer exceeds MaxMessageBytes (%d bytes)", ErrMessageTooLarge, g.max)
	}
}

// result returns the outcome.
func (g *gather) result() (*outcome, error) {
	if g.err != nil {
		return nil, g.err
	}
	g.out.artifacts = g.out.artifacts[:0]
	for _, id := range g.ids {
		g.out.artifacts = append(g.out.artifacts, g.texts[id])
	}
	return &g.out, nil
}

// tripKey is the key of the flag of a request's context that
// boundedTransport sets when the request's response went past the bound:
// a2a-go's client does not always return the bound's error.
type tripKey struct{}

// withTrip returns ctx with a flag set when a response goes past the
// bound.
func withTrip(ctx context.Context) (context.Context, *atomic.Bool) {
	f := new(atomic.Bool)
	return context.WithValue(ctx, tripKey{}, f), f
}

func trip(req *http.Request) {
	if f, _ := req.Context().Value(tripKey{}).(*atomic.Bool); f != nil {
		f.Store(true)
	}
}

// boundedTransport fails a response body past limit bytes, or, for an
// event stream, past limit bytes in one event, so that a huge answer
// cannot exhaust the memory.
type boundedTransport struct {
	base  http.RoundTripper
	limit int64 // -1 for none
}

// RoundTrip implements http.RoundTripper.
func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil || t.limit < 0 {
		return resp, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	events := mt == "text/event-stream"
	if !events && resp.ContentLength > t.limit {
		resp.Body.Close()
		trip(req)
		return nil, t.tooLarge()
	}
	resp.Body = &boundedBody{rc: resp.Body, left: t.limit, t: t, events: events, req: req}
	return resp, nil
}

func (t *boundedTransport) tooLarge() error {
	return fmt.Errorf("%w: a message from the agent exceeds MaxMessageBytes (%d bytes)", ErrMessageTooLarge, t.limit)
}

// boundedBody is a response body that fails past its limit: the whole
// body, or with events, each event of the stream.
type boundedBody struct {
	rc     io.ReadCloser
	left   int64
	t      *boundedTransport
	events bool
	nl     bool // the last byte read ended a line
	req    *http.Request
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	if !b.events {
		b.left -= int64(n)
	} else {
		for _, c := range p[:n] {
			b.left--
			switch c {
			case '\n':
				if b.nl {
					b.left = b.t.limit
				}
				b.nl = true
			case '\r':
			default:
				b.nl = false
			}
		}
	}
	if b.left < 0 {
		trip(b.req)
		return 0, b.t.tooLarge()
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// stateName returns 0.3's name of a task state of 1.0's
// ("TASK_STATE_INPUT_REQUIRED" is "input-required").
func stateName(s string) string {
	s = strings.TrimPrefix(s, "TASK_STATE_")
	return strings.ReplaceAll(strings.ToLower(s), "_", "-")
}
