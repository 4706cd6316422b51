package chat

import (
	"context"
	"fmt"
)

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
