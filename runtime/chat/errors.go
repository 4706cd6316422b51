package chat

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNotActive reports that an operation needed an active chat scope (or,
// for invocation-scoped beans, an active invocation) and found none.
var ErrNotActive = errors.New("chat: no active chat scope")

// ErrActive reports that [Begin] was called with a context that already
// carries an active conversation.
var ErrActive = errors.New("chat: a conversation is already active in this context")

// ErrNoProvider reports that a scoped bean whose constructor needs
// application dependencies was used in a conversation that was not given the
// registration of the bean's package.
var ErrNoProvider = errors.New("chat: no provider for bean")

// A BeanError is returned when a scoped bean cannot be resolved or built.
// It wraps the cause: match it with errors.Is against [ErrNotActive] or
// [ErrNoProvider], or the constructor's own error.
type BeanError struct {
	Bean string // the bean's type, "import/path.Type"
	Err  error
}

func (e *BeanError) Error() string {
	return fmt.Sprintf("chat: bean %s: %s", e.Bean, strings.TrimPrefix(e.Err.Error(), "chat: "))
}

// Unwrap returns the cause.
func (e *BeanError) Unwrap() error { return e.Err }

// notActiveError is the error of an operation that needed an active chat
// scope: it matches [ErrNotActive] and names the operation.
type notActiveError struct{ op string }

func (e notActiveError) Error() string {
	return "chat: " + e.op + ": no active chat scope (call it from a route, a tool or a bean method, or start one with chat.Begin)"
}

// Is reports whether target is ErrNotActive.
func (e notActiveError) Is(target error) bool { return target == ErrNotActive }

func notActive(op string) error { return notActiveError{op: op} }
