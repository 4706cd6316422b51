package chatimpl

import "context"

// The chat memories of AI services are kept per scope: runtime/ai (and
// the runtime packages that keep memories of their own, such as
// runtime/offload and runtime/agent/subagent) attach each to the scope it
// belongs to with chat.AttachMemory, so that the scope's wipes and its end
// reach it. These interfaces are what the scope calls.

// A ScopedMemory is chat memory kept for a scope.
type ScopedMemory interface {
	// ClearMemory empties the memory, which stays in use.
	ClearMemory(ctx context.Context) error
	// DeleteMemory removes the memory for good: its scope is gone.
	DeleteMemory(ctx context.Context) error
}

// A DurableMemory is a [ScopedMemory] that can tell whether it is kept in
// a conversation store (the AI services' memories can). chat.AttachMemory
// refuses one that is not, in a durable conversation, with an error
// matching chat.ErrMemoryNotDurable.
type DurableMemory interface {
	ScopedMemory
	// KeptInStore reports whether the memory's writes go to a
	// [chatstore.StagingStore].
	KeptInStore() bool
}

// A ReleasableMemory is a [ScopedMemory] that holds state in the process
// (a cache of its messages, say) which must not outlive the scope's stay
// in the process. ReleaseMemory is called instead of DeleteMemory when a
// scope of a durable conversation leaves the process without ending (the
// connection was lost, another node took the conversation over, or a failed
// save rolled the conversation back to its saved state): the memory forgets
// what it holds here and keeps its stored messages, which the next node to
// serve the conversation reads.
type ReleasableMemory interface {
	ScopedMemory
	ReleaseMemory(ctx context.Context) error
}
