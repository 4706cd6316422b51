// Package chatstore is the contract between the chat runtime (package
// runtime/chat) and the stores that make conversations outlive their
// process and connection (docs/durability.md, "The stores"): what is saved
// ([ConversationState]), the store interface ([ConversationStore]), leases,
// and the [Batch] in which a request's other writes (chat memories) are
// committed with the conversation's state.
//
// It is for store implementers. Applications configure a store
// (runtime/boltstore, runtime/redisstore, runtime/pgstore, or
// chat.NewInMemoryConversationStore) as chat.RouterOptions.Store and need
// nothing from this package. Package chatstoretest holds the conformance
// suite every store passes.
package chatstore

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// A ConversationState is the saved form of a conversation: everything a
// node needs to serve it after a restart, a reconnect or a move to another
// node. Stores treat it as a value: they never retain or hand out slices or
// maps they share with callers.
type ConversationState struct {
	// ID names the conversation: the id of its top scope, which stays the
	// same for the conversation's life.
	ID string
	// Version counts the conversation's saves: 0 before the first, then the
	// version the store holds. [ConversationStore.Save] writes only when
	// the stored version equals Version, and then increments it.
	Version uint64
	// Principal is the name of the principal the conversation belongs to,
	// "" for an anonymous one. A resume by another principal is refused.
	Principal string
	// Created is when the conversation started; Used when a request last
	// completed in it. Stores expire conversations idle for longer than
	// their time to live, counted by the store's clock from the last save
	// (which normally is at Used).
	Created, Used time.Time
	// Scopes is the scope stack, the top scope first and the current scope
	// last.
	Scopes []ScopeState
	// ResumeTokenHash is the SHA-256 of the resume token a client presents
	// to resume the conversation; the token itself is never stored. A
	// resume rotates it.
	ResumeTokenHash []byte
	// Extra holds the state of features and transports layered on the
	// conversation, by a key naming its owner (the websocket server's
	// record of the last completed request, for example). Stores keep it
	// verbatim.
	Extra map[string][]byte
}

// A ScopeState is the saved form of one scope of a conversation.
type ScopeState struct {
	ID    string // the scope's id
	Route string // the route the scope's requests run
	// Wipe reports that a memory wipe is scheduled for the end of the
	// request in progress. It is saved as it is after wipes ran, so it is
	// false unless a feature keeps a scope's wipe across requests.
	Wipe bool
	// Beans holds the JSON encoding of the scope's durable beans, by bean
	// name ("import/path.Type"). Beans that are not durable are not saved:
	// they are built afresh when first used after a resume.
	Beans map[string][]byte
	// Memories lists the ids of the chat memories attached to the scope.
	// When a save drops an id (its scope ended, or it was detached), the
	// store deletes that memory's messages in the same transaction.
	Memories []string
}

// A Lease gives one node the right to serve a conversation until Expires.
// Token is a fencing token: it grows with every new holder, and a store
// refuses a save made under a lease that is no longer the current one.
//
// A lease is the conversation's current lease from the Acquire that
// granted it until it is released or another owner acquires the
// conversation, which another owner can do once the lease has expired. So
// a lease that expired while nobody took the conversation over is still
// current: saves under it succeed, and its owner's Acquire renews it with
// the same token.
type Lease struct {
	Owner   string    // the node holding the lease
	Token   uint64    // the fencing token, > 0 for a lease that was granted
	Expires time.Time // when the lease ends unless renewed
}

// Errors of a [ConversationStore]; stores wrap them with detail, so match
// them with errors.Is.
var (
	// ErrConversationNotFound reports a conversation that does not exist:
	// never saved, deleted, or expired.
	ErrConversationNotFound = errors.New("chat: conversation not found")
	// ErrVersionConflict reports a save made from a stale version of the
	// conversation: another writer saved it meanwhile. Nothing was written.
	ErrVersionConflict = errors.New("chat: conversation changed since it was loaded")
	// ErrLeaseHeld reports that another node holds an unexpired lease on
	// the conversation.
	ErrLeaseHeld = errors.New("chat: another node serves the conversation")
	// ErrLeaseLost reports a save under a lease that is not the
	// conversation's current one: it was released, or it expired and
	// another node took the conversation over (or it was never granted).
	// Nothing was written.
	ErrLeaseLost = errors.New("chat: the lease on the conversation was lost")
	// ErrCorruptState reports a stored conversation the store cannot
	// read: a record that does not decode, a version that is not a
	// number. It is not retryable: a resume of it is refused
	// (chat.ErrResumeRefused) and the cause logged.
	ErrCorruptState = errors.New("chat: the stored conversation cannot be read")
)

// A ConversationStore saves conversations. Implementations must be safe for
// concurrent use by the nodes of a cluster (a store shared between
// processes enforces leases and versions itself, atomically).
//
// A store also keeps its conversations' chat memories, behind a
// memory.Store (package memory) of its own: a value apart from the
// ConversationStore, since both interfaces have a Delete method, with
// different meanings. That memory store stages the writes made with a
// request's context in the request's [Batch], and Save commits them in
// the same transaction as the conversation's state.
type ConversationStore interface {
	// Load returns the saved state of the conversation id. An unknown,
	// deleted or expired conversation is an error matching
	// [ErrConversationNotFound]; a stored record the store cannot read,
	// one matching [ErrCorruptState] (and naming the conversation).
	Load(ctx context.Context, id string) (*ConversationState, error)

	// Save writes st and the writes staged in b (nil for none) atomically,
	// under lease: all of it or nothing. It fails with
	// [ErrVersionConflict] when the stored version is not st.Version (0
	// meaning the conversation must not exist yet) and with [ErrLeaseLost]
	// when lease is not the conversation's current lease. On success it
	// sets st.Version to the new version and restarts the conversation's
	// time to live. Memory ids listed by the stored state and not by st are
	// deleted. The lease matches when its owner and token are those of the
	// current lease; its Expires is not consulted. When st.Version > 0 and
	// the conversation no longer exists (deleted or expired), the error
	// matches both [ErrVersionConflict] and [ErrConversationNotFound].
	Save(ctx context.Context, st *ConversationState, lease Lease, b *Batch) error

	// Delete removes the conversation id, its chat memories and its lease.
	// Deleting an unknown conversation is not an error.
	Delete(ctx context.Context, id string) error

	// Acquire gives owner the lease on the conversation id for ttl. It
	// fails with [ErrLeaseHeld] when another owner holds an unexpired
	// lease. When owner already holds it, the lease is renewed with the
	// same token; otherwise the new lease gets a greater token than any
	// before. The conversation need not exist yet. A renewal that returns
	// another token than the caller's lease had means that lease was lost
	// meanwhile.
	Acquire(ctx context.Context, id, owner string, ttl time.Duration) (Lease, error)

	// Release ends lease early, so that another node can take the
	// conversation over at once. Releasing a lease that is no longer the
	// current one does nothing.
	Release(ctx context.Context, id string, lease Lease) error
}

// A Batch collects the writes a request makes to a conversation's durable
// data other than its state (its chat memories), to be committed with the
// state by [ConversationStore.Save]. Keys are memory ids; a nil value
// deletes the key; other values are in the store's own encoding, read only
// by the store that staged them. A batch is safe for concurrent use; reads
// see the batch's own writes first ([Batch.Get]).
//
// The runtime puts a batch in the context of each request of a durable
// conversation ([WithBatch]); stores stage memory writes made with that
// context in it ([BatchFrom]) instead of writing them at once, and say so
// by implementing [StagingStore].
type Batch struct {
	mu     sync.Mutex
	writes map[string][]byte
	order  []string // keys in the order of their first write
}

// NewBatch returns an empty batch.
func NewBatch() *Batch { return &Batch{writes: map[string][]byte{}} }

// Put stages value under key; a nil value stages the deletion of key. The
// batch keeps its own copy of value.
func (b *Batch) Put(key string, value []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.writes[key]; !ok {
		b.order = append(b.order, key)
	}
	if value != nil {
		value = slices.Clone(value)
		if value == nil {
			value = []byte{}
		}
	}
	b.writes[key] = value
}

// Get returns the value staged under key (a copy; nil for a staged
// deletion) and whether anything is staged under it.
func (b *Batch) Get(key string) ([]byte, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.writes[key]
	return slices.Clone(v), ok
}

// Len returns the number of keys written.
func (b *Batch) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.order)
}

// All calls fn for each key written, in the order of their first write,
// with its last value (nil for a deletion). fn must not modify value or
// call the batch's methods.
func (b *Batch) All(fn func(key string, value []byte)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, k := range b.order {
		fn(k, b.writes[k])
	}
}

type batchKey struct{}

// WithBatch returns a context carrying b: stores stage the memory writes
// made with it in b.
func WithBatch(ctx context.Context, b *Batch) context.Context {
	return context.WithValue(ctx, batchKey{}, b)
}

// BatchFrom returns the batch in ctx, or nil when there is none (the write
// is then made at once).
func BatchFrom(ctx context.Context) *Batch {
	b, _ := ctx.Value(batchKey{}).(*Batch)
	return b
}

// A StagingStore is the memory side of a [ConversationStore] (the
// memory.Store of runtime/boltstore, runtime/redisstore, runtime/pgstore,
// chatstoretest.InMemoryMemories): it stages the writes made with a
// request's context in the request's [Batch], so that they are saved with
// the conversation's state. Memory stores implement it to say so; the
// runtime refuses, in a durable conversation, a chat memory whose store
// does not (chat.ErrMemoryNotDurable).
type StagingStore interface {
	// StagesInBatch marks the store; it does nothing.
	StagesInBatch()
}
