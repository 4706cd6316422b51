package jsroutes_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/internal/e2e"
	"github.com/chatscopes/chatgen/internal/tsctest"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/jsroutes"
)

// quietLogger drops the logs of the routers the tests build.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// testRouter returns a router with the routes of runtime/ws's test
// router: internal/e2e's typed routes (menu is the default) and, registered
// by hand without a description, the test routes.
func testRouter(t testing.TB) *chat.Router {
	t.Helper()
	p := chatimpl.NewPackage("github.com/chatscopes/chatgen/runtime/ws/wstest")
	for _, name := range []string{"gate", "thinkgate", "flood", "whoami", "events", "unencodable"} {
		p.AddRoute(chatimpl.RouteSpec{Name: name, Handle: func(context.Context) error { return nil }})
	}
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: quietLogger()}, e2e.Register(), p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// readClient reads a file of the JavaScript client, which runtime/ws
// serves beside the routes module.
func readClient(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "ws", "js", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// awkwardManifest has what a routes module must survive: route names that
// are reserved words, the module's own exports, globals it uses,
// "__proto__" and non-identifiers; event types whose handler names clash
// or are not identifiers; type names that are TypeScript's own or the
// declarations' helpers.
func awkwardManifest(t *testing.T) *chatimpl.Manifest {
	t.Helper()
	p := chatimpl.NewPackage("example.com/awkward")
	for _, name := range []string{"menu", "public", "client", "Object", "__proto__", "weird-name", "connect", "__cs_route", "plain", "string", "any", "undefined"} {
		p.AddRoute(chatimpl.RouteSpec{Name: name, Default: name == "menu", Handle: func(context.Context) error { return nil }})
	}
	p.Describe(&chatimpl.Manifest{
		Routes: []chatimpl.RouteInfo{
			{Name: "menu", Params: []chatimpl.ParamInfo{{Name: "userMessage", Schema: `{"type":"string"}`}, {Name: "kind", Schema: `{"$ref":"#/$defs/number"}`}},
				Events: []chatimpl.EventInfo{{Type: "Message", Schema: `{"type":"string"}`}, {Type: "weapon", Schema: `{"$ref":"#/$defs/Weapon"}`}}},
			{Name: "public", Streaming: true, Events: []chatimpl.EventInfo{{Type: "Stream", Schema: `{"type":"string"}`},
				{Type: "ClientTool", Schema: `{"type":"object","properties":{"id":{"type":"string"},"tool":{"enum":["locate"]},"arguments":{"type":"object","properties":{"precision":{"type":"string"}},"required":["precision"],"additionalProperties":false},"callId":{"type":"string"},"deadline":{"type":"string"}},"required":["id","tool","arguments","callId"]}`},
				{Type: "ClientTool", Schema: `{"type":"object","properties":{"id":{"type":"string"},"tool":{"enum":["pick-file"]},"arguments":{"type":"object","properties":{"accept":{"type":"array","items":{"type":"string"}}},"required":["accept"],"additionalProperties":false},"callId":{"type":"string"}},"required":["id","tool","arguments","callId"]}`}}},
			{Name: "client"}, {Name: "Object"}, {Name: "__proto__"}, {Name: "connect"}, {Name: "__cs_route"},
			{Name: "weird-name", Params: []chatimpl.ParamInfo{{Name: "odd key", Schema: `{"type":"array","items":{"anyOf":[{"type":"integer"},{"type":"null"}]}}`}}},
		},
		Events: []chatimpl.EventInfo{
			{Type: "weapon", Schema: `{"$ref":"#/$defs/Weapon"}`},
			{Type: "Weapon", Schema: `{"$ref":"#/$defs/ChatEvents"}`},
			{Type: "odd-type", Schema: `{"type":"object","properties":{"a b":{"type":"boolean"},"c":{"type":"object","additionalProperties":{"type":"number"}}},"required":["c"]}`},
		},
		Types: []chatimpl.TypeInfo{
			{Name: "ChatEvents", Schema: `{"type":"object","properties":{"x":{"type":"string","description":"A comment */ that ends early."}},"required":["x"]}`},
			{Name: "Weapon", Schema: `{"type":"object","properties":{"name":{"type":"string"},"at":{"type":"string","format":"date-time"},"self":{"anyOf":[{"$ref":"#/$defs/Weapon"},{"type":"null"}]}},"required":["name","self"],"description":"Weapon is recursive."}`},
			{Name: "number", Schema: `{"type":"integer","enum":[1,2,3]}`},
		},
	})
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: quietLogger()}, p)
	if err != nil {
		t.Fatal(err)
	}
	return r.Manifest()
}

func TestModuleNames(t *testing.T) {
	m := awkwardManifest(t)
	mod := string(jsroutes.Module(m, "./chatscopes.mjs", "../routes"))
	dts := string(jsroutes.Declarations(m))
	if again := string(jsroutes.Module(awkwardManifest(t), "./chatscopes.mjs", "../routes")); again != mod {
		t.Error("the module differs from one build to the next")
	}
	if again := string(jsroutes.Declarations(awkwardManifest(t))); again != dts {
		t.Error("the declarations differ from one build to the next")
	}
	for _, want := range []string{
		`export const defaultRoute = routes["menu"];`,
		`export const connect = routes["connect"];`,
		`export const plain = routes["plain"];`,
		// Quarkus exports these too: they are names, not reserved words.
		`export const string = routes["string"];`,
		`export const any = routes["any"];`,
		`["__proto__"]: __cs_route("__proto__", false, [], []),`,
		`"weird-name": __cs_route("weird-name", false, ["odd key"], []),`,
		`"public": __cs_route("public", true, [], ["Stream", "ClientTool"]),`,
		`        if (key === "clientTools") {`,
		`onMessage: "Message",`,
		`onSources: "Sources",`,
		`onRetract: "Retract",`,
	} {
		if !strings.Contains(mod, want) {
			t.Errorf("the module lacks %s", want)
		}
	}
	for _, bad := range []string{"export const undefined", "export const public", "export const client = routes", "export const Object", "export const __cs_route", "onWeapon", "onOdd"} {
		if strings.Contains(mod, bad) {
			t.Errorf("the module has %s", bad)
		}
	}
	for _, want := range []string{
		"export interface ChatEvents_ {",
		"export type number_ = 1 | 2 | 3;",
		"    /** A comment *\u2215 that ends early. */",
		"    self: Weapon | null;",
		"    /** A time, in RFC 3339 format. */\n    at?: string;",
		`    weapon: Weapon;`,
		`    Weapon: ChatEvents_;`,
		`    "odd-type": { "a b"?: boolean; c: Record<string, number>; };`,
		`    readonly menu: ChatRoute<"menu", { userMessage?: string; kind?: number_; }>;`,
		`    readonly "weird-name": ChatRoute<"weird-name", { "odd key"?: (number | null)[]; }>;`,
		`    readonly client: ChatRoute<"client", Record<string, never>>;`,
		`export declare const defaultRoute: ChatRoutes["menu"];`,
		"    Object: unknown;",
		"    Sources: { query: string; sources: { id: string; title?: string; source?: string; score: number }[] };",
		`    Retract: { reason: "rewrite" | "reprompt" | "fail" | "fatal" };`,
		"    Agent: { name: string; from: string; back?: boolean };",
		`    onAgent?: (data: ChatEvents["Agent"], frame: __cs_Frame) => void;`,
		`    Plan: { name: string; description: string; expected_outcome?: string; state: "in_progress" | "done" | "abandoned"; outcome?: string; revision: number; subtasks: { name: string; description?: string; expected_outcome?: string; state: "todo" | "in_progress" | "done" | "abandoned"; outcome?: string }[] };`,
		`    onPlan?: (data: ChatEvents["Plan"], frame: __cs_Frame) => void;`,
		`    SubAgent: { agent: string; session?: string; type: "Thinking" | "Stream" | "Text" | "ToolCall" | "ToolResult"; text?: string; tool?: string; id?: string; arguments?: string; failed?: boolean };`,
		`    onSubAgent?: (data: ChatEvents["SubAgent"], frame: __cs_Frame) => void;`,
		`        locate?: __cs_ClientToolFunction<{ precision: string; }>;`,
		`    ClientTool: { id: string; tool: "locate"; arguments: { precision: string; }; callId: string; deadline?: string; } | { id: string; tool: "pick-file"; arguments: { accept: string[]; }; callId: string; };`,
		`    onMessage?: (data: ChatEvents["Message"], frame: __cs_Frame) => void;`,
		"    defaultHandler?: (type: string, data: unknown, frame: __cs_Frame) => void;",
	} {
		if !strings.Contains(dts, want) {
			t.Errorf("the declarations lack %s", want)
		}
	}
	if strings.Contains(dts, "onWeapon") {
		t.Error("weapon and Weapon both have the handler onWeapon")
	}
}

// TestSubAgentEventTyped: the SubAgent events sub-agents send are a
// built-in event of every routes module, typed with each field of
// ai.AgentEvent's JSON, with their onSubAgent handler.
func TestSubAgentEventTyped(t *testing.T) {
	dts := string(jsroutes.Declarations(testRouter(t).Manifest()))
	prefix := "    " + ai.EventSubAgent + ": { "
	i := strings.Index(dts, prefix)
	if i < 0 {
		t.Fatalf("the declarations lack the %s event:\n%s", ai.EventSubAgent, dts)
	}
	typ := dts[i+len(prefix):]
	typ = typ[:strings.Index(typ, "\n")]
	b, err := json.Marshal(ai.AgentEvent{Agent: "a", Session: "s", Type: "ToolResult", Text: "t", Tool: "x", ID: "1", Arguments: "{}", Failed: true})
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	for name := range fields {
		if !strings.Contains(typ, " "+name+": ") && !strings.Contains(typ, " "+name+"?: ") && !strings.HasPrefix(typ, name+": ") {
			t.Errorf("the SubAgent type %q lacks the field %s", typ, name)
		}
	}
	if want := `    on` + ai.EventSubAgent + `?: (data: ChatEvents["` + ai.EventSubAgent + `"], frame: __cs_Frame) => void;`; !strings.Contains(dts, want) {
		t.Errorf("the declarations lack %s", want)
	}
}

// TestModuleRuns imports the module in node: its exports and
// routes are what the manifest says, and "__proto__" is a route.
func TestModuleRuns(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	dir := t.TempDir()
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("chatscopes.mjs", readClient(t, "chatscopes.mjs"))
	write("routes.mjs", jsroutes.Module(awkwardManifest(t), "./chatscopes.mjs", "../routes"))
	write("check.mjs", []byte(`
import * as m from "./routes.mjs";
const out = {
    exports: Object.keys(m).sort(),
    routes: Object.keys(m.routes).sort(),
    proto: m.routes["__proto__"].name + " " + (Object.getPrototypeOf(m.routes) === Object.prototype),
    def: m.defaultRoute.name,
    menu: m.routes.menu.params.join(",") + " " + m.routes.menu.events.join(","),
    frozen: Object.isFrozen(m.routes) && Object.isFrozen(m.routes.menu.params),
};
let refused = "";
try {
    await m.routes.menu.connect({ onNothing() {} });
} catch (e) {
    refused = e.message;
}
out.refused = refused.includes("onNothing is not a handler");
console.log(JSON.stringify(out));
`))
	cmd := exec.Command(node, "check.mjs")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var got struct {
		Exports, Routes []string
		Proto, Def      string
		Menu            string
		Frozen, Refused bool
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	wantExports := "__proto__ any client connect defaultRoute endpoint menu plain routes string"
	if strings.Join(got.Exports, " ") != wantExports {
		t.Errorf("exports %v, want %s", got.Exports, wantExports)
	}
	if len(got.Routes) != 12 || got.Proto != "__proto__ true" || got.Def != "menu" || got.Menu != "userMessage,kind Message,weapon" || !got.Frozen || !got.Refused {
		t.Errorf("%s", out)
	}
}

// TestDeclarationsCompile checks that the declarations of the test
// router (typed routes of internal/e2e, routes registered by hand) and of
// the awkward manifest are valid TypeScript, usable with tsc --strict.
func TestDeclarationsCompile(t *testing.T) {
	files := map[string]string{
		"routes.d.ts":     string(jsroutes.Declarations(testRouter(t).Manifest())),
		"awkward.d.ts":    string(jsroutes.Declarations(awkwardManifest(t))),
		"chatscopes.d.ts": string(readClient(t, "chatscopes.d.ts")),
		"use.ts": `import { routes, client } from "./routes.js";
import * as awkward from "./awkward.js";
import { ChatScopesClient, type ConnectionState } from "./chatscopes.js";
const rc = new ChatScopesClient({ reconnect: { minDelay: 50, maxDelay: 5000 } })
    .onConnectionState((state: ConnectionState, detail) => console.log(state, detail?.code))
    .autoReconnect(true);
console.log(rc.state === "reconnecting");
rc.builder().sourcesHandler((s, frame) => console.log(s.query, s.sources[0]?.score.toFixed(2), frame.type));
rc.builder().retractHandler((r, frame) => console.log(r.reason === "rewrite", frame.type));
rc.builder()
    .agentHandler((a, frame) => console.log(a.name, a.from, a.back === true, frame.type))
    .planHandler((p) => { for (const st of p.subtasks) { const s: "todo" | "in_progress" | "done" | "abandoned" = st.state; console.log(p.revision + 1, st.name, s, st.outcome ?? p.outcome); } })
    .subAgentHandler((s) => { if (s.type === "ToolCall") console.log(s.agent, s.tool, s.id, s.arguments); else if (s.type === "ToolResult") console.log(s.failed === true); else console.log(s.text); });
const gate = await routes.gate.connect({
    onMessage(text) { console.log(text.length); },
    onSources(data) { for (const s of data.sources) console.log(data.query, s.id, s.title ?? s.source, s.score.toFixed(2)); },
    onRetract(data) { const r: "rewrite" | "reprompt" | "fail" | "fatal" = data.reason; console.log(r); },
    onAgent(data) { console.log(data.name, data.from, data.back); },
    onPlan(data) { const st: "in_progress" | "done" | "abandoned" = data.state; console.log(st, data.subtasks.length); },
    onSubAgent(data) { const t: "Thinking" | "Stream" | "Text" | "ToolCall" | "ToolResult" = data.type; console.log(data.agent, t, data.session ?? "", data.failed); },
});
await gate.send({ userMessage: "anything", goes: 1 });
const menu = await awkward.defaultRoute.connect({ onMessage(text) { console.log(text); } });
await menu.send({ kind: 2 });
await awkward.routes["weird-name"].connect().then((s) => s.send({ "odd key": [1, null] }));
await awkward.routes.__proto__.connect();
const pub = await awkward.routes.public.connect({
    clientTools: {
        locate: async (args, { signal, call }) => ({ city: args.precision.toUpperCase(), aborted: signal.aborted, at: call.deadline?.getTime() }),
        "pick-file": (args) => args.accept.join(","),
    },
    onClientTool(data) { if (data.tool === "locate") { const p: string = data.arguments.precision; console.log(p); } },
});
rc.builder().clientToolHandler((call) => { void call.respond({ ok: true }); void call.fail("no"); void call.cancel(); });
rc.builder().confirmHandler((c) => { void c.cancel(); });
console.log(pub.conversationId);
const w: awkward.Weapon = { name: "w", self: { name: "v", self: null } };
const e: awkward.ChatEvents_ = { x: "" };
awkward.client.close();
console.log(w, e, client.sessions.size);
`,
	}
	res := tsctest.Check(t, files, nil)
	if !res.OK {
		t.Fatalf("tsc:\n%s", res.Output)
	}
}

// BenchmarkModule measures what a server does once, on the first
// request for the routes module: merge the manifest and write the module
// and its declarations (the test router: internal/e2e's typed routes and
// the hand-registered ones).
func BenchmarkModule(b *testing.B) {
	router := testRouter(b)
	b.ReportAllocs()
	for b.Loop() {
		m := router.Manifest()
		_ = jsroutes.Module(m, "./chatscopes.mjs", "../routes")
		_ = jsroutes.Declarations(m)
	}
}
