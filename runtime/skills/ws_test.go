package skills_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/skills"
	"github.com/chatscopes/chatgen/runtime/ws"
)

// calls are the model's scripted tool calls, by what the user typed; a
// request that ends with tool results is answered with their text.
var calls = map[string][]llmtest.ToolCall{
	"quench it":           {{Name: "quench", Arguments: `{}`}},
	"temper it":           {{Name: "temper", Arguments: `{}`}},
	"polish it":           {{Name: "polish", Arguments: `{}`}},
	"load forging":        {{Name: skills.ToolLoad, Arguments: `{"name":"forging"}`}},
	"load smelting":       {{Name: skills.ToolLoad, Arguments: `{"name":"smelting"}`}},
	"read steels":         {{Name: skills.ToolReadResource, Arguments: `{"skill":"forging","path":"refs/steels.md"}`}},
	"read fletching refs": {{Name: skills.ToolReadResource, Arguments: `{"skill":"fletching","path":"feathers.md"}`}},
	"read traversal":      {{Name: skills.ToolReadResource, Arguments: `{"skill":"forging","path":"../fletching/SKILL.md"}`}},
	"read absolute":       {{Name: skills.ToolReadResource, Arguments: `{"skill":"forging","path":"/etc/passwd"}`}},
	"read big":            {{Name: skills.ToolReadResource, Arguments: `{"skill":"forging","path":"big.txt"}`}},
}

func script() llmtest.Script {
	return llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		if res := req.LastToolResults(); len(res) > 0 {
			return llmtest.Reply{Text: "tool said: " + res[0].Content}, nil
		}
		if c, ok := calls[req.UserTyped()]; ok {
			return llmtest.Reply{ToolCalls: c}, nil
		}
		return llmtest.Reply{Text: "ok: " + req.UserTyped()}, nil
	})
}

func testSet(t *testing.T) *skills.Set {
	t.Helper()
	set, err := skills.Load(t.Context(), fstest.MapFS{
		"forging/SKILL.md":       {Data: []byte(forging)},
		"forging/refs/steels.md": {Data: []byte("Use 1095 for knives.")},
		"forging/big.txt":        {Data: []byte(strings.Repeat("é", 100))},
		"fletching/SKILL.md":     {Data: []byte("---\nname: fletching\ndescription: Fletch arrows.\n---\nUse goose feathers.")},
		"fletching/feathers.md":  {Data: []byte("goose")},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

type node struct {
	llm    *llmtest.Server
	skills *skills.Toolbox
	url    string
	srv    *ws.Server

	mu                         sync.Mutex
	quenched, tempered, polish int
}

// count returns a tool that counts its calls in *c and answers answer.
func (n *node) count(name, answer string, c *int) ai.Tool {
	return ai.Tool{
		Name:        name,
		Description: "Does " + name + " to the blade.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
		Invoke: func(context.Context, string) (any, error) {
			n.mu.Lock()
			defer n.mu.Unlock()
			*c++
			return answer, nil
		},
	}
}

func newNode(t *testing.T, store *chat.InMemoryConversationStore) *node {
	t.Helper()
	n := &node{llm: llmtest.NewServer(script(), nil)}
	t.Cleanup(n.llm.Close)
	tb, err := skills.New(testSet(t), &skills.Options{
		MaxResourceBytes: 51,
		Gated:            map[string][]ai.Tool{"forging": {n.count("quench", "hiss", &n.quenched)}},
		GatedNames:       map[string][]string{"forging": {"temper"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	n.skills = tb
	model, err := n.llm.Client()
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ai.Config{Model: model, Logger: quiet(), ToolSources: []ai.ToolSource{tb}, ToolHooks: []ai.ToolHook{tb.ToolHook()}}
	cfg.Memory = memory.NewManager(&memory.ManagerOptions{Store: chatstoretest.InMemoryMemories(store), Policy: memory.Window(50, nil)})
	svc := ai.NewService("example.com/app.Smith", cfg)
	method := &ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You are a weaponsmith.",
		Tools: []ai.Tool{n.count("temper", "tempered", &n.tempered), n.count("polish", "shiny", &n.polish)}}
	svc.AddMethods(method)
	p := chatimpl.NewPackage("example.com/app")
	p.AddRoute(chatimpl.RouteSpec{Name: "smith", Default: true, Handle: func(ctx context.Context) error {
		r, err := svc.Chat(ctx, &ai.Request{Method: method, User: chat.Request(ctx).UserMessage()})
		if err != nil {
			return err
		}
		return chat.SendValue(ctx, r.Content)
	}})
	router, err := chat.NewRouter(&chat.RouterOptions{Store: store, Logger: quiet()}, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Check(); err != nil {
		t.Fatal(err)
	}
	srv := ws.NewServer(router, &ws.ServerOptions{Logger: quiet()})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
	})
	n.url, n.srv = hs.URL, srv
	return n
}

func dial(t *testing.T, url string) *ws.Client {
	t.Helper()
	c, err := ws.Dial(t.Context(), url, &ws.DialOptions{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// texts is what a session receives.
type texts struct {
	mu  sync.Mutex
	got []string
}

func (x *texts) builder(c *ws.Client) *chat.SessionBuilder {
	return c.Builder().OnMessage(func(text string) {
		x.mu.Lock()
		defer x.mu.Unlock()
		x.got = append(x.got, text)
	})
}

func (x *texts) all() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]string(nil), x.got...)
}

func chatAll(t *testing.T, s chat.Session, msgs ...string) {
	t.Helper()
	for _, m := range msgs {
		if err := s.Chat(t.Context(), m); err != nil {
			t.Fatalf("chat %q: %v", m, err)
		}
	}
}

func toolsBlock(t *testing.T, req llmtest.Request) string {
	t.Helper()
	var v map[string]json.RawMessage
	if err := json.Unmarshal(req.Body, &v); err != nil {
		t.Fatal(err)
	}
	return string(v["tools"])
}

// Through the websocket client and langchaingo's OpenAI client against
// llmtest: the skills' names and descriptions are in the tools block,
// which is byte-identical in every request, loading a skill included; a
// gated tool (the source's own, or a method's through the tool hook) is
// refused until its skill is loaded, then runs; an ungated one runs; load_skill
// returns the body and lists the resources; read_skill_resource returns
// one, bounded, and refuses traversal, unknown paths and unloaded skills.
func TestSkillsThroughWebsocket(t *testing.T) {
	n := newNode(t, chat.NewInMemoryConversationStore(nil))
	rec := &texts{}
	s, err := rec.builder(dial(t, n.url)).Connect(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	chatAll(t, s, "quench it", "read steels", "load smelting", "temper it", "polish it", "load forging", "quench it", "read steels",
		"read traversal", "read absolute", "read fletching refs", "read big", "temper it")
	got := rec.all()
	for i, want := range []string{
		`quench needs the skill "forging": load it with load_skill first`,
		`load skill "forging" with load_skill before reading its resources`,
		`unknown skill "smelting": the skills are fletching, forging`,
		`temper needs the skill "forging": load it with load_skill first`,
		"tool said: shiny",
		"Skill \"forging\" is loaded.\n\n# Forging\n\nHeat the steel to orange.\n\nResources (read one with read_skill_resource):\n- big.txt (200 bytes)\n- refs/steels.md (20 bytes)",
		"tool said: hiss",
		"tool said: Use 1095 for knives.",
		`path "../fletching/SKILL.md" is not the path of a resource`,
		`path "/etc/passwd" is not the path of a resource`,
		`load skill "fletching" with load_skill before reading its resources`,
		"tool said: " + strings.Repeat("é", 25) + "\n[cut: the first 50 of 200 bytes]",
		"tool said: tempered",
	} {
		if i >= len(got) || !strings.Contains(got[i], want) {
			t.Fatalf("answer %d: %q, want it to hold %q (all: %q)", i, got, want, got)
		}
	}
	if n.quenched != 1 || n.tempered != 1 || n.polish != 1 {
		t.Fatalf("quench ran %d times, temper %d, polish %d: want 1 each (the gated ones after the skill was loaded)", n.quenched, n.tempered, n.polish)
	}
	reqs := n.llm.Requests()
	tools := toolsBlock(t, reqs[0])
	for _, want := range []string{"forging: Forge a blade. Use when the user wants a sword or a knife.", "fletching: Fletch arrows.", `"quench"`, `Needs the skill \"forging\"`} {
		if !strings.Contains(tools, want) {
			t.Fatalf("the tools block lacks %q:\n%s", want, tools)
		}
	}
	for _, r := range reqs[1:] {
		if got := toolsBlock(t, r); got != tools {
			t.Fatalf("request %d: the tools block changed:\n%s\nwas\n%s", r.Index, got, tools)
		}
	}
	// The system message is the method's, unchanged.
	for _, r := range reqs {
		if sys := r.Messages[0]; len(sys.Parts) == 0 || !strings.Contains(string(mustJSON(t, sys.Parts)), "You are a weaponsmith.") {
			t.Fatalf("request %d: system %+v", r.Index, sys)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A loaded skill is part of the conversation's durable state: resumed on
// another node, its gated tool runs and its resources read at once.
func TestLoadedSkillDurableAcrossNodes(t *testing.T) {
	ctx := t.Context()
	store := chat.NewInMemoryConversationStore(nil)
	a, b := newNode(t, store), newNode(t, store)
	c := dial(t, a.url)
	s, err := (&texts{}).builder(c).Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	chatAll(t, s, "load forging")
	if err := c.Detach(); err != nil {
		t.Fatal(err)
	}
	if err := a.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	rec := &texts{}
	s2, err := rec.builder(dial(t, b.url)).Resume(ctx, s.ConversationID(), s.ResumeToken())
	if err != nil {
		t.Fatal(err)
	}
	chatAll(t, s2, "quench it", "read steels")
	got := rec.all()
	if len(got) != 2 || got[0] != "tool said: hiss" || got[1] != "tool said: Use 1095 for knives." {
		t.Fatalf("node b answered %q", got)
	}
	if b.quenched != 1 {
		t.Fatalf("node b quenched %d times", b.quenched)
	}
}

// Loading is per conversation: another conversation has nothing loaded.
func TestLoadedPerConversation(t *testing.T) {
	n := newNode(t, chat.NewInMemoryConversationStore(nil))
	c := dial(t, n.url)
	s1, err := (&texts{}).builder(c).Connect(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	chatAll(t, s1, "load forging")
	rec := &texts{}
	s2, err := rec.builder(dial(t, n.url)).Connect(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	chatAll(t, s2, "quench it")
	if got := rec.all(); len(got) != 1 || !strings.Contains(got[0], "needs the skill") {
		t.Fatalf("the other conversation got %q", got)
	}
}
