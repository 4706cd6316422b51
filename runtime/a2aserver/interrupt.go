package a2aserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// This file makes a task whose node died during its request fail cleanly
// on the other nodes (and after a restart). A request's state is saved
// when it ends; so that a task is not lost with its node, its record (id,
// context, state working, history with the user's message) is saved
// before its route runs, with chatimpl.Checkpoint, which the request's own
// save drops. A record found in the store therefore names a task whose
// request has not ended: it runs on the node holding the conversation's
// lease, or, when no node holds it, it was interrupted and is answered
// failed. It is never run again: a message sent again is a new task.

// taskKey is the checkpoint key of the record of a task whose request
// runs.
const taskKey = "a2a.task"

// checkpointKey is the key chatimpl.Checkpoint saves taskKey's record under
// in a conversation's saved Extra ("chat.checkpoint:" + key, as
// docs/durability.md documents it).
const checkpointKey = "chat.checkpoint:" + taskKey

// interruptedText is the status message of an interrupted task.
const interruptedText = "the task was interrupted: the agent stopped before it ended, and it is not run again; send the message again for a new task"

// probeTTL bounds the lease a handler takes to learn whether a node
// serves a conversation (leased): it is released at once.
const probeTTL = time.Second

// A taskRecord is what is saved of a task when its request starts.
type taskRecord struct {
	Task *a2a.Task `json:"task"`
	// Resume is the context's resume token then, sealed: the first
	// request of a context, or the first after a resume, saves the
	// token only when it ends, and a node that dies during it would
	// leave the context unresumable.
	Resume []byte `json:"resume,omitempty"`
	// Interrupted are the tasks found interrupted when the context was
	// resumed, until a request's save has them in the task history: a
	// node that dies before would lose them.
	Interrupted []*a2a.Task `json:"interrupted,omitempty"`
}

// checkpoint saves the record of tk, whose request starts in ctx, with
// its conversation: nothing outside a durable conversation. A failure is
// the request's: the route does not run, since it could not be told
// apart from an interrupted one.
func (h *Handler) checkpoint(ctx context.Context, tk *task) error {
	if !chatimpl.Durable(ctx) {
		return nil
	}
	cc := tk.cc
	cc.mu.Lock()
	rec := taskRecord{Task: tk.snapshot(-1), Interrupted: cc.interrupted}
	if h.aead != nil && cc.token != "" {
		rec.Resume = h.seal(cc.id, cc.token)
	}
	cc.mu.Unlock()
	b, err := encodeRecord(&rec)
	if err != nil {
		return fmt.Errorf("a2aserver: encoding the record of task %s: %w", rec.Task.ID, err)
	}
	if err := chatimpl.Checkpoint(ctx, taskKey, b); err != nil {
		return fmt.Errorf("%w: a2aserver: saving the record of task %s: %w", chat.ErrUnavailable, rec.Task.ID, err)
	}
	return nil
}

// encodeRecord encodes rec, within MaxSavedBytes: without the task's
// artifacts, then without its history, when it is larger.
func encodeRecord(rec *taskRecord) ([]byte, error) {
	b, err := json.Marshal(rec)
	if err != nil || len(b) <= MaxSavedBytes {
		return b, err
	}
	rec.Task.Artifacts = nil
	if b, err = json.Marshal(rec); err != nil || len(b) <= MaxSavedBytes {
		return b, err
	}
	rec.Task.History = nil
	return json.Marshal(rec)
}

// decodeRecord returns a saved record, nil when there is none or it does
// not decode.
func (h *Handler) decodeRecord(id string, raw []byte) *taskRecord {
	if raw == nil {
		return nil
	}
	var rec taskRecord
	if err := json.Unmarshal(raw, &rec); err != nil || rec.Task == nil || rec.Task.ID == "" {
		h.log.Warn("a2aserver: a saved task record does not decode", "context", id, "err", err)
		return nil
	}
	return &rec
}

// withInterrupted returns the saved tasks with those of the record rec:
// its task as it is saved (the node serving the conversation runs it)
// when running, failed as interrupted otherwise.
func (h *Handler) withInterrupted(tasks []*a2a.Task, rec *taskRecord, running bool) []*a2a.Task {
	for _, t := range rec.Interrupted {
		tasks = h.withRecord(tasks, t)
	}
	if !running {
		h.interrupt(rec.Task)
	}
	return h.withRecord(tasks, rec.Task)
}

// interrupt gives t, a task whose request was interrupted, the failed
// status saying so, added to its history.
func (h *Handler) interrupt(t *a2a.Task) {
	msg := &a2a.Message{ID: a2a.NewMessageID(), ContextID: t.ContextID, TaskID: t.ID, Role: a2a.MessageRoleAgent,
		Parts: a2a.ContentParts{a2a.TextPart{Text: interruptedText}}}
	t.Status = status(a2a.TaskStateFailed, msg)
	t.History = h.trimHistory(append(t.History, msg))
}

// withRecord returns tasks with t in the place of the task of its id, or
// after them, the oldest finished ones beyond MaxTasks left out.
func (h *Handler) withRecord(tasks []*a2a.Task, t *a2a.Task) []*a2a.Task {
	if i := slices.IndexFunc(tasks, func(x *a2a.Task) bool { return x.ID == t.ID }); i >= 0 {
		tasks[i] = t
		return tasks
	}
	tasks = append(tasks, t)
	for len(tasks) > h.opts.MaxTasks {
		i := slices.IndexFunc(tasks, func(x *a2a.Task) bool { return x != t && x.Status.State.Terminal() })
		if i < 0 {
			i = slices.IndexFunc(tasks, func(x *a2a.Task) bool { return x != t })
		}
		tasks = slices.Delete(tasks, i, i+1)
	}
	return tasks
}

// leased reports whether a node serves the conversation id now: the
// request of a saved record then still runs there. It takes the lease
// for a moment to learn it (and lets go of it at once); when the store
// cannot tell, it reports true, claiming no failure it does not know of.
func (h *Handler) leased(ctx context.Context, id string) bool {
	l, err := h.opts.Store.Acquire(ctx, id, "a2aserver-probe-"+newID(8), probeTTL)
	if err != nil {
		if !errors.Is(err, chatstore.ErrLeaseHeld) {
			h.log.WarnContext(ctx, "a2aserver: the store does not tell whether a node serves a context", "context", id, "err", err)
		}
		return true
	}
	if err := h.opts.Store.Release(context.WithoutCancel(ctx), id, l); err != nil {
		h.log.WarnContext(ctx, "a2aserver: releasing a probe's lease", "context", id, "err", err)
	}
	return false
}
