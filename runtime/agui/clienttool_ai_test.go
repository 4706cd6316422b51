package agui_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/agui"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// TestAIClientToolRound: an AI service's client-run tool (ai.Tool.Client)
// over AG-UI: the model's call goes out as a front-end tool call, and the
// tool message of the next run is the result the model is given.
func TestAIClientToolRound(t *testing.T) {
	leaktest.Check(t)
	model := llmtest.NewModel(llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		if res := req.LastToolResults(); len(res) > 0 && req.Messages[len(req.Messages)-1].Role == llms.ChatMessageTypeTool {
			return llmtest.Reply{Text: "tool said: " + res[len(res)-1].Content}, nil
		}
		if req.LastUserText() == "where" {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "locate", Arguments: `{"precision":"city"}`}}}, nil
		}
		return llmtest.Reply{Text: "re: " + req.LastUserText()}, nil
	}), nil)
	svc := ai.NewService("example.com/aguiapp.Assistant", &ai.Config{Model: model, Logger: quietLogger(), ClientToolResultLimit: 64})
	method := &ai.Method{Name: "Ask", Kind: chat.KindChat, Tools: []ai.Tool{{
		Definition: llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: "locate", Description: "the user's location",
			Parameters: json.RawMessage(`{"type":"object","properties":{"precision":{"type":"string"}}}`)}},
		Client: true,
	}}}
	p := chatimpl.NewPackage(pkgPath)
	p.AddRoute(chatimpl.RouteSpec{Name: "ask", Default: true, Handle: func(ctx context.Context) error {
		r, err := svc.Chat(ctx, &ai.Request{Method: method, User: chat.Request(ctx).UserMessage()})
		if err != nil {
			return err
		}
		return chat.SendValue(ctx, r.Content)
	}})
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: quietLogger()}, p)
	if err != nil {
		t.Fatal(err)
	}
	h, err := agui.New(r, &agui.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	a := &app{handler: h, srv: srv}

	evs := a.run(t, input("t1", "r1", "where"))
	checkNesting(t, evs)
	want := []string{"RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"}
	if got := types(evs); !slices.Equal(got, want) {
		t.Fatalf("events:\n got %v\nwant %v", got, want)
	}
	id, _ := evs[1]["toolCallId"].(string)
	if id == "" || evs[1]["toolCallName"] != "locate" || evs[2]["delta"] != `{"precision":"city"}` {
		t.Fatalf("the tool call: %v", evs[1:4])
	}
	// A wrong id: the service refuses it too, the call stays pending.
	evs = a.run(t, toolInput("t1", "r2", id+"x", `{"city":"Lyon"}`, nil))
	if got := types(evs); !slices.Equal(got, []string{"RUN_STARTED", "RUN_ERROR"}) || evs[1]["code"] != "BadRequest" {
		t.Fatalf("a wrong id: %v", evs)
	}
	// A result over the service's limit: refused, the call stays pending.
	evs = a.run(t, toolInput("t1", "r2b", id, strings.Repeat("far ", 40), nil))
	if got := types(evs); !slices.Equal(got, []string{"RUN_STARTED", "RUN_ERROR"}) || evs[1]["code"] != "BadRequest" {
		t.Fatalf("a result too large: %v", evs)
	}
	evs = a.run(t, toolInput("t1", "r3", id, `{"city":"Lyon"}`, nil))
	checkNesting(t, evs)
	if got := texts(evs); !slices.Equal(got, []string{`tool said: {"city":"Lyon"}`}) {
		t.Fatalf("after the result: %v", evs)
	}
	// The front end could not run it.
	evs = a.run(t, input("t1", "r4", "where"))
	id, _ = evs[1]["toolCallId"].(string)
	evs = a.run(t, toolInput("t1", "r5", id, "", map[string]any{"error": "the user refused"}))
	if got := texts(evs); !slices.Equal(got, []string{"tool said: error: the client could not run this call: the user refused"}) {
		t.Fatalf("an error: %v", evs)
	}
}
