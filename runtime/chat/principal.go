package chat

import (
	"context"
	"slices"
)

// A Principal is the authenticated user of a request, as a transport's
// authentication hook establishes it.
type Principal interface {
	// Name identifies the user (for logs).
	Name() string
	// HasRole reports whether the user has role.
	HasRole(role string) bool
}

// User is a simple [Principal]: an id and a set of roles. A User has no
// separate display name: its id is what [Principal.Name] reports.
type User struct {
	ID    string
	Roles []string
}

// Name returns u.ID: the id is the name a User is known by in logs.
func (u User) Name() string { return u.ID }

// HasRole reports whether role is one of the user's roles.
func (u User) HasRole(role string) bool { return slices.Contains(u.Roles, role) }

// WithPrincipal returns a context carrying the authenticated principal p.
// Routes with roles= admit a request only if p has one of them.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return rebind(ctx, func(b *binding) { b.principal = p })
}

// PrincipalFrom returns the principal in ctx, or nil.
func PrincipalFrom(ctx context.Context) Principal {
	if b := bindingFrom(ctx); b != nil {
		return b.principal
	}
	return nil
}

// allowed reports whether p may use a route with roles.
func allowed(p Principal, roles []string) bool {
	if len(roles) == 0 {
		return true
	}
	if p == nil {
		return false
	}
	return slices.ContainsFunc(roles, p.HasRole)
}
