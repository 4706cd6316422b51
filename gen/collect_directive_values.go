package gen

import (
	"go/token"
	"time"
)

// A directive is one well-parsed //chat: directive as the typed value of
// its kind: *scopedDirective for //chat:scoped, *routeDirective for
// //chat:route, and so on. The parser fills it through the setters of the
// directive table, so the analysis reads fields, never names.
type directive interface {
	// common returns the parts every directive has.
	common() *directiveCommon
	// String returns the directive as "//chat:NAME".
	String() string
}

// directiveCommon is embedded in every typed directive.
type directiveCommon struct {
	spec *directiveSpec // its entry in the directive table
	pos  token.Pos      // of the "//"
	// malformed means an error was reported about the directive itself,
	// or that it stands in for a comment that is not a directive (see
	// standIn): nothing is generated from it, but the checks of its
	// declaration run with the arguments it has, so that every mistake
	// is reported in one run.
	malformed bool
	// incomplete means a required argument is missing or invalid: the
	// collector drops the directive, whose checks would only report the
	// missing argument again.
	incomplete bool
}

func (c *directiveCommon) common() *directiveCommon { return c }

func (c *directiveCommon) String() string { return "//chat:" + c.spec.Name }

// An arg is one value written in a directive, with its position: a
// positional argument, or the value of a key=value argument (the position
// of its opening quote when quoted). The zero arg means absent.
type arg struct {
	value string
	pos   token.Pos
}

// scopedDirective is //chat:scoped [chat | per-chat | invocation] [durable] [proxy].
type scopedDirective struct {
	directiveCommon
	kind    beanKind // kindChat unless a flag says otherwise
	durable bool     // the durable flag
	proxy   bool     // the proxy flag
}

// aiDirective is //chat:ai.
type aiDirective struct {
	directiveCommon
}

// routeDirective is //chat:route NAME [default] [roles=a,b] [user=PARAM].
type routeDirective struct {
	directiveCommon
	name      arg      // NAME
	isDefault bool     // the default flag
	roles     []string // roles=, each trimmed; nil without the key
	user      arg      // user=: the parameter that receives the user's text
}

// systemDirective is one //chat:system line: TEXT or file=PATH.
type systemDirective struct {
	directiveCommon
	text string // the rest of the line, verbatim; "" with file=
	file arg    // file=PATH, relative to the package directory
}

// userDirective is one //chat:user TEXT line.
type userDirective struct {
	directiveCommon
	text string // the rest of the line, verbatim
}

// toolsDirective is //chat:tools TYPE...
type toolsDirective struct {
	directiveCommon
	types []arg // the tool boxes, in order, at least one
}

// agentDirective is //chat:agent [name=NAME] [timeout=DURATION]
// [sessions=N] [idle=DURATION].
type agentDirective struct {
	directiveCommon
	name     string        // name=; "" means the method's name
	timeout  time.Duration // timeout=; 0 means none but the turn's
	sessions int           // sessions=; 0 means subagent's default
	idle     time.Duration // idle=; 0 means subagent's default
}

// toolDirective is //chat:tool [immediate] [confirm] [client] [name=NAME] [timeout=DURATION].
type toolDirective struct {
	directiveCommon
	immediate bool          // the immediate flag
	confirm   bool          // the confirm flag
	client    bool          // the client flag: the client runs the tool
	name      string        // name=; "" means the method's name
	timeout   time.Duration // timeout=; 0 means the service's default
}

// paramDirective is //chat:param NAME TEXT.
type paramDirective struct {
	directiveCommon
	param arg    // NAME: the tool method's parameter
	text  string // its description, the rest of the line
}

// eventDirective is //chat:event TYPE.
type eventDirective struct {
	directiveCommon
	typ arg // TYPE: the event type clients dispatch on
}

// markdownDirective is //chat:markdown.
type markdownDirective struct {
	directiveCommon
}

// catchDirective is //chat:catch [route=NAME].
type catchDirective struct {
	directiveCommon
	route arg // route=: the only route handled; absent for every route
}

// beanKind is how long the instances of a scoped bean live.
type beanKind uint8

const (
	// kindChat is one instance per chat scope, inherited by nested scopes.
	kindChat beanKind = iota
	// kindPerChat is one instance per scope, never inherited.
	kindPerChat
	// kindInvocation is one instance per top-level call through the
	// bean's proxy.
	kindInvocation
)

// ident returns the name of the chat.Kind constant for k, which the
// generated code uses.
func (k beanKind) ident() string {
	switch k {
	case kindPerChat:
		return "KindPerChat"
	case kindInvocation:
		return "KindInvocation"
	}
	return "KindChat"
}

// setArg adapts a setter of one directive type to the table's setters of
// positional arguments and key values.
func setArg[D directive](set func(D, arg)) func(directive, arg) {
	return func(d directive, a arg) { set(d.(D), a) }
}

// setFlag adapts a setter of one directive type to the table's setters of
// flags.
func setFlag[D directive](set func(D)) func(directive) {
	return func(d directive) { set(d.(D)) }
}

// setText adapts a setter of one directive type to the table's setters of
// free text.
func setText[D directive](set func(D, string)) func(directive, string) {
	return func(d directive, text string) { set(d.(D), text) }
}
