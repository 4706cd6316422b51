package markdown_test

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/markdown"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// newRouter returns a router with one route, handle, which sends its
// answer through the markdown package as generated code for
// //chat:markdown does.
func newRouter(t *testing.T, handle func(ctx context.Context, req *chat.RouteRequest) error) *chat.Router {
	t.Helper()
	p := chatimpl.NewPackage("example.com/md")
	p.AddRoute(chatimpl.RouteSpec{Name: "answer", Default: true, Handle: func(ctx context.Context) error { return handle(ctx, chat.Request(ctx)) }})
	r, err := chat.NewRouter(nil, p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// run sends one request and returns the events it got.
func run(t *testing.T, r *chat.Router) ([]chat.Event, error) {
	t.Helper()
	client := chat.NewLocalClient(r)
	defer client.Close()
	var events []chat.Event
	s, err := client.Builder().OnDefault(func(ev chat.Event) { events = append(events, ev) }).Connect(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	err = s.Chat(context.Background(), "hi")
	return events, err
}

func TestMessageCarriesTextAndHTML(t *testing.T) {
	r := newRouter(t, func(ctx context.Context, req *chat.RouteRequest) error {
		if err := markdown.Message(ctx, ""); err != nil { // sends nothing
			return err
		}
		return markdown.Message(ctx, "A **fine** sword <script>")
	})
	events, err := run(t, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 {
		t.Fatalf("events %+v, want one Message", events)
	}
	ev := events[0]
	if ev.Type != protocol.EventMessage || ev.Text() != "A **fine** sword <script>" ||
		ev.HTML != "<p>A <strong>fine</strong> sword &lt;script&gt;</p>\n" {
		t.Fatalf("event %+v", ev)
	}
}

// TestStreamRenderedOnceComplete: the chunks go out as they are, and one
// closing Stream event with no text carries the whole answer rendered.
func TestStreamRenderedOnceComplete(t *testing.T) {
	chunks := []string{"A **fi", "ne** sw", "ord"}
	r := newRouter(t, func(ctx context.Context, req *chat.RouteRequest) error {
		return markdown.SendStream(ctx, slices.Values(chunks))
	})
	events, err := run(t, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 4 {
		t.Fatalf("%d events %+v, want 3 chunks and the rendering", len(events), events)
	}
	for i, c := range chunks {
		if ev := events[i]; ev.Type != protocol.EventStream || ev.Text() != c || ev.HTML != "" {
			t.Fatalf("event %d: %+v, want the plain chunk %q", i, ev, c)
		}
	}
	if last := events[3]; last.Type != protocol.EventStream || last.Text() != "" || last.HTML != "<p>A <strong>fine</strong> sword</p>\n" {
		t.Fatalf("closing event %+v", last)
	}
}

// TestStreamFailureSendsNoRendering: a failed stream fails the request
// with StreamingFailure and sends no rendering of the partial answer.
func TestStreamFailureSendsNoRendering(t *testing.T) {
	boom := errors.New("the model went away")
	r := newRouter(t, func(ctx context.Context, req *chat.RouteRequest) error {
		return markdown.SendStreamWithErrors(ctx, func(yield func(string, error) bool) {
			if yield("**half", nil) {
				yield("", boom)
			}
		})
	})
	events, err := run(t, r)
	if !errors.Is(err, chat.ErrStreamingFailure) {
		t.Fatalf("err %v, want StreamingFailure", err)
	}
	if len(events) != 1 || events[0].Text() != "**half" || events[0].HTML != "" {
		t.Fatalf("events %+v, want the one chunk, unrendered", events)
	}
}

func TestStreamWithErrorsRenders(t *testing.T) {
	var seq iter.Seq2[string, error] = func(yield func(string, error) bool) {
		for _, c := range []string{"- a\n", "- b"} {
			if !yield(c, nil) {
				return
			}
		}
	}
	r := newRouter(t, func(ctx context.Context, req *chat.RouteRequest) error {
		return markdown.SendStreamWithErrors(ctx, seq)
	})
	events, err := run(t, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 3 || !strings.Contains(events[2].HTML, "<li>b</li>") {
		t.Fatalf("events %+v", events)
	}
}

// TestEmptyStreamSendsNoRendering: a stream of nothing but white space
// (or nothing) ends without a closing event.
func TestEmptyStreamSendsNoRendering(t *testing.T) {
	r := newRouter(t, func(ctx context.Context, req *chat.RouteRequest) error {
		if err := markdown.SendStream(ctx, slices.Values([]string{})); err != nil {
			return err
		}
		if err := markdown.SendStream(ctx, nil); err != nil {
			return err
		}
		return markdown.SendStream(ctx, slices.Values([]string{" ", "\n"}))
	})
	events, err := run(t, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 || events[0].HTML != "" || events[1].HTML != "" {
		t.Fatalf("events %+v, want the two blank chunks only", events)
	}
}

func TestSendOutsideARoute(t *testing.T) {
	if err := markdown.Message(context.Background(), "x"); !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("err %v, want ErrNotActive", err)
	}
}

func BenchmarkHTML(b *testing.B) {
	src := "Welcome to my forge, traveller! I can:\n\n" +
		"- **build** you a weapon (a sword, an axe, a bow…),\n" +
		"- make a piece of *armour*,\n" +
		"- or show your [armory](/armory).\n\nWhat shall it be?"
	b.ReportAllocs()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		_ = markdown.HTML(src)
	}
}

// A Retract event (an AI service's output guardrail withdrew the streamed
// text) starts the rendered text over: the closing rendering is of what
// the page shows after it.
func TestStreamRenderingSkipsRetractedText(t *testing.T) {
	for _, withErrors := range []bool{false, true} {
		r := newRouter(t, func(ctx context.Context, req *chat.RouteRequest) error {
			seq := func(yield func(string, error) bool) {
				if !yield("**bad** ", nil) || !yield("words", nil) {
					return
				}
				if err := chat.Response(ctx).Event(protocol.EventRetract, protocol.Retraction{Reason: "rewrite"}); err != nil {
					yield("", err)
					return
				}
				yield("*good*", nil)
			}
			if withErrors {
				return markdown.SendStreamWithErrors(ctx, seq)
			}
			return markdown.SendStream(ctx, func(yield func(string) bool) {
				for c, err := range seq {
					if err != nil || !yield(c) {
						return
					}
				}
			})
		})
		events, err := run(t, r)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, ev := range events {
			got = append(got, ev.Type+":"+ev.Text()+":"+ev.HTML)
		}
		want := []string{"Stream:**bad** :", "Stream:words:", `Retract:{"reason":"rewrite"}:`, "Stream:*good*:", "Stream::<p><em>good</em></p>\n"}
		if !slices.Equal(got, want) {
			t.Fatalf("with errors %v:\n got %q\nwant %q", withErrors, got, want)
		}
	}
}
