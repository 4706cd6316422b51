package chat

import (
	"context"

	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// The contract between the runtime and the conversation stores moved to
// package chatstore, for store implementers; these names forward to it for
// one release.

// Deprecated: use [chatstore.ConversationState].
type ConversationState = chatstore.ConversationState

// Deprecated: use [chatstore.ScopeState].
type ScopeState = chatstore.ScopeState

// Deprecated: use [chatstore.Lease].
type Lease = chatstore.Lease

// Deprecated: use [chatstore.ConversationStore].
type ConversationStore = chatstore.ConversationStore

// Deprecated: use [chatstore.Batch].
type Batch = chatstore.Batch

// Deprecated: use [chatstore.StagingStore].
type StagingStore = chatstore.StagingStore

// Deprecated: use [chatstore.NewBatch].
func NewBatch() *Batch { return chatstore.NewBatch() }

// Deprecated: use [chatstore.WithBatch].
func WithBatch(ctx context.Context, b *Batch) context.Context { return chatstore.WithBatch(ctx, b) }

// Deprecated: use [chatstore.BatchFrom].
func BatchFrom(ctx context.Context) *Batch { return chatstore.BatchFrom(ctx) }

// Errors of a conversation store.
var (
	// Deprecated: use [chatstore.ErrConversationNotFound].
	ErrConversationNotFound = chatstore.ErrConversationNotFound
	// Deprecated: use [chatstore.ErrVersionConflict].
	ErrVersionConflict = chatstore.ErrVersionConflict
	// Deprecated: use [chatstore.ErrLeaseHeld].
	ErrLeaseHeld = chatstore.ErrLeaseHeld
	// Deprecated: use [chatstore.ErrLeaseLost].
	ErrLeaseLost = chatstore.ErrLeaseLost
	// Deprecated: use [chatstore.ErrCorruptState].
	ErrCorruptState = chatstore.ErrCorruptState
)
