package agui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// ErrThreadNotFound is the error of [ThreadStore.LoadThread] for a
// thread it holds no record of.
var ErrThreadNotFound = errors.New("agui: no record of the thread")

// A ThreadRecord is what a [ThreadStore] keeps of a thread: the
// conversation it is, with the token that resumes it, its principal and
// the client-run tool call its last run ended on.
type ThreadRecord struct {
	// Conversation is the id of the thread's conversation; "" once the
	// route ended it (the next run starts another).
	Conversation string `json:"conversation"`
	// Token is the conversation's current resume token.
	Token string `json:"token"`
	// Principal is the name of the principal the thread belongs to, ""
	// for an anonymous one.
	Principal string `json:"principal"`
	// Pending is the id of the client-run tool call the last run ended
	// on, "" if none.
	Pending string `json:"pending,omitempty"`
}

// A ThreadStore keeps the record of each thread, so that the next run of
// a thread continues its conversation on any node sharing the store
// ([Options.Threads]). [StoreThreads] keeps them in a router's
// conversation store.
type ThreadStore interface {
	// LoadThread returns the record of thread, or an error matching
	// [ErrThreadNotFound].
	LoadThread(ctx context.Context, thread string) (*ThreadRecord, error)
	// SaveThread writes the record of thread.
	SaveThread(ctx context.Context, thread string, rec *ThreadRecord) error
}

// StoreThreads returns a [ThreadStore] keeping the records of threads in
// store, the conversation store of the router (redisstore, pgstore,
// boltstore): each as a record of its own, under the id
// "agui-thread:<thread id>", that lives as long as the store keeps an
// idle conversation (its time to live restarts at each run). A record
// holds no scope: no conversation resumes from it.
func StoreThreads(store chatstore.ConversationStore) ThreadStore {
	return &storeThreads{store: store}
}

// storeThreads is the ThreadStore of StoreThreads.
type storeThreads struct{ store chatstore.ConversationStore }

// threadExtra is the key of a thread's record in its state's Extra.
const threadExtra = "agui.thread"

func threadID(thread string) string { return "agui-thread:" + thread }

func (s *storeThreads) LoadThread(ctx context.Context, thread string) (*ThreadRecord, error) {
	st, err := s.store.Load(ctx, threadID(thread))
	if errors.Is(err, chatstore.ErrConversationNotFound) {
		return nil, fmt.Errorf("%w: %q", ErrThreadNotFound, thread)
	}
	if err != nil {
		return nil, fmt.Errorf("agui: loading the record of thread %q: %w", thread, err)
	}
	var rec ThreadRecord
	if err := json.Unmarshal(st.Extra[threadExtra], &rec); err != nil {
		return nil, fmt.Errorf("agui: the record of thread %q: %w", thread, err)
	}
	return &rec, nil
}

func (s *storeThreads) SaveThread(ctx context.Context, thread string, rec *ThreadRecord) error {
	id := threadID(thread)
	raw, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("agui: encoding the record of thread %q: %w", thread, err)
	}
	now := time.Now()
	st := &chatstore.ConversationState{ID: id, Principal: rec.Principal, Created: now, Used: now, Extra: map[string][]byte{threadExtra: raw}}
	if old, err := s.store.Load(ctx, id); err == nil {
		st.Version, st.Created = old.Version, old.Created
	} else if !errors.Is(err, chatstore.ErrConversationNotFound) {
		return fmt.Errorf("agui: loading the record of thread %q: %w", thread, err)
	}
	lease, err := s.store.Acquire(ctx, id, "agui", 10*time.Second)
	if err != nil {
		return fmt.Errorf("agui: saving the record of thread %q: %w", thread, err)
	}
	defer func() { _ = s.store.Release(context.WithoutCancel(ctx), id, lease) }()
	if err := s.store.Save(ctx, st, lease, nil); err != nil {
		return fmt.Errorf("agui: saving the record of thread %q: %w", thread, err)
	}
	return nil
}

// principalName is the name a record keeps of p.
func principalName(p chat.Principal) string {
	if p == nil {
		return ""
	}
	return p.Name()
}

// errDurableRouter is the error of a run of a handler with Threads on a
// router without a conversation store.
var errDurableRouter = errors.New("agui: Options.Threads needs a durable router (one with a conversation store)")

// resumeThread returns the conversation of the durable thread th from
// its record, resuming it, or nil when it has none to resume (no record,
// or a conversation the store no longer has). th.mu is held.
func (h *Handler) resumeThread(ctx context.Context, th *thread) (*chat.Conversation, error) {
	rec, err := h.opts.Threads.LoadThread(ctx, th.id)
	if errors.Is(err, ErrThreadNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", chat.ErrUnavailable, err)
	}
	if rec.Principal != principalName(th.principal) {
		return nil, fmt.Errorf("%w: the thread belongs to another principal", chat.ErrForbidden)
	}
	th.pending = rec.Pending
	if rec.Conversation == "" {
		return nil, nil
	}
	c, err := h.router.Resume(chat.WithPrincipal(ctx, th.principal), rec.Conversation, rec.Token)
	if errors.Is(err, chat.ErrResumeRefused) {
		// Expired or ended: the thread starts another conversation.
		th.pending = ""
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("agui: resuming the conversation of thread %q: %w", th.id, err)
	}
	return c, nil
}

// saveThread writes the record of the durable thread th after a run and
// lets its conversation go (Detach), for the next run to resume it on
// any node. th.mu is held.
func (h *Handler) saveThread(ctx context.Context, th *thread) error {
	rec := &ThreadRecord{Principal: principalName(th.principal), Pending: th.pending}
	conv := th.conv
	th.conv = nil
	if conv != nil && conv.ScopeID() != "" {
		rec.Conversation, rec.Token = conv.ID(), conv.ResumeToken()
	}
	err := h.opts.Threads.SaveThread(ctx, th.id, rec)
	if conv != nil {
		if rec.Conversation == "" {
			err = errors.Join(err, conv.Close(ctx))
		} else {
			err = errors.Join(err, conv.Detach(ctx))
		}
	}
	return err
}

// letGo saves the record of th and lets its conversation go after a run
// (see saveThread) when threads are durable; th.mu is held. The save
// outlives the run's context: an aborted run is saved too.
func (h *Handler) letGo(ctx context.Context, th *thread) error {
	if h.opts.Threads == nil {
		return nil
	}
	err := h.saveThread(context.WithoutCancel(ctx), th)
	if err != nil {
		h.log.ErrorContext(ctx, "agui: saving a thread", "thread", th.id, "err", err)
	}
	return err
}
