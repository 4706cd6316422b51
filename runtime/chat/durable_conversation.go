package chat

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// This file holds the durable conversation: the layer that, on a router
// with a store, wraps each request of the conversation in this process
// (conversation.go) with the lease that lets this node serve it and the
// save of its state, and that detaches or deletes the conversation when
// its session ends.

// durableConv is the durable side of a Conversation served by a router
// with a store.
type durableConv struct {
	// Guarded by Conversation.mu.
	saved    *chatstore.ConversationState // the state last saved, owned here
	unsure   bool                         // a save failed: the store may have applied it all the same
	extraFns map[string]func(scopeID string, f *Failure) []byte

	mu         sync.Mutex // guards the token, and the lease against the renewal timer
	token      string     // the current resume token
	lease      chatstore.Lease
	leaseUntil time.Time     // when the lease ends, by this node's clock
	renewing   bool          // a request is running: the timer renews the lease
	running    bool          // a request runs (until after its save)
	idle       chan struct{} // made by awaitRequest while a request runs, closed when it ends; else nil
	timer      *time.Timer   // renews the lease during long requests
	renewals   sync.WaitGroup
}

// ResumeToken returns the token with which a client resumes the
// conversation ([Router.Resume]), or "" when the router keeps no
// conversations (it has no [chatstore.ConversationStore]). It changes with every
// resume: only the latest token is accepted.
func (c *Conversation) ResumeToken() string {
	if c.durable == nil {
		return ""
	}
	c.durable.mu.Lock()
	defer c.durable.mu.Unlock()
	return c.durable.token
}

// Extra returns the value saved under key in the conversation's
// [chatstore.ConversationState.Extra] when it was connected or resumed, or nil.
func (c *Conversation) Extra(key string) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.durable == nil || c.durable.saved == nil {
		return nil
	}
	return c.durable.saved.Extra[key]
}

// SetExtra registers fn to compute, at each save of a durable conversation,
// the value saved under key in its [chatstore.ConversationState.Extra] (nil removes
// it). fn gets the result of the request being saved, as Handle would
// return it: the scope current after the request and its failure. It runs
// with the conversation locked: it must not call the conversation's
// methods. Transports use it to save their own state with the
// conversation's, atomically. On a router without a store it does nothing.
func (c *Conversation) SetExtra(key string, fn func(scopeID string, f *Failure) []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.durable == nil {
		return
	}
	if c.durable.extraFns == nil {
		c.durable.extraFns = map[string]func(string, *Failure) []byte{}
	}
	c.durable.extraFns[key] = fn
}

func (d *durableConv) setToken(tok string) {
	d.mu.Lock()
	d.token = tok
	d.mu.Unlock()
}

// currentLease returns the lease held now.
func (d *durableConv) currentLease() chatstore.Lease {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lease
}

// acquire takes or renews the lease of c. It reports whether the store
// granted a new lease (rather than renewing the one c held).
func (c *Conversation) acquire(ctx context.Context) error {
	_, err := c.acquireLease(ctx)
	return err
}

func (c *Conversation) acquireLease(ctx context.Context) (fresh bool, err error) {
	r, d := c.router, c.durable
	start := time.Now()
	l, err := r.store.Acquire(ctx, c.id, r.node, r.leaseTTL)
	if err != nil {
		return false, fmt.Errorf("chat: taking the lease of conversation %s: %w", c.id, err)
	}
	d.mu.Lock()
	fresh = l.Token != d.lease.Token
	d.lease, d.leaseUntil = l, start.Add(r.leaseTTL)
	d.mu.Unlock()
	return fresh, nil
}

// handleDurable is handle of a durable conversation: the request runs
// as in memory, under the conversation's lease, with its memory writes
// staged to be saved with its state; the save, before the result is
// returned, may change it.
func (c *Conversation) handleDurable(ctx context.Context, scopeID string, req *RouteRequest, sink eventSink) (string, *Failure) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.durable
	if d.unsure && !c.closed && c.stack.current.Load() != nil {
		if f := c.reconcile(ctx); f != nil {
			if c.closed {
				return "", f
			}
			return c.ScopeID(), f
		}
	}
	target, scope, f := c.target(scopeID)
	if f != nil {
		return scope, f
	}
	if after, f := c.beforeRequest(ctx); f != nil {
		return after, f
	}
	defer d.stopRenewing()
	// A resume on this router waits for the request (and its save)
	// before it takes the conversation over (Router.Resume).
	d.requestStarted()
	defer d.requestEnded()
	// The request's memory writes are staged in the batch, to be
	// committed with its state.
	batch := chatstore.NewBatch()
	cp := c.withCheckpoints(chatstore.WithBatch(ctx, batch), batch)
	t := c.serve(cp, target, req, sink)
	cp.end()
	d.stopRenewing()
	if scope, f, ok := c.save(&t.rs.ctx, batch, t.after, t.err); !ok {
		return scope, f // the save failed: that is the request's failure
	}
	return c.result(t)
}

// beforeRequest makes sure c holds its lease for a request, renewing it
// when less than half of it is left, and starts the timer that renews it
// while the request runs. c.mu is held. A failure is the request's: with
// an empty scope id, the conversation left this node.
func (c *Conversation) beforeRequest(ctx context.Context) (string, *Failure) {
	r, d := c.router, c.durable
	d.mu.Lock()
	left := time.Until(d.leaseUntil)
	d.mu.Unlock()
	if left < r.leaseTTL/2 {
		fresh, err := c.acquireLease(ctx)
		if err == nil && fresh {
			// The lease had ended and was granted again: another node may
			// have served the conversation meanwhile.
			var st *chatstore.ConversationState
			st, err = r.store.Load(ctx, c.id)
			if err == nil && st.Version != d.saved.Version {
				err = fmt.Errorf("chat: conversation %s is at version %d, this node has %d: %w", c.id, st.Version, d.saved.Version, chatstore.ErrVersionConflict)
			}
		}
		if err != nil {
			if lost(err) {
				c.drop(ctx, err)
				return "", fail(ErrSessionNotActive, err)
			}
			return c.ScopeID(), fail(ErrUnavailable, err)
		}
	}
	d.mu.Lock()
	d.renewing = true
	if d.timer == nil {
		d.timer = time.AfterFunc(r.leaseTTL/3, c.renewTick)
	} else {
		d.timer.Reset(r.leaseTTL / 3)
	}
	d.mu.Unlock()
	return "", nil
}

// renewTick renews the lease during a request that runs for longer than a
// third of it.
func (c *Conversation) renewTick() {
	d := c.durable
	d.mu.Lock()
	if !d.renewing {
		d.mu.Unlock()
		return
	}
	d.renewals.Add(1)
	d.mu.Unlock()
	defer d.renewals.Done()
	if _, err := c.acquireLease(context.Background()); err != nil {
		// The save at the end of the request fails if the lease is lost.
		c.router.logger.Warn("chat: renewing the lease of a conversation during a request", "conversation", c.id, "err", err)
	}
	d.mu.Lock()
	if d.renewing {
		d.timer.Reset(c.router.leaseTTL / 3)
	}
	d.mu.Unlock()
}

// requestStarted records that a request runs; requestEnded records its
// end. The channel awaitRequest waits on is made only when something
// waits (a resume taking the conversation over), not on every request.
func (d *durableConv) requestStarted() {
	d.mu.Lock()
	d.running = true
	d.mu.Unlock()
}

// requestEnded records the end of the request requestStarted recorded.
func (d *durableConv) requestEnded() {
	d.mu.Lock()
	d.running = false
	if d.idle != nil {
		close(d.idle)
		d.idle = nil
	}
	d.mu.Unlock()
}

// awaitRequest waits until no request runs, or ctx ends (its error).
func (d *durableConv) awaitRequest(ctx context.Context) error {
	d.mu.Lock()
	if !d.running {
		d.mu.Unlock()
		return nil
	}
	if d.idle == nil {
		d.idle = make(chan struct{})
	}
	idle := d.idle
	d.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stopRenewing stops the renewal timer of a request, waiting for a renewal
// in progress.
func (d *durableConv) stopRenewing() {
	d.mu.Lock()
	d.renewing = false
	if d.timer != nil {
		d.timer.Stop()
	}
	d.mu.Unlock()
	d.renewals.Wait()
}

// save saves c's state at the end of a request (c.mu held) that left the
// conversation in the scope after and failed with reqErr (nil for none),
// with the writes staged in b. It reports whether the save succeeded;
// otherwise it returns the request's new result: the scope the
// conversation is in and the failure the request turned into. A
// conversation that ended is deleted from the store.
//
// When the store refuses the save because another node took the
// conversation over (a lost lease, a newer version), the conversation is
// detached from this node and the request fails with SessionNotActive.
// When the save fails otherwise (the store is down), the conversation is
// rolled back, in this process, to the state last saved: its scopes are
// rebuilt from it (durable beans as saved, other beans afresh, chat
// memories as stored), and the request fails with Unavailable, reporting
// the scope the client is back in. Nothing of the request was kept.
func (c *Conversation) save(ctx context.Context, b *chatstore.Batch, after string, reqErr error) (string, *Failure, bool) {
	r, d := c.router, c.durable
	reqCtx := ctx
	ctx = context.WithoutCancel(ctx)
	if after == "" {
		// The route ended the conversation.
		c.end()
		r.unregister(c)
		if err := r.store.Delete(ctx, c.id); err != nil {
			r.logger.ErrorContext(ctx, "chat: deleting an ended conversation", "conversation", c.id, "err", err)
		}
		return "", nil, true
	}
	scopes, err := c.stack.snapshot()
	if err != nil {
		scope, f := c.rollback(ctx, err, ErrServerError)
		return scope, f, false
	}
	st := &chatstore.ConversationState{
		ID:              c.id,
		Version:         d.saved.Version,
		Principal:       d.saved.Principal,
		Created:         d.saved.Created,
		Used:            time.Now(),
		Scopes:          scopes,
		ResumeTokenHash: d.saved.ResumeTokenHash,
		Extra:           withoutCheckpoints(d.saved.Extra), // the request ended
	}
	if len(d.extraFns) > 0 {
		var f *Failure
		if reqErr != nil {
			f = failureOf(reqCtx, reqErr)
		}
		st.Extra = maps.Clone(st.Extra)
		if st.Extra == nil {
			st.Extra = map[string][]byte{}
		}
		for key, fn := range d.extraFns {
			if v := fn(after, f); v != nil {
				st.Extra[key] = v
			} else {
				delete(st.Extra, key)
			}
		}
	}
	if err := holdStack(func() error { return r.store.Save(ctx, st, d.currentLease(), b) }); err != nil {
		err = fmt.Errorf("chat: saving conversation %s: %w", c.id, err)
		if lost(err) {
			r.logger.WarnContext(ctx, "chat: another node serves the conversation: this node lets go of it", "conversation", c.id, "err", err)
			c.drop(ctx, err)
			return "", fail(ErrSessionNotActive, err), false
		}
		// A save that timed out may still be applied: the next request
		// checks (reconcile).
		d.unsure = true
		scope, f := c.rollback(ctx, err, ErrUnavailable)
		return scope, f, false
	}
	d.saved = st
	return after, nil, true
}

// reconcile runs before the first request after a save that failed with
// the store down (c.mu held): a save that timed out once sent may have
// been applied all the same. It loads the conversation. At the version
// this node last saved, nothing of the failed request was kept. At the
// next one, under the lease this node still holds (a save checks the
// lease: no other node could have written it), the failed request's save
// was applied: the scopes are rebuilt from it and the conversation goes on
// from there. Anything else means another node took the conversation
// over: it leaves this node (SessionNotActive). A store still down fails
// the request with Unavailable, and the next one checks again.
func (c *Conversation) reconcile(ctx context.Context) *Failure {
	r, d := c.router, c.durable
	st, err := r.store.Load(ctx, c.id)
	if err == nil && st.Version != d.saved.Version {
		var fresh bool
		fresh, err = c.acquireLease(ctx)
		if err == nil && (fresh || st.Version != d.saved.Version+1) {
			err = fmt.Errorf("chat: conversation %s is at version %d, this node has %d: %w", c.id, st.Version, d.saved.Version, chatstore.ErrVersionConflict)
		}
	}
	if err != nil {
		if lost(err) {
			c.drop(ctx, err)
			return fail(ErrSessionNotActive, err)
		}
		return fail(ErrUnavailable, fmt.Errorf("chat: checking conversation %s after a failed save: %w", c.id, err))
	}
	d.unsure = false
	if st.Version == d.saved.Version {
		return nil
	}
	r.logger.WarnContext(ctx, "chat: a save that failed was applied all the same: the conversation goes on from it", "conversation", c.id, "version", st.Version)
	if err := c.stack.detach(ctx); err != nil {
		r.logger.ErrorContext(ctx, "chat: rebuilding a conversation", "conversation", c.id, "err", err)
	}
	c.stack.restore(ctx, st.Scopes)
	d.saved = st
	return nil
}

// rollback rebuilds the scopes of c from the state last saved, after a
// request whose state could not be saved failed with err, and returns the
// request's result: the scope current in the saved state and reason.
func (c *Conversation) rollback(ctx context.Context, err error, reason *Failure) (string, *Failure) {
	r := c.router
	r.logger.ErrorContext(ctx, "chat: the request's state was not saved: the conversation is rolled back to its last saved state", "conversation", c.id, "err", err)
	if derr := c.stack.detach(ctx); derr != nil {
		r.logger.ErrorContext(ctx, "chat: rolling back a conversation", "conversation", c.id, "err", derr)
	}
	s := c.stack.restore(ctx, c.durable.saved.Scopes)
	return s.id, fail(reason, err)
}

// drop detaches c from this node after it lost the conversation (or let
// go of it): its scopes leave the process (beans detached, memories
// released), its lease is released, and its requests fail with
// SessionNotActive. The store keeps the conversation. c.mu is held.
func (c *Conversation) drop(ctx context.Context, cause error) {
	r := c.router
	if !c.end() {
		return
	}
	r.unregister(c)
	if err := c.stack.detach(ctx); err != nil {
		r.logger.ErrorContext(ctx, "chat: detaching a conversation", "conversation", c.id, "cause", cause, "err", err)
	}
	r.releaseLease(ctx, c)
}

// Detach lets go of the conversation on this node without ending it: a
// transport calls it when the connection is lost (rather than closed by the
// client), so that the client can resume the conversation, here or on
// another node. The conversation's scopes leave the process (their beans
// are detached, not closed: see [DetachableBean]; their chat memories are
// released, the router's [Stats] count them no more) and its lease is
// released; the store keeps it until its time to live ends. It waits for
// a request in progress, and for a [Router.Resume] of the conversation on
// the same router. Detaching twice, or after Close, or after a resume on
// the same router superseded this session, does nothing.
//
// On a router without a store, Detach is Close: nothing could resume the
// conversation.
func (c *Conversation) Detach(ctx context.Context) error {
	if c.durable == nil {
		return c.Close(ctx)
	}
	unlock := c.router.handover.lock(c.id)
	defer unlock()
	return c.detach(ctx, true)
}

// detach is Detach of a durable conversation, with its id locked
// (handover). It releases the lease if release is set and c was the
// conversation served here.
func (c *Conversation) detach(ctx context.Context, release bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.end() {
		return nil
	}
	r := c.router
	served := r.unregister(c)
	err := c.stack.detach(ctx)
	if release && served {
		r.releaseLease(ctx, c)
	}
	return err
}

// closeDurable is Close of a durable conversation: it ends every scope
// and deletes the conversation from the store — unless another node, or
// another Conversation of this router, serves it now, which a late
// Disconnect must not destroy: it is then only detached here.
func (c *Conversation) closeDurable(ctx context.Context) error {
	// Before c.mu: a resume on this router holds it while it detaches
	// this session (durable_handover.go).
	unlock := c.router.handover.lock(c.id)
	defer unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.end() {
		return nil
	}
	r := c.router
	ctx = context.WithoutCancel(ctx)
	if !r.unregister(c) {
		r.logger.InfoContext(ctx, "chat: closing a conversation a newer session serves: only detached here", "conversation", c.id)
		return c.stack.detach(ctx)
	}
	if _, err := c.acquireLease(ctx); lost(err) {
		r.logger.InfoContext(ctx, "chat: closing a conversation another node serves: only detached here", "conversation", c.id, "err", err)
		return c.stack.detach(ctx)
	}
	errs := []error{c.endScopes(ctx)}
	if err := r.store.Delete(ctx, c.id); err != nil {
		errs = append(errs, fmt.Errorf("chat: deleting conversation %s: %w", c.id, err))
	}
	return errors.Join(errs...)
}
