package mcptools

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxMessageBytes bounds a message from a server over streamable
// HTTP when [Options.MaxMessageBytes] is 0: 16 MiB, what the SDK accepts
// of a message over stdio.
const DefaultMaxMessageBytes = 16 << 20

// maxMessage returns the bound on a message read from the server: opts'
// MaxMessageBytes, or by default the larger of DefaultMaxMessageBytes and
// room for a result of maxResult bytes; -1 for none.
func maxMessage(opts *Options, maxResult int) int {
	switch {
	case opts.MaxMessageBytes != 0:
		return opts.MaxMessageBytes
	case maxResult > 0 && maxResult <= (1<<40) && 4*maxResult+64<<10 > DefaultMaxMessageBytes:
		return 4*maxResult + 64<<10 // JSON may escape each byte into several
	default:
		return DefaultMaxMessageBytes
	}
}

// boundHTTP returns t with its HTTP client's responses bounded to limit
// bytes a message (-1 for none): a JSON response's body, or one event of
// a stream. tripped is set when a response went past it. The responses
// to tools/list are read for task-only tools, noted in tt.
func boundHTTP(t *mcp.StreamableClientTransport, limit int, tripped *atomic.Bool, tt *taskTools) *mcp.StreamableClientTransport {
	bounded := *t
	client := http.DefaultClient
	if t.HTTPClient != nil {
		client = t.HTTPClient
	}
	c := *client
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = &boundedTransport{base: base, limit: int64(limit), tripped: tripped, tt: tt}
	bounded.HTTPClient = &c
	// The SDK's own bound on an event, a little above ours, is a
	// backstop: ours says what happened.
	if backstop := limit + 64<<10; limit >= 0 && (bounded.MaxEventSize == 0 || bounded.MaxEventSize > backstop) {
		bounded.MaxEventSize = backstop
	}
	return &bounded
}

// boundedTransport fails the body of a response past limit bytes, or,
// for an event stream, past limit bytes in one event.
type boundedTransport struct {
	base    http.RoundTripper
	limit   int64 // -1 for none
	tripped *atomic.Bool
	tt      *taskTools
}

// RoundTrip implements http.RoundTripper.
func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	list := isToolsList(req)
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	events := mt == "text/event-stream"
	if t.limit >= 0 {
		if !events && resp.ContentLength > t.limit {
			resp.Body.Close()
			t.tripped.Store(true)
			return nil, &messageTooLarge{limit: t.limit}
		}
		resp.Body = &boundedBody{rc: resp.Body, left: t.limit, t: t, events: events}
	}
	if list {
		resp.Body = &tasksBody{ReadCloser: resp.Body, tt: t.tt, events: events}
	}
	return resp, nil
}

// boundedBody is a response body that fails past its limit: the whole
// body, or with events, each event of the stream (the bytes up to a blank
// line).
type boundedBody struct {
	rc     io.ReadCloser
	left   int64 // what the body, or the current event, may still hold
	t      *boundedTransport
	events bool
	nl     bool // the last byte read ended a line
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // read no more than one byte past the limit
	}
	n, err := b.rc.Read(p)
	if !b.events {
		b.left -= int64(n)
	} else {
		for _, c := range p[:n] {
			b.left--
			switch c {
			case '\n':
				if b.nl { // a blank line ends the event
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
		b.t.tripped.Store(true)
		return 0, &messageTooLarge{limit: b.t.limit}
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// messageTooLarge is the error of a response past the bound.
type messageTooLarge struct{ limit int64 }

func (e *messageTooLarge) Error() string {
	return fmt.Sprintf("%v: a message from the server exceeds MaxMessageBytes (%d bytes)", ErrMessageTooLarge, e.limit)
}

func (e *messageTooLarge) Unwrap() error { return ErrMessageTooLarge }
