package chat

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/google/uuid"
)

// This file makes a Router's conversations durable when it has a
// chatstore.ConversationStore (RouterOptions.Store): Connect saves the new
// conversation, every request saves its state before Handle returns,
// Resume rebuilds a conversation from the store on any node, and a lease
// keeps one node serving each conversation.

// DefaultLeaseTTL is the lease time of a [Router] whose
// [RouterOptions.LeaseTTL] is zero.
const DefaultLeaseTTL = 30 * time.Second

// The failures of durable conversations, for errors.Is. Their causes are
// logged, never sent.
var (
	// ErrResumeRefused is the failure of a [Router.Resume] of an unknown,
	// expired or ended conversation, with a wrong resume token, or by
	// another principal: one reason for all, so that a client learns
	// nothing about conversations it may not resume.
	ErrResumeRefused = &Failure{Reason: "ResumeRefused"}
	// ErrConversationBusy is the failure of a [Router.Resume] of a
	// conversation another node serves (its error also matches
	// [chatstore.ErrLeaseHeld]): the client tries again later, when that node has
	// let go of it or its lease has ended.
	ErrConversationBusy = &Failure{Reason: "ConversationBusy"}
	// ErrUnavailable is the failure of a request whose state could not be
	// saved (or whose lease could not be renewed) because the store failed:
	// the conversation is back where its last completed request left it,
	// and nothing of the request was kept — unless the store timed out
	// after it received the save, and applied it later: then the next
	// request finds the request's state in the store and goes on from it
	// (the route's answers, sent before the save, tell what it did). The
	// request may be sent again.
	ErrUnavailable = &Failure{Reason: "Unavailable"}
)

// ErrNotDurable is returned by [Router.Resume] on a router without a
// [chatstore.ConversationStore].
var ErrNotDurable = errors.New("chat: the router has no conversation store")

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

// newResumeToken returns a new resume token (256 random bits, base64url)
// and its SHA-256.
func newResumeToken() (string, []byte) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	tok := base64.RawURLEncoding.EncodeToString(b[:])
	return tok, hashToken(tok)
}

func hashToken(tok string) []byte {
	h := sha256.Sum256([]byte(tok))
	return h[:]
}

func principalName(p Principal) string {
	if p == nil {
		return ""
	}
	return p.Name()
}

// ID returns the id of the conversation: the id of its top scope, the same
// for the conversation's whole life (across resumes too).
func (c *Conversation) ID() string { return c.id }

// ResumeToken returns the token with which a client resumes the
// conversation ([Router.Resume]), or "" when the router keeps no
// conversations (it has no [chatstore.ConversationStore]). It changes with every
// resume: only the latest token is accepted.
func (c *Conversation) ResumeToken() string {
	if c.dur == nil {
		return ""
	}
	c.dur.mu.Lock()
	defer c.dur.mu.Unlock()
	return c.dur.token
}

// Extra returns the value saved under key in the conversation's
// [chatstore.ConversationState.Extra] when it was connected or resumed, or nil.
func (c *Conversation) Extra(key string) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dur == nil || c.dur.saved == nil {
		return nil
	}
	return c.dur.saved.Extra[key]
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
	if c.dur == nil {
		return
	}
	if c.dur.extraFns == nil {
		c.dur.extraFns = map[string]func(string, *Failure) []byte{}
	}
	c.dur.extraFns[key] = fn
}

// connectDurable saves the new conversation c (version 1) under a new
// lease and gives it a resume token.
func (r *Router) connectDurable(ctx context.Context, c *Conversation) error {
	d := &durableConv{}
	c.dur = d
	if err := c.acquire(ctx); err != nil {
		return err
	}
	tok, hash := newResumeToken()
	now := time.Now()
	st := &chatstore.ConversationState{
		ID:              c.id,
		Principal:       principalName(c.principal),
		Created:         now,
		Used:            now,
		Scopes:          []chatstore.ScopeState{{ID: c.id, Route: c.stack.current.Load().route}},
		ResumeTokenHash: hash,
	}
	if err := r.store.Save(ctx, st, d.currentLease(), nil); err != nil {
		r.releaseLease(ctx, c)
		return fmt.Errorf("chat: saving the new conversation %s: %w", c.id, err)
	}
	d.saved = st
	d.setToken(tok)
	r.register(c)
	return nil
}

// Resume resumes the conversation id, saved by this router or another one
// over the same store (another process, another node), for the client
// holding its resume token. The principal in ctx must be the one the
// conversation belongs to. Resume takes the conversation's lease, rebuilds
// its scopes (ids, routes, wipe flags; the durable beans are restored when
// first used, the others built afresh; the chat memories are those of the
// store), rotates the resume token (see [Conversation.ResumeToken]) and
// returns the conversation, ready to handle requests.
//
// A principal whose name is not valid UTF-8 fails with [ErrForbidden]
// ([ErrInvalidPrincipal]), as in [Router.Connect]. An unknown, expired or
// ended conversation, a wrong token and another principal all fail with
// [ErrResumeRefused]; a conversation another node serves with
// [ErrConversationBusy] (the node lets go when its client disconnects, or
// its lease ends: try again); a failing store with [ErrUnavailable]. A
// conversation this router serves already (its client reconnected before
// the old connection was found dead) is detached from its old session first, keeping the lease: the old session's next
// request fails with SessionNotActive, and its Detach or Close, even one
// already under way, waits for the resume and then leaves the conversation
// to the new session. A request the old session still runs (a transport
// does not cancel a durable conversation's request when its connection
// drops) is waited for, with its save, until ctx ends; then the resume
// fails with [ErrConversationBusy].
func (r *Router) Resume(ctx context.Context, id, token string) (*Conversation, error) {
	if r.store == nil {
		return nil, ErrNotDurable
	}
	principal := PrincipalFrom(ctx)
	if f := checkPrincipal(principal); f != nil {
		return nil, f
	}
	check := func() (*chatstore.ConversationState, error) {
		st, err := r.store.Load(ctx, id)
		if errors.Is(err, chatstore.ErrConversationNotFound) {
			return nil, fail(ErrResumeRefused, err)
		}
		if errors.Is(err, chatstore.ErrCorruptState) {
			// Not worth a retry: the record stays as it is, for an
			// operator to look at.
			r.logger.ErrorContext(ctx, "chat: a conversation's stored state cannot be read: its resume is refused", "conversation", id, "err", err)
			return nil, fail(ErrResumeRefused, fmt.Errorf("conversation %s: %w", id, err))
		}
		if err != nil {
			return nil, fail(ErrUnavailable, fmt.Errorf("loading conversation %s: %w", id, err))
		}
		if subtle.ConstantTimeCompare(hashToken(token), st.ResumeTokenHash) != 1 {
			return nil, fail(ErrResumeRefused, fmt.Errorf("conversation %s: wrong resume token", id))
		}
		if name := principalName(principal); name != st.Principal {
			return nil, fail(ErrResumeRefused, fmt.Errorf("conversation %s belongs to %q, not %q", id, st.Principal, name))
		}
		if len(st.Scopes) == 0 || st.Scopes[0].ID != id {
			return nil, fail(ErrResumeRefused, fmt.Errorf("conversation %s: the saved state has no top scope %s", id, id))
		}
		return st, nil
	}
	// Check the token before taking the lease: knowing an id is not enough
	// to take a conversation from the node serving it.
	if _, err := check(); err != nil {
		return nil, err
	}
	// From here on, the old session's teardown (Detach, Close) and other
	// resumes of id on this router wait: the lease this resume takes is
	// the one the old session held (the store renews a node's own lease),
	// which a late release of the old session would end.
	unlock := r.handover.lock(id)
	defer unlock()
	if old := r.served(id); old != nil {
		// Check the token again under the lock: a resume with the same
		// token that took the lock first has rotated it, and this one must
		// not take the conversation from the session that one just started
		// (nor drop the lease they share).
		if _, err := check(); err != nil {
			return nil, err
		}
		// The old session may still run a request, one its client lost
		// the connection during: it is not cancelled (a durable turn is
		// not owned by its connection) and this resume waits for it and
		// its save, so that the client's re-sent request finds its answer
		// saved. A request that outlasts ctx makes the resume busy: the
		// client tries again.
		if err := old.dur.awaitRequest(ctx); err != nil {
			return nil, fail(ErrConversationBusy, fmt.Errorf("conversation %s: its old session is still running a request: %w", id, err))
		}
		// Keep the lease: this resume takes it over.
		if err := old.detach(ctx, false); err != nil {
			r.logger.ErrorContext(ctx, "chat: detaching the conversation from its old session", "conversation", id, "err", err)
		}
	}

	c := &Conversation{router: r, id: id, principal: principal, dur: &durableConv{}}
	if err := c.acquire(ctx); err != nil {
		if errors.Is(err, chatstore.ErrLeaseHeld) {
			// Another node serves it: maybe a resume with the same token
			// that won; then this one is refused, not busy.
			if _, cerr := check(); cerr != nil && errors.Is(cerr, ErrResumeRefused) {
				return nil, cerr
			}
			return nil, fail(ErrConversationBusy, err)
		}
		return nil, fail(ErrUnavailable, err)
	}
	// Load again under the lease: the state may have changed meanwhile
	// (and the token been used by another resume, on another node).
	st, err := check()
	if err != nil {
		if r.served(id) == nil {
			// The lease is this resume's alone (a session of this router
			// would share it: the store renews a node's own lease).
			r.releaseLease(ctx, c)
		}
		return nil, err
	}
	c.stack = &scopeStack{logger: r.logger, observer: r.observer, router: r}
	c.stack.restore(rebind(context.Background(), func(b *binding) { b.stack = c.stack }), st.Scopes)
	r.conversations.Add(1)

	tok, hash := newResumeToken()
	st.ResumeTokenHash = hash
	st.Used = time.Now()
	if err := r.store.Save(ctx, st, c.dur.currentLease(), nil); err != nil {
		c.mu.Lock()
		c.drop(ctx, err)
		c.mu.Unlock()
		if errors.Is(err, chatstore.ErrVersionConflict) || errors.Is(err, chatstore.ErrLeaseLost) {
			return nil, fail(ErrConversationBusy, err)
		}
		return nil, fail(ErrUnavailable, fmt.Errorf("saving the resumed conversation %s: %w", id, err))
	}
	c.dur.saved = st
	c.dur.setToken(tok)
	r.register(c)
	return c, nil
}

// register records c as served by r.
func (r *Router) register(c *Conversation) {
	r.liveMu.Lock()
	r.live[c.id] = c
	r.liveMu.Unlock()
}

// unregister forgets c, unless another conversation replaced it. It
// reports whether c was the conversation served here.
func (r *Router) unregister(c *Conversation) bool {
	r.liveMu.Lock()
	defer r.liveMu.Unlock()
	if r.live[c.id] != c {
		return false
	}
	delete(r.live, c.id)
	return true
}

// served returns the conversation id served by r, or nil.
func (r *Router) served(id string) *Conversation {
	r.liveMu.Lock()
	defer r.liveMu.Unlock()
	return r.live[id]
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
	r, d := c.router, c.dur
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

// releaseLease lets another node take c over at once.
func (r *Router) releaseLease(ctx context.Context, c *Conversation) {
	if err := r.store.Release(context.WithoutCancel(ctx), c.id, c.dur.currentLease()); err != nil {
		r.logger.WarnContext(ctx, "chat: releasing the lease of a conversation", "conversation", c.id, "err", err)
	}
}

// beforeRequest makes sure c holds its lease for a request, renewing it
// when less than half of it is left, and starts the timer that renews it
// while the request runs. c.mu is held. A failure is the request's: with
// an empty scope id, the conversation left this node.
func (c *Conversation) beforeRequest(ctx context.Context) (string, *Failure) {
	r, d := c.router, c.dur
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

// lost reports whether err means that the conversation is no longer this
// node's to serve: another node holds it or saved it, or it is gone.
func lost(err error) bool {
	return errors.Is(err, chatstore.ErrLeaseHeld) || errors.Is(err, chatstore.ErrLeaseLost) ||
		errors.Is(err, chatstore.ErrVersionConflict) || errors.Is(err, chatstore.ErrConversationNotFound) ||
		errors.Is(err, chatstore.ErrCorruptState)
}

// renewTick renews the lease during a request that runs for longer than a
// third of it.
func (c *Conversation) renewTick() {
	d := c.dur
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
	r, d := c.router, c.dur
	ctx = context.WithoutCancel(ctx)
	if after == "" {
		// The route ended the conversation.
		c.closed = true
		r.conversations.Add(-1)
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
		Extra:           d.saved.Extra,
	}
	if len(d.extraFns) > 0 {
		var f *Failure
		if reqErr != nil {
			f = reasonOf(reqErr)
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
	r, d := c.router, c.dur
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
	s := c.stack.restore(ctx, c.dur.saved.Scopes)
	return s.id, fail(reason, err)
}

// drop detaches c from this node after it lost the conversation (or let
// go of it): its scopes leave the process (beans detached, memories
// released), its lease is released, and its requests fail with
// SessionNotActive. The store keeps the conversation. c.mu is held.
func (c *Conversation) drop(ctx context.Context, cause error) {
	r := c.router
	if c.closed {
		return
	}
	c.closed = true
	r.conversations.Add(-1)
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
	if c.dur == nil {
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
	if c.closed {
		return nil
	}
	c.closed = true
	r := c.router
	r.conversations.Add(-1)
	served := r.unregister(c)
	err := c.stack.detach(ctx)
	if release && served {
		r.releaseLease(ctx, c)
	}
	return err
}

// closeDurable ends a durable conversation (its id locked, c.mu held,
// c.closed just set): it ends every scope and deletes the conversation from
// the store — unless another node, or another Conversation of this router,
// serves it now, which a late Disconnect must not destroy: it is then only
// detached here.
func (c *Conversation) closeDurable(ctx context.Context) error {
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
	var errs []error
	if c.stack.current.Load() != nil {
		errs = append(errs, End(rebind(ctx, func(b *binding) { b.stack = c.stack; b.providers = r.providers })))
	}
	if err := r.store.Delete(ctx, c.id); err != nil {
		errs = append(errs, fmt.Errorf("chat: deleting conversation %s: %w", c.id, err))
	}
	return errors.Join(errs...)
}

// newNodeName returns a random node name.
func newNodeName() string { return "node-" + uuid.NewString() }
