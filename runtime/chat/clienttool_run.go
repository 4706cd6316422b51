package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/chatscopes/chatgen/runtime/protocol"
)

// A ClientToolFunc runs a tool the client runs ([protocol.ClientToolCall]) with the
// model's arguments (a JSON object) and returns its result, which is sent
// to the server as JSON. An error is sent as the call's error (the model
// is told the client could not run it); an error matching [ErrCancelled]
// stops the paused turn instead. ctx ends at the call's deadline, and when
// the session closes.
type ClientToolFunc func(ctx context.Context, arguments json.RawMessage) (any, error)

// OnClientTool answers the ClientTool events of the tool name on its own:
// fn runs in a goroutine of its own, and its result (or error) is sent as
// the data of a new request on the session, which resumes the paused turn
// (its events reach the handlers as any request's; the request that paused
// has completed by then). ClientTool events of tools without a function
// go to the On(protocol.EventClientTool) handler, or the default one. See
// [SessionBuilder.OnClientToolAnswered] to learn how each answer fared.
func (b *SessionBuilder) OnClientTool(name string, fn ClientToolFunc) *SessionBuilder {
	if b.tools == nil {
		b.tools = map[string]ClientToolFunc{}
	}
	b.tools[name] = fn
	return b
}

// OnClientToolAnswered is called when the answer to a client tool call
// that an [SessionBuilder.OnClientTool] function ran has ended, with the
// error of its request (nil when it completed): for example a BadRequest
// when the call was answered already, or [ErrCancelled] after a stop.
func (b *SessionBuilder) OnClientToolAnswered(fn func(call protocol.ClientToolCall, err error)) *SessionBuilder {
	b.toolAnswered = fn
	return b
}

// open opens a session through open with h, running the builder's client
// tools on it.
func (b *SessionBuilder) open(h *Handlers, open func(*Handlers) (Session, error)) (Session, error) {
	if len(b.tools) == 0 {
		return open(h)
	}
	r := &toolRunner{tools: make(map[string]ClientToolFunc, len(b.tools)), answered: b.toolAnswered,
		next: h.get(protocol.EventClientTool), def: h.def, ready: make(chan struct{})}
	for k, v := range b.tools {
		r.tools[k] = v
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	h.set(protocol.EventClientTool, handler{event: r.handle})
	s, err := open(h)
	if err != nil {
		r.stop()
		return nil, err
	}
	r.s = s
	close(r.ready)
	return &toolSession{Session: s, r: r}, nil
}

// A toolRunner runs the client tools of one session.
type toolRunner struct {
	tools    map[string]ClientToolFunc
	answered func(protocol.ClientToolCall, error)
	next     handler     // the ClientTool handler for other tools
	def      func(Event) // the default handler
	ctx      context.Context
	cancel   context.CancelFunc
	ready    chan struct{} // closed once s is set
	s        Session

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// handle handles a ClientTool event.
func (r *toolRunner) handle(ev Event) {
	var call protocol.ClientToolCall
	err := ev.Decode(&call)
	fn := r.tools[call.Tool]
	if err != nil || fn == nil || call.ID == "" {
		switch {
		case r.next.event != nil:
			r.next.event(ev)
		case r.def != nil:
			r.def(ev)
		}
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.wg.Add(1)
	go r.run(call, fn)
}

// run runs one call and sends its answer.
func (r *toolRunner) run(call protocol.ClientToolCall, fn ClientToolFunc) {
	defer r.wg.Done()
	select {
	case <-r.ready:
	case <-r.ctx.Done():
		return
	}
	ctx, cancel := r.ctx, context.CancelFunc(func() {})
	if call.Deadline != nil {
		ctx, cancel = context.WithDeadline(r.ctx, *call.Deadline)
	}
	v, err := runClientTool(ctx, fn, call.Arguments)
	late := ctx.Err() == context.DeadlineExceeded
	cancel()
	if r.ctx.Err() != nil {
		return // the session is closing
	}
	answer := map[string]any{protocol.KeyClientTool: call.ID}
	switch {
	case err == nil:
		b, merr := json.Marshal(v)
		if merr != nil {
			answer[protocol.KeyError] = "the client's result cannot be encoded: " + merr.Error()
		} else {
			answer[protocol.KeyResult] = json.RawMessage(b)
		}
	case errors.Is(err, ErrCancelled):
		answer = map[string]any{protocol.KeyCancel: call.ID}
	case late && errors.Is(err, context.DeadlineExceeded):
		answer[protocol.KeyError] = "the client did not finish in time"
	default:
		msg := err.Error()
		if msg == "" {
			msg = "the client tool failed"
		}
		answer[protocol.KeyError] = msg
	}
	err = r.s.Send(r.ctx, answer)
	if r.answered != nil {
		r.answered(call, err)
	}
}

// runClientTool calls fn, turning a panic into an error.
func runClientTool(ctx context.Context, fn ClientToolFunc, args json.RawMessage) (v any, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, fmt.Errorf("the client tool panicked: %v", p)
		}
	}()
	return fn(ctx, args)
}

// stop cancels the running calls and waits for them.
func (r *toolRunner) stop() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
}

// A toolSession is a session whose client tools a toolRunner runs.
type toolSession struct {
	Session
	r *toolRunner
}

// Close cancels the running client tools, closes the session and waits
// for the tools to return.
func (s *toolSession) Close() error {
	s.r.mu.Lock()
	s.r.closed = true
	s.r.mu.Unlock()
	s.r.cancel()
	err := s.Session.Close()
	s.r.wg.Wait()
	return err
}
