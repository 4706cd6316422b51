//go:build unix

package ws

import (
	"context"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/browsertest"
	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/agent"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/plan"
)

// agentPage uses the ES module client's agentHandler and planHandler: it
// shows which agent answers and the plan it works through.
const agentPage = `<!DOCTYPE html>
<html><body><script type="module">
import { ChatScopesClient } from "/_chat/javascript/chatscopes.js";
window.testResult = (async () => {
    const log = [];
    const client = new ChatScopesClient();
    await client.open("ws://" + location.host + "/_chat/routes");
    const session = await client.builder()
        .agentHandler((a, frame) => log.push(frame.type + " " + a.from + " -> " + a.name + (a.back ? " (back)" : "")))
        .planHandler((p, frame) => log.push(frame.type + " " + p.name + " r" + p.revision + " " + p.state + ": " +
            p.subtasks.map((s) => s.name + "=" + s.state + (s.outcome ? " (" + s.outcome + ")" : "")).join(", ")))
        .messageHandler((m) => log.push("message " + m))
        .errorHandler((m) => log.push("error " + m))
        .connect("desk");
    await session.chat("plan the crossbow build");
    await session.chat("start");
    await session.chat("finish the stave");
    await client.close();
    return log;
})().then((log) => ({ ok: true, log }), (e) => ({ ok: false, error: String(e && e.stack || e) }));
</script></body></html>`

// agentServer starts a router whose desk route hands the conversation off
// to the smith agent, an AI service with the plan tool box whose scripted
// model makes and works through a plan.
func agentServer(t *testing.T) *testServer {
	t.Helper()
	calls := map[string][]llmtest.ToolCall{
		"plan the crossbow build": {{Name: plan.ToolCreate, Arguments: `{"name":"Crossbow","description":"Build a crossbow","subtasks":[{"name":"Pick a stave"},{"name":"String it"}]}`}},
		"start":                   {{Name: plan.ToolUpdateState, Arguments: `{"subtask_idx":0,"state":"in_progress"}`}},
		"finish the stave":        {{Name: plan.ToolFinishTask, Arguments: `{"subtask_idx":0,"subtask_outcome":"yew"}`}},
	}
	llm := llmtest.NewServer(llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		if len(req.LastToolResults()) > 0 {
			return llmtest.Reply{Text: "done: " + req.UserTyped()}, nil
		}
		return llmtest.Reply{ToolCalls: calls[req.UserTyped()]}, nil
	}), nil)
	t.Cleanup(llm.Close)
	model, err := llm.Client()
	if err != nil {
		t.Fatal(err)
	}
	store := chat.NewInMemoryConversationStore(nil)
	handoffs := agent.New(nil)
	svc := ai.NewService("example.com/app.Smith", &ai.Config{
		Model: model, Logger: quietLogger(),
		Memory:      memory.NewManager(&memory.ManagerOptions{Store: chatstoretest.InMemoryMemories(store), Policy: memory.Window(50, nil)}),
		ToolSources: []ai.ToolSource{plan.New(&plan.Options{Logger: quietLogger()})},
		ModelHooks:  []ai.ModelHook{handoffs.ModelHook()},
	})
	method := &ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You are a weaponsmith."}
	svc.AddMethods(method)
	p := chatimpl.NewPackage("example.com/app")
	p.AddRoute(chatimpl.RouteSpec{Name: "desk", Default: true, Handle: func(ctx context.Context) error {
		return handoffs.HandOff(ctx, "smith", nil)
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "smith", Handle: func(ctx context.Context) error {
		r, err := svc.Chat(ctx, &ai.Request{Method: method, User: chat.Request(ctx).UserMessage()})
		if err != nil {
			return err
		}
		return chat.SendValue(ctx, r.Content)
	}})
	router, err := chat.NewRouter(&chat.RouterOptions{Store: store, Logger: quietLogger()}, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Check(); err != nil {
		t.Fatal(err)
	}
	return startServerFor(t, router, nil, nil)
}

// TestBrowserAgentAndPlanHandlers: a page's agentHandler sees the
// hand-off from desk to smith, and its planHandler each revision of the
// plan smith's model makes with the plan tool box.
func TestBrowserAgentAndPlanHandlers(t *testing.T) {
	leaktest.Check(t)
	b := browsertest.Start(t)
	ts := agentServer(t)
	hs := servePages(t, ts.Server, map[string]string{"/agent.html": agentPage})
	checkLog(t, runPageLog(t, b, hs.URL+"/agent.html", 20*time.Second), []string{
		"Agent desk -> smith",
		"Plan Crossbow r1 in_progress: Pick a stave=todo, String it=todo",
		"message done: plan the crossbow build",
		"Plan Crossbow r2 in_progress: Pick a stave=in_progress, String it=todo",
		"message done: start",
		"Plan Crossbow r3 in_progress: Pick a stave=done (yew), String it=todo",
		"message done: finish the stave",
	})
}
