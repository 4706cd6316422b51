package chat

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// This file holds checkpoints: saves of a durable conversation in the
// middle of a request. A request's state is saved once, when it ends; a
// request that does work it must not do twice (a sub-agent call, say)
// saves the conversation after it with chatimpl.Checkpoint, recording what it did,
// so that if the process dies before the request ends, the request that
// comes after the resume (the client's resend) reads the record with
// chatimpl.Interrupted and goes on from it.

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

// Value returns cp for chatimpl.CheckpointsKey and asks the parent for
// every other key.
func (cp *checkpoints) Value(key any) any {
	if _, ok := key.(chatimpl.CheckpointsKey); ok {
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

// Checkpoint implements [chatimpl.Checkpointer].
func (cp *checkpoints) Checkpoint(ctx context.Context, key string, value []byte) error {
	return cp.save(ctx, key, value)
}

// save is chatimpl.Checkpoint.
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

// Interrupted implements [chatimpl.Checkpointer].
func (cp *checkpoints) Interrupted(key string) []byte {
	if cp.start == nil {
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
