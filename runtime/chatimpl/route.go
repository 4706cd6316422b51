package chatimpl

import "context"

// A RouteSpec is one chat route (//chat:route) as generated code
// registers it.
type RouteSpec struct {
	// Name is the route's name (//chat:route NAME).
	Name string
	// Default marks the default route: the one a session starts on when
	// it connects without naming one.
	Default bool
	// Roles, when not empty, are the roles allowed to use the route: the
	// principal must have at least one (//chat:route … roles=a,b).
	Roles []string
	// Handle runs the route for the request in ctx (chat.Request): it
	// binds the request data to the method's parameters, calls it and
	// sends its results as events.
	Handle func(ctx context.Context) error
}

// A CatchSpec is an error handler (//chat:catch) as generated code
// registers it.
type CatchSpec struct {
	// Route limits the handler to errors of one route; "" is global.
	Route string
	// Type is the error type the handler takes, for messages and logs.
	Type string
	// Interface reports that Type is an interface type: concrete types are
	// tried first.
	Interface bool
	// Handle is called with one error of the chain at a time; it reports
	// whether the error has the handler's type and, if so, the handler's
	// own error.
	Handle func(ctx context.Context, err error) (handled bool, herr error)
}
