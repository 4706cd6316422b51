package jsroutes

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// What the module and its declarations read of the manifest: the event
// types the routes send (with the handlers named after them), the default
// route and the names the routes are exported as.

// builtinEvents are the event types every route may send, with their data.
// Object events carry any value a route sends (ResponseChannel.Object, or
// Send of a type without an event type of its own), whatever its results
// are: their data is unknown.
var builtinEvents = map[string]string{
	protocol.EventAgent:    "{ name: string; from: string; back?: boolean }",
	protocol.EventConsole:  "string",
	protocol.EventError:    "string",
	protocol.EventMessage:  "string",
	protocol.EventObject:   "unknown",
	protocol.EventPlan:     planType,
	protocol.EventRetract:  `{ reason: "rewrite" | "reprompt" | "fail" | "fatal" }`,
	protocol.EventSources:  "{ query: string; sources: { id: string; title?: string; source?: string; score: number }[] }",
	protocol.EventStream:   "string",
	protocol.EventThinking: "string",
	eventSubAgent:          subAgentType,
}

// eventSubAgent is runtime/ai.EventSubAgent (this package does not import
// the AI runtime).
const eventSubAgent = "SubAgent"

// subAgentType is the data of a SubAgent event (runtime/ai.AgentEvent).
const subAgentType = `{ agent: string; session?: string; ` +
	`type: "Thinking" | "Stream" | "Text" | "ToolCall" | "ToolResult"; ` +
	`text?: string; tool?: string; id?: string; arguments?: string; failed?: boolean }`

// planType is the data of a Plan event (runtime/plan.Plan).
const planType = `{ name: string; description: string; expected_outcome?: string; ` +
	`state: "in_progress" | "done" | "abandoned"; outcome?: string; revision: number; ` +
	`subtasks: { name: string; description?: string; expected_outcome?: string; ` +
	`state: "todo" | "in_progress" | "done" | "abandoned"; outcome?: string }[] }`

// quarkusHandlers are the SessionBuilder methods a handler object may name
// (Quarkus' route module passes its keys to them).
var quarkusHandlers = []struct{ method, event string }{
	{"consoleHandler", protocol.EventConsole},
	{"errorHandler", protocol.EventError},
	{"messageHandler", protocol.EventMessage},
	{"objectHandler", protocol.EventObject},
	{"streamHandler", protocol.EventStream},
	{"thinkingHandler", protocol.EventThinking},
}

// reservedExports are the module's own exports and the globals it uses,
// which no route is exported as (it stays in routes).
var reservedExports = wordSet("client endpoint routes defaultRoute Object Error URL WebSocket")

// routeExport returns the name route is exported as, or "" when it is not
// a name a module can export.
func routeExport(route string) string {
	if !jsIdent.MatchString(route) || jsReserved[route] || reservedExports[route] || strings.HasPrefix(route, "__cs_") {
		return ""
	}
	return route
}

// eventTable is every event type the routes send.
type eventTable struct {
	types    []string            // sorted
	payloads map[string][]string // TypeScript types of the data, by event type
	senders  map[string][]string // the routes whose results are sent so, by event type
	handlers map[string]string   // event type by handler name (on<Type>)
	// The tools the client runs (ClientTool events): the TypeScript type
	// of their arguments, by tool name, and the names sorted.
	clientTools     map[string]string
	clientToolNames []string
}

// clientTool records the tool and arguments of a ClientTool event's
// schema (a protocol.ClientToolCall whose tool is an enum of one name).
func (et *eventTable) clientTool(schema map[string]any, ts *tsTypes) {
	props, _ := schema["properties"].(map[string]any)
	tool, _ := props["tool"].(map[string]any)
	enum, _ := tool["enum"].([]any)
	if len(enum) != 1 {
		return
	}
	name, ok := enum[0].(string)
	if !ok {
		return
	}
	if _, seen := et.clientTools[name]; !seen {
		et.clientToolNames = append(et.clientToolNames, name)
	}
	et.clientTools[name] = ts.expr(props["arguments"])
}

func newEventTable(m *chatimpl.Manifest, ts *tsTypes) *eventTable {
	et := &eventTable{payloads: map[string][]string{}, senders: map[string][]string{}, handlers: map[string]string{}, clientTools: map[string]string{}}
	add := func(typ, payload string) {
		if _, ok := et.payloads[typ]; !ok {
			et.types = append(et.types, typ)
			et.payloads[typ] = nil
		}
		if payload != "" && !slices.Contains(et.payloads[typ], payload) {
			et.payloads[typ] = append(et.payloads[typ], payload)
		}
	}
	for typ, payload := range builtinEvents {
		add(typ, payload)
	}
	for _, r := range m.Routes {
		for _, ev := range r.Events {
			schema := decodeOrdered(ev.Schema)
			add(ev.Type, ts.expr(schema))
			if ev.Type == protocol.EventClientTool {
				et.clientTool(schema, ts)
			}
			if !slices.Contains(et.senders[ev.Type], r.Name) {
				et.senders[ev.Type] = append(et.senders[ev.Type], r.Name)
			}
		}
	}
	for _, ev := range m.Events {
		add(ev.Type, ts.expr(decodeOrdered(ev.Schema)))
	}
	slices.Sort(et.types)
	slices.Sort(et.clientToolNames)
	// on<Type> handlers, for the types that give an identifier, and only
	// one type each ("weapon" and "Weapon" have none: use eventHandlers).
	count := map[string]int{}
	for _, typ := range et.types {
		if h := handlerName(typ); h != "" {
			count[h]++
		}
	}
	for _, typ := range et.types {
		if h := handlerName(typ); h != "" && count[h] == 1 {
			et.handlers[h] = typ
		}
	}
	return et
}

// handlerName is "on" and the event type with its first letter upper
// case, or "" when that is not an identifier.
func handlerName(typ string) string {
	r, size := utf8.DecodeRuneInString(typ)
	if size == 0 {
		return ""
	}
	h := "on" + string(unicode.ToUpper(r)) + typ[size:]
	if !jsIdent.MatchString(h) {
		return ""
	}
	return h
}

// payload is the TypeScript type of the data of an event type.
func (et *eventTable) payload(typ string) string {
	if len(et.payloads[typ]) == 0 {
		return "unknown"
	}
	return union(et.payloads[typ])
}

// sortedHandlers are the handler names, sorted.
func (et *eventTable) sortedHandlers() []string {
	hs := make([]string, 0, len(et.handlers))
	for h := range et.handlers {
		hs = append(hs, h)
	}
	slices.Sort(hs)
	return hs
}

// defaultRouteName returns the manifest's default route, or "".
func defaultRouteName(m *chatimpl.Manifest) string {
	for _, r := range m.Routes {
		if r.Default {
			return r.Name
		}
	}
	return ""
}
