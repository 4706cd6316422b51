package mcptools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/mcptools"
)

// The tests of this file attack the sources as a hostile or broken server
// would.

// TestHugeResult: a result longer than MaxResultBytes reaches the model cut
// (at a character boundary, saying so); MaxResultBytes -1 lifts the bound.
func TestHugeResult(t *testing.T) {
	leaktest.Check(t)
	h := newHTTPServer(t, "hard")
	for _, c := range []struct {
		max, n int
		want   int // bytes of the result shown, -1 for all
	}{
		{0, 1 << 20, mcptools.DefaultMaxResultBytes},
		{1001, 4000, 1000}, // 'é' is two bytes: the cut falls before the last one
		{-1, 1 << 20, -1},
		{5000, 4000, -1},
	} {
		src := connect(t, &mcptools.Options{Name: "lore", Transport: h.transport(), MaxResultBytes: c.max})
		f := newFixture(t, llmtest.Sequence(calls(call("tome", fmt.Sprintf(`{"n":%d}`, c.n))), say("ok")), src)
		ex := f.chat(begin(t), "recite").Executions[0]
		if ex.Err != nil {
			t.Fatalf("%+v: %v", c, ex.Err)
		}
		full := strings.Repeat("é", c.n/2)
		if c.want < 0 {
			if ex.Text != full {
				t.Fatalf("%+v: %d bytes, want all %d", c, len(ex.Text), len(full))
			}
			continue
		}
		shown, note, ok := strings.Cut(ex.Text, "\n[")
		wantNote := fmt.Sprintf("the result was cut to %d of its %d bytes]", c.want, len(full))
		if !ok || shown != full[:c.want] || note != wantNote || !utf8.ValidString(ex.Text) {
			t.Fatalf("%+v: %d bytes shown, note %q; want %d bytes, note %q", c, len(shown), note, c.want, wantNote)
		}
	}
}

// TestOversizedFrame: a result over the stdio transport's frame limit (16
// MiB) fails its call, and breaks the connection; the next turn notices
// and opens a new session instead of failing on the broken one.
func TestOversizedFrame(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 17 MiB")
	}
	leaktest.Check(t)
	src := connect(t, &mcptools.Options{Name: "lore", Transport: stdio("hard"), Logger: discard()})
	f := newFixture(t, llmtest.Sequence(
		calls(call("tome", fmt.Sprintf(`{"n":%d}`, 17<<20))), say("too long"),
		calls(call("count", `{}`)), say("counted"),
	), src)
	ctx := begin(t)
	ex := f.chat(ctx, "recite").Executions[0]
	var callErr *mcptools.CallError
	if !errors.As(ex.Err, &callErr) {
		t.Fatalf("the oversized result: %q, %v", ex.Text, ex.Err)
	}
	want(t, "the next turn", results(f.chat(ctx, "count")), []string{"count: 1"})
}

// TestDeadSessionReopensForTheNextCall: the server's process exits during
// a call; a later call of the same turn opens a new session rather than
// failing on the ended one.
func TestDeadSessionReopensForTheNextCall(t *testing.T) {
	leaktest.Check(t)
	src := connect(t, &mcptools.Options{Name: "lore", Transport: stdio("lore"), Logger: discard()})
	f := newFixture(t, llmtest.Sequence(
		calls(call("die", `{}`)),
		calls(call("count", `{}`)),
		say("Back."),
	), src)
	reply := f.chat(begin(t), "die, then count")
	if !errors.Is(reply.Executions[0].Err, mcptools.ErrUnavailable) {
		t.Fatalf("the dying call: %v", reply.Executions[0].Err)
	}
	want(t, "the call after", results(reply)[1:], []string{"count: 1"})
	if src.Sessions() != 1 {
		t.Fatalf("%d sessions", src.Sessions())
	}
}

// TestHTTPSessionGone: the server forgets the session (it restarted, or
// expired it) between turns. It answers 404, so the call never ran: it
// is made again on a new session, and the model sees only its result.
func TestHTTPSessionGone(t *testing.T) {
	leaktest.Check(t)
	h := newHTTPServer(t, "lore")
	src := connect(t, &mcptools.Options{Name: "lore", Transport: h.transport(), Logger: discard()})
	f := newFixture(t, llmtest.Sequence(
		calls(call("count", `{}`)), say("one"),
		calls(call("count", `{}`)), say("again"),
	), src)
	ctx := begin(t)
	want(t, "first turn", results(f.chat(ctx, "count")), []string{"count: 1"})
	for ss := range h.mcp.Sessions() {
		if err := ss.Close(); err != nil {
			t.Fatal(err)
		}
	}
	want(t, "after the server forgot the session", results(f.chat(ctx, "count")), []string{"count: 1"})
	if src.Sessions() != 1 || h.waitSessions(1) != 1 {
		t.Fatalf("%d sessions, %d on the server", src.Sessions(), h.sessions())
	}
}

// TestMuteServer: a server that never answers fails Connect after
// ConnectTimeout, and its process does not outlive the attempt.
func TestMuteServer(t *testing.T) {
	leaktest.Check(t)
	mark := fmt.Sprintf("mute-%d", time.Now().UnixNano())
	_, err := mcptools.Connect(context.Background(), &mcptools.Options{
		Name: "lore", Transport: stdio("mute", mark), ConnectTimeout: 200 * time.Millisecond,
	})
	if !errors.Is(err, mcptools.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Connect: %v", err)
	}
	if p := processes(mark); len(p) > 0 {
		t.Fatalf("the mute server still runs: %v", p)
	}
}

// processes returns the ids of the processes whose command line holds
// mark.
func processes(mark string) []string {
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var ids []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), mark) {
			ids = append(ids, filepath.Base(filepath.Dir(p)))
		}
	}
	return ids
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestTransientHTTPError: a call fails in the transport (a proxy answers
// 502) but the session lives on: the next turn keeps it, with the state
// the server holds for it.
func TestTransientHTTPError(t *testing.T) {
	leaktest.Check(t)
	srv := newServer("lore", false)
	var failNext atomic.Bool
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && failNext.CompareAndSwap(true, false) {
			http.Error(w, "the proxy lost its way", http.StatusBadGateway)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		client.CloseIdleConnections()
		hs.Close()
	})
	src := connect(t, &mcptools.Options{Name: "lore", Transport: mcptools.StreamableHTTP(hs.URL, client), Logger: discard()})
	f := newFixture(t, llmtest.Sequence(
		calls(call("count", `{}`)), say("one"),
		calls(call("count", `{}`)), say("failed"),
		calls(call("count", `{}`)), say("two"),
	), src)
	ctx := begin(t)
	want(t, "first turn", results(f.chat(ctx, "count")), []string{"count: 1"})
	failNext.Store(true)
	ex := f.chat(ctx, "count").Executions[0]
	if !strings.Contains(ex.Text, "Bad Gateway") {
		t.Fatalf("the failed call: %q", ex.Text)
	}
	want(t, "the session lives on", results(f.chat(ctx, "count")), []string{"count: 2"})
}

// TestBadOptions: nonsense options fail Connect and PerScope clearly.
func TestBadOptions(t *testing.T) {
	for _, c := range []struct {
		opts mcptools.Options
		want string
	}{
		{mcptools.Options{ConnectTimeout: -time.Second}, `mcptools: MCP server "lore": negative ConnectTimeout -1s`},
		{mcptools.Options{MaxResultBytes: -2}, `mcptools: MCP server "lore": MaxResultBytes -2 is neither -1 (no bound), 0 (the default) nor positive`},
		{mcptools.Options{MaxMessageBytes: -2}, `mcptools: MCP server "lore": MaxMessageBytes -2 is neither -1 (no bound), 0 (the default) nor positive`},
		{mcptools.Options{Prefix: "lore."}, `mcptools: MCP server "lore": Prefix "lore." cannot start a tool name: models accept 1 to 64 letters, digits, '_' and '-', starting with a letter or '_'`},
		{mcptools.Options{Prefix: "9_"}, `mcptools: MCP server "lore": Prefix "9_" cannot start a tool name`},
		{mcptools.Options{Prefix: strings.Repeat("p", 64)}, `mcptools: MCP server "lore": Prefix "ppp`},
	} {
		c.opts.Name, c.opts.Transport = "lore", stdio("lore")
		_, err := mcptools.Connect(context.Background(), &c.opts)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("Connect %+v: %v", c.opts, err)
		}
		_, err = mcptools.PerScope(chat.KindChat, &c.opts)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("PerScope %+v: %v", c.opts, err)
		}
	}
}

// TestManyConversations: twenty conversations run their turns at once,
// each with its own session of a per-scope server over stdio (its own
// process); when they end, every process exits.
func TestManyConversations(t *testing.T) {
	leaktest.Check(t)
	mark := fmt.Sprintf("many-%d", time.Now().UnixNano())
	src, err := mcptools.PerScope(chat.KindChat, &mcptools.Options{Name: "lore", Transport: stdio("lore", mark)})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	script := llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		if r := req.LastToolResults(); len(r) > 0 {
			return say("count " + r[0].Content), nil
		}
		return calls(call("count", `{}`)), nil
	})
	f := newFixture(t, script, src)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			ctx, err := chat.Begin(context.Background(), nil)
			if err != nil {
				t.Error(err)
				return
			}
			for turn := range 3 {
				reply, err := f.svc.Chat(ctx, &ai.Request{Method: &ask, User: "count"})
				if err != nil || reply.Content != fmt.Sprintf("count %d", turn+1) {
					t.Errorf("conversation %d, turn %d: %v, %v", i, turn, reply, err)
				}
			}
			if err := chat.End(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := src.Sessions(); n != 0 {
		t.Fatalf("after the conversations: %d sessions", n)
	}
	// The scopes' ends do not wait for the processes; the source's Close
	// does.
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if p := processes(mark); len(p) != 0 {
		t.Fatalf("after the conversations: processes %v", p)
	}
}

// TestCancelledDuringCall: the request is cancelled while a tool runs on
// the server. The server's handler is cancelled too, the turn fails with
// the cancellation, and the session stays: the next turn uses it.
func TestCancelledDuringCall(t *testing.T) {
	leaktest.Check(t)
	h := newHTTPServer(t, "lore")
	started, cancelled := make(chan struct{}), make(chan struct{})
	h.mcp.AddTool(&mcp.Tool{Name: "block", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			close(started)
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		})
	src := connect(t, &mcptools.Options{Name: "lore", Transport: h.transport(), Logger: discard()})
	f := newFixture(t, llmtest.Sequence(
		calls(call("count", `{}`)), calls(call("block", `{}`)),
		calls(call("count", `{}`)), say("counted"),
	), src)
	ctx := begin(t)
	turn, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		<-started
		cancel()
	}()
	if _, err := f.svc.Chat(turn, &ai.Request{Method: &ask, User: "block"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled turn: %v", err)
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's handler was not cancelled")
	}
	want(t, "the next turn", results(f.chat(ctx, "count")), []string{"count: 2"})
}

// TestPerScopeAllowsAMissingTool: a per-scope source whose Allow names a
// tool the server does not have fails the turn, as Connect fails, rather
// than leaving the turn without its tools as if the server were down.
func TestPerScopeAllowsAMissingTool(t *testing.T) {
	leaktest.Check(t)
	h := newHTTPServer(t, "lore")
	src, err := mcptools.PerScope(chat.KindChat, &mcptools.Options{Name: "lore", Transport: h.transport(), Allow: []string{"oracle"}})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	f := newFixture(t, llmtest.Sequence(say("unused")), src)
	_, err = f.svc.Chat(begin(t), &ai.Request{Method: &ask, User: "lore?"})
	if !errors.Is(err, mcptools.ErrUnusableTool) || !strings.Contains(err.Error(), `it has no tool "oracle"`) {
		t.Fatalf("the turn: %v", err)
	}
	if f.llm.Calls() != 0 || h.waitSessions(0) != 0 {
		t.Fatalf("%d model calls, %d sessions on the server", f.llm.Calls(), h.sessions())
	}
}

// TestServerStderr: a stdio server that fails to start says why on its
// stderr; Connect's error ends with it, and the source's logger has each
// line at debug level.
func TestServerStderr(t *testing.T) {
	leaktest.Check(t)
	logs := &logBuffer{}
	_, err := mcptools.Connect(context.Background(), &mcptools.Options{Name: "lore", Transport: stdio("crash"), Logger: logs.logger()})
	if !errors.Is(err, mcptools.ErrUnavailable) || !strings.HasSuffix(err.Error(), `(its stderr ends: "lore: cannot read /etc/lore.yaml\nlore: giving up")`) {
		t.Fatalf("Connect: %v", err)
	}
	if !strings.Contains(logs.String(), `level=DEBUG msg="mcptools: the MCP server's stderr" server=lore line="lore: cannot read /etc/lore.yaml"`) {
		t.Fatalf("the stderr is not logged:\n%s", logs)
	}
}

// TestClashBetweenSources: two servers offering a tool of the same name to
// one service fail chat.NewRouter, naming both; a Prefix on one resolves
// it, and each tool then calls its own server.
func TestClashBetweenSources(t *testing.T) {
	leaktest.Check(t)
	h := newHTTPServer(t, "lore")
	lore := connect(t, &mcptools.Options{Name: "lore", Transport: h.transport(), Allow: []string{"legend"}})
	sagas := connect(t, &mcptools.Options{Name: "sagas", Transport: stdio("lore"), Allow: []string{"legend", "count"}})
	newService := func(sources ...ai.ToolSource) *ai.Service {
		svc := ai.NewService("example.com/lore.Bard", &ai.Config{Model: llmtest.NewModel(nil, nil), ToolSources: sources})
		svc.AddMethods(&ask)
		return svc
	}
	pkg := chatimpl.NewPackage("example.com/lore")
	pkg.AddCheck(newService(lore, sagas).Check)
	_, err := chat.NewRouter(nil, pkg)
	if !errors.Is(err, ai.ErrToolClash) || !strings.Contains(err.Error(), `tool "legend" of MCP server "sagas" clashes with tool "legend" of MCP server "lore"`) {
		t.Fatalf("NewRouter: %v", err)
	}

	sagas = connect(t, &mcptools.Options{Name: "sagas", Transport: stdio("lore"), Allow: []string{"legend", "count"}, Prefix: "saga_"})
	if err := newService(lore, sagas).Check(); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, llmtest.Sequence(calls(call("legend", `{"topic":"ash"}`), call("saga_count", `{}`), call("saga_legend", `{"topic":"oak"}`)), say("ok")), lore, sagas)
	want(t, "results", results(f.chat(begin(t), "both")), []string{
		"legend: The legend of ash: forged in starfire.",
		"saga_count: 1",
		"saga_legend: The legend of oak: forged in starfire.",
	})
	if h.sessions() != 1 || sagas.Sessions() != 1 {
		t.Fatalf("%d sessions on the HTTP server, %d over stdio", h.sessions(), sagas.Sessions())
	}
}
