package chat

import (
	"context"
	"fmt"
)

// A RouteSpec is one chat route as generated code registers it.
type RouteSpec struct {
	// Name is the route's name (//chat:route NAME).
	Name string
	// Default marks the default route: the one a session starts on when
	// it connects without naming one.
	Default bool
	// Roles, when not empty, are the roles allowed to use the route: the
	// principal must have at least one (//chat:route … roles=a,b).
	Roles []string
	// Handle runs the route: it binds the request data to the method's
	// parameters, calls it and sends its results as events.
	Handle func(ctx context.Context, req *RouteRequest) error
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

// AddRoute registers a route in the package. Generated code calls it.
func (p *Package) AddRoute(r RouteSpec) {
	p.routes = append(p.routes, r)
}

// AddCatch registers an error handler in the package. Generated code calls
// it.
func (p *Package) AddCatch(c CatchSpec) {
	p.catches = append(p.catches, c)
}

// CurrentRoute returns the route the current scope will run for the next
// request.
func CurrentRoute(ctx context.Context) (string, error) {
	st, s, err := lockCurrent(ctx, "current route")
	if err != nil {
		return "", err
	}
	defer st.mu.Unlock()
	return s.route, nil
}

// Route changes the route of the current scope: the next request runs
// route. In a conversation of a [Router], a route the router does not serve
// is an error (an [*UnknownRouteError] naming the closest known route) and
// the current route stays as it was.
func Route(ctx context.Context, route string) error {
	st, s, err := lockCurrent(ctx, "route")
	if err != nil {
		return err
	}
	defer st.mu.Unlock()
	if st.router != nil {
		if err := st.router.knownRoute(route); err != nil {
			return err
		}
	}
	s.route = route
	return nil
}

// Execute runs the current route of the current scope now, within the
// request in ctx: the same request data, the same response channel. Its
// results are sent as events like any route's. This is the Main Menu
// pattern: PushRoute to a nested conversation, then Execute it so that it
// answers the message that led there.
func Execute(ctx context.Context) error {
	route, err := CurrentRoute(ctx)
	if err != nil {
		return err
	}
	return ExecuteRoute(ctx, route)
}

// ExecuteRoute runs the named route within the request in ctx without
// changing the current route.
func ExecuteRoute(ctx context.Context, route string) error {
	rs := requestFrom(ctx)
	if rs == nil {
		return fmt.Errorf("chat: execute %q: %w", route, errNoRequest)
	}
	return rs.conv.router.run(ctx, rs, route)
}
