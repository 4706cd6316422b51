//go:build unix

package subagent_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms/openai"

	"github.com/chatscopes/chatgen/runtime/agent/subagent"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/boltstore"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/ws"
)

// The environment of the server process of TestKillMidFanOut: the test
// binary runs it as a program of its own (TestMain).
const (
	envServe  = "SUBAGENT_TEST_SERVE" // the address to serve on
	envData   = "SUBAGENT_TEST_DATA"  // the bbolt file
	envParent = "SUBAGENT_TEST_PARENT"
	envChild  = "SUBAGENT_TEST_CHILD"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(envServe); addr != "" {
		if err := serveProcess(addr); err != nil {
			fmt.Fprintln(os.Stderr, "server:", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// serveProcess serves an orchestrator whose research tool is a sub-agent,
// both on the llmtest servers of the environment, on a router keeping its
// conversations in a bbolt file, over websockets on addr, until killed.
func serveProcess(addr string) error {
	store, err := boltstore.Open(os.Getenv(envData), nil)
	if err != nil {
		return err
	}
	model := func(url string) (*openai.LLM, error) {
		return openai.New(openai.WithBaseURL(url), openai.WithToken("test"), openai.WithModel(llmtest.DefaultModelName))
	}
	parentModel, err := model(os.Getenv(envParent))
	if err != nil {
		return err
	}
	childModel, err := model(os.Getenv(envChild))
	if err != nil {
		return err
	}
	mem := func() memory.Provider {
		return memory.NewManager(&memory.ManagerOptions{Store: store.Memories(), Policy: memory.Window(50, nil)})
	}
	child := ai.NewService("example.com/app.Researcher", &ai.Config{Model: childModel, Memory: mem(), Logger: quiet})
	childMethod := &ai.Method{Name: "Research", Kind: chat.KindChat, System: "You research."}
	tool := subagent.New("research", func(ctx context.Context, task string) (string, error) {
		reply, err := child.Chat(ctx, &ai.Request{Method: childMethod, User: task})
		if err != nil {
			return "", err
		}
		return reply.Content, nil
	}, &subagent.Options{Logger: quiet})
	parent := ai.NewService("example.com/app.Orchestrator", &ai.Config{Model: parentModel, Memory: mem(), Logger: quiet, ToolSources: []ai.ToolSource{tool}})
	method := &ai.Method{Name: "Orchestrate", Kind: chat.KindChat, System: "You orchestrate."}
	p := chatimpl.NewPackage("example.com/app")
	p.AddRoute(chatimpl.RouteSpec{Name: "orchestrate", Default: true, Handle: func(ctx context.Context) error {
		reply, err := parent.Chat(ctx, &ai.Request{Method: method, User: chat.Request(ctx).UserMessage()})
		if err != nil {
			return err
		}
		return chat.Response(ctx).Message(reply.Content)
	}})
	router, err := chat.NewRouter(&chat.RouterOptions{Store: store}, p)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Println("serving")
	return http.Serve(ln, ws.NewServer(router, nil))
}

// process is the server process.
type process struct {
	cmd    *exec.Cmd
	stderr *strings.Builder
}

func startProcess(t *testing.T, env ...string) *process {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, stderr: &strings.Builder{}}
	cmd.Stderr = &syncWriter{w: p.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		if lines.Text() == "serving" {
			go func() {
				for lines.Scan() {
				}
			}()
			return p
		}
	}
	_ = cmd.Wait()
	t.Fatalf("the server ended before serving: %v\n%s", lines.Err(), p.stderr)
	return nil
}

type syncWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// kill9 kills the process with SIGKILL: no save, no release of leases.
func (p *process) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
}

// Kill -9 of the server in the middle of a fan-out: two sub-agents of
// three completed (and were checkpointed), the third is waiting for its
// model. The server, started again on the same file, resumes the
// conversation; the client's resend replays the two completed calls to
// the parent model and runs only the third: no sub-agent turn runs twice.
func TestKillMidFanOut(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a server process")
	}
	var mu sync.Mutex
	calls := map[string]int{} // the child model's calls, by task
	slowArrived := make(chan struct{}, 1)
	child := llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		task := req.LastUserText()
		mu.Lock()
		calls[task]++
		n := calls[task]
		mu.Unlock()
		reply := llmtest.Reply{Text: "answer to " + task, Usage: llmtest.Usage{PromptTokens: 100, CompletionTokens: 7}}
		if task == "slow" && n == 1 {
			slowArrived <- struct{}{}
			reply.Delay = time.Minute // the kill cuts it
		}
		return reply, nil
	})
	parentSrv, childSrv := llmtest.NewServer(parentScript("research"), nil), llmtest.NewServer(child, nil)
	t.Cleanup(parentSrv.Close)
	t.Cleanup(childSrv.Close)
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	env := []string{envServe + "=" + addr, envData + "=" + filepath.Join(dir, "chat.db"), envParent + "=" + parentSrv.URL, envChild + "=" + childSrv.URL}

	srv := startProcess(t, env...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c1, err := ws.Dial(ctx, "ws://"+addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	s1, err := c1.Builder().Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	id, token := s1.ConversationID(), s1.ResumeToken()
	const fan = "fan 3 f1 f2 slow"
	call := s1.ChatAsync(ctx, fan)
	select {
	case <-slowArrived:
	case <-ctx.Done():
		t.Fatal("the slow sub-agent's model call never came")
	}
	// The fast ones answered: wait for both, then for their checkpoints.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		done := calls["f1"] == 1 && calls["f2"] == 1
		mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fast sub-agents did not run: %v", calls)
		}
	}
	time.Sleep(500 * time.Millisecond) // their checkpoints are written
	srv.kill9(t)
	if err := call.Wait(ctx); err == nil {
		t.Fatal("the request in flight succeeded though its server was killed")
	}

	srv = startProcess(t, env...)
	c2, err := ws.Dial(ctx, "ws://"+addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	var answer string
	s2, err := c2.Builder().OnMessage(func(s string) { answer = s }).Resume(ctx, id, token)
	if err != nil {
		t.Fatalf("resuming after the kill: %v\n%s", err, srv.stderr)
	}
	if err := s2.Chat(ctx, fan); err != nil {
		t.Fatalf("the resend: %v\n%s", err, srv.stderr)
	}
	if n := strings.Count(answer, "answer to "); n != 3 {
		t.Fatalf("the resend's answer %q, want the three sub-agents' answers", answer)
	}
	mu.Lock()
	defer mu.Unlock()
	// The slow one's first call was cut by the kill: its turn never
	// completed, and runs once more; the others' are replayed.
	if calls["f1"] != 1 || calls["f2"] != 1 || calls["slow"] != 2 {
		t.Errorf("the child model's calls by task: %v, want f1 and f2 once (replayed), slow twice (cut by the kill)", calls)
	}
	if n := len(parentSrv.Requests()); n != 3 {
		t.Errorf("the parent model was called %d times, want 3 (the fan-out before the kill, then the fan-out and the answer)", n)
	}
}
