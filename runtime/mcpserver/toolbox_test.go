package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/mcpserver"
)

// boxTransports runs a test over each transport with the tool boxes
// offered.
func boxTransports(t *testing.T, test func(t *testing.T, a *app, connect func(user string, copts *mcp.ClientOptions) *mcp.ClientSession)) {
	t.Run("stdio", func(t *testing.T) {
		a := newApp(t, &mcpserver.Options{Principal: chat.User{ID: "alice", Roles: []string{"admin"}}, ToolBoxes: testToolBoxes()})
		test(t, a, func(_ string, copts *mcp.ClientOptions) *mcp.ClientSession {
			cs, _ := a.runInMemory(t, copts)
			return cs
		})
	})
	t.Run("http", func(t *testing.T) {
		a := newApp(t, &mcpserver.Options{Authenticator: headerAuth, ToolBoxes: testToolBoxes()})
		hs := a.serveHTTP(t)
		test(t, a, func(user string, copts *mcp.ClientOptions) *mcp.ClientSession {
			return connectHTTP(t, hs.URL, user, copts)
		})
	})
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// TestToolBoxTools: the tools of a box are listed as <route>.<tool> with
// their generate-time schemas (a client-run tool left out), run on the
// beans of the session's conversation on the route (the route's own
// calls see what they did), refuse arguments their schema does not
// allow, and report a tool's error as a tool error.
func TestToolBoxTools(t *testing.T) {
	boxTransports(t, func(t *testing.T, a *app, connect func(string, *mcp.ClientOptions) *mcp.ClientSession) {
		cs := connect("alice", nil)
		names := toolNames(t, cs)
		for _, want := range []string{"count.add", "count.read", "count.reset", "count.fail", "admin.reveal", "count"} {
			if !slices.Contains(names, want) {
				t.Errorf("%s is not listed: %v", want, names)
			}
		}
		if slices.Contains(names, "count.locate") || len(names) != len(allRoutes)+5 {
			t.Errorf("tools listed: %v", names)
		}
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range res.Tools {
			if tool.Name == "count.add" {
				raw, _ := json.Marshal(tool.InputSchema)
				if !strings.Contains(string(raw), `"required":["by"]`) || !strings.HasPrefix(tool.Description, "Add adds to the count.") {
					t.Errorf("count.add: %s %q", raw, tool.Description)
				}
			}
		}
		if got, isErr := call(t, cs, "count.add", map[string]any{"by": 5}); got != `{"n":5}` || isErr {
			t.Errorf("count.add: %q %v", got, isErr)
		}
		if got, _ := call(t, cs, "count", map[string]any{"userMessage": "hi"}); got != "hi: count is 6" {
			t.Errorf("the route after its tool box's call: %q", got)
		}
		if got, _ := call(t, cs, "count.read", nil); got != "the count is 6" {
			t.Errorf("count.read: %q", got)
		}
		if got, isErr := call(t, cs, "count.add", map[string]any{"by": "five"}); !isErr || !strings.HasPrefix(got, "BadRequest") {
			t.Errorf("wrong arguments: %q %v", got, isErr)
		}
		if got, isErr := call(t, cs, "count.add", map[string]any{}); !isErr || !strings.HasPrefix(got, "BadRequest") {
			t.Errorf("missing arguments: %q %v", got, isErr)
		}
		if got, isErr := call(t, cs, "count.fail", nil); !isErr || got != "error: the count cannot fail today" {
			t.Errorf("a failing tool: %q %v", got, isErr)
		}
		if got, _ := call(t, cs, "count.read", nil); got != "the count is 6" {
			t.Errorf("count.read after refusals: %q", got)
		}
		if got, isErr := call(t, cs, "admin.reveal", nil); got != "revealed to alice" || isErr {
			t.Errorf("admin.reveal as an admin: %q %v", got, isErr)
		}
		// Another session is another conversation.
		other := connect("alice", nil)
		if got, _ := call(t, other, "count.read", nil); got != "the count is 0" {
			t.Errorf("another session: %q", got)
		}
	})
}

// TestToolBoxRoles: a box's tools are listed to, and run for, only the
// principals its route's roles allow.
func TestToolBoxRoles(t *testing.T) {
	a := newApp(t, &mcpserver.Options{Authenticator: headerAuth, ToolBoxes: testToolBoxes()})
	hs := a.serveHTTP(t)
	bob := connectHTTP(t, hs.URL, "bob", nil)
	if names := toolNames(t, bob); slices.Contains(names, "admin.reveal") || !slices.Contains(names, "count.add") {
		t.Errorf("listed to bob: %v", names)
	}
	if got, isErr := call(t, bob, "admin.reveal", nil); !isErr || !strings.HasPrefix(got, "Forbidden") || strings.Contains(got, "revealed") {
		t.Errorf("admin.reveal as bob: %q %v", got, isErr)
	}
	stdio := first(newApp(t, &mcpserver.Options{Principal: chat.User{ID: "guest"}, ToolBoxes: testToolBoxes()}).runInMemory(t, nil))
	if got, isErr := call(t, stdio, "admin.reveal", nil); !isErr || !strings.HasPrefix(got, "Forbidden") {
		t.Errorf("admin.reveal as a guest over stdio: %q %v", got, isErr)
	}
}

// TestToolBoxConfirm: a confirmed tool of a box asks through MCP
// elicitation (during the call on older protocols, through an
// input-required result on 2026-07-28) and runs only when the user
// approves; a client without elicitation is refused clearly.
func TestToolBoxConfirm(t *testing.T) {
	boxTransports(t, func(t *testing.T, a *app, connect func(string, *mcp.ClientOptions) *mcp.ClientSession) {
		answers := []*mcp.ElicitResult{
			{Action: "decline"},
			{Action: "accept", Content: map[string]any{"approve": false, "reason": "keep it"}},
			{Action: "accept", Content: map[string]any{"approve": true}},
		}
		var asked []string
		cs := connect("alice", &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, req.Params.Message)
			res := answers[0]
			answers = answers[1:]
			return res, nil
		}})
		call(t, cs, "count.add", map[string]any{"by": 3})
		for _, want := range []string{"Denied: the user did not confirm the call of count.reset (the user declined)", "Denied: the user did not confirm the call of count.reset (keep it)"} {
			if got, isErr := call(t, cs, "count.reset", nil); got != want || !isErr {
				t.Errorf("got %q (error %v), want %q", got, isErr, want)
			}
		}
		if got, _ := call(t, cs, "count.read", nil); got != "the count is 3" {
			t.Errorf("after denials: %q", got)
		}
		if got, isErr := call(t, cs, "count.reset", nil); got != "done" || isErr {
			t.Errorf("approved: %q %v", got, isErr)
		}
		if got, _ := call(t, cs, "count.read", nil); got != "the count is 0" {
			t.Errorf("after the reset: %q", got)
		}
		if len(asked) != 3 || asked[0] != "Allow the tool count.reset to run with the arguments {}?" {
			t.Errorf("asked %q", asked)
		}
		plain := connect("alice", nil)
		call(t, plain, "count.add", map[string]any{"by": 1})
		if got, isErr := call(t, plain, "count.reset", nil); !isErr || !strings.Contains(got, "does not support elicitation") {
			t.Errorf("without elicitation: %q %v", got, isErr)
		}
		if got, _ := call(t, plain, "count.read", nil); got != "the count is 1" {
			t.Errorf("after the refusal: %q", got)
		}
	})
}

// TestToolBoxNames: tool box names follow MCP's rules and collide with
// nothing; a box of an unknown route is an error.
func TestToolBoxNames(t *testing.T) {
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: quietLogger()}, testPackage(newLedger()))
	if err != nil {
		t.Fatal(err)
	}
	tool := ai.Tool{Name: "ok", Invoke: func(context.Context, string) (any, error) { return nil, nil }}
	bad := tool
	bad.Name = "no spaces"
	for _, c := range []struct {
		boxes []mcpserver.ToolBox
		want  error
	}{
		{[]mcpserver.ToolBox{{Route: "count", Tools: []ai.Tool{bad}}}, mcpserver.ErrInvalidToolName},
		{[]mcpserver.ToolBox{{Route: "count", Tools: []ai.Tool{tool, tool}}}, mcpserver.ErrDuplicateTool},
		{[]mcpserver.ToolBox{{Route: "nowhere", Tools: []ai.Tool{tool}}}, nil},
	} {
		_, err := mcpserver.New(r, &mcpserver.Options{Logger: quietLogger(), ToolBoxes: c.boxes})
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%+v: %v, want %v", c.boxes, err, c.want)
		}
	}
}
