package a2aserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/internal/principal"
	"github.com/chatscopes/chatgen/runtime/internal/sse"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// A call is one JSON-RPC request being served.
type call struct {
	h   *Handler
	w   http.ResponseWriter
	r   *http.Request
	p   chat.Principal
	v   version
	req *rpcRequest
}

// serve dispatches the call on its method, as the version names them.
func (c *call) serve() {
	m := c.req.Method
	if c.v == v1 {
		switch m {
		case "SendMessage":
			c.send(false)
		case "SendStreamingMessage":
			c.send(true)
		case "GetTask":
			c.get()
		case "CancelTask":
			c.cancel()
		case "SubscribeToTask":
			c.subscribe()
		case "ListTasks":
			c.list()
		case "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig",
			"ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig":
			c.fail(&rpcError{Code: codePushNotSupported, Message: "Push Notification is not supported"})
		case "GetExtendedAgentCard":
			c.fail(&rpcError{Code: codeExtendedCardMissing, Message: "Extended agent card is not configured"})
		default:
			c.fail(&rpcError{Code: codeMethodNotFound, Message: fmt.Sprintf("Method not found: %q (A2A %s)", m, version1)})
		}
		return
	}
	switch {
	case m == "message/send":
		c.send(false)
	case m == "message/stream":
		c.send(true)
	case m == "tasks/get":
		c.get()
	case m == "tasks/cancel":
		c.cancel()
	case m == "tasks/resubscribe":
		c.subscribe()
	case strings.HasPrefix(m, "tasks/pushNotificationConfig/"):
		c.fail(&rpcError{Code: codePushNotSupported, Message: "Push Notification is not supported"})
	case m == "agent/getAuthenticatedExtendedCard":
		c.fail(&rpcError{Code: codeExtendedCardMissing, Message: "Authenticated Extended Card is not configured"})
	default:
		c.fail(&rpcError{Code: codeMethodNotFound, Message: fmt.Sprintf("Method not found: %q (A2A %s)", m, version03)})
	}
}

func (c *call) fail(e *rpcError) { writeJSON(c.w, http.StatusOK, errorResponse(c.req.ID, e)) }

func (c *call) reply(v any) { writeJSON(c.w, http.StatusOK, resultResponse(c.req.ID, v)) }

// task answers t as the version shapes it.
func (c *call) task(t *a2a.Task) {
	if c.v == v1 {
		c.reply(task1Of(t))
		return
	}
	c.reply(t)
}

// params decodes the call's params into v.
func (c *call) params(v any) *rpcError {
	if len(c.req.Params) == 0 || string(c.req.Params) == "null" {
		return invalidParams("params are required")
	}
	if err := json.Unmarshal(c.req.Params, v); err != nil {
		return invalidParams(err.Error())
	}
	return nil
}

// A sendArgs is what a send asks, in either version.
type sendArgs struct {
	msg           *a2a.Message
	historyLength int // -1: all
	immediate     bool
}

func (c *call) sendArgs() (*sendArgs, *rpcError) {
	a := &sendArgs{historyLength: -1}
	if c.v == v1 {
		var p sendRequest1
		if e := c.params(&p); e != nil {
			return nil, e
		}
		if p.Message == nil {
			return nil, invalidParams("message is required")
		}
		m, err := p.Message.decode()
		if err != nil {
			return nil, invalidParams(err.Error())
		}
		a.msg = m
		if cfg := p.Configuration; cfg != nil {
			a.immediate = cfg.ReturnImmediately
			if cfg.HistoryLength != nil {
				a.historyLength = *cfg.HistoryLength
			}
		}
	} else {
		var p a2a.MessageSendParams
		if e := c.params(&p); e != nil {
			return nil, e
		}
		if p.Message == nil {
			return nil, invalidParams("message is required")
		}
		a.msg = p.Message
		if cfg := p.Config; cfg != nil {
			a.immediate = cfg.Blocking != nil && !*cfg.Blocking
			if cfg.HistoryLength != nil {
				a.historyLength = *cfg.HistoryLength
			}
		}
	}
	m := a.msg
	switch {
	case m.ID == "":
		return nil, invalidParams("message.messageId is required")
	case m.Role != a2a.MessageRoleUser:
		return nil, invalidParams("message.role must be the user's")
	case len(m.Parts) == 0:
		return nil, invalidParams("message.parts is empty")
	}
	return a, nil
}

// send serves a send or a streaming send.
func (c *call) send(stream bool) {
	h := c.h
	a, e := c.sendArgs()
	if e != nil {
		c.fail(e)
		return
	}
	msg := a.msg
	var newReq *chat.RouteRequest
	if msg.TaskID == "" {
		// Refused before a context is started for it.
		var err error
		if newReq, err = messageRequest(msg); err != nil {
			c.fail(invalidParams(err.Error()))
			return
		}
	}
	var cc *convContext
	switch {
	case msg.ContextID == "" && msg.TaskID == "":
		var err error
		if cc, err = h.newContext(c.r.Context(), c.p); errors.Is(err, ErrTooManyContexts) || errors.Is(err, ErrClosed) {
			c.fail(&rpcError{Code: codeInternal, Message: "Internal error: the agent takes no new context now (too many, or shutting down); try again later"})
			return
		} else if err != nil {
			h.log.InfoContext(c.r.Context(), "a2aserver: a send found no conversation", "err", err)
			f := chat.FailureOf(err)
			c.fail(&rpcError{Code: codeInternal, Message: "Internal error: the conversation could not start: " + f.Reason})
			return
		}
	default:
		id := msg.ContextID
		if msg.TaskID != "" {
			if tc := contextOfTask(string(msg.TaskID)); id == "" {
				id = tc
			} else if tc != id {
				c.fail(taskNotFound())
				return
			}
		}
		if cc = h.lookupContext(id, c.p); cc == nil {
			var e *rpcError
			if cc, e = h.resumeContext(c.r.Context(), id, c.p); e != nil {
				c.fail(e)
				return
			}
		}
		if cc == nil {
			c.fail(&rpcError{Code: codeTaskNotFound, Message: "Task not found: the contextId names no context of this agent held for this principal"})
			return
		}
	}
	cc.mu.Lock()
	var (
		tk   *task
		creq *chat.RouteRequest
		err  error
	)
	if msg.TaskID != "" {
		for _, t := range cc.tasks {
			if t.t.ID == msg.TaskID {
				tk = t
			}
		}
		switch {
		case tk == nil:
			cc.mu.Unlock()
			c.fail(taskNotFound())
			return
		case tk.running:
			cc.mu.Unlock()
			c.fail(&rpcError{Code: codeUnsupported, Message: "Unsupported operation: the task is running; wait for it, subscribe to it or cancel it"})
			return
		case tk.t.Status.State != a2a.TaskStateInputRequired || tk.pause == nil:
			cc.mu.Unlock()
			c.fail(&rpcError{Code: codeUnsupported, Message: fmt.Sprintf("Unsupported operation: the task is %s; send a message without taskId for a new task", tk.t.Status.State)})
			return
		}
		creq, err = answerRequest(tk.pause, msg)
	} else {
		tk = &task{cc: cc, t: a2a.Task{ID: a2a.TaskID(cc.id + "." + newID(8)), ContextID: cc.id}}
		tk.t.Status = status(a2a.TaskStateSubmitted, nil)
		creq = newReq
		h.addTask(cc, tk)
	}
	if err != nil {
		cc.mu.Unlock()
		c.fail(invalidParams(err.Error()))
		return
	}
	m := *msg
	m.ContextID, m.TaskID = cc.id, tk.t.ID
	tk.t.History = h.trimHistory(append(tk.t.History, &m))
	var sub *subscriber
	if stream {
		sub = c.openStream()
		tk.subs = append(tk.subs, sub)
		sub.send(tk.snapshot(a.historyLength))
	}
	if e := h.start(tk, c.p, creq); e != nil {
		tk.t.Status = status(a2a.TaskStateFailed, tk.agentMessage(a2a.TextPart{Text: "the task failed: the agent is shutting down"}))
		tk.publish(statusEvent(tk, tk.t.Status, true))
		for _, s := range tk.subs {
			close(s.end)
		}
		tk.subs = nil
		cc.mu.Unlock()
		if stream {
			c.pump(tk, sub)
		} else {
			c.fail(e)
		}
		return
	}
	done := tk.done
	snap := tk.snapshot(a.historyLength)
	cc.mu.Unlock()
	if stream {
		c.pump(tk, sub)
		return
	}
	if !a.immediate {
		select {
		case <-done:
			cc.mu.Lock()
			snap = tk.snapshot(a.historyLength)
			cc.mu.Unlock()
		case <-c.r.Context().Done():
			return // the client left; the task goes on
		}
	}
	if c.v == v1 {
		// A 1.0 send result is a SendMessageResponse: {"task": …}.
		c.reply(map[string]any{"task": task1Of(snap)})
		return
	}
	c.reply(snap)
}

// openStream starts the event stream of the response and returns its
// subscriber.
func (c *call) openStream() *subscriber {
	c.w.Header().Set("Content-Type", "text/event-stream")
	c.w.Header().Set("Cache-Control", "no-cache")
	c.w.Header().Set("X-Accel-Buffering", "no")
	c.w.WriteHeader(http.StatusOK)
	s := &subscriber{v: c.v, id: c.req.ID, end: make(chan struct{}), cut: make(chan struct{})}
	var once sync.Once
	s.out = sse.NewWriter(c.w, c.h.opts.MaxBufferedEvents, func() { once.Do(func() { close(s.cut) }) })
	return s
}

// drainTimeout bounds the time the last events of a stream take to reach
// its client.
const drainTimeout = 30 * time.Second

// pump waits for the stream's end: the task's last event, the client
// leaving, or a full buffer; then it closes it.
func (c *call) pump(tk *task, s *subscriber) {
	select {
	case <-s.end:
		// What is queued goes out, to a client that reads: one that
		// does not is cut after drainTimeout.
		_ = http.NewResponseController(c.w).SetWriteDeadline(time.Now().Add(drainTimeout))
	case <-s.cut:
		c.h.log.InfoContext(c.r.Context(), "a2aserver: a stream was cut", "task", tk.t.ID, "err", ErrSlowClient)
	case <-c.r.Context().Done():
	}
	tk.unsubscribe(s)
	s.out.Close()
}

// messageRequest returns the route request of a user message: its text
// parts joined as the user's message, the keys of its data parts as the
// route's other parameters.
func messageRequest(m *a2a.Message) (*chat.RouteRequest, error) {
	data := map[string]any{}
	var texts []string
	for _, p := range m.Parts {
		switch p := p.(type) {
		case a2a.TextPart:
			texts = append(texts, p.Text)
		case a2a.DataPart:
			for k, v := range p.Data {
				data[k] = v
			}
		case a2a.FilePart:
			return nil, errors.New("file parts are not supported: send text or data parts")
		}
	}
	if len(texts) > 0 {
		data[protocol.KeyUserMessage] = strings.Join(texts, "\n")
	}
	creq, err := chat.NewDataRequest(data)
	if err != nil {
		return nil, fmt.Errorf("the message's parameters: %w", err)
	}
	return creq, nil
}

// answerRequest returns the route request answering the pause of an
// input-required task with the user's message m.
func answerRequest(p *pause, m *a2a.Message) (*chat.RouteRequest, error) {
	var data map[string]any
	var text string
	for _, part := range m.Parts {
		switch part := part.(type) {
		case a2a.DataPart:
			if data == nil {
				data = part.Data
			}
		case a2a.TextPart:
			text += part.Text
		}
	}
	switch p.kind {
	case protocol.KeyClientTool:
		answer := map[string]any{protocol.KeyClientTool: p.id}
		switch {
		case data != nil && data[protocol.KeyError] != nil:
			answer[protocol.KeyError] = fmt.Sprint(data[protocol.KeyError])
		case data != nil && data[protocol.KeyResult] != nil:
			answer[protocol.KeyResult] = data[protocol.KeyResult]
		case data != nil:
			answer[protocol.KeyResult] = data
		default:
			answer[protocol.KeyResult] = text
		}
		return chat.NewDataRequest(answer)
	case keyConfirm:
		if data == nil {
			// Something else than an answer: the route denies the
			// pending call and handles the message.
			return messageRequest(m)
		}
		approve, ok := data["approve"].(bool)
		if !ok {
			return nil, errors.New(`the answer to a confirmation is a data part with "approve": true or false`)
		}
		answer := map[string]any{keyConfirm: p.id, "approve": approve}
		if r, ok := data["reason"].(string); ok {
			answer["reason"] = r
		}
		if args, ok := data["arguments"].(map[string]any); ok {
			answer["arguments"] = args
		}
		return chat.NewDataRequest(answer)
	}
	return messageRequest(m)
}

// taskIDArgs decodes the task id (and history length) of get, cancel and
// subscribe.
func (c *call) taskIDArgs() (string, int, *rpcError) {
	var p struct {
		ID            string `json:"id"`
		HistoryLength *int   `json:"historyLength"`
	}
	if e := c.params(&p); e != nil {
		return "", 0, e
	}
	if p.ID == "" {
		return "", 0, invalidParams("id is required")
	}
	n := -1
	if p.HistoryLength != nil {
		if *p.HistoryLength < 0 {
			return "", 0, invalidParams("historyLength must not be negative")
		}
		n = *p.HistoryLength
	}
	return p.ID, n, nil
}

// get serves a get.
func (c *call) get() {
	id, n, e := c.taskIDArgs()
	if e != nil {
		c.fail(e)
		return
	}
	t := c.h.findTask(c.r.Context(), id, c.p, n)
	if t == nil {
		c.fail(taskNotFound())
		return
	}
	c.task(t)
}

// cancel serves a cancel: a running task's request is cancelled with the
// cause chat.ErrCancelled; a paused task's turn is stopped with a cancel
// request.
func (c *call) cancel() {
	h := c.h
	id, _, e := c.taskIDArgs()
	if e != nil {
		c.fail(e)
		return
	}
	tk := h.lookupTask(id, c.p)
	if tk == nil {
		t := h.findTask(c.r.Context(), id, c.p, 0)
		switch {
		case t == nil:
			c.fail(taskNotFound())
		case t.Status.State.Terminal():
			c.fail(&rpcError{Code: codeTaskNotCancelable, Message: fmt.Sprintf("Task cannot be canceled: it is %s", t.Status.State)})
		default:
			c.fail(&rpcError{Code: codeUnsupported, Message: "Unsupported operation: the task is held by another node"})
		}
		return
	}
	cc := tk.cc
	cc.mu.Lock()
	switch {
	case tk.running:
		tk.cancel(chat.ErrCancelled)
	case tk.t.Status.State == a2a.TaskStateInputRequired && tk.pause != nil:
		creq, err := chat.NewDataRequest(map[string]any{protocol.KeyCancel: tk.pause.id})
		if err == nil {
			if e := h.start(tk, c.p, creq); e != nil {
				cc.mu.Unlock()
				c.fail(e)
				return
			}
			tk.canceling = true
		}
	default:
		st := tk.t.Status.State
		cc.mu.Unlock()
		c.fail(&rpcError{Code: codeTaskNotCancelable, Message: fmt.Sprintf("Task cannot be canceled: it is %s", st)})
		return
	}
	done := tk.done
	cc.mu.Unlock()
	wait := time.NewTimer(h.opts.CancelWait)
	defer wait.Stop()
	select {
	case <-done:
	case <-wait.C:
	case <-c.r.Context().Done():
		return
	}
	cc.mu.Lock()
	t := tk.snapshot(-1)
	cc.mu.Unlock()
	if t.Status.State.Terminal() && t.Status.State != a2a.TaskStateCanceled {
		// It ended before the cancel took effect.
		c.fail(&rpcError{Code: codeTaskNotCancelable, Message: fmt.Sprintf("Task cannot be canceled: it is %s", t.Status.State)})
		return
	}
	c.task(t)
}

// subscribe serves a subscribe (resubscribe): the task's current state,
// then its events until its request ends.
func (c *call) subscribe() {
	h := c.h
	id, _, e := c.taskIDArgs()
	if e != nil {
		c.fail(e)
		return
	}
	tk := h.lookupTask(id, c.p)
	if tk == nil {
		if t := h.findTask(c.r.Context(), id, c.p, 0); t != nil {
			c.fail(&rpcError{Code: codeUnsupported, Message: fmt.Sprintf("Unsupported operation: the task is %s, not running here", t.Status.State)})
			return
		}
		c.fail(taskNotFound())
		return
	}
	cc := tk.cc
	cc.mu.Lock()
	if !tk.running {
		st := tk.t.Status.State
		cc.mu.Unlock()
		c.fail(&rpcError{Code: codeUnsupported, Message: fmt.Sprintf("Unsupported operation: the task is %s: there is nothing to subscribe to", st)})
		return
	}
	sub := c.openStream()
	tk.subs = append(tk.subs, sub)
	sub.send(tk.snapshot(-1))
	cc.mu.Unlock()
	c.pump(tk, sub)
}

// list serves ListTasks (1.0): the tasks of the principal's contexts held
// here, or of one context.
func (c *call) list() {
	h := c.h
	var p listRequest1
	if len(c.req.Params) > 0 && string(c.req.Params) != "null" {
		if err := json.Unmarshal(c.req.Params, &p); err != nil {
			c.fail(invalidParams(err.Error()))
			return
		}
	}
	var want a2a.TaskState
	if p.Status != "" && p.Status != "TASK_STATE_UNSPECIFIED" {
		var ok bool
		if want, ok = stateOf1(p.Status); !ok {
			c.fail(invalidParams(fmt.Sprintf("unknown status %q", p.Status)))
			return
		}
	}
	size := 50
	if p.PageSize != nil {
		if *p.PageSize < 1 || *p.PageSize > 100 {
			c.fail(invalidParams("pageSize must be between 1 and 100"))
			return
		}
		size = *p.PageSize
	}
	offset := 0
	if p.PageToken != "" {
		if _, err := fmt.Sscanf(p.PageToken, "%d", &offset); err != nil || offset < 0 {
			c.fail(invalidParams("pageToken is not one this agent gave"))
			return
		}
	}
	n := -1
	if p.HistoryLength != nil {
		n = *p.HistoryLength
	}
	tasks := h.tasksOf(c.r.Context(), c.p, p.ContextID, n)
	var out []task1
	for i := len(tasks) - 1; i >= 0; i-- { // newest first
		t := tasks[i]
		if want != "" && t.Status.State != want {
			continue
		}
		if after := p.StatusTimestampAfter; after != nil && (t.Status.Timestamp == nil || !t.Status.Timestamp.After(*after)) {
			continue
		}
		if p.IncludeArtifacts == nil || !*p.IncludeArtifacts {
			t.Artifacts = nil
		}
		out = append(out, task1Of(t))
	}
	total := len(out)
	res := listResponse1{Tasks: []task1{}, PageSize: size, TotalSize: total}
	if offset < total {
		end := min(offset+size, total)
		res.Tasks = out[offset:end]
		if end < total {
			res.NextPageToken = fmt.Sprint(end)
		}
	}
	c.reply(res)
}

// tasksOf returns copies of the tasks of p's contexts held here, or of
// the context id (held here or saved), oldest first.
func (h *Handler) tasksOf(ctx context.Context, p chat.Principal, id string, historyLength int) []*a2a.Task {
	var ccs []*convContext
	if id != "" {
		cc := h.lookupContext(id, p)
		if cc == nil {
			ts := h.storedTasks(ctx, id, p)
			for _, t := range ts {
				trimTo(t, historyLength)
			}
			return ts
		}
		ccs = append(ccs, cc)
	} else {
		h.mu.Lock()
		for _, cc := range h.contexts {
			if principal.Same(cc.principal, p) {
				ccs = append(ccs, cc)
			}
		}
		h.mu.Unlock()
	}
	var out []*a2a.Task
	for _, cc := range ccs {
		cc.mu.Lock()
		for _, tk := range cc.tasks {
			out = append(out, tk.snapshot(historyLength))
		}
		cc.mu.Unlock()
	}
	sortByTime(out)
	return out
}
