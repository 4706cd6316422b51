package a2atools_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"

	"github.com/chatscopes/chatgen/internal/npmtest"
	"github.com/chatscopes/chatgen/runtime/a2atools"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/ws"
)

var quiet = slog.New(slog.DiscardHandler)

// jsAgent runs testdata/npm/server.mjs, an A2A 1.0 agent served by
// @a2a-js/sdk 1.3.0 (pinned by testdata/npm/package-lock.json), and
// returns its base URL; args are the script's ("nostream"). The agent
// stops when the test ends.
func jsAgent(t testing.TB, args ...string) string {
	t.Helper()
	u, _ := jsAgentStop(t, args...)
	return u
}

// jsAgentStop is jsAgent that also returns a func that stops the agent.
func jsAgentStop(t testing.TB, args ...string) (string, func()) {
	t.Helper()
	dir := npmtest.Client{Name: "a2atools-npm", What: "the A2A server of @a2a-js/sdk", Src: filepath.Join("testdata", "npm"), Scripts: []string{"server.mjs"}}.Dir(t)
	cmd := exec.Command("node", append([]string{"server.mjs"}, args...)...)
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			stdin.Close()
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(stop)
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "listening ") {
				lines <- strings.TrimPrefix(l, "listening ")
			}
		}
		close(lines)
	}()
	select {
	case u, ok := <-lines:
		if !ok {
			t.Fatalf("node server.mjs ended: %s", stderr.String())
		}
		return u, stop
	case <-time.After(30 * time.Second):
		t.Fatalf("node server.mjs does not listen: %s", stderr.String())
	}
	return "", stop
}

// goAgent serves, in process, an A2A 0.3 agent of a2a-go v0.3.15's server
// (a2asrv) that behaves as server.mjs does, and returns its base URL.
func goAgent(t testing.TB, streaming bool) string {
	t.Helper()
	return startGoAgent(t, streaming).url
}

// goAgentStop is goAgent that also returns a func that stops the agent.
func goAgentStop(t testing.TB, streaming bool) (string, func()) {
	t.Helper()
	g := startGoAgent(t, streaming)
	return g.url, g.stop
}

// goServer is a running go agent.
type goServer struct {
	url     string
	stop    func()
	restart func() // a new server that knows no task, on the same URL
}

func startGoAgent(t testing.TB, streaming bool) *goServer {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	card := &a2a.AgentCard{
		Name: "Smith", Description: "Forges blades on request.", Version: "1.0.0",
		URL: srv.URL + "/rpc", PreferredTransport: a2a.TransportProtocolJSONRPC, ProtocolVersion: "0.3.0",
		Capabilities:      a2a.AgentCapabilities{Streaming: streaming},
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "forge", Name: "Forge", Description: "Forges a blade of the metal you name.", Tags: []string{"forge"}}},
	}
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	var rpc atomic.Pointer[http.Handler]
	fresh := func() {
		h := a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(&smith{counts: map[string]int{}}))
		rpc.Store(&h)
	}
	fresh()
	mux.HandleFunc("/rpc", func(w http.ResponseWriter, r *http.Request) { (*rpc.Load()).ServeHTTP(w, r) })
	return &goServer{url: srv.URL + "/", stop: srv.Close, restart: fresh}
}

// smith is the 0.3 agent.
type smith struct {
	mu     sync.Mutex
	counts map[string]int
}

func (s *smith) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	said := ""
	for _, p := range rc.Message.Parts {
		if tp, ok := p.(a2a.TextPart); ok {
			said += tp.Text
		}
	}
	s.mu.Lock()
	s.counts[rc.ContextID]++
	n := s.counts[rc.ContextID]
	s.mu.Unlock()
	status := func(state a2a.TaskState, text string) error {
		var m *a2a.Message
		if text != "" {
			m = a2a.NewMessageForTask(a2a.MessageRoleAgent, rc, a2a.TextPart{Text: text})
		}
		ev := a2a.NewStatusUpdateEvent(rc, state, m)
		ev.Final = state != a2a.TaskStateWorking
		return q.Write(ctx, ev)
	}
	if rest, ok := strings.CutPrefix(said, "say "); ok {
		m := a2a.NewMessage(a2a.MessageRoleAgent, a2a.TextPart{Text: "you said " + rest})
		m.ContextID = rc.ContextID
		return q.Write(ctx, m)
	}
	if rc.StoredTask == nil {
		if err := q.Write(ctx, a2a.NewSubmittedTask(rc, rc.Message)); err != nil {
			return err
		}
	} else if rc.StoredTask.Status.State == a2a.TaskStateInputRequired {
		return status(a2a.TaskStateCompleted, "forging "+said)
	}
	switch {
	case strings.HasPrefix(said, "ask"):
		return status(a2a.TaskStateInputRequired, "Which metal?")
	case said == "slow":
		if err := status(a2a.TaskStateWorking, "slow work"); err != nil {
			return err
		}
		select {
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
		return status(a2a.TaskStateCompleted, "slowly done")
	case said == "pause":
		time.Sleep(1500 * time.Millisecond)
		return status(a2a.TaskStateCompleted, "paused")
	case said == "fail":
		return status(a2a.TaskStateFailed, "the anvil cracked")
	case said == "huge":
		if err := q.Write(ctx, a2a.NewArtifactEvent(rc, a2a.TextPart{Text: strings.Repeat("x", 300_000)})); err != nil {
			return err
		}
		return status(a2a.TaskStateCompleted, "")
	}
	if err := status(a2a.TaskStateWorking, "heating"); err != nil {
		return err
	}
	first := a2a.NewArtifactEvent(rc, a2a.TextPart{Text: "blade "})
	if err := q.Write(ctx, first); err != nil {
		return err
	}
	next := a2a.NewArtifactUpdateEvent(rc, first.Artifact.ID, a2a.TextPart{Text: "sharpened"})
	next.Append, next.LastChunk = true, true
	if err := q.Write(ctx, next); err != nil {
		return err
	}
	return status(a2a.TaskStateCompleted, fmt.Sprintf("message %d of this context: %s", n, said))
}

func (s *smith) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	ev := a2a.NewStatusUpdateEvent(rc, a2a.TaskStateCanceled, nil)
	ev.Final = true
	return q.Write(ctx, ev)
}

// script is the model: "ask <tool>: <message>" calls the tool with the
// message ("new <tool>: <message>" with new_conversation), and a request
// ending with a tool result is answered "<tool> said: <result>".
func script() llmtest.Script {
	return llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		if res := req.LastToolResults(); len(res) > 0 {
			return llmtest.Reply{Text: res[0].Name + " said: " + res[0].Content}, nil
		}
		typed := req.UserTyped()
		for _, verb := range []string{"ask ", "new "} {
			if rest, ok := strings.CutPrefix(typed, verb); ok {
				tool, msg, _ := strings.Cut(rest, ": ")
				args, _ := json.Marshal(map[string]any{"message": msg, "new_conversation": verb == "new "})
				return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: tool, Arguments: string(args)}}}, nil
			}
		}
		return llmtest.Reply{Text: "ok: " + typed}, nil
	})
}

// app is a router whose service offers the sources' tools to a model
// scripted by script; "nest" pushes a scope and "back" pops it.
type app struct {
	llm    *llmtest.Server
	router *chat.Router
	mems   memory.Store
}

func newApp(t testing.TB, store chatstore.ConversationStore, mems memory.Store, sources ...ai.ToolSource) *app {
	t.Helper()
	a := &app{llm: llmtest.NewServer(script(), nil), mems: mems}
	t.Cleanup(a.llm.Close)
	if a.mems == nil {
		a.mems = memory.NewInMemoryStore()
	}
	model, err := a.llm.Client()
	if err != nil {
		t.Fatal(err)
	}
	svc := ai.NewService("example.com/shop.Clerk", &ai.Config{Model: model, Logger: quiet, ToolSources: sources,
		Memory: memory.NewManager(&memory.ManagerOptions{Store: a.mems, Policy: memory.Window(100, nil)})})
	method := &ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You are the shop's clerk."}
	svc.AddMethods(method)
	p := chatimpl.NewPackage("example.com/shop")
	p.AddRoute(chatimpl.RouteSpec{Name: "clerk", Default: true, Handle: func(ctx context.Context) error {
		switch user := chat.Request(ctx).UserMessage(); user {
		case "nest":
			return chat.Push(ctx)
		case "back":
			return chat.Pop(ctx)
		default:
			r, err := svc.Chat(ctx, &ai.Request{Method: method, User: user})
			if err != nil {
				return err
			}
			return chat.SendValue(ctx, r.Content)
		}
	}})
	a.router, err = chat.NewRouter(&chat.RouterOptions{Store: store, Logger: quiet}, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Check(); err != nil {
		t.Fatal(err)
	}
	return a
}

// conn is a conversation with an app, recording what it is told.
type conn struct {
	sess chat.Session

	mu       sync.Mutex
	messages []string
	agents   []ai.AgentEvent
}

func record(t testing.TB, c *conn, b *chat.SessionBuilder) *chat.SessionBuilder {
	return b.OnMessage(func(text string) {
		c.mu.Lock()
		c.messages = append(c.messages, text)
		c.mu.Unlock()
	}).On(ai.EventSubAgent, func(ev chat.Event) {
		var a ai.AgentEvent
		if err := ev.Decode(&a); err != nil {
			t.Errorf("SubAgent event %v: %v", ev.Data, err)
		}
		c.mu.Lock()
		c.agents = append(c.agents, a)
		c.mu.Unlock()
	})
}

// dial opens a conversation with a over the websocket.
func (a *app) dial(t testing.TB) *conn {
	t.Helper()
	srv := ws.NewServer(a.router, nil)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
	})
	client, err := ws.Dial(context.Background(), hs.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	c := &conn{}
	if c.sess, err = record(t, c, client.Builder()).Connect(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *conn) chat(t testing.TB, text string) string {
	t.Helper()
	if err := c.sess.Chat(context.Background(), text); err != nil {
		t.Fatalf("chat %q: %v", text, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.messages[len(c.messages)-1]
}

// takeAgentEvents returns the SubAgent events received so far and
// forgets them.
func (c *conn) takeAgentEvents() []ai.AgentEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	ev := c.agents
	c.agents = nil
	return ev
}

// taskState returns the state of the task id of the agent whose JSON-RPC
// endpoint is rpc, by GetTask (A2A 1.0) or tasks/get (0.3).
func taskState(t testing.TB, rpc, version, id string) string {
	t.Helper()
	method := "GetTask"
	if version == a2atools.Version03 {
		method = "tasks/get"
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": map[string]string{"id": id}})
	req, err := http.NewRequest(http.MethodPost, rpc, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if version == a2atools.Version1 {
		req.Header.Set("A2A-Version", "1.0")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Result struct {
			Status struct{ State string }
		}
		Error json.RawMessage
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Error != nil {
		t.Fatalf("%s %s: %v %s", method, id, err, r.Error)
	}
	return r.Result.Status.State
}

// connect connects a source to the agent at u.
func connect(t testing.TB, u string, opts *a2atools.Options) *a2atools.Source {
	t.Helper()
	o := a2atools.Options{Logger: quiet}
	if opts != nil {
		o = *opts
		if o.Logger == nil {
			o.Logger = quiet
		}
	}
	o.URL = u
	src, err := a2atools.Connect(context.Background(), &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}
