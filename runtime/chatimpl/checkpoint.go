package chatimpl

import "context"

// A request that does work it must not do twice (a sub-agent call, an A2A
// task's start) saves the durable conversation after it with
// [Checkpoint], recording what it did; if the process dies before the
// request ends, the request after the resume (the client's resend) reads
// the record with [Interrupted] and goes on from it. runtime/chat
// implements the saves; runtime/agent/subagent and runtime/a2aserver use
// them.

// A Checkpointer saves the durable conversation of one request. The chat
// runtime puts one in the context of each request of a durable
// conversation, under [CheckpointsKey].
type Checkpointer interface {
	// Checkpoint is [Checkpoint] for the request.
	Checkpoint(ctx context.Context, key string, value []byte) error
	// Interrupted is [Interrupted] for the request.
	Interrupted(key string) []byte
}

// CheckpointsKey is the context key of a request's [Checkpointer]; only
// the chat runtime sets it.
type CheckpointsKey struct{}

func checkpointer(ctx context.Context) Checkpointer {
	cp, _ := ctx.Value(CheckpointsKey{}).(Checkpointer)
	return cp
}

// Durable reports whether ctx is that of a request of a durable
// conversation (on a chat.Router with a chatstore.ConversationStore),
// whose [Checkpoint] saves it.
func Durable(ctx context.Context) bool { return checkpointer(ctx) != nil }

// Checkpoint saves the durable conversation of the request in ctx now,
// before the request ends: its scopes and durable beans as they are, and
// the chat memory writes the request staged so far, under its lease, and
// records value under key (nil removes the record). Records last until
// the request's own save, which drops them: they are found only by the
// request after a process that died mid-request (see [Interrupted]).
// Checkpoints of one request are saved one at a time, in the order of the
// calls; each saves a new version of the conversation. The request's
// writes after a checkpoint are saved by the next one or by the request's
// save. (A memory written again while a checkpoint commits it may make
// the next save fail with a conflict on stores that stage memory writes
// incrementally: checkpoint after a memory's writes, not while they go
// on.)
//
// Outside a request of a durable conversation it does nothing. It fails
// when the store does (the conversation is not rolled back: the request
// goes on, and its own save reports what the store says then), and, with
// an error matching chat.ErrNotActive, after the request's end.
func Checkpoint(ctx context.Context, key string, value []byte) error {
	if cp := checkpointer(ctx); cp != nil {
		return cp.Checkpoint(ctx, key, value)
	}
	return nil
}

// Interrupted returns the value a request recorded under key with
// [Checkpoint] and never dropped, because the process serving it stopped
// before the request's save: the conversation was resumed from that
// checkpoint, and the request in ctx (the first one since) can go on from
// what the interrupted one did rather than do it again. It returns nil
// when nothing is recorded under key, and outside a request of a durable
// conversation.
func Interrupted(ctx context.Context, key string) []byte {
	if cp := checkpointer(ctx); cp != nil {
		return cp.Interrupted(key)
	}
	return nil
}
