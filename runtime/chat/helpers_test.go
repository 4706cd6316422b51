package chat_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

// evlog records the events a session's handlers receive.
type evlog struct {
	mu  sync.Mutex
	evs []chat.Event
}

func (l *evlog) add(ev chat.Event) {
	l.mu.Lock()
	l.evs = append(l.evs, ev)
	l.mu.Unlock()
}

// take returns the events received so far as "Type:text" and forgets them.
func (l *evlog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.evs))
	for _, ev := range l.evs {
		out = append(out, ev.Type+":"+ev.Text())
	}
	l.evs = nil
	return out
}

func wantEvents(t *testing.T, got []string, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("events:\n got  %q\n want %q", got, want)
	}
}

// wantFailure checks that err is a *chat.Failure with the given reason,
// carrying no server-side cause (the local client keeps it on the server).
func wantFailure(t *testing.T, err error, reason string) *chat.Failure {
	t.Helper()
	var f *chat.Failure
	if !errors.As(err, &f) {
		t.Fatalf("error %v (%T), want a *chat.Failure %s", err, err, reason)
	}
	if f.Reason != reason {
		t.Fatalf("failure reason %q (%v), want %q", f.Reason, err, reason)
	}
	return f
}

func wantNoErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// logCapture is an slog destination whose records tests can inspect.
type logCapture struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *logCapture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Write(p)
}

func (c *logCapture) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(c, nil))
}

func (c *logCapture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// records parses the JSON log records written so far.
func (c *logCapture) records(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(c.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// failureRecord returns the single "request failed" record of the log.
func (c *logCapture) failureRecord(t *testing.T) map[string]any {
	t.Helper()
	var found []map[string]any
	for _, r := range c.records(t) {
		if r["msg"] == "chat: request failed" {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one failed-request log record, got %d in:\n%s", len(found), c.String())
	}
	return found[0]
}

// env is a router with its local client, logging into a capture.
type env struct {
	t      *testing.T
	router *chat.Router
	client *chat.LocalClient
	log    *logCapture
}

// newEnv builds a router of one package holding routes and catches, as
// generated code registers them.
func newEnv(t *testing.T, routes []chatimpl.RouteSpec, catches []chatimpl.CatchSpec) *env {
	t.Helper()
	return newObservedEnv(t, nil, routes, catches)
}

// newObservedEnv is newEnv with obs observing the router's scopes.
func newObservedEnv(t *testing.T, obs chat.Observer, routes []chatimpl.RouteSpec, catches []chatimpl.CatchSpec) *env {
	t.Helper()
	p := chatimpl.NewPackage("example.com/app")
	for _, r := range routes {
		p.AddRoute(r)
	}
	for _, c := range catches {
		p.AddCatch(c)
	}
	lc := &logCapture{}
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: lc.logger(), Observer: obs}, p)
	if err != nil {
		t.Fatal(err)
	}
	client := chat.NewLocalClient(r)
	t.Cleanup(func() { _ = client.Close() })
	return &env{t: t, router: r, client: client, log: lc}
}

// connect opens a session recording every event.
func (e *env) connect(ctx context.Context, route string) (chat.Session, *evlog) {
	e.t.Helper()
	l := &evlog{}
	s, err := e.client.Builder().OnDefault(l.add).Connect(ctx, route)
	if err != nil {
		e.t.Fatalf("connect %q: %v", route, err)
	}
	return s, l
}

// textRoute registers fn as generated code registers a route method
// func(ctx, userMessage string) (string, error).
func textRoute(name string, fn func(ctx context.Context, msg string) (string, error)) chatimpl.RouteSpec {
	return chatimpl.RouteSpec{
		Name: name,
		Handle: func(ctx context.Context) error {
			req := chat.Request(ctx)
			res, err := fn(ctx, req.UserMessage())
			if err != nil {
				return err
			}
			return chat.SendValue(ctx, res)
		},
	}
}

func asDefault(r chatimpl.RouteSpec) chatimpl.RouteSpec {
	r.Default = true
	return r
}

// where describes the current scope: "@depth/route".
func where(ctx context.Context) string {
	d, err := chat.Depth(ctx)
	if err != nil {
		return "@" + err.Error()
	}
	r, err := chat.CurrentRoute(ctx)
	if err != nil {
		return "@" + err.Error()
	}
	return fmt.Sprintf("@%d/%s", d, r)
}

// catchFor registers fn as generated code registers a //chat:catch func
// taking an error of type E.
func catchFor[E error](route, typ string, iface bool, fn func(ctx context.Context, e E) error) chatimpl.CatchSpec {
	return chatimpl.CatchSpec{
		Route:     route,
		Type:      typ,
		Interface: iface,
		Handle: func(ctx context.Context, err error) (bool, error) {
			e, ok := err.(E)
			if !ok {
				return false, nil
			}
			return true, fn(ctx, e)
		},
	}
}

// journal records lifecycle steps from several goroutines in order.
type journal struct {
	mu      sync.Mutex
	entries []string
}

func (j *journal) add(s string) {
	j.mu.Lock()
	j.entries = append(j.entries, s)
	j.mu.Unlock()
}

func (j *journal) take() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := j.entries
	j.entries = nil
	if out == nil {
		out = []string{}
	}
	return out
}

// closer is a scoped bean recording its Close in a journal.
type closer struct {
	name string
	j    *journal
	n    int
}

func (c *closer) Close() error {
	c.j.add("close " + c.name)
	return nil
}

// closerBean declares a bean of the given kind whose instances are named
// after the depth of the scope that built them.
func closerBean(j *journal, kind chat.Kind) *chat.Bean[*closer] {
	return chat.NewBean("example.com/app.closer", &chat.BeanOptions{Kind: kind}, func(ctx context.Context) (*closer, error) {
		d, err := chat.Depth(ctx)
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("bean@%d", d)
		j.add("new " + name)
		return &closer{name: name, j: j}, nil
	})
}

// recv receives from ch, failing the test instead of hanging.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second): // generous: a loaded machine is slow
		t.Fatalf("timed out waiting for %s", what)
	}
	panic("unreachable")
}

// wait waits for a call, failing the test instead of hanging.
func wait(t *testing.T, c *chat.Call) error {
	t.Helper()
	select {
	case <-c.Done():
		return c.Err()
	case <-time.After(20 * time.Second):
		t.Fatal("timed out waiting for a call")
	}
	panic("unreachable")
}
