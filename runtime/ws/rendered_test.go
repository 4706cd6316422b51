package ws

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// renderedPackage has a route that sends what a //chat:markdown route
// sends (package markdown renders; here the HTML is written out, so that
// the transport is tested alone): a Message with its HTML, stream chunks,
// and the Stream event that closes a rendered stream.
func renderedPackage() *chatimpl.Package {
	p := chatimpl.NewPackage("github.com/chatscopes/chatgen/runtime/ws/renderedtest")
	p.AddRoute(chatimpl.RouteSpec{Name: "rendered", Default: true, Handle: func(ctx context.Context) error {
		r := chat.Response(ctx)
		for _, ev := range []chat.Event{
			{Type: protocol.EventMessage, Data: "A **fine** \"sword\"", HTML: "<p>A <strong>fine</strong> &quot;sword&quot;</p>\n"},
			{Type: protocol.EventStream, Data: "- one\n"},
			{Type: protocol.EventStream, Data: "- two"},
			{Type: protocol.EventStream, Data: "", HTML: "<ul>\n<li>one</li>\n<li>two</li>\n</ul>\n"},
			{Type: protocol.EventMessage, Data: "plain <b>"},
		} {
			if err := r.SendEvent(ev); err != nil {
				return err
			}
		}
		return nil
	}})
	return p
}

func newRenderedServer(t *testing.T) *testServer {
	t.Helper()
	router, err := chat.NewRouter(&chat.RouterOptions{Logger: quietLogger()}, renderedPackage())
	if err != nil {
		t.Fatal(err)
	}
	return startServerFor(t, router, nil, nil)
}

// TestRenderedFrames: on the wire, a rendered Message's data is its HTML,
// as pages written for Quarkus' @MarkdownToHtml expect, with the source
// in "markdown"; the closing Stream event carries "html"; other events
// are unchanged.
func TestRenderedFrames(t *testing.T) {
	ts := newRenderedServer(t)
	c := dialRaw(t, ts.url, nil)
	scope := c.connect("c1", "")
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "c1", "scopeId": scope, "data": map[string]any{"userMessage": "hi"}})
	var got []map[string]any
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, raw, err := c.ws.Read(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		var f map[string]any
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if f["type"] == "Completed" || f["type"] == "Failed" {
			if f["type"] != "Completed" {
				t.Fatalf("request failed: %s", raw)
			}
			break
		}
		delete(f, "chatId")
		delete(f, "requestId")
		got = append(got, f)
	}
	want := []map[string]any{
		{"type": "Message", "data": "<p>A <strong>fine</strong> &quot;sword&quot;</p>\n", "markdown": "A **fine** \"sword\""},
		{"type": "Stream", "data": "- one\n"},
		{"type": "Stream", "data": "- two"},
		{"type": "Stream", "data": "", "html": "<ul>\n<li>one</li>\n<li>two</li>\n</ul>\n"},
		{"type": "Message", "data": "plain <b>"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("frames\n got %v\nwant %v", got, want)
	}
}

// TestRenderedEventsSameOnBothTransports: the Go websocket client gets the
// events a local client gets: the text as the data, the rendering in HTML.
func TestRenderedEventsSameOnBothTransports(t *testing.T) {
	ts := newRenderedServer(t)
	type seen struct{ Type, Text, HTML string }
	collect := func(c chat.Client) []seen {
		t.Helper()
		var out []seen
		s, err := c.Builder().OnDefault(func(ev chat.Event) {
			out = append(out, seen{ev.Type, ev.Text(), ev.HTML})
		}).Connect(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Chat(context.Background(), "hi"); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wc, err := Dial(ctx, ts.url, &DialOptions{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	overWire := collect(wc)
	local := collect(chat.NewLocalClient(ts.router))
	if !reflect.DeepEqual(overWire, local) {
		t.Fatalf("over the websocket\n%v\nlocally\n%v", overWire, local)
	}
	if len(local) != 5 || local[0].Text != "A **fine** \"sword\"" || local[0].HTML == "" || local[3].HTML == "" || local[4].HTML != "" {
		t.Fatalf("events %v", local)
	}
}
