package gen

import (
	"strconv"
	"strings"
	"time"
)

// target is a bit set of the kinds of declaration a directive may annotate.
type target uint16

const (
	// targetStruct is a struct type declaration: type T struct{...}.
	targetStruct target = 1 << iota
	// targetInterface is an interface type declaration: type T interface{...}.
	targetInterface
	// targetOtherType is any other named type declaration: type T string,
	// type T []X, type T = X, ...
	targetOtherType
	// targetMethod is a method declared with a receiver: func (r *T) M(...).
	targetMethod
	// targetInterfaceMethod is a method in an interface type.
	targetInterfaceMethod
	// targetFunc is a top-level func without a receiver.
	targetFunc
)

// targetTypes is every kind of type declaration.
const targetTypes = targetStruct | targetInterface | targetOtherType

// names returns the singular and plural human names of a single-bit
// target.
func (t target) names() (one, many string) {
	switch t {
	case targetStruct:
		return "struct type", "struct types"
	case targetInterface:
		return "interface type", "interface types"
	case targetOtherType:
		return "non-struct, non-interface type", "other types"
	case targetMethod:
		return "method", "methods"
	case targetInterfaceMethod:
		return "interface method", "interface methods"
	case targetFunc:
		return "func", "funcs"
	}
	return "", ""
}

// String returns a human list of the targets, such as
// "struct type, interface type or method".
func (t target) String() string { return t.list(false) }

// plural returns the human list of the targets in the plural, such as
// "methods or funcs".
func (t target) plural() string { return t.list(true) }

func (t target) list(plural bool) string {
	var parts []string
	if t&targetTypes == targetTypes {
		if plural {
			parts = append(parts, "types")
		} else {
			parts = append(parts, "type")
		}
		t &^= targetTypes
	}
	for bit := targetStruct; bit <= targetFunc; bit <<= 1 {
		if t&bit == 0 {
			continue
		}
		one, many := bit.names()
		if plural {
			parts = append(parts, many)
		} else {
			parts = append(parts, one)
		}
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return joinWords(parts, "or")
}

// withArticle returns t.String() with "a" or "an" before it, such as
// "an interface type" or "a method or func".
func (t target) withArticle() string {
	s := t.String()
	if strings.IndexByte("aeiou", s[0]) >= 0 {
		return "an " + s
	}
	return "a " + s
}

// argKind says what a positional argument may hold.
type argKind uint8

const (
	// argIdent is a Go identifier.
	argIdent argKind = iota
	// argWord is a word of letters, digits, '-', '_', '.' and '/'.
	argWord
	// argString is any non-empty text: a bare word or a Go-quoted string.
	argString
)

// argSpec describes one positional argument of a directive.
type argSpec struct {
	Name     string // upper case, as in the usage: "NAME", "TYPE"
	Kind     argKind
	Required bool
	Variadic bool // the last argument may repeat: one or more values
	Doc      string
	Set      func(directive, arg) // stores the argument in the typed directive
}

// flagSpec describes one bare-word flag of a directive.
type flagSpec struct {
	Name string
	Doc  string
	Set  func(directive) // records the flag in the typed directive
	// Independent means the flag combines with any other: ExclusiveFlags
	// does not count it.
	Independent bool
}

// keyKind says what the value of a key=value argument may hold.
type keyKind uint8

// The zero keyKind is none: every key of the table says its kind.
const (
	// keyList is a comma-separated list of non-empty words.
	keyList keyKind = iota + 1
	// keyIdent is a Go identifier.
	keyIdent
	// keyPath is a file path.
	keyPath
	// keyWord is a word of letters, digits, '-', '_', '.' and '/', like a
	// route name.
	keyWord
	// keyDuration is a positive Go duration, such as 10s or 1m30s.
	keyDuration
	// keyCount is a positive decimal integer, such as 8.
	keyCount
)

// String returns the name of the kind used in the documentation.
func (k keyKind) String() string {
	switch k {
	case keyList:
		return "comma-separated list"
	case keyIdent:
		return "Go identifier"
	case keyPath:
		return "file path"
	case keyWord:
		return "word"
	case keyDuration:
		return "duration"
	case keyCount:
		return "positive integer"
	}
	return "unknown"
}

// keySpec describes one key=value argument of a directive.
type keySpec struct {
	Name  string
	Kind  keyKind
	Value string // the placeholder of the value in usages and messages, such as "PATH"
	Doc   string
	Set   func(directive, arg) // stores the value in the typed directive
}

// directiveSpec describes one //chat: directive. The table of specs drives
// the parser, which fills the directive's typed value through the setters
// of the spec, the collector, chatgen -h and docs/directives.md.
type directiveSpec struct {
	Name           string     // "route" for //chat:route
	Usage          string     // "//chat:route NAME [default] [roles=a,b] [user=PARAM]"
	Doc            string     // one paragraph, user-facing; the first sentence is the summary
	Quarkus        string     // the Quarkus equivalent, e.g. "@ChatRoute, @DefaultChatRoute"
	Example        string     // a short Go snippet showing the directive in place
	Targets        target     // the declarations it may annotate
	Args           []argSpec  // positional arguments, in order
	Flags          []flagSpec // allowed bare-word flags
	ExclusiveFlags bool       // at most one of Flags (not counting Independent ones)
	Keys           []keySpec  // allowed key=value arguments
	// Text means the rest of the line after the positional Args is free
	// text, taken verbatim. A Text directive without Args may instead carry
	// exactly one key=value argument (e.g. file=PATH).
	Text       bool
	TextDoc    string // what the text is, for the documentation
	Repeatable bool   // may appear more than once on one declaration

	// New returns the empty typed value the parser fills: a
	// *routeDirective for //chat:route, and so on.
	New func() directive
	// SetText stores the free text of a Text directive.
	SetText func(directive, string)
}

// flag returns the flag spec called name.
func (s *directiveSpec) flag(name string) (*flagSpec, bool) {
	for i := range s.Flags {
		if s.Flags[i].Name == name {
			return &s.Flags[i], true
		}
	}
	return nil, false
}

// key returns the key spec called name.
func (s *directiveSpec) key(name string) (*keySpec, bool) {
	for i := range s.Keys {
		if s.Keys[i].Name == name {
			return &s.Keys[i], true
		}
	}
	return nil, false
}

// flagNames returns the names of the flags in table order.
func (s *directiveSpec) flagNames() []string {
	names := make([]string, len(s.Flags))
	for i, f := range s.Flags {
		names[i] = f.Name
	}
	return names
}

// exclusiveFlagNames returns the names of the flags of which a directive
// with ExclusiveFlags takes at most one, in table order.
func (s *directiveSpec) exclusiveFlagNames() []string {
	var names []string
	for _, f := range s.Flags {
		if !f.Independent {
			names = append(names, f.Name)
		}
	}
	return names
}

// keyNames returns the names of the keys in table order.
func (s *directiveSpec) keyNames() []string {
	names := make([]string, len(s.Keys))
	for i, k := range s.Keys {
		names[i] = k.Name
	}
	return names
}

// lookupSpec returns the spec of the directive called name. The result
// points into the shared table and must not be modified.
func lookupSpec(name string) (*directiveSpec, bool) {
	for i := range directiveTable {
		if directiveTable[i].Name == name {
			return &directiveTable[i], true
		}
	}
	return nil, false
}

// directiveNames returns the directive names in table order.
func directiveNames() []string {
	names := make([]string, len(directiveTable))
	for i, s := range directiveTable {
		names[i] = s.Name
	}
	return names
}

// directiveTable is the one table of directives. It is never modified.
var directiveTable = []directiveSpec{
	{
		Name:  "scoped",
		Usage: "//chat:scoped [chat | per-chat | invocation] [durable] [proxy]",
		Doc: "Makes the type a scoped bean: one instance per chat scope, per scope or per call. " +
			"The generator can write a scope proxy with the methods a caller can call — a struct's exported " +
			"methods, promoted ones included, or all of an interface's — each with a leading " +
			"`context.Context` where the method has none, such as `CounterProxy`, and an accessor such as " +
			"`CounterFrom(ctx) (*Counter, error)`. It writes each when the package's own files (its tests " +
			"included) name it, or both with `proxy`: other packages need the flag to use them. " +
			"With no flag or `chat`, there is one instance per chat scope, inherited by nested scopes; " +
			"a bean first used in a nested scope lives and dies with that scope. " +
			"With `per-chat`, every scope has its own instance and never looks at its parents. " +
			"With `invocation`, an instance lives for one top-level call through its proxy, and nested " +
			"proxy calls made with the `ctx` they are handed share it. " +
			"A bean may have a constructor taking `ctx` and its dependencies, and a `Close` or `Destroy` " +
			"method, called once, where its scope ends (`Pop`, `End`, the session closed), and not when a " +
			"durable conversation merely leaves the process (a lost connection, a drain, another node " +
			"taking it over): a bean that needs to know of that implements `chat.DetachableBean`, " +
			"`DetachBean(ctx context.Context) error`, to let go of what it holds in this process. " +
			"Proxies do not forward `Close`, `Destroy` or `DetachBean`. " +
			"With `durable`, a chat or per-chat bean is saved with its conversation when the router has a " +
			"conversation store, and restored when the conversation is resumed (after a reconnect, a restart, " +
			"on another node): its type must round-trip through `encoding/json`, which the generator checks; " +
			"beans that are not durable are built afresh after a resume. `Register` provides every durable " +
			"bean, so that the node where a resumed conversation ends restores one it did not use since the " +
			"resume from its saved state, to close it.",
		Quarkus: "@ChatScoped, @PerChatScoped, @InvocationScoped",
		Example: `// Counter counts the messages of one conversation.
//
//chat:scoped
type Counter struct {
	n int
}

// Draft holds the weapon being built in one builder scope only, and
// survives restarts.
//
//chat:scoped per-chat durable
type Draft struct {
	Material, Kind string
}`,
		Targets: targetStruct | targetInterface,
		Flags: []flagSpec{
			{Name: "chat", Doc: "one instance per chat scope, inherited by nested scopes (the default)",
				Set: setFlag(func(d *scopedDirective) { d.kind = kindChat })},
			{Name: "per-chat", Doc: "one instance per scope, never inherited by nested scopes",
				Set: setFlag(func(d *scopedDirective) { d.kind = kindPerChat })},
			{Name: "invocation", Doc: "one instance per top-level call through the scope proxy",
				Set: setFlag(func(d *scopedDirective) { d.kind = kindInvocation })},
			{Name: "durable", Doc: "saved with durable conversations and restored on resume, as its `encoding/json` form " +
				"(with `chat` or `per-chat`)",
				Set: setFlag(func(d *scopedDirective) { d.durable = true }), Independent: true},
			{Name: "proxy", Doc: "always write the scope proxy and the accessor, for use from other packages " +
				"(without it, each is written only when this package's files name it)",
				Set: setFlag(func(d *scopedDirective) { d.proxy = true }), Independent: true},
		},
		ExclusiveFlags: true,
		New:            func() directive { return new(scopedDirective) },
	},
	{
		Name:  "ai",
		Usage: "//chat:ai",
		Doc: "Generates an LLM-backed implementation of the interface. " +
			"The implementation works over any langchaingo `llms.Model`. " +
			"Each method sends the system message (`//chat:system`), the scope's chat memory and the user " +
			"message (`//chat:user`, or the method's text parameter) to the model, runs the tool loop over " +
			"the tool boxes named by `//chat:tools`, and returns the reply as a `string`, a struct decoded " +
			"from JSON, an `ai.Result[T]`, or a stream of text chunks (`iter.Seq2[string, error]`). " +
			"Chat memory is kept per scope and deleted with it. " +
			"The service is chat-scoped unless `//chat:scoped` says otherwise.",
		Quarkus: "@RegisterAiService",
		Example: `// Smith answers questions about weapons.
//
//chat:ai
//chat:system You are a weapon-smith in a fantasy game. Answer briefly.
type Smith interface {
	// Ask answers one question.
	//
	//chat:route ask
	Ask(ctx context.Context, userMessage string) (string, error)
}`,
		Targets: targetInterface,
		New:     func() directive { return new(aiDirective) },
	},
	{
		Name:  "route",
		Usage: "//chat:route NAME [default] [roles=a,b] [user=PARAM]",
		Doc: "Makes the method or func the chat route called NAME. " +
			"Every scope remembers its current route and runs it for the next request; " +
			"`chat.Route(ctx, NAME)` switches it. " +
			"The generated dispatch binds the request's JSON object to the parameters by name: " +
			"a `context.Context` is injected, the user's text goes to the `string` parameter named " +
			"`userMessage`, `msg` or `message`, or to the one named by `user=` (needed when there are two), and every " +
			"other parameter is decoded from the key of its own name. " +
			"Results become events: a `string` is a `Message`, any other value an `Object` (or its " +
			"`//chat:event` type), an `iter.Seq[string]` or `iter.Seq2[string, error]` one `Stream` event per " +
			"chunk, and an `error` fails the request unless a `//chat:catch` handler takes it. " +
			"A route on a struct without `//chat:scoped` is chat-scoped. " +
			"One route may be the default; a lone route is the default.",
		Quarkus: "@ChatRoute, @DefaultChatRoute, @RolesAllowed",
		Example: `// Menu is the main menu.
type Menu struct{}

// Start greets the user.
//
//chat:route menu default
func (m *Menu) Start(ctx context.Context, userMessage string) string {
	return "What shall we build today?"
}

// Restock is for the shop keepers only.
//
//chat:route restock roles=admin,keeper user=item
func (m *Menu) Restock(ctx context.Context, item string, count int) (string, error) {
	return fmt.Sprintf("%d more %s", count, item), nil
}`,
		Targets: targetMethod | targetInterfaceMethod | targetFunc,
		Args: []argSpec{
			{Name: "NAME", Kind: argWord, Required: true,
				Doc: "the route name: letters, digits, `-`, `_`, `.` and `/`",
				Set: setArg(func(d *routeDirective, a arg) { d.name = a })},
		},
		Flags: []flagSpec{
			{Name: "default", Doc: "the route a new conversation starts on; at most one per package",
				Set: setFlag(func(d *routeDirective) { d.isDefault = true })},
		},
		Keys: []keySpec{
			{Name: "roles", Kind: keyList, Value: "a,b",
				Doc: "the caller must have one of these roles (from the principal set by the websocket " +
					"authentication hook); otherwise the request fails with `Forbidden`",
				Set: setArg(func(d *routeDirective, a arg) { d.roles = splitList(a.value) })},
			{Name: "user", Kind: keyIdent, Value: "PARAM",
				Doc: "the string parameter that receives the user's text",
				Set: setArg(func(d *routeDirective, a arg) { d.user = a })},
		},
		New: func() directive { return new(routeDirective) },
	},
	{
		Name:  "system",
		Usage: "//chat:system (TEXT | file=PATH)",
		Doc: "Sets the system message of an AI service or of one of its methods. " +
			"On the interface it applies to every method; a method's own `//chat:system` replaces it. " +
			"TEXT is the rest of the line, taken verbatim; repeated lines join with newlines. " +
			"`file=PATH` reads the message from a file, relative to the package directory, at generate time. " +
			"The message is a Go `text/template` over the method's parameters: `{{.kind}}` is the " +
			"parameter called `kind`. " +
			"A line holds either text or `file=PATH`, not both. " +
			"A template over parameters that change from request to request makes a new system message " +
			"each time, and so a new prompt prefix: a provider's prompt cache then serves none of the " +
			"conversation, and with Anthropic, whose breakpoints follow the system message, every turn " +
			"writes the prompt to the cache (billed 1.25× the input price) and no turn reads it. " +
			"Put per-request text in the user message (`//chat:user`) instead.",
		Quarkus: "@SystemMessage",
		Example: `// Smith is the weapon-smith of the game.
//
//chat:ai
//chat:system You are a weapon-smith in a fantasy game.
//chat:system Keep your answers under fifty words.
type Smith interface {
	// Advise suggests the next step of building a weapon of the given kind.
	//
	//chat:system You are a weapon-smith. The user is building a {{.kind}}.
	Advise(ctx context.Context, kind, userMessage string) (string, error)

	// Legend tells the story of a weapon.
	//
	//chat:system file=prompts/legend.txt
	Legend(ctx context.Context, userMessage string) (string, error)
}`,
		Targets: targetInterface | targetInterfaceMethod,
		Keys: []keySpec{
			{Name: "file", Kind: keyPath, Value: "PATH",
				Doc: "a file holding the message, relative to the package directory, read at generate time",
				Set: setArg(func(d *systemDirective, a arg) { d.file = a })},
		},
		Text:       true,
		TextDoc:    "the message, or one line of it (the rest of the line, verbatim)",
		Repeatable: true,
		New:        func() directive { return new(systemDirective) },
		SetText:    setText(func(d *systemDirective, text string) { d.text = text }),
	},
	{
		Name:  "user",
		Usage: "//chat:user TEXT",
		Doc: "Sets the user message template of an AI-service method. " +
			"TEXT is the rest of the line, taken verbatim; repeated lines join with newlines. " +
			"Like `//chat:system` it is a Go `text/template` over the method's parameters. " +
			"Without it, the user message is the method's text parameter, as for a route: the one named by `user=` " +
			"on its `//chat:route`, else the `string` parameter named `userMessage`, `msg` or `message`.",
		Quarkus: "@UserMessage",
		Example: `// Namer names things.
//
//chat:ai
type Namer interface {
	// Name invents a name for a weapon.
	//
	//chat:user Invent a name for a {{.material}} {{.kind}}.
	//chat:user Answer with the name only.
	Name(ctx context.Context, material, kind string) (string, error)
}`,
		Targets:    targetInterfaceMethod,
		Text:       true,
		TextDoc:    "the message, or one line of it (the rest of the line, verbatim)",
		Repeatable: true,
		New:        func() directive { return new(userDirective) },
		SetText:    setText(func(d *userDirective, text string) { d.text = text }),
	},
	{
		Name:  "tools",
		Usage: "//chat:tools TYPE...",
		Doc: "Names the tool boxes an AI service may use: types whose `//chat:tool` methods the model may call. " +
			"A `//chat:ai` interface with a `//chat:agent` method is named the same way: it is offered as a sub-agent. " +
			"On the interface it applies to every method; on a method, to that method.",
		Quarkus: "@ToolBox",
		Example: `// Smith is the weapon-smith of the game.
//
//chat:ai
//chat:tools Forge
type Smith interface {
	// Build builds what the user asks for.
	//
	//chat:tools Forge Inventory
	Build(ctx context.Context, userMessage string) (string, error)
}`,
		Targets: targetInterface | targetInterfaceMethod,
		Args: []argSpec{
			{Name: "TYPE", Kind: argIdent, Required: true, Variadic: true,
				Doc: "a type declared in this package: a tool box or an agent",
				Set: setArg(func(d *toolsDirective, a arg) { d.types = append(d.types, a) })},
		},
		New: func() directive { return new(toolsDirective) },
	},
	{
		Name:  "agent",
		Usage: "//chat:agent [name=NAME] [timeout=DURATION] [sessions=N] [idle=DURATION]",
		Doc: "Offers an AI service to other AI services as a tool: an agent as a tool. " +
			"It marks the method of a `//chat:ai` interface that answers a task: it takes a `context.Context` " +
			"and the task, a `string`, and returns `(string, error)`. AI services whose `//chat:tools` name the " +
			"interface offer the model a tool that runs that method as a sub-agent (package " +
			"`runtime/agent/subagent`): each call runs in a session of its own, a sub-conversation with its own " +
			"chat memory owned by the calling scope, which the model continues by passing back the `session_id` " +
			"of an earlier answer. The sub-agent's model calls count against the calling turn's budget, its usage " +
			"adds up into the turn's, and its steps reach the client as `SubAgent` events. " +
			"The tool's description is the method's doc comment; the model calls it by the " +
			"method's name unless `name=` sets another. The task is the method's user message, whatever the " +
			"parameter's name, unless `//chat:user` sets one. A service has at most one `//chat:agent` method, " +
			"and cannot name itself in its `//chat:tools`. A calling scope keeps at most `sessions=` sessions of the " +
			"agent (8 by default) and ends one unused for `idle=` (30 minutes by default).",
		Quarkus: "@Agent",
		Example: `// Researcher is a sub-agent that finds facts.
//
//chat:ai
//chat:system You research: answer with the facts the task needs.
type Researcher interface {
	// Research finds the facts a task needs.
	//
	//chat:agent name=research timeout=1m
	Research(ctx context.Context, task string) (string, error)
}

// Planner plans, with the researcher as a tool.
//
//chat:ai
//chat:tools Researcher
type Planner interface {
	//chat:route planner
	Chat(ctx context.Context, userMessage string) (string, error)
}`,
		Targets: targetInterfaceMethod,
		Keys: []keySpec{
			{Name: "name", Kind: keyIdent, Value: "NAME", Doc: "the name the model calls the agent by; the method name by default",
				Set: setArg(func(d *agentDirective, a arg) { d.name = a.value })},
			{Name: "timeout", Kind: keyDuration, Value: "DURATION",
				Doc: "the longest a call may run, a Go duration such as `30s` or `2m`; only the turn's limits by default",
				Set: setArg(func(d *agentDirective, a arg) { d.timeout, _ = time.ParseDuration(a.value) })},
			{Name: "sessions", Kind: keyCount, Value: "N",
				Doc: "how many sessions of the agent one calling scope keeps; 8 by default",
				Set: setArg(func(d *agentDirective, a arg) { d.sessions, _ = strconv.Atoi(a.value) })},
			{Name: "idle", Kind: keyDuration, Value: "DURATION",
				Doc: "how long a session may go unused before it ends; 30 minutes by default",
				Set: setArg(func(d *agentDirective, a arg) { d.idle, _ = time.ParseDuration(a.value) })},
		},
		New: func() directive { return new(agentDirective) },
	},
	{
		Name:  "tool",
		Usage: "//chat:tool [immediate] [confirm] [client] [name=NAME] [timeout=DURATION]",
		Doc: "Makes the method a tool that AI services may call. " +
			"AI services whose `//chat:tools` name the method's type offer it to the model. " +
			"The tool's description is the method's doc comment, and its parameters (after an optional " +
			"`context.Context`) form a JSON schema computed at generate time from their Go types, `json` tags " +
			"and `//chat:param` descriptions, by encoding/json's rules for reading them (a type with `UnmarshalJSON` " +
			"takes any JSON, one with `UnmarshalText` a string). " +
			"The model calls the tool by the method's name unless `name=` sets another. " +
			"An error, or arguments that do not decode, go back to the model as the tool result. " +
			"A result whose type is a `//chat:event` type is also sent to the client, as that event, " +
			"when the tool returns (and listed among the events of the AI service's routes). " +
			"With `immediate`, when every tool the model called in a step is immediate, the tool loop ends " +
			"without another model call and the AI method returns an `ai.Result[T]` with the tool executions. " +
			"With `timeout=`, a call that runs longer is told to the model as timed out and the turn goes on " +
			"(its context is cancelled; a tool that ignores it is left to finish, its result discarded); " +
			"without it, the service's `ai.Config.ToolTimeout` applies. " +
			"With `confirm`, a call of the tool waits for the user's confirmation: the turn pauses, the route " +
			"sends a `Confirm` event and completes, and the user's next request approves (optionally with " +
			"edited arguments) or denies the call (see \"Confirmed tools\" in the guide). " +
			"With `client`, the client runs the tool (a browser-side action, the user's location, a file the " +
			"user picks): the method's body never runs on the server, its parameters give the arguments' schema; " +
			"a call pauses the turn as `confirm` does, the route sends a `ClientTool` event (listed, with the " +
			"typed arguments, in the routes module and its d.ts) and completes, and the client's next request " +
			"carries the result or an error; `timeout=` is then how long the client has to answer " +
			"(see \"Tools the client runs\" in the guide).",
		Quarkus: "@Tool, ReturnBehavior.IMMEDIATE",
		Example: `// Forge works metal.
type Forge struct{ draft *Draft }

// SetMaterial sets the material of the weapon being built.
//
//chat:tool name=set_material timeout=5s
//chat:param material one of iron, steel or mithril
func (f *Forge) SetMaterial(ctx context.Context, material string) error {
	f.draft.Material = material
	return nil
}

// Finish completes the weapon and leaves the builder.
//
//chat:tool immediate
func (f *Forge) Finish(ctx context.Context) error {
	return chat.Pop(ctx)
}`,
		Targets: targetMethod,
		Flags: []flagSpec{
			{Name: "immediate", Doc: "end the tool loop after the step, without another model call, " +
				"when every tool called in it is immediate",
				Set: setFlag(func(d *toolDirective) { d.immediate = true })},
			{Name: "confirm", Doc: "run a call only once the user confirmed it: the turn pauses and the route sends a `Confirm` event",
				Set: setFlag(func(d *toolDirective) { d.confirm = true })},
			{Name: "client", Doc: "the client runs the tool: a call pauses the turn, the route sends a `ClientTool` event, " +
				"and the client's next request carries the result",
				Set: setFlag(func(d *toolDirective) { d.client = true })},
		},
		Keys: []keySpec{
			{Name: "name", Kind: keyIdent, Value: "NAME", Doc: "the name the model calls the tool by; the method name by default",
				Set: setArg(func(d *toolDirective, a arg) { d.name = a.value })},
			{Name: "timeout", Kind: keyDuration, Value: "DURATION",
				Doc: "the longest a call may run, a Go duration such as `10s` or `1m30s`; the service's `ToolTimeout` by default",
				Set: setArg(func(d *toolDirective, a arg) { d.timeout, _ = time.ParseDuration(a.value) })},
		},
		New: func() directive { return new(toolDirective) },
	},
	{
		Name:  "param",
		Usage: "//chat:param NAME TEXT",
		Doc: "Describes a parameter of a tool method to the model. " +
			"TEXT, the rest of the line after NAME, becomes the parameter's description in the tool's " +
			"JSON schema. Write one line per parameter. It needs `//chat:tool` on the same method: " +
			"elsewhere it describes nothing, and is an error.",
		Quarkus: "@P",
		Example: `// Engrave engraves a text on the blade.
//
//chat:tool
//chat:param text the words to engrave, at most 20 letters
//chat:param font one of runic or plain
func (f *Forge) Engrave(ctx context.Context, text, font string) error {
	return nil
}`,
		Targets: targetMethod,
		Args: []argSpec{
			{Name: "NAME", Kind: argIdent, Required: true, Doc: "the name of a parameter of the method",
				Set: setArg(func(d *paramDirective, a arg) { d.param = a })},
		},
		Text:       true,
		TextDoc:    "the parameter's description (the rest of the line, verbatim)",
		Repeatable: true,
		New:        func() directive { return new(paramDirective) },
		SetText:    setText(func(d *paramDirective, text string) { d.text = text }),
	},
	{
		Name:  "event",
		Usage: "//chat:event TYPE",
		Doc: "Sets the event type a value is sent as, instead of `Object`. " +
			"On a type, its values are sent as TYPE events when a route or an AI tool returns them or " +
			"`chat.Response(ctx).Send` sends them; on a route method or func, the route's results are. " +
			"Clients dispatch on TYPE, for example with `On(TYPE, fn)`.",
		Quarkus: "@EventType",
		Example: `// Progress reports how far the build is.
//
//chat:event BuildProgress
type Progress struct {
	Step  int ` + "`json:\"step\"`" + `
	Total int ` + "`json:\"total\"`" + `
}`,
		Targets: targetTypes | targetMethod | targetFunc,
		Args: []argSpec{
			{Name: "TYPE", Kind: argString, Required: true,
				Doc: "the event type string clients dispatch on",
				Set: setArg(func(d *eventDirective, a arg) { d.typ = a })},
		},
		New: func() directive { return new(eventDirective) },
	},
	{
		Name:  "markdown",
		Usage: "//chat:markdown",
		Doc: "Renders the route's text answers from markdown to safe HTML for web pages. " +
			"On a route method or func, that route; on a type, every route of the type that answers with " +
			"text. The text answers are a `string` result, the content and the string tool results of an " +
			"`ai.Result[string]`, and the chunks of an `iter.Seq[string]` or `iter.Seq2[string, error]`. " +
			"They are rendered with goldmark (CommonMark with GitHub's extensions) by package " +
			"`runtime/markdown`: raw HTML is escaped, links keep only http, https, mailto and relative " +
			"targets, images only http, https and relative sources. " +
			"A Message event keeps its text and carries the HTML beside it (`chat.Event.HTML`); over the " +
			"websocket its `data` is the HTML, as Quarkus pages expect, and the frame's `markdown` field the " +
			"text. A stream goes out as it comes, chunk by chunk as text, then one more `Stream` event with " +
			"no text carries the whole answer rendered (the frame's `html` field). " +
			"Other events (objects, `Thinking`, what tools send themselves) are not rendered.",
		Quarkus: "@MarkdownToHtml",
		Example: `// Smith answers questions about weapons, in markdown.
//
//chat:ai
//chat:markdown
type Smith interface {
	// Ask answers one question.
	//
	//chat:route ask
	Ask(ctx context.Context, userMessage string) (string, error)
}

// Lore tells the legend of a weapon, streamed as it is written.
//
//chat:route lore
//chat:markdown
func Lore(ctx context.Context, userMessage string) iter.Seq[string] {
	return slices.Values([]string{"# The legend\n", "of *Dawnbreaker*"})
}`,
		Targets: targetStruct | targetInterface | targetMethod | targetInterfaceMethod | targetFunc,
		New:     func() directive { return new(markdownDirective) },
	},
	{
		Name:  "catch",
		Usage: "//chat:catch [route=NAME]",
		Doc: "Makes the func an error handler for routes. " +
			"The type of its error parameter selects the errors it handles, matched with `errors.As`. " +
			"A route's error is offered to the handlers of that route first, then to the global ones, " +
			"nearest type first. " +
			"A handled error completes the request normally, and the handler's results become events " +
			"as a route's do; an unhandled error fails the request.",
		Quarkus: "@ChatRouteExceptionHandler",
		Example: `// OutOfStock apologises instead of failing the request.
//
//chat:catch route=build
func OutOfStock(ctx context.Context, err *ErrOutOfStock) string {
	return "Sorry, we have run out of " + err.Material + "."
}`,
		Targets: targetFunc,
		Keys: []keySpec{
			{Name: "route", Kind: keyWord, Value: "NAME", Doc: "handle only the errors of this route; every route by default",
				Set: setArg(func(d *catchDirective, a arg) { d.route = a })},
		},
		New: func() directive { return new(catchDirective) },
	},
}
