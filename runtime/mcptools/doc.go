// Package mcptools offers the tools of Model Context Protocol servers to
// chatgen AI services, next to their generated tools. It uses the
// official Go SDK (github.com/modelcontextprotocol/go-sdk) and its stdio
// ([Command]) and streamable HTTP ([StreamableHTTP]) transports.
//
// A [Source] is one server. Put it in the ai.Config.ToolSources of the
// services that may use it, in the generated Deps; generated code needs
// no change:
//
//	lore, err := mcptools.Connect(ctx, &mcptools.Options{
//		Name:      "lore",
//		Transport: mcptools.Command("lore-server"),
//		Deny:      []string{"delete_scroll"},
//	})
//	if err != nil {
//		return err
//	}
//	defer lore.Close()
//	router, err := chat.NewRouter(nil, Register(Deps{
//		Smith: &ai.Config{Model: llm, ToolSources: []ai.ToolSource{lore}},
//	}))
//
// Tools are scoped like everything else: a service offers its own
// sources' tools and no others, so a nested conversation whose service
// has no MCP source offers none.
//
// # Two lifetimes
//
// [Connect] opens one application-wide session now and shares it among
// all conversations; [Source.Close] closes it when the application
// stops. Pick it for stateless servers (lookups, search, documentation):
// one process or HTTP session serves everyone, and the first turn pays
// nothing. Its tools are known before the router is built, so a clash
// with a generated tool fails chat.NewRouter.
//
// [PerScope] opens a session on first use in a chat scope (or per
// invocation) and closes it when that scope ends, like a scoped bean. Pick
// it when the server keeps state per session (a shopping cart, a game, a
// sandbox) or acts with the user's credentials (a Transport built from
// the turn's context, which carries the chat.Principal): each
// conversation gets its own session, and nothing is left open after it.
// The first turn of a scope pays for opening the session (over stdio, a
// new process per scope).
//
// A session that ends (a crashed or restarted server) is opened again for
// the next call; the state the server kept for it is lost.
//
// # Processes
//
// A server run with [Command] or a [Cmd] gets a minimal environment,
// [DefaultEnv] (PATH, HOME and the like), not the application's, where
// API keys and other secrets live: pass it what it needs in [Cmd.Env], or
// everything with [Cmd.InheritEnv].
//
// Ending a session closes its server's stdin and returns: a scope's end
// never waits for a server that does not exit, which is signalled in the
// background (see [Cmd]); [Source.Close] waits for the processes.
//
// # Tools and failures
//
// [Options.Allow] and [Options.Deny] filter the tools by the names the
// server gives them; [Options.Prefix] renames them for the model. The
// input schemas are passed to the model as the server gives them. A tool
// a model cannot use — an input schema that is not the JSON Schema of an
// object, or a name a provider rejects — is left out and logged at Error
// level, and the server's other tools stay usable; so is a tool the
// server marks as callable only as an MCP task (execution.taskSupport
// "required"; tasks are not supported yet), logged once at Warn level.
// Naming such a tool in Allow makes it an error instead (wrapping
// [ErrUnusableTool]).
//
// A tool name every provider accepts has 1 to 64 letters, digits, '_' and
// '-', and starts with a letter or '_' (Gemini's rule); a Prefix must be
// a valid start of one.
//
// Failures are told to the model as the tool's result, as for generated
// tools, and the turn goes on: a result the server marks as an error
// ([ToolError]), a protocol error, a call past [Options.CallTimeout], a
// server that dies during the call ([CallError]). A call the server
// refuses because it no longer knows the session (a restarted HTTP
// server) did not run: it is made again, once, on a new session. A server
// that cannot be reached when a turn starts leaves the turn without its
// tools (logged), unless [Options.Required] makes the turn fail. A result
// longer than [Options.MaxResultBytes] is cut. A message longer than
// [Options.MaxMessageBytes] (16 MiB by default) is not read: over
// streamable HTTP the call fails with [ErrMessageTooLarge], as over stdio
// the SDK fails a message over 16 MiB, and the next call opens a new
// session.
//
// # Dependencies
//
// This package imports runtime/ai and runtime/chat, never the reverse:
// runtime/ai defines the ai.ToolSource interface it implements, so an
// application that does not use MCP does not link the SDK.
package mcptools
