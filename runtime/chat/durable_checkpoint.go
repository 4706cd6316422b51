package chat

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// This file holds checkpoints: saves of a durable conversation in the
// middle of a request. A request's state is saved once, when it ends; a
// request that does work it must not do twice (a sub-agent call, say)
// saves the conversation after it with Checkpoint, recording what it did,
// so that if the process dies before the request ends, the request that
// comes after the resume (the client's resend) reads the record with
// Interrupted and goes on from it.

// checkpointPrefix prefixes the keys of checkpoint records in a
// conversation's saved Extra.
const checkpointPrefix = "chat.checkpoint:"

// checkpoints is the context of a request of a durable conversation: the
// parent plus what Checkpoint needs, allocated once per request.
type checkpoints struct {
	context.Context
	c     *Conversation
	batch *chatstore.Batch
	start *chatstore.ConversationState // saved when the request began

	mu   sync.Mutex // orders the checkpoints of the request
	done bool       // the request ended
}

type checkpointsKey struct{}

// Value returns cp for checkpointsKey and asks the parent for every other
// key.
func (cp *checkpoints) Value(key any) any {
	if _, ok := key.(checkpointsKey); ok {
		return cp
	}
	return cp.Context.Value(key)
}

// withCheckpoints returns the context of a request of c whose memory
// writes are staged in b. c.mu is held; the request's save calls end
// first.
func (c *Conversation) withCheckpoints(ctx context.Context, b *chatstore.Batch) *checkpoints {
	return &checkpoints{Context: ctx, c: c, batch: b, start: c.durable.saved}
}

// end ends the checkpoints of the request: its save comes next.
func (cp *checkpoints) end() {
	cp.mu.Lock()
	cp.done = true
	cp.mu.Unlock()
}

// Durable reports whether ctx is that of a request of a durable
// conversation (on a [Router] with a [chatstore.ConversationStore]),
// whose [Checkpoint] saves it.
func Durable(ctx context.Context) bool {
	_, ok := ctx.Value(checkpointsKey{}).(*checkpoints)
	return ok
}

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
// an error matching [ErrNotActive], after the request's end.
func Checkpoint(ctx context.Context, key string, value []byte) error {
	cp, _ := ctx.Value(checkpointsKey{}).(*checkpoints)
	if cp == nil {
		return nil
	}
	return cp.save(ctx, key, value)
}

// save is Checkpoint.
func (cp *checkpoints) save(ctx context.Context, key string, value []byte) error {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	c := cp.c
	if cp.done {
		return fmt.Errorf("chat: checkpoint of conversation %s after its request: %w", c.id, ErrNotActive)
	}
	d := c.durable
	scopes, err := c.stack.snapshot()
	if err != nil {
		return fmt.Errorf("chat: checkpoint of conversation %s: %w", c.id, err)
	}
	prev := d.saved
	extra := maps.Clone(prev.Extra)
	if extra == nil {
		extra = map[string][]byte{}
	}
	if value != nil {
		extra[checkpointPrefix+key] = value
	} else {
		delete(extra, checkpointPrefix+key)
	}
	st := &chatstore.ConversationState{
		ID:              c.id,
		Version:         prev.Version,
		Principal:       prev.Principal,
		Created:         prev.Created,
		Used:            time.Now(),
		Scopes:          scopes,
		ResumeTokenHash: prev.ResumeTokenHash,
		Extra:           extra,
	}
	// The writes staged so far are committed, then no longer staged: the
	// request goes on writing, and its next save commits only what came
	// after (stores with incremental memory encodings refuse a write
	// committed twice).
	snap := cp.batch.Snapshot()
	if err := holdStack(func() error {
		return c.router.store.Save(context.WithoutCancel(ctx), st, d.currentLease(), snap)
	}); err != nil {
		return fmt.Errorf("chat: checkpoint of conversation %s: %w", c.id, err)
	}
	cp.batch.Forget(snap)
	d.saved = st
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
	cp, _ := ctx.Value(checkpointsKey{}).(*checkpoints)
	if cp == nil || cp.start == nil {
		return nil
	}
	return cp.start.Extra[checkpointPrefix+key]
}

// withoutCheckpoints returns extra without the checkpoint records: those
// a request's save drops. It returns extra itself when it has none.
func withoutCheckpoints(extra map[string][]byte) map[string][]byte {
	has := false
	for k := range extra {
		if strings.HasPrefix(k, checkpointPrefix) {
			has = true
			break
		}
	}
	if !has {
		return extra
	}
	out := make(map[string][]byte, len(extra))
	for k, v := range extra {
		if !strings.HasPrefix(k, checkpointPrefix) {
			out[k] = v
		}
	}
	return out
}
