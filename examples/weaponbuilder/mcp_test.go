package main

import (
	"context"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpCall calls the menu tool with the player's text and returns the text
// of the result.
func mcpCall(t *testing.T, cs *mcp.ClientSession, text string) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "menu", Arguments: map[string]any{"userMessage": text}})
	if err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n"), res.IsError
}

// TestMCPServesTheArmorer: -mcp ADDR serves the routes as MCP tools over
// streamable HTTP; one session is one conversation that follows its
// hand-offs (the menu hands over to the weapon builder and back), the
// confirmed deleteItem asks the player through elicitation, a client
// without elicitation is refused, and ending the sessions ends their
// conversations.
func TestMCPServesTheArmorer(t *testing.T) {
	a := newOfflineApp(t)
	s, err := newMCPServer(a, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveMCPHTTP(ctx, s, ln) }()
	url := "http://" + ln.Addr().String() + mcpPath

	var asked []string
	player, err := mcp.NewClient(&mcp.Implementation{Name: "player", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		},
	}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := player.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != "armor,enchant,menu,weapon,weapon.cancel,weapon.enchant,weapon.finish,weapon.setDamage,weapon.setKind,weapon.setName,weapon.showWeapon" {
		t.Errorf("tools %v", names)
	}
	// The workbench's tools, called directly, on the session's weapon
	// conversation.
	for _, c := range []struct {
		tool string
		args map[string]any
	}{{"weapon.setKind", map[string]any{"kind": "axe"}}, {"weapon.setName", map[string]any{"name": "Dawn"}}} {
		if res, err := player.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args}); err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", c.tool, err, res)
		}
	}
	if res, err := player.CallTool(context.Background(), &mcp.CallToolParams{Name: "weapon.showWeapon", Arguments: map[string]any{}}); err != nil || res.IsError ||
		len(res.Content) != 1 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"name":"Dawn"`) || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"kind":"axe"`) {
		t.Fatalf("weapon.showWeapon: %v %+v", err, res)
	}
	if res, err := player.CallTool(context.Background(), &mcp.CallToolParams{Name: "weapon.setKind", Arguments: map[string]any{"kind": "spoon"}}); err != nil || !res.IsError {
		t.Fatalf("weapon.setKind spoon: %v %+v", err, res)
	}
	for _, text := range []string{"build a sword", "call it Nightfall", "make it deal 30 damage", "finish"} {
		if got, isErr := mcpCall(t, player, text); isErr {
			t.Fatalf("%q: %s", text, got)
		}
	}
	if w := a.armory.Weapons(); len(w) != 1 || w[0].Name != "Nightfall" {
		t.Fatalf("armory %+v", w)
	}

	// Another session, whose client cannot confirm: refused, and
	// Nightfall stays.
	other, err := mcp.NewClient(&mcp.Implementation{Name: "other", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, isErr := mcpCall(t, other, "delete Nightfall")
	if !isErr || !strings.Contains(got, "does not support elicitation") {
		t.Errorf("without elicitation: %q (error %v)", got, isErr)
	}
	if w := a.armory.Weapons(); len(w) != 1 {
		t.Fatalf("the refused deletion deleted: %+v", w)
	}

	got, isErr = mcpCall(t, player, "delete Nightfall")
	if isErr || !strings.Contains(got, "Done: Nightfall is gone from the armory") {
		t.Errorf("confirmed deletion: %q (error %v)", got, isErr)
	}
	if len(asked) != 1 || !strings.Contains(asked[0], `deleteItem`) || !strings.Contains(asked[0], `"item":"Nightfall"`) {
		t.Errorf("asked %q", asked)
	}
	if w := a.armory.Weapons(); len(w) != 0 {
		t.Errorf("armory after the deletion %+v", w)
	}
	if st := a.router.Stats(); st.Conversations != 3 {
		t.Errorf("stats %+v, want the two sessions' conversations and the player's weapon one", st)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	cancel() // the server ends the player's session too
	if err := <-done; err != nil {
		t.Fatalf("serveMCPHTTP: %v", err)
	}
	_ = player.Close()
	if st := a.router.Stats(); st.Conversations != 0 || st.Scopes != 0 {
		t.Errorf("stats after the server ended %+v", st)
	}
}

// TestMCPStdioProgram: the program run with -mcp stdio is an MCP server
// over its standard input and output (nothing else is written there): an
// MCP client runs it, talks to the armorer across calls, and when the
// client closes, the program exits 0.
func TestMCPStdioProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the program")
	}
	bin := buildProgram(t, t.TempDir())
	cmd := exec.Command(bin, "-mcp", "stdio")
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=") // the offline armorer
	var stderr strings.Builder
	cmd.Stderr = &lockedWriter{w: &stderr}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "player", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, stderr.String())
	}
	if got := cs.InitializeResult().ServerInfo.Name; got != "weaponbuilder" {
		t.Errorf("server %q", got)
	}
	for _, text := range []string{"build a sword", "call it Nightfall"} {
		if got, isErr := mcpCall(t, cs, text); isErr || got == "" {
			t.Fatalf("%q: %q (error %v)\nstderr:\n%s", text, got, isErr, stderr.String())
		}
	}
	if err := cs.Close(); err != nil {
		t.Errorf("closing: %v", err)
	}
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("the program: %v\nstderr:\n%s", cmd.ProcessState, stderr.String())
	}
}
