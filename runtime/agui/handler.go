package agui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/internal/principal"
	"github.com/chatscopes/chatgen/runtime/internal/sse"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// DefaultMaxBodyBytes is the default bound of a RunAgentInput body.
const DefaultMaxBodyBytes = 4 << 20

// DefaultMaxBufferedEvents is the default number of events of a run that
// wait for a slow client.
const DefaultMaxBufferedEvents = 1024

// DefaultThreadTimeout is how long an idle thread lives by default.
const DefaultThreadTimeout = 30 * time.Minute

// ErrSlowClient is the cause of the cancellation of a run whose client
// did not read its events while the buffer filled.
var ErrSlowClient = errors.New("agui: the client does not read the run's events")

// ErrClosed is the error of a run on a closed [Handler].
var ErrClosed = errors.New("agui: the handler is closed")

// Options configures a [Handler]. A nil *Options, like the zero value,
// gives the defaults.
type Options struct {
	// Route is the route a thread's conversation starts on; empty is the
	// router's default route.
	Route string
	// Authenticator establishes the principal of each request, as the
	// websocket endpoint's (ws.ServerOptions.Authenticator) does: a ws
	// Authenticator can be given as it is. A nil principal with a nil
	// error is anonymous; an error answers 401. Nil: every request is
	// anonymous.
	Authenticator func(r *http.Request) (chat.Principal, error)
	// Logger logs failed runs. Nil means [slog.Default].
	Logger *slog.Logger
	// MaxBodyBytes bounds a request body (0: [DefaultMaxBodyBytes];
	// negative: no bound); a larger one is answered 413.
	MaxBodyBytes int64
	// MaxBufferedEvents bounds the events of a run waiting for the
	// client (0: [DefaultMaxBufferedEvents]); a run whose client lets
	// them fill is cancelled with the cause [ErrSlowClient].
	MaxBufferedEvents int
	// ThreadTimeout ends a thread idle that long, and its conversation
	// (0: [DefaultThreadTimeout]; negative: never).
	ThreadTimeout time.Duration
	// WriteTimeout bounds each write of a run's events to its client (0
	// or negative: no bound but the buffer's): a client that does not
	// read for that long while its connection's buffers are full has its
	// run cancelled with the cause [ErrSlowClient], however few events
	// wait for it.
	WriteTimeout time.Duration
	// Threads, when set, makes threads durable across the nodes of a
	// durable router (one with a conversation store) sharing it: each run
	// ends by saving the thread's record (its conversation and resume
	// token) there and letting the conversation go, and the next run of
	// the thread, on this node or another, resumes it (see
	// [chat.Router.Resume]). [StoreThreads] keeps the records in the
	// router's conversation store. Nil: threads live in this process.
	Threads ThreadStore
	// ShowScope, when set, gives every run the AG-UI state: a
	// STATE_SNAPSHOT after RUN_STARTED holding the conversation's id, its
	// scope stack and current scope id (and the values of Show), and a
	// STATE_DELTA (a JSON Patch) whenever they change during the run.
	ShowScope bool
	// Show are the values of a conversation (its beans: see [ShowBean])
	// the AG-UI state shows, under its "beans" object; a non-empty Show
	// gives every run the state as ShowScope does. Nothing of a
	// conversation's beans is shown unless it is named here.
	Show []Shown
}

// A Handler serves the routes of a [chat.Router] to AG-UI clients. Build
// it with [New]; it is safe for concurrent use.
type Handler struct {
	router *chat.Router
	opts   Options
	log    *slog.Logger

	mu      sync.Mutex
	closed  bool
	threads map[string]*thread
	wg      sync.WaitGroup // the runs in progress
}

// A thread is one AG-UI thread: its principal and its conversation.
type thread struct {
	id        string
	principal chat.Principal

	mu   sync.Mutex // one run at a time
	conv *chat.Conversation
	// pending is the id of the client-run tool call the last run ended
	// on (a ClientTool event), waiting for a tool message; "" if none.
	pending string
	timer   *time.Timer // ends the idle thread
	idleGen uint64      // bumped by each timer armed and each run begun
	ended   bool
}

// New returns a handler serving router to AG-UI clients. opts may be nil.
func New(router *chat.Router, opts *Options) (*Handler, error) {
	if router == nil {
		return nil, errors.New("agui: New needs a router")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxBufferedEvents <= 0 {
		o.MaxBufferedEvents = DefaultMaxBufferedEvents
	}
	if o.ThreadTimeout == 0 {
		o.ThreadTimeout = DefaultThreadTimeout
	}
	return &Handler{router: router, opts: o, log: o.Logger, threads: map[string]*thread{}}, nil
}

// A runInput is the part of a RunAgentInput the handler reads.
type runInput struct {
	ThreadID       string          `json:"threadId"`
	RunID          string          `json:"runId"`
	Messages       []inputMessage  `json:"messages"`
	Tools          json.RawMessage `json:"tools"`
	State          json.RawMessage `json:"state"`
	Context        json.RawMessage `json:"context"`
	ForwardedProps json.RawMessage `json:"forwardedProps"`
}

// An inputMessage is one message of a RunAgentInput.
type inputMessage struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	// ToolCallID and Error are a tool message's: the call it answers and,
	// when the front end could not run the tool, why.
	ToolCallID string `json:"toolCallId"`
	Error      string `json:"error"`
}

// A toolAnswer is the answer a run's trailing tool message gives to a
// client-run tool call.
type toolAnswer struct {
	id     string
	result any
	err    string
}

// badInput answers 400 with a JSON error.
func badInput(w http.ResponseWriter, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": fmt.Sprintf(format, args...)})
}

// ServeHTTP runs one AG-UI run: see the package documentation.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "an AG-UI run is a POST", http.StatusMethodNotAllowed)
		return
	}
	var p chat.Principal
	if h.opts.Authenticator != nil {
		var err error
		if p, err = h.opts.Authenticator(r); err != nil {
			h.log.InfoContext(r.Context(), "agui: authentication failed", "remote", r.RemoteAddr, "err", err)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
	}
	body := io.Reader(r.Body)
	if h.opts.MaxBodyBytes > 0 {
		body = http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes)
	}
	var in runInput
	dec := json.NewDecoder(body)
	if err := dec.Decode(&in); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "the RunAgentInput is too large", http.StatusRequestEntityTooLarge)
			return
		}
		badInput(w, "the body is not a RunAgentInput JSON object: %v", err)
		return
	}
	if dec.More() {
		badInput(w, "the body holds more than one JSON value")
		return
	}
	if in.ThreadID == "" || in.RunID == "" {
		badInput(w, "threadId and runId are required strings")
		return
	}
	creq, answer, err := request(&in)
	if err != nil {
		badInput(w, "%v", err)
		return
	}
	th, status, err := h.thread(r.Context(), in.ThreadID, p)
	if err != nil {
		h.log.InfoContext(r.Context(), "agui: a run found no thread", "thread", in.ThreadID, "err", err)
		http.Error(w, err.Error(), status)
		return
	}
	defer h.wg.Done()
	h.run(w, r, th, &in, creq, answer)
}

// request returns the route request of a run: the text of its last user
// message, and the parameters of forwardedProps when it is an object.
func request(in *runInput) (*chat.RouteRequest, *toolAnswer, error) {
	data := map[string]any{}
	if len(in.ForwardedProps) > 0 && string(in.ForwardedProps) != "null" {
		if err := json.Unmarshal(in.ForwardedProps, &data); err != nil {
			return nil, nil, fmt.Errorf("forwardedProps is not a JSON object: %w", err)
		}
		if data == nil {
			data = map[string]any{}
		}
	}
	var answer *toolAnswer
	if n := len(in.Messages); n > 0 && in.Messages[n-1].Role == "tool" {
		// The front end ran a tool: the last message is its result.
		a, err := answerOf(&in.Messages[n-1])
		if err != nil {
			return nil, nil, err
		}
		answer = a
		data[protocol.KeyClientTool] = a.id
		if a.err != "" {
			data[protocol.KeyError] = a.err
		} else if a.result != nil {
			data[protocol.KeyResult] = a.result
		}
	} else {
		for i := len(in.Messages) - 1; i >= 0; i-- {
			m := in.Messages[i]
			if m.Role != "user" {
				continue
			}
			var text string
			if err := json.Unmarshal(m.Content, &text); err != nil {
				return nil, nil, fmt.Errorf("the content of user message %q is not a string", m.ID)
			}
			data[protocol.KeyUserMessage] = text
			break
		}
	}
	creq, err := chat.NewDataRequest(data)
	if err != nil {
		return nil, nil, fmt.Errorf("the run's parameters: %w", err)
	}
	return creq, answer, nil
}

// answerOf returns the answer of a tool message: its content parsed as
// JSON, or the content string itself when it is not JSON; its error when
// it has one.
func answerOf(m *inputMessage) (*toolAnswer, error) {
	if m.ToolCallID == "" {
		return nil, fmt.Errorf("tool message %q has no toolCallId", m.ID)
	}
	a := &toolAnswer{id: m.ToolCallID, err: m.Error}
	if a.err != "" {
		return a, nil
	}
	var content string
	if err := json.Unmarshal(m.Content, &content); err != nil {
		return nil, fmt.Errorf("the content of tool message %q is not a string", m.ID)
	}
	var v any
	if json.Unmarshal([]byte(content), &v) == nil {
		a.result = v
	} else {
		a.result = content
	}
	return a, nil
}

// thread returns the thread id of principal p, connecting its
// conversation on its first run; the caller calls h.wg.Done after the
// run. On an error, status is the HTTP status to answer.
func (h *Handler) thread(ctx context.Context, id string, p chat.Principal) (*thread, int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, http.StatusServiceUnavailable, ErrClosed
	}
	th := h.threads[id]
	if th != nil && !principal.Same(th.principal, p) {
		return nil, http.StatusForbidden, errors.New("agui: the thread belongs to another principal")
	}
	if th == nil {
		th = &thread{id: id, principal: p}
		h.threads[id] = th
	}
	h.wg.Add(1)
	return th, 0, nil
}

// conversation returns the thread's conversation, connecting it on the
// first run (or after the route ended the last one); th.mu is held.
func (h *Handler) conversation(ctx context.Context, th *thread) (*chat.Conversation, error) {
	if th.ended {
		// Its idle timeout ended it as this run started: it starts again.
		h.mu.Lock()
		if !h.closed && h.threads[th.id] == nil {
			h.threads[th.id] = th
			th.ended = false
		}
		h.mu.Unlock()
		if th.ended {
			return nil, ErrClosed
		}
	}
	if th.conv != nil && th.conv.ScopeID() == "" {
		if err := th.conv.Close(ctx); err != nil {
			return nil, fmt.Errorf("agui: closing an ended conversation: %w", err)
		}
		th.conv = nil
	}
	if th.conv == nil {
		c, err := h.router.Connect(chat.WithPrincipal(ctx, th.principal), h.opts.Route)
		if err != nil {
			return nil, fmt.Errorf("agui: starting the conversation of thread %q: %w", th.id, err)
		}
		if h.opts.Threads != nil && c.ResumeToken() == "" {
			return nil, errors.Join(errDurableRouter, c.Close(ctx))
		}
		th.conv = c
	}
	return th.conv, nil
}

// run serves one run of th.
func (h *Handler) run(w http.ResponseWriter, r *http.Request, th *thread, in *runInput, creq *chat.RouteRequest, answer *toolAnswer) {
	// The request's context ends when the client closes the request: the
	// run is stopped with the cause chat.ErrCancelled, as a Cancel frame
	// stops a websocket request.
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(r.Context()))
	defer cancel(nil)
	w, timedOut, clearDeadline := h.deadlines(w, func() { cancel(ErrSlowClient) })
	defer clearDeadline()
	stop := context.AfterFunc(r.Context(), func() {
		if timedOut() {
			// A write that timed out closes the connection.
			cancel(ErrSlowClient)
		}
		cancel(chat.ErrCancelled)
	})
	defer stop()

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// The client sees the stream open before any event.
	if err := http.NewResponseController(w).Flush(); err != nil {
		h.log.InfoContext(r.Context(), "agui: the response cannot be flushed", "err", err)
	}
	out := sse.NewWriter(w, h.opts.MaxBufferedEvents, func() { cancel(ErrSlowClient) })
	defer out.Close()

	ev := &encoder{threadID: in.ThreadID, runID: in.RunID, out: out}
	ev.emitStrings("type", "RUN_STARTED", "threadId", in.ThreadID, "runId", in.RunID)

	th.mu.Lock()
	defer th.mu.Unlock()
	th.idleGen++
	if th.timer != nil {
		th.timer.Stop()
	}
	if h.opts.Threads != nil && th.conv == nil {
		// A durable thread: its conversation is resumed from its record.
		c, err := h.resumeThread(rctx, th)
		if err != nil {
			ev.fail(chat.FailureOf(err))
			h.idle(th)
			return
		}
		th.conv = c
	}
	if answer != nil && answer.id != th.pending {
		// Only the call the thread's last run ended on waits for a result.
		h.letGo(rctx, th)
		ev.emit(map[string]any{"type": "RUN_ERROR", "code": "BadRequest",
			"message": fmt.Sprintf("the tool message answers tool call %q, which is not the thread's pending client-run tool call", answer.id)})
		h.idle(th)
		return
	}
	conv, err := h.conversation(rctx, th)
	if err != nil {
		f := chat.FailureOf(err)
		ev.fail(f)
		return
	}
	// An answer, or a new message, closes the pending call.
	pending := th.pending
	th.pending = ""
	var f *chat.Failure
	if h.showsState() {
		f = h.runShowing(rctx, conv, creq, ev)
	} else {
		_, f = conv.Handle(rctx, conv.ScopeID(), creq, ev.event)
	}
	if ev.clientTool != "" {
		th.pending = ev.clientTool
	} else if f != nil && errors.Is(f, chat.ErrBadRequest) && answer != nil {
		// The route refused the answer: the call stays pending.
		th.pending = pending
	}
	if err := h.letGo(rctx, th); err != nil && f == nil {
		f = chat.FailureOf(fmt.Errorf("%w: %w", chat.ErrUnavailable, err))
	}
	if f != nil {
		if !errors.Is(f, chat.ErrCancelled) {
			h.log.InfoContext(r.Context(), "agui: a run failed", "thread", th.id, "run", in.RunID, "reason", f.Reason, "err", f.Err)
		}
		ev.fail(f)
	} else {
		ev.closeOpen()
		ev.emitStrings("type", "RUN_FINISHED", "threadId", in.ThreadID, "runId", in.RunID)
	}
	h.idle(th)
}

// idle arms the thread's idle timeout; th.mu is held.
func (h *Handler) idle(th *thread) {
	if h.opts.ThreadTimeout < 0 {
		return
	}
	th.idleGen++
	gen := th.idleGen
	th.timer = time.AfterFunc(h.opts.ThreadTimeout, func() { h.endThread(th, gen) })
}

// endThread ends th and its conversation, unless a run began after the
// timer of gen was armed (it waits for a run still ending, which may have
// armed the timer just before it lets go of the thread).
func (h *Handler) endThread(th *thread, gen uint64) {
	th.mu.Lock()
	defer th.mu.Unlock()
	if th.idleGen != gen || th.ended {
		return
	}
	h.mu.Lock()
	if h.threads[th.id] == th {
		delete(h.threads, th.id)
	}
	h.mu.Unlock()
	h.closeThread(th)
}

// closeThread ends the conversation of th; th.mu is held.
func (h *Handler) closeThread(th *thread) {
	th.ended = true
	th.pending = "" // its conversation's paused call ends with it
	if th.conv != nil {
		if err := th.conv.Close(context.Background()); err != nil {
			h.log.Error("agui: ending a thread's conversation", "thread", th.id, "err", err)
		}
		th.conv = nil
	}
}

// Threads returns the number of threads the handler holds now.
func (h *Handler) Threads() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.threads)
}

// Close refuses new runs, waits for the runs in progress to end (or ctx
// to be done) and ends every thread's conversation.
func (h *Handler) Close(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("agui: waiting for the runs in progress: %w", ctx.Err())
	}
	h.mu.Lock()
	threads := h.threads
	h.threads = map[string]*thread{}
	h.mu.Unlock()
	for _, th := range threads {
		th.mu.Lock()
		if th.timer != nil {
			th.timer.Stop()
		}
		h.closeThread(th)
		th.mu.Unlock()
	}
	return nil
}

// An encoder turns the events of a route into AG-UI events.
type encoder struct {
	threadID, runID string
	out             *sse.Writer
	n               int           // ids handed out
	text            string        // the id of the open text message, if any
	reasoning       string        // the id of the open reasoning message, if any
	clientTool      string        // the id of the client-run tool call the run paused on, if any
	st              *stateTracker // the state shown, if it is
}

func (e *encoder) id(kind string) string {
	e.n++
	return e.runID + "-" + kind + "-" + strconv.Itoa(e.n)
}

// emit sends one AG-UI event.
func (e *encoder) emit(v map[string]any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"type": "RUN_ERROR", "message": "an event could not be encoded", "code": "ServerError"})
	}
	frame := make([]byte, 0, len(b)+8)
	frame = append(frame, "data: "...)
	frame = append(frame, b...)
	frame = append(frame, "\n\n"...)
	e.out.Send(frame)
}

// closeText ends the open text message, if any.
func (e *encoder) closeText() {
	if e.text != "" {
		e.emitStrings("type", "TEXT_MESSAGE_END", "messageId", e.text)
		e.text = ""
	}
}

// closeReasoning ends the open reasoning message, if any.
func (e *encoder) closeReasoning() {
	if e.reasoning != "" {
		e.emit(map[string]any{"type": "REASONING_MESSAGE_END", "messageId": e.reasoning})
		e.emit(map[string]any{"type": "REASONING_END", "messageId": e.reasoning})
		e.reasoning = ""
	}
}

// closeOpen ends every open message.
func (e *encoder) closeOpen() {
	e.closeText()
	e.closeReasoning()
}

// fail ends the run with the failure f.
func (e *encoder) fail(f *chat.Failure) {
	e.closeOpen()
	reason := "ServerError"
	if f != nil && f.Reason != "" {
		reason = f.Reason
	}
	e.emit(map[string]any{"type": "RUN_ERROR", "message": "the run failed: " + reason, "code": reason})
}

// textContent sends one chunk of the open text message, opening it.
func (e *encoder) textContent(text string) {
	e.closeReasoning()
	if e.text == "" {
		e.text = e.id("msg")
		e.emitStrings("type", "TEXT_MESSAGE_START", "messageId", e.text, "role", "assistant")
	}
	if text != "" {
		e.emitStrings("type", "TEXT_MESSAGE_CONTENT", "messageId", e.text, "delta", text)
	}
}

// event maps one event of the route.
func (e *encoder) event(ev chat.Event) error {
	switch ev.Type {
	case protocol.EventStream:
		text := ev.Text()
		if text == "" {
			e.closeText() // the end of a stream
			return nil
		}
		e.textContent(text)
		return nil
	case protocol.EventMessage:
		e.closeOpen()
		e.textContent(ev.Text())
		e.closeText()
		return nil
	case protocol.EventThinking:
		e.closeText()
		if e.reasoning == "" {
			e.reasoning = e.id("reasoning")
			e.emit(map[string]any{"type": "REASONING_START", "messageId": e.reasoning})
			e.emit(map[string]any{"type": "REASONING_MESSAGE_START", "messageId": e.reasoning, "role": "reasoning"})
		}
		if text := ev.Text(); text != "" {
			e.emitStrings("type", "REASONING_MESSAGE_CONTENT", "messageId", e.reasoning, "delta", text)
		}
		return nil
	case subAgentEvent:
		if ok, err := e.toolStep(ev); ok || err != nil {
			return err
		}
	case protocol.EventClientTool:
		return e.clientToolCall(ev)
	}
	e.closeOpen()
	data, err := ev.Raw()
	if err != nil {
		return fmt.Errorf("agui: encoding a %s event: %w", ev.Type, err)
	}
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	e.emit(map[string]any{"type": "CUSTOM", "name": ev.Type, "value": data})
	return nil
}

// subAgentEvent is the type of the events of a sub-agent's steps
// (runtime/ai's EventSubAgent; not imported, to keep this package off
// runtime/ai).
const subAgentEvent = "SubAgent"

// A subAgentStep is the part of a SubAgent event's data read here.
type subAgentStep struct {
	Agent     string `json:"agent"`
	Type      string `json:"type"`
	Tool      string `json:"tool"`
	ID        string `json:"id"`
	Arguments string `json:"arguments"`
	Failed    bool   `json:"failed"`
}

// toolStep maps a sub-agent's tool call or result to AG-UI tool call
// events; it reports whether ev was one.
func (e *encoder) toolStep(ev chat.Event) (bool, error) {
	var s subAgentStep
	if err := ev.Decode(&s); err != nil {
		return false, fmt.Errorf("agui: a SubAgent event: %w", err)
	}
	if s.ID == "" || (s.Type != "ToolCall" && s.Type != "ToolResult") {
		return false, nil
	}
	e.closeOpen()
	switch s.Type {
	case "ToolCall":
		e.emit(map[string]any{"type": "TOOL_CALL_START", "toolCallId": s.ID, "toolCallName": s.Tool})
		if s.Arguments != "" {
			e.emit(map[string]any{"type": "TOOL_CALL_ARGS", "toolCallId": s.ID, "delta": s.Arguments})
		}
		e.emit(map[string]any{"type": "TOOL_CALL_END", "toolCallId": s.ID})
	case "ToolResult":
		content := "done"
		if s.Failed {
			content = "failed"
		}
		e.emit(map[string]any{"type": "TOOL_CALL_RESULT", "messageId": e.id("tool"), "toolCallId": s.ID, "content": content, "role": "tool"})
	}
	return true, nil
}

// clientToolCall maps a client-run tool call (a ClientTool event) to an
// AG-UI front-end tool call: TOOL_CALL_START, TOOL_CALL_ARGS and
// TOOL_CALL_END, the tool call id being the ClientTool id, which the
// tool message of the next run names. The route's request completes on
// it, so the run finishes.
func (e *encoder) clientToolCall(ev chat.Event) error {
	var call protocol.ClientToolCall
	if err := ev.Decode(&call); err != nil {
		return fmt.Errorf("agui: a ClientTool event: %w", err)
	}
	if call.ID == "" {
		return errors.New("agui: a ClientTool event without an id")
	}
	e.closeOpen()
	e.clientTool = call.ID
	e.emit(map[string]any{"type": "TOOL_CALL_START", "toolCallId": call.ID, "toolCallName": call.Tool})
	args := string(call.Arguments)
	if args == "" || args == "null" {
		args = "{}"
	}
	e.emit(map[string]any{"type": "TOOL_CALL_ARGS", "toolCallId": call.ID, "delta": args})
	e.emit(map[string]any{"type": "TOOL_CALL_END", "toolCallId": call.ID})
	return nil
}
