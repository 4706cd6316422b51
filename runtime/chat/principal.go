package chat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"
)

// A Principal is the authenticated user of a request, as a transport's
// authentication hook establishes it.
type Principal interface {
	// Name identifies the user (for logs). A durable conversation is
	// saved with it and resumes only for a principal of the same name. It
	// must be valid UTF-8: a [Router] refuses to connect or resume a
	// conversation for a principal whose name is not (see
	// [ErrInvalidPrincipal]).
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

// ErrInvalidPrincipal is the cause of the failure of [Router.Connect] and
// [Router.Resume] for a principal whose name is not valid UTF-8: the
// failure matches [ErrForbidden] (the reason a client is sent) and
// ErrInvalidPrincipal. Nothing is saved. Such a name could not be kept
// as it is by the stores (their encodings replace the invalid bytes), so
// the conversation could never be resumed: an authentication hook that
// takes names from raw bytes (a header, a token's claim) refuses or
// encodes them itself.
var ErrInvalidPrincipal = errors.New("chat: the principal's name is not valid UTF-8")

// checkPrincipal returns the failure of a connect or resume by p: nil
// unless p's name is not valid UTF-8.
func checkPrincipal(p Principal) *Failure {
	if p == nil {
		return nil
	}
	if name := p.Name(); !utf8.ValidString(name) {
		return fail(ErrForbidden, fmt.Errorf("%w: %q", ErrInvalidPrincipal, name))
	}
	return nil
}

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
