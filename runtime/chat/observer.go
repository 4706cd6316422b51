package chat

import "context"

// ScopeEventKind says which lifecycle step a [ScopeEvent] reports.
type ScopeEventKind uint8

const (
	// ScopeStarted: a scope was created ([Begin], [Push], [PushRoute]).
	ScopeStarted ScopeEventKind = iota + 1
	// ScopeActivated: a scope became the current scope of its conversation
	// (after it started, or when a nested scope above it was popped).
	ScopeActivated
	// ScopeDeactivated: a scope stopped being current (a scope was pushed
	// above it, or it is being popped or ended).
	ScopeDeactivated
	// ScopeEnded: a scope was destroyed, after its beans and chat memory.
	ScopeEnded
	// ScopeDetached: a scope of a durable conversation left this process
	// without ending (its connection was lost, another node took the
	// conversation over, or a failed save rolled it back): its beans were
	// detached ([DetachableBean]), not closed, and its chat memory
	// released here; its saved state stays in the store.
	ScopeDetached
	// ScopeResumed: a scope of a durable conversation was rebuilt in this
	// process from its saved state ([Router.Resume], or the rollback of a
	// failed save).
	ScopeResumed
)

var scopeEventNames = [...]string{
	ScopeStarted:     "Started",
	ScopeActivated:   "Activated",
	ScopeDeactivated: "Deactivated",
	ScopeEnded:       "Ended",
	ScopeDetached:    "Detached",
	ScopeResumed:     "Resumed",
}

// String returns "Started", "Activated", "Deactivated", "Ended",
// "Detached" or "Resumed".
func (k ScopeEventKind) String() string {
	if int(k) < len(scopeEventNames) && scopeEventNames[k] != "" {
		return scopeEventNames[k]
	}
	return "ScopeEventKind(?)"
}

// A ScopeEvent reports one lifecycle step of one scope.
//
// The order is fixed: [Begin] reports Started then Activated; [Push] reports
// Deactivated (parent), Started (child), Activated (child); [Pop] of a nested
// scope reports Deactivated (child), Ended (child), Activated (parent); [Pop]
// of the top scope reports Deactivated then Ended; [End] reports Deactivated
// for the current scope and then Ended for every scope, innermost first.
// Detaching a durable conversation reports Deactivated for the current
// scope and then Detached for every scope, innermost first; resuming one
// reports Resumed for every scope, outermost first, then Activated for the
// current scope.
type ScopeEvent struct {
	Kind     ScopeEventKind
	ScopeID  string
	ParentID string // "" for a top scope
	Depth    int    // 0 for a top scope
}

// An Observer is told about scope lifecycle events. It runs synchronously on
// the goroutine that caused the event, after the change is made and outside
// any lock: it may call the functions of this package, including [Push] and
// [Pop].
type Observer func(ctx context.Context, ev ScopeEvent)
