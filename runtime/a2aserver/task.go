package a2aserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/internal/principal"
	"github.com/chatscopes/chatgen/runtime/internal/sse"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// extraKey is the key of a context's task history in its conversation's
// saved state (chatstore.ConversationState.Extra).
const extraKey = "a2a.tasks"

// maxArtifacts bounds the artifacts a task keeps; later ones are still
// streamed.
const maxArtifacts = 64

// MaxSavedBytes bounds the task history saved with a conversation (its
// JSON): over it, the artifacts of the saved tasks are left out, then the
// oldest tasks, then the latest task's history (its status, with the
// agent's answer, is always saved), until it fits. The tasks held in the
// process keep theirs.
const MaxSavedBytes = 256 << 10

// A convContext is one A2A context: a conversation, its principal and
// its tasks.
type convContext struct {
	id        string
	principal chat.Principal

	run   sync.Mutex // one request at a time; guards conv, timer, ended
	conv  *chat.Conversation
	timer *time.Timer
	ended bool

	mu      sync.Mutex // guards tasks, current, token and the fields of every task
	tasks   []*task    // oldest first
	current *task      // the task whose request runs
	token   string     // the conversation's resume token ("" when not durable)
	// interrupted are the tasks found interrupted when the context was
	// resumed, until a request's save has them in the saved history;
	// each task's record carries them (interrupt.go). Not changed in
	// place.
	interrupted []*a2a.Task
}

// A task is one A2A task: a request of its context's conversation, and
// the requests that answer its pauses. Its fields are guarded by cc.mu.
type task struct {
	cc *convContext
	t  a2a.Task

	running   bool
	canceling bool
	cancel    context.CancelCauseFunc
	done      chan struct{} // closed when the running request ends
	subs      []*subscriber
	reply     strings.Builder // the agent's text of the running request
	paused    *pause          // what the running request paused on
	pause     *pause          // what the task waits for (input-required)
}

// A pause is what an input-required task waits for: the answer to a
// client-run tool call or to a confirmation.
type pause struct {
	kind string // protocol.KeyClientTool or "confirm"
	id   string
	data map[string]any // the call, as the status message shows it
}

// newID returns a random hex id of n bytes.
func newID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// contextOfTask returns the context id a task id names: task ids are the
// context's id, a dot and a random part.
func contextOfTask(id string) string {
	i := strings.LastIndexByte(id, '.')
	if i <= 0 {
		return ""
	}
	return id[:i]
}

func principalName(p chat.Principal) string {
	if p == nil {
		return ""
	}
	return p.Name()
}

// newContext connects the conversation of a new context of p.
func (h *Handler) newContext(ctx context.Context, p chat.Principal) (*convContext, error) {
	h.mu.Lock()
	closed, full := h.closed, len(h.contexts) >= h.opts.MaxContexts
	h.mu.Unlock()
	switch {
	case closed:
		return nil, ErrClosed
	case full:
		return nil, ErrTooManyContexts
	}
	conv, err := h.router.Connect(chat.WithPrincipal(context.WithoutCancel(ctx), p), h.opts.Route)
	if err != nil {
		return nil, fmt.Errorf("a2aserver: starting a conversation: %w", err)
	}
	cc := &convContext{id: conv.ID(), principal: p, conv: conv, token: conv.ResumeToken()}
	h.keep(cc, conv)
	h.mu.Lock()
	h.contexts[cc.id] = cc
	h.mu.Unlock()
	return cc, nil
}

// keep makes conv save the task history of cc with its state.
func (h *Handler) keep(cc *convContext, conv *chat.Conversation) {
	conv.SetExtra(extraKey, func(_ string, f *chat.Failure) []byte {
		b, err := h.record(cc, f)
		if err != nil {
			h.log.Error("a2aserver: encoding a context's tasks", "context", cc.id, "err", err)
			return nil
		}
		return b
	})
	if h.aead != nil {
		conv.SetExtra(resumeKey, func(string, *chat.Failure) []byte {
			cc.mu.Lock()
			defer cc.mu.Unlock()
			if cc.token == "" {
				return nil
			}
			return h.seal(cc.id, cc.token)
		})
	}
}

// lookupContext returns the context id of principal p held here.
func (h *Handler) lookupContext(id string, p chat.Principal) *convContext {
	h.mu.Lock()
	defer h.mu.Unlock()
	cc := h.contexts[id]
	if cc == nil || !principal.Same(cc.principal, p) {
		return nil
	}
	return cc
}

// lookupTask returns the task id of principal p held here.
func (h *Handler) lookupTask(id string, p chat.Principal) *task {
	cc := h.lookupContext(contextOfTask(id), p)
	if cc == nil {
		return nil
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	for _, tk := range cc.tasks {
		if string(tk.t.ID) == id {
			return tk
		}
	}
	return nil
}

// A savedTasks is the task history saved with a conversation.
type savedTasks struct {
	Tasks []*a2a.Task `json:"tasks"`
}

// record returns the task history of cc to save, the running task's
// status being the one the failure f gives it.
func (h *Handler) record(cc *convContext, f *chat.Failure) ([]byte, error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	out := savedTasks{Tasks: make([]*a2a.Task, 0, len(cc.tasks))}
	for _, tk := range cc.tasks {
		t := tk.snapshot(-1)
		if tk == cc.current {
			st, msg := tk.final(f)
			t.Status = st
			if msg != nil {
				t.History = h.trimHistory(append(t.History, msg))
			}
		}
		out.Tasks = append(out.Tasks, t)
	}
	b, err := json.Marshal(out)
	if err != nil || len(b) <= MaxSavedBytes {
		return b, err
	}
	for _, t := range out.Tasks {
		t.Artifacts = nil
	}
	for {
		if b, err = json.Marshal(out); err != nil || len(b) <= MaxSavedBytes {
			return b, err
		}
		if len(out.Tasks) == 1 {
			if len(out.Tasks[0].History) == 0 {
				return b, nil
			}
			out.Tasks[0].History = nil
			continue
		}
		out.Tasks = out.Tasks[1:]
	}
}

// storedTasks returns the saved tasks of context id, of principal p, from
// the store; nil when it is unknown or another principal's.
func (h *Handler) storedTasks(ctx context.Context, id string, p chat.Principal) []*a2a.Task {
	if h.opts.Store == nil || id == "" {
		return nil
	}
	st, err := h.opts.Store.Load(ctx, id)
	if err != nil {
		return nil
	}
	if st.Principal != principalName(p) {
		return nil
	}
	tasks := h.decodeTasks(id, st.Extra[extraKey])
	if rec := h.decodeRecord(id, st.Extra[checkpointKey]); rec != nil {
		// A task whose request has not ended: it runs on the node that
		// holds the conversation, or none does and it was interrupted.
		tasks = h.withInterrupted(tasks, rec, h.leased(ctx, id))
	}
	return tasks
}

// decodeTasks returns the tasks of a saved task history, nil when there
// is none or it does not decode.
func (h *Handler) decodeTasks(id string, raw []byte) []*a2a.Task {
	if raw == nil {
		return nil
	}
	var s savedTasks
	if err := json.Unmarshal(raw, &s); err != nil {
		h.log.Warn("a2aserver: a saved task history does not decode", "context", id, "err", err)
		return nil
	}
	return s.Tasks
}

// findTask returns a copy of the task id of p, held here or saved;
// historyLength < 0 keeps its whole history.
func (h *Handler) findTask(ctx context.Context, id string, p chat.Principal, historyLength int) *a2a.Task {
	if tk := h.lookupTask(id, p); tk != nil {
		tk.cc.mu.Lock()
		defer tk.cc.mu.Unlock()
		return tk.snapshot(historyLength)
	}
	for _, t := range h.storedTasks(ctx, contextOfTask(id), p) {
		if string(t.ID) == id {
			trimTo(t, historyLength)
			return t
		}
	}
	return nil
}

// trimTo keeps the last n messages of t's history (all when n < 0).
func trimTo(t *a2a.Task, n int) {
	if n >= 0 && len(t.History) > n {
		t.History = t.History[len(t.History)-n:]
	}
}

// snapshot returns a copy of the task, with the last historyLength
// messages of its history (all when < 0); cc.mu is held.
func (tk *task) snapshot(historyLength int) *a2a.Task {
	t := tk.t
	t.History = slices.Clone(t.History)
	t.Artifacts = slices.Clone(t.Artifacts)
	trimTo(&t, historyLength)
	return &t
}

// trimHistory keeps the last MaxHistory messages of msgs.
func (h *Handler) trimHistory(msgs []*a2a.Message) []*a2a.Message {
	if n := h.opts.MaxHistory; len(msgs) > n {
		return slices.Clone(msgs[len(msgs)-n:])
	}
	return msgs
}

// addTask adds a new task to cc, dropping the oldest finished ones beyond
// MaxTasks; cc.mu is held.
func (h *Handler) addTask(cc *convContext, tk *task) {
	cc.tasks = append(cc.tasks, tk)
	for len(cc.tasks) > h.opts.MaxTasks {
		i := slices.IndexFunc(cc.tasks, func(t *task) bool { return !t.running && t.t.Status.State.Terminal() })
		if i < 0 {
			i = slices.IndexFunc(cc.tasks, func(t *task) bool { return !t.running })
		}
		if i < 0 {
			break
		}
		cc.tasks = slices.Delete(cc.tasks, i, i+1)
	}
}

// status returns a status of state with msg, now.
func status(state a2a.TaskState, msg *a2a.Message) a2a.TaskStatus {
	now := time.Now().UTC()
	return a2a.TaskStatus{State: state, Message: msg, Timestamp: &now}
}

// agentMessage returns a message of the agent in the task's context.
func (tk *task) agentMessage(parts ...a2a.Part) *a2a.Message {
	return &a2a.Message{ID: a2a.NewMessageID(), ContextID: tk.t.ContextID, TaskID: tk.t.ID, Role: a2a.MessageRoleAgent, Parts: parts}
}

// final returns the status the running request's end gives the task, its
// failure being f, and the agent's message it adds to the history (nil
// when none); cc.mu is held.
func (tk *task) final(f *chat.Failure) (a2a.TaskStatus, *a2a.Message) {
	var parts a2a.ContentParts
	if text := tk.reply.String(); text != "" {
		parts = append(parts, a2a.TextPart{Text: text})
	}
	switch {
	case tk.canceling || (f != nil && errors.Is(f, chat.ErrCancelled)):
		parts = append(parts, a2a.TextPart{Text: "the task was canceled"})
		return status(a2a.TaskStateCanceled, tk.agentMessage(parts...)), nil
	case f != nil:
		reason := f.Reason
		if reason == "" {
			reason = "ServerError"
		}
		parts = append(parts, a2a.TextPart{Text: "the task failed: " + reason})
		msg := tk.agentMessage(parts...)
		return status(a2a.TaskStateFailed, msg), msg
	case tk.paused != nil:
		parts = append(parts, a2a.DataPart{Data: map[string]any{tk.paused.kind: tk.paused.data}})
		msg := tk.agentMessage(parts...)
		return status(a2a.TaskStateInputRequired, msg), msg
	}
	if len(parts) == 0 {
		return status(a2a.TaskStateCompleted, nil), nil
	}
	msg := tk.agentMessage(parts...)
	return status(a2a.TaskStateCompleted, msg), msg
}

// errBusy is the failure of a send while the handler closes.
var errBusy = &rpcError{Code: codeInternal, Message: "Internal error: the agent is shutting down"}

// start runs creq as the next request of tk's context, for tk, in a
// goroutine of its own; cc.mu is held. The request's context is not the
// HTTP request's: the task goes on when the client goes away, and a
// cancel stops it.
func (h *Handler) start(tk *task, p chat.Principal, creq *chat.RouteRequest) *rpcError {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return errBusy
	}
	h.wg.Add(1)
	h.mu.Unlock()
	ctx, cancel := context.WithCancelCause(chat.WithPrincipal(context.Background(), p))
	tk.running, tk.canceling, tk.cancel = true, false, cancel
	tk.done = make(chan struct{})
	tk.reply.Reset()
	tk.paused, tk.pause = nil, nil
	go func() {
		defer h.wg.Done()
		defer cancel(nil)
		h.run(ctx, tk, creq)
	}()
	return nil
}

// run serves one request of tk.
func (h *Handler) run(ctx context.Context, tk *task, creq *chat.RouteRequest) {
	cc := tk.cc
	cc.run.Lock()
	defer cc.run.Unlock()
	if cc.timer != nil {
		cc.timer.Stop()
	}
	defer h.idle(cc)
	cc.mu.Lock()
	if tk.canceling || ctx.Err() != nil {
		cc.mu.Unlock()
		h.finish(tk, chat.ErrCancelled)
		return
	}
	tk.t.Status = status(a2a.TaskStateWorking, nil)
	tk.publish(statusEvent(tk, tk.t.Status, false))
	cc.mu.Unlock()
	conv, err := h.conversation(ctx, cc)
	if err != nil {
		h.log.ErrorContext(ctx, "a2aserver: a task found no conversation", "context", cc.id, "task", tk.t.ID, "err", err)
		h.finish(tk, chat.FailureOf(err))
		return
	}
	cc.mu.Lock()
	cc.current = tk
	cc.mu.Unlock()
	sink := func(ev chat.Event) error { return h.event(tk, ev) }
	var f *chat.Failure
	if conv.ResumeToken() != "" {
		// A durable conversation: the task is saved before its route
		// runs, so that a node that dies during it leaves a record that
		// tells the other nodes it was interrupted (interrupt.go).
		_, f = conv.Run(ctx, conv.ScopeID(), creq, sink, func(ctx context.Context) error {
			if err := h.checkpoint(ctx, tk); err != nil {
				return err
			}
			return chat.Execute(ctx)
		})
	} else {
		_, f = conv.Handle(ctx, conv.ScopeID(), creq, sink)
	}
	if f != nil && !errors.Is(f, chat.ErrCancelled) {
		h.log.InfoContext(ctx, "a2aserver: a task failed", "context", cc.id, "task", tk.t.ID, "reason", f.Reason, "err", f.Err)
	}
	if f == nil {
		cc.mu.Lock()
		cc.interrupted = nil // the request's save has them
		cc.mu.Unlock()
	}
	h.finish(tk, f)
	if f != nil && h.aead != nil && (errors.Is(f, chat.ErrUnavailable) || errors.Is(f, chat.ErrSessionNotActive)) && conv.ScopeID() != "" {
		// Another node took the conversation over (or the store failed):
		// the next message resumes it from the store.
		h.drop(cc)
	}
}

// drop lets go of cc, which another node may serve now; cc.run is held.
func (h *Handler) drop(cc *convContext) {
	h.mu.Lock()
	if h.contexts[cc.id] == cc {
		delete(h.contexts, cc.id)
	}
	h.mu.Unlock()
	h.closeContext(cc)
}

// conversation returns the conversation of cc, connecting a new one when
// its route ended the last; cc.run is held.
func (h *Handler) conversation(ctx context.Context, cc *convContext) (*chat.Conversation, error) {
	if cc.ended {
		return nil, ErrClosed
	}
	if cc.conv != nil && cc.conv.ScopeID() != "" {
		return cc.conv, nil
	}
	if cc.conv != nil {
		if err := cc.conv.Close(ctx); err != nil {
			return nil, fmt.Errorf("a2aserver: closing an ended conversation: %w", err)
		}
		cc.conv = nil
	}
	c, err := h.router.Connect(chat.WithPrincipal(ctx, cc.principal), h.opts.Route)
	if err != nil {
		return nil, fmt.Errorf("a2aserver: starting the conversation of context %q: %w", cc.id, err)
	}
	cc.mu.Lock()
	cc.token = c.ResumeToken()
	cc.mu.Unlock()
	h.keep(cc, c)
	cc.conv = c
	return c, nil
}

// finish ends the running request of tk with the failure f.
func (h *Handler) finish(tk *task, f *chat.Failure) {
	cc := tk.cc
	cc.mu.Lock()
	defer cc.mu.Unlock()
	st, msg := tk.final(f)
	tk.t.Status = st
	if msg != nil {
		tk.t.History = h.trimHistory(append(tk.t.History, msg))
	}
	if st.State == a2a.TaskStateInputRequired {
		tk.pause = tk.paused
	}
	tk.running = false
	if cc.current == tk {
		cc.current = nil
	}
	tk.publish(statusEvent(tk, st, true))
	for _, s := range tk.subs {
		close(s.end)
	}
	tk.subs = nil
	close(tk.done)
}

// statusEvent is a status update of tk.
func statusEvent(tk *task, st a2a.TaskStatus, final bool) *a2a.TaskStatusUpdateEvent {
	return &a2a.TaskStatusUpdateEvent{TaskID: tk.t.ID, ContextID: tk.t.ContextID, Status: st, Final: final}
}

// event maps one event of tk's running request; it runs on the route's
// goroutine.
func (h *Handler) event(tk *task, ev chat.Event) error {
	cc := tk.cc
	cc.mu.Lock()
	defer cc.mu.Unlock()
	switch ev.Type {
	case protocol.EventStream:
		text := ev.Text()
		if text == "" {
			return nil // the end of a stream
		}
		tk.reply.WriteString(text)
		tk.publish(statusEvent(tk, status(a2a.TaskStateWorking, tk.agentMessage(a2a.TextPart{Text: text})), false))
		return nil
	case protocol.EventMessage:
		text := ev.Text()
		if tk.reply.Len() > 0 {
			tk.reply.WriteString("\n")
		}
		tk.reply.WriteString(text)
		tk.publish(statusEvent(tk, status(a2a.TaskStateWorking, tk.agentMessage(a2a.TextPart{Text: text})), false))
		return nil
	case protocol.EventThinking:
		part := a2a.TextPart{Text: ev.Text(), Metadata: map[string]any{"chatgen/event": protocol.EventThinking}}
		tk.publish(statusEvent(tk, status(a2a.TaskStateWorking, tk.agentMessage(part)), false))
		return nil
	case protocol.EventClientTool:
		var call protocol.ClientToolCall
		if err := ev.Decode(&call); err != nil || call.ID == "" {
			return fmt.Errorf("a2aserver: a ClientTool event without an id: %v", err)
		}
		tk.paused = &pause{kind: protocol.KeyClientTool, id: call.ID, data: map[string]any{
			"id": call.ID, "tool": call.Tool, "arguments": rawOrEmpty(call.Arguments), "callId": call.CallID}}
		return nil
	case protocol.EventConfirm:
		var c struct {
			ID        string          `json:"id"`
			Tool      string          `json:"tool"`
			Arguments json.RawMessage `json:"arguments"`
			CallID    string          `json:"callId"`
		}
		if err := ev.Decode(&c); err != nil || c.ID == "" {
			return fmt.Errorf("a2aserver: a Confirm event without an id: %v", err)
		}
		tk.paused = &pause{kind: keyConfirm, id: c.ID, data: map[string]any{
			"id": c.ID, "tool": c.Tool, "arguments": rawOrEmpty(c.Arguments), "callId": c.CallID}}
		return nil
	case protocol.EventRetract:
		tk.reply.Reset()
	}
	data, err := ev.Raw()
	if err != nil {
		return fmt.Errorf("a2aserver: encoding a %s event: %w", ev.Type, err)
	}
	art := &a2a.Artifact{ID: a2a.ArtifactID(fmt.Sprintf("%s-%d", ev.Type, len(tk.t.Artifacts)+1)), Name: ev.Type,
		Parts: a2a.ContentParts{a2a.DataPart{Data: dataOf(data)}}}
	if len(tk.t.Artifacts) < maxArtifacts {
		tk.t.Artifacts = append(tk.t.Artifacts, art)
	}
	tk.publish(&a2a.TaskArtifactUpdateEvent{TaskID: tk.t.ID, ContextID: tk.t.ContextID, Artifact: art, LastChunk: true})
	return nil
}

// keyConfirm is the request data key of the answer to a confirmation
// (runtime/ai's KeyConfirm; not imported, to keep this package off
// runtime/ai).
const keyConfirm = "confirm"

// rawOrEmpty returns raw as a JSON value, {} when empty.
func rawOrEmpty(raw json.RawMessage) any {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil || v == nil {
		return map[string]any{}
	}
	return v
}

// dataOf returns the data of a data part holding the JSON value raw: an
// object as it is, any other value under "value".
func dataOf(raw json.RawMessage) map[string]any {
	var v any
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &v)
	}
	if m, ok := v.(map[string]any); ok {
		return m
	}
	return map[string]any{"value": v}
}

// idle arms the context's idle timeout; cc.run is held.
func (h *Handler) idle(cc *convContext) {
	if h.opts.ContextTimeout < 0 || cc.ended {
		return
	}
	cc.timer = time.AfterFunc(h.opts.ContextTimeout, func() { h.endContext(cc) })
}

// endContext ends cc, unless a request is in progress.
func (h *Handler) endContext(cc *convContext) {
	if !cc.run.TryLock() {
		return // a request runs: it rearms the timer
	}
	defer cc.run.Unlock()
	cc.mu.Lock()
	busy := slices.ContainsFunc(cc.tasks, func(t *task) bool { return t.running })
	cc.mu.Unlock()
	if busy {
		return // a task waits for cc.run: it rearms the timer
	}
	h.mu.Lock()
	if h.contexts[cc.id] == cc {
		delete(h.contexts, cc.id)
	}
	h.mu.Unlock()
	h.closeContext(cc)
}

// closeContext lets go of the conversation of cc: its saved state stays
// in the router's store, if any, until its time to live ends; cc.run is
// held.
func (h *Handler) closeContext(cc *convContext) {
	cc.ended = true
	if cc.conv != nil {
		if err := cc.conv.Detach(context.Background()); err != nil {
			h.log.Error("a2aserver: ending a context's conversation", "context", cc.id, "err", err)
		}
		cc.conv = nil
	}
}

// A subscriber is one stream of a task's events.
type subscriber struct {
	v   version
	id  json.RawMessage
	out *sse.Writer
	end chan struct{} // closed by the task after its last event
	cut chan struct{} // closed when the buffer filled
}

// publish sends ev to the task's streams; cc.mu is held.
func (tk *task) publish(ev a2a.Event) {
	for _, s := range tk.subs {
		s.send(ev)
	}
}

// send queues ev on the stream.
func (s *subscriber) send(ev a2a.Event) {
	var result any = ev
	if s.v == v1 {
		result = streamResponse1(ev)
	}
	b, err := json.Marshal(resultResponse(s.id, result))
	if err != nil {
		b, _ = json.Marshal(errorResponse(s.id, &rpcError{Code: codeInternal, Message: "Internal error: an event could not be encoded"}))
	}
	s.out.Send(sse.Frame(b))
}

// unsubscribe removes s from the task's streams.
func (tk *task) unsubscribe(s *subscriber) {
	tk.cc.mu.Lock()
	defer tk.cc.mu.Unlock()
	tk.subs = slices.DeleteFunc(tk.subs, func(x *subscriber) bool { return x == s })
}
