package subagent_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/agent/subagent"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/ws"
)

// The parent model's script: a user message "call <json>" calls the
// research tool once with those arguments; "fan <n> <task>..." calls it
// n times, with the tasks given (t1, t2, ... when none); after tool
// results it answers with them, joined by " | ".
func parentScript(tool string) llmtest.Script {
	return llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		usage := llmtest.Usage{PromptTokens: 10, CompletionTokens: 1}
		if res := req.LastToolResults(); len(res) > 0 {
			texts := make([]string, len(res))
			for i, r := range res {
				texts[i] = r.Content
			}
			return llmtest.Reply{Text: strings.Join(texts, " | "), Usage: usage}, nil
		}
		user := req.LastUserText()
		switch {
		case strings.HasPrefix(user, "call "):
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: tool, Arguments: strings.TrimPrefix(user, "call ")}}, Usage: usage}, nil
		case strings.HasPrefix(user, "fan "):
			f := strings.Fields(user)
			n, _ := strconv.Atoi(f[1])
			var calls []llmtest.ToolCall
			for i := range n {
				task := "t" + strconv.Itoa(i+1)
				if len(f) > 2+i {
					task = f[2+i]
				}
				b, _ := json.Marshal(map[string]string{"task": task})
				calls = append(calls, llmtest.ToolCall{Name: tool, Arguments: string(b)})
			}
			return llmtest.Reply{ToolCalls: calls, Usage: usage}, nil
		}
		return llmtest.Reply{Text: "hello", Usage: usage}, nil
	})
}

// The child model's script, by task (the user message): "lookup..."
// calls the lookup tool then answers; "loop" calls lookup forever;
// "unknown" calls a tool it does not have; "slow" answers after 200ms;
// anything else answers at once. An answer names the task and how many
// user messages the child saw (its session's history).
func childScript() llmtest.Script {
	return llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		usage := llmtest.Usage{PromptTokens: 100, CompletionTokens: 7, CacheReadTokens: 40}
		task := req.LastUserText()
		users := 0
		for _, m := range req.Messages {
			if m.Role == llms.ChatMessageTypeHuman {
				users++
			}
		}
		answer := llmtest.Reply{Text: "answer to " + task + " (user messages seen: " + strconv.Itoa(users) + ")", Usage: usage, Reasoning: "thinking about " + task}
		switch {
		case task == "loop":
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "lookup", Arguments: `{"q":"more"}`}}, Usage: usage}, nil
		case task == "unknown":
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "nope", Arguments: `{}`}}, Usage: usage}, nil
		case strings.HasPrefix(task, "slow"):
			answer.Delay = 200 * time.Millisecond
			return answer, nil
		case (strings.HasPrefix(task, "buy") || strings.HasPrefix(task, "pick")) && len(req.LastToolResults()) == 0:
			tool := "pick"
			if strings.HasPrefix(task, "buy") {
				tool = "buy"
			}
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: tool, Arguments: `{"q":"` + task + `"}`}}, Usage: usage}, nil
		case (strings.HasPrefix(task, "buy") || strings.HasPrefix(task, "pick")) && len(req.LastToolResults()) > 0:
			answer.Text = "done " + task + ": " + req.LastToolResults()[0].Content
			return answer, nil
		case strings.HasPrefix(task, "lookup") && len(req.LastToolResults()) == 0:
			return llmtest.Reply{Text: "let me look", ToolCalls: []llmtest.ToolCall{{Name: "lookup", Arguments: `{"q":"` + task + `"}`}}, Usage: usage}, nil
		}
		return answer, nil
	})
}

// rig is an orchestrator service whose tool "research" is a sub-agent
// service, each on an llmtest server through langchaingo's OpenAI
// client, served by a router.
type rig struct {
	t                       testing.TB
	parentSrv, childSrv     *llmtest.Server
	parentStore, childStore *memory.InMemoryStore
	parent, child           *ai.Service
	childMethod             *ai.Method
	tool                    *subagent.Tool
	router                  *chat.Router

	mu      sync.Mutex
	replies []*ai.Reply
	errs    []error
	bought  []string // the arguments of the buy tool's calls that ran
}

type rigOptions struct {
	parent, child *ai.Config
	agent         *subagent.Options
	// run replaces the sub-agent's func; it gets the default one.
	run func(def subagent.Func) subagent.Func
	// inProcess uses llmtest.Model, not servers (for the load test).
	inProcess bool
	// router configures the router.
	router *chat.RouterOptions
	// of makes the tool with subagent.Of over a bean of the router's
	// package, as generated code does; provide, when set, is its
	// provider, which gets the default one.
	of      bool
	provide func(def func(context.Context) (researcher, error)) func(context.Context) (researcher, error)
}

// researcher is the sub-agent's service as a //chat:ai interface.
type researcher interface {
	Research(ctx context.Context, task string) (string, error)
}

// researcherImpl is researcher on the rig's child service, as the
// generated implementation is.
type researcherImpl struct{ r *rig }

func (x researcherImpl) Research(ctx context.Context, task string) (string, error) {
	reply, err := x.r.child.Chat(ctx, &ai.Request{Method: x.r.childMethod, User: task})
	if err != nil {
		return "", err
	}
	return reply.Content, nil
}

// researcherBean is the bean of researcher, as generated code declares it.
var researcherBean = chat.NewBean[researcher]("example.com/app.Researcher", nil, nil)

func newRig(t testing.TB, o *rigOptions) *rig {
	t.Helper()
	if o == nil {
		o = &rigOptions{}
	}
	r := &rig{t: t, parentStore: memory.NewInMemoryStore(), childStore: memory.NewInMemoryStore()}
	var parentModel, childModel llms.Model
	if o.inProcess {
		parentModel, childModel = llmtest.NewModel(parentScript("research"), nil), llmtest.NewModel(childScript(), nil)
	} else {
		r.parentSrv, r.childSrv = llmtest.NewServer(parentScript("research"), nil), llmtest.NewServer(childScript(), nil)
		t.Cleanup(r.parentSrv.Close)
		t.Cleanup(r.childSrv.Close)
		var err error
		if parentModel, err = r.parentSrv.Client(); err != nil {
			t.Fatal(err)
		}
		if childModel, err = r.childSrv.Client(); err != nil {
			t.Fatal(err)
		}
	}
	ccfg := ai.Config{}
	if o.child != nil {
		ccfg = *o.child
	}
	ccfg.Model = childModel
	ccfg.Logger = quiet
	ccfg.ForwardThinking = true
	if ccfg.Memory == nil {
		ccfg.Memory = memory.NewManager(&memory.ManagerOptions{Store: r.childStore, Policy: memory.Window(50, nil)})
	}
	r.child = ai.NewService("example.com/app.Researcher", &ccfg)
	r.childMethod = &ai.Method{Name: "Research", Kind: chat.KindChat, System: "You research.", Tools: []ai.Tool{{
		Name: "lookup", Description: "Looks up a fact.", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`),
		Invoke: func(_ context.Context, args string) (any, error) { return "fact for " + args, nil },
	}, {
		Name: "buy", Description: "Buys a thing (the user confirms).", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`),
		Confirm: true,
		Invoke: func(_ context.Context, args string) (any, error) {
			r.mu.Lock()
			r.bought = append(r.bought, args)
			r.mu.Unlock()
			return "bought " + args, nil
		},
	}, {
		Name: "pick", Description: "The user picks a thing, in the page.", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`),
		Client: true,
	}}}
	run := subagent.Func(func(ctx context.Context, task string) (string, error) {
		reply, err := r.child.Chat(ctx, &ai.Request{Method: r.childMethod, User: task})
		if err != nil {
			return "", err
		}
		return reply.Content, nil
	})
	if o.run != nil {
		run = o.run(run)
	}
	aopts := subagent.Options{Logger: quiet}
	if o.agent != nil {
		aopts = *o.agent
		aopts.Logger = quiet
	}
	if o.of {
		r.tool = subagent.Of("research", researcherBean, researcher.Research, &aopts)
	} else {
		r.tool = subagent.New("research", run, &aopts)
	}
	pcfg := ai.Config{}
	if o.parent != nil {
		pcfg = *o.parent
	}
	pcfg.Model = parentModel
	pcfg.Logger = quiet
	if pcfg.Memory == nil {
		pcfg.Memory = memory.NewManager(&memory.ManagerOptions{Store: r.parentStore, Policy: memory.Window(50, nil)})
	}
	pcfg.ToolSources = append(pcfg.ToolSources, r.tool)
	r.parent = ai.NewService("example.com/app.Orchestrator", &pcfg)
	method := &ai.Method{Name: "Orchestrate", Kind: chat.KindChat, System: "You orchestrate."}
	p := chatimpl.NewPackage("example.com/app")
	p.AddRoute(chatimpl.RouteSpec{Name: "orchestrate", Default: true, Handle: func(ctx context.Context) error {
		reply, err := r.parent.Chat(ctx, &ai.Request{Method: method, User: chat.Request(ctx).UserMessage()})
		r.mu.Lock()
		r.replies = append(r.replies, reply)
		r.errs = append(r.errs, err)
		r.mu.Unlock()
		if err != nil {
			return err
		}
		return chat.Response(ctx).Message(reply.Content)
	}})
	if o.of {
		provide := func(context.Context) (researcher, error) { return researcherImpl{r}, nil }
		if o.provide != nil {
			provide = o.provide(provide)
		}
		chatimpl.Provide(p, researcherBean, provide)
	}
	router, err := chat.NewRouter(o.router, p)
	if err != nil {
		t.Fatal(err)
	}
	r.router = router
	return r
}

// lastReply returns the Reply and the error of the last request.
func (r *rig) lastReply() (*ai.Reply, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.replies[len(r.replies)-1], r.errs[len(r.errs)-1]
}

// conn is a websocket conversation with the rig's router, recording its
// events.
type conn struct {
	client *ws.Client
	sess   chat.Session

	mu       sync.Mutex
	messages []string
	agents   []ai.AgentEvent
}

func (r *rig) dial() *conn {
	r.t.Helper()
	srv := ws.NewServer(r.router, nil)
	hs := httptest.NewServer(srv)
	r.t.Cleanup(func() {
		hs.Close()
		srv.Close()
	})
	ctx := context.Background()
	client, err := ws.Dial(ctx, hs.URL, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	c := &conn{client: client}
	r.t.Cleanup(func() { client.Close() })
	sess, err := client.Builder().
		OnMessage(func(text string) {
			c.mu.Lock()
			c.messages = append(c.messages, text)
			c.mu.Unlock()
		}).
		On(ai.EventSubAgent, func(ev chat.Event) {
			var a ai.AgentEvent
			if err := ev.Decode(&a); err != nil {
				r.t.Errorf("SubAgent event %v: %v", ev.Data, err)
			}
			c.mu.Lock()
			c.agents = append(c.agents, a)
			c.mu.Unlock()
		}).
		Connect(ctx, "")
	if err != nil {
		r.t.Fatal(err)
	}
	c.sess = sess
	return c
}

func (c *conn) chat(t *testing.T, text string) string {
	t.Helper()
	if err := c.sess.Chat(context.Background(), text); err != nil {
		t.Fatalf("chat %q: %v", text, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.messages[len(c.messages)-1]
}

// takeAgentEvents returns the SubAgent events received so far and forgets
// them.
func (c *conn) takeAgentEvents() []ai.AgentEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	ev := c.agents
	c.agents = nil
	return ev
}

// quiet drops the logs of the services under test.
var quiet = slog.New(slog.DiscardHandler)

func ids(t testing.TB, s *memory.InMemoryStore) []string {
	t.Helper()
	ids, err := s.IDs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ids
}
