package chat

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/google/uuid"
)

// This file makes a Router's conversations durable when it has a
// chatstore.ConversationStore (RouterOptions.Store): Connect saves the new
// conversation, Resume rebuilds a conversation from the store on any node,
// and a lease keeps one node serving each conversation. Every request
// saves its state before Handle returns (durable_conversation.go).

// defaultLeaseTTL is the lease time of a [Router] whose
// [RouterOptions.LeaseTTL] is zero.
const defaultLeaseTTL = 30 * time.Second

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

// connectDurable saves the new conversation c (version 1) under a new
// lease and gives it a resume token.
func (r *Router) connectDurable(ctx context.Context, c *Conversation) error {
	d := &durableConv{}
	c.durable = d
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
		if err := old.durable.awaitRequest(ctx); err != nil {
			return nil, fail(ErrConversationBusy, fmt.Errorf("conversation %s: its old session is still running a request: %w", id, err))
		}
		// Keep the lease: this resume takes it over.
		if err := old.detach(ctx, false); err != nil {
			r.logger.ErrorContext(ctx, "chat: detaching the conversation from its old session", "conversation", id, "err", err)
		}
	}

	c := &Conversation{conversation: conversation{router: r, id: id, principal: principal}, durable: &durableConv{}}
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
	if err := r.store.Save(ctx, st, c.durable.currentLease(), nil); err != nil {
		c.mu.Lock()
		c.drop(ctx, err)
		c.mu.Unlock()
		if errors.Is(err, chatstore.ErrVersionConflict) || errors.Is(err, chatstore.ErrLeaseLost) {
			return nil, fail(ErrConversationBusy, err)
		}
		return nil, fail(ErrUnavailable, fmt.Errorf("saving the resumed conversation %s: %w", id, err))
	}
	c.durable.saved = st
	c.durable.setToken(tok)
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

// releaseLease lets another node take c over at once.
func (r *Router) releaseLease(ctx context.Context, c *Conversation) {
	if err := r.store.Release(context.WithoutCancel(ctx), c.id, c.durable.currentLease()); err != nil {
		r.logger.WarnContext(ctx, "chat: releasing the lease of a conversation", "conversation", c.id, "err", err)
	}
}

// lost reports whether err means that the conversation is no longer this
// node's to serve: another node holds it or saved it, or it is gone.
func lost(err error) bool {
	return errors.Is(err, chatstore.ErrLeaseHeld) || errors.Is(err, chatstore.ErrLeaseLost) ||
		errors.Is(err, chatstore.ErrVersionConflict) || errors.Is(err, chatstore.ErrConversationNotFound) ||
		errors.Is(err, chatstore.ErrCorruptState)
}

// newNodeName returns a random node name.
func newNodeName() string { return "node-" + uuid.NewString() }
