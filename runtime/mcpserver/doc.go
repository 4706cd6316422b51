// Package mcpserver offers the routes of a chat router to Model Context
// Protocol clients as MCP tools, over stdio and streamable HTTP, with the
// official Go SDK (github.com/modelcontextprotocol/go-sdk). It is the
// server side of MCP; runtime/mcptools is the client side (the tools of
// MCP servers offered to AI services).
//
// Each route is one tool, named as the route. Its input schema is the
// object of the route's request data, from the route manifest chatgen
// computes at generate time ([chat.Router.Manifest]): one property per
// parameter, the user's text under "userMessage", named types under
// "$defs". Calling the tool is one request on the route; what the route
// sends comes back as the tool's content, in order: messages and streamed
// chunks as text, every other event (objects, //chat:event values) as a
// text part holding {"type": …, "data": …}; Thinking text goes to a
// client that asked for progress (a progress token) as progress
// notifications. A failed request is a tool error ("isError": true)
// naming its reason, never internal error text.
//
// An MCP session holds the client's conversations: the first call of a
// route's tool in a session starts a conversation on that route, as a
// websocket client connecting to it would, and the later calls of that
// tool are the next requests of that conversation (it follows its own
// routes: a route that hands over to a nested one is followed there). Its
// beans and chat memory live as long as the session; ending the session
// (the client closing stdio, an HTTP DELETE, the session's idle timeout
// or [Server.Close]) ends its conversations and releases every scope.
//
// Roles hold as over the websocket: a session lists only the tools of
// routes its principal may use ([chat.Router.Permits]), and a call of
// another fails. Over streamable HTTP the principal comes from the same
// kind of hook as the websocket endpoint's ([Options.Authenticator], run
// on every HTTP request) and a session belongs to the principal that
// opened it: a request naming another principal's session is refused
// with 403. Over stdio the principal is the one the application
// configures ([Options.Principal]).
//
// A route whose AI service pauses on a confirmed tool (//chat:tool
// confirm) sends a Confirm event; the server then asks the client
// through MCP elicitation ("approve": yes or no, an optional reason) and
// answers the confirmation with what the user chose, in the same tool
// call. A client that does not support elicitation cannot confirm: the
// call is denied, the model is told so, and the tool result says why.
//
// The //chat:tools boxes the application names in [Options.ToolBoxes]
// are offered as tools of their own, named "<route>.<tool>": a router
// does not hold them (generated code hands them to the AI services), so
// the application gives each box's route and its generated tools (the
// ai.Tool values of the route's AI method, whose Parameters, computed at
// generate time, are the input schemas). A call runs the tool as a
// request of the session's conversation on the route
// ([chat.Conversation.Run]): on the beans the route's calls use, listed
// to and callable by only the principals the route's roles allow. A
// confirmed tool (//chat:tool confirm) asks through elicitation before
// it runs, and is refused clearly to a client without it; a tool the
// client runs (//chat:tool client) is not offered.
package mcpserver
