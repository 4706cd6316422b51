// Package recall is long-term memory for AI services: it remembers facts
// about the principal of each request (chat.PrincipalFrom) in a
// longterm.Store, across all of that principal's conversations, and gives
// them back to the model — an [ai.LongTermMemory] for ai.Config.LongTerm.
//
//	mem := recall.New(store.Facts(), nil) // a longterm.Store: bbolt, Redis, PostgreSQL, in memory
//	cfg := ai.Config{Model: model, LongTerm: mem}
//
// Two modes, named as knowledge's are. Generic ([ai.RetrievalGeneric],
// the default): before each model call the facts relevant to the user's
// message are recalled and placed in the per-request context slot (the
// turn's user message, after the knowledge passages, quoted as data),
// never in the chat memory; after each committed turn a model call
// extracts new facts from it (counted in the turn's usage; turned off by
// [Options.NoExtract]). Agentic ([ai.RetrievalAgentic]): the model is
// offered the tools remember, recall and forget.
//
// Recall searches a per-principal runtime/knowledge index (BM25, plus
// vectors with [Options.Embedder]) built from the store on the
// principal's first turn and kept up to date incrementally by the
// memory's own writes. Each turn checks the principal's revision in the
// store (one round trip, [longterm.Store.Revision]): writes by another
// process rebuild the index. At most [Options.MaxIndexes] principals'
// indexes are kept (least recently used go first), so memory does not
// grow with the number of principals or conversations.
//
// A request without a principal has no long-term memory unless
// [Options.Anonymous] names one for all of them. Facts never reach
// another principal: every read and write is keyed by the principal of
// the request.
package recall

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tmc/langchaingo/embeddings"
	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/knowledge"
	"github.com/chatscopes/chatgen/runtime/longterm"
)

// Defaults of [Options].
const (
	// DefaultMaxRecall is the most facts one recall gives the model.
	DefaultMaxRecall = 5
	// DefaultMaxIndexes is the most principals whose index is kept.
	DefaultMaxIndexes = 1024
	// DefaultMaxExtract is the most facts one extraction stores.
	DefaultMaxExtract = 5
)

// ErrNoPrincipal: the request has no principal and [Options.Anonymous]
// is "", so there is no long-term memory to use (the agentic tools tell
// the model so).
var ErrNoPrincipal = errors.New("recall: the request has no principal")

// Options configures a [Memory]; nil and the zero value are generic mode
// with extraction, the defaults, and no memory for anonymous requests.
type Options struct {
	// Mode is how the service's methods use the memory, unless Methods
	// says otherwise: ai.RetrievalGeneric (the zero value),
	// ai.RetrievalAgentic or ai.RetrievalOff.
	Mode ai.RetrievalMode
	// Methods overrides Mode for the methods it names.
	Methods map[string]ai.RetrievalMode
	// MaxRecall is the most facts one recall returns; 0 means
	// [DefaultMaxRecall].
	MaxRecall int
	// NoExtract turns off the extraction after each generic turn: facts
	// are then only what the application (or agentic tools) stores.
	NoExtract bool
	// MaxExtract is the most new facts one extraction stores; 0 means
	// [DefaultMaxExtract].
	MaxExtract int
	// ExtractCallOptions are added to each extraction call, after its JSON
	// mode: llms.WithModel sends the extraction, a model call after every
	// turn whose prompt no cache serves, to a cheaper model than the
	// service's (Claude Haiku 4.5 beside Sonnet: a third of the price).
	ExtractCallOptions []llms.CallOption
	// Anonymous, when not "", is the principal name requests without a
	// principal share. "" gives them no long-term memory.
	Anonymous string
	// MaxIndexes is the most principals whose index is kept in memory; 0
	// means [DefaultMaxIndexes].
	MaxIndexes int
	// Embedder, when set, adds vectors to the indexes (hybrid search);
	// nil is lexical search (BM25) only.
	Embedder embeddings.Embedder
	// Logger receives the memory's logs; nil means slog.Default().
	Logger *slog.Logger
}

// Stats counts what a [Memory] did since it was made.
type Stats struct {
	// Recalls is the number of recalls (generic turns and recall tool
	// calls); IndexBuilds how many of them built a principal's index from
	// the store.
	Recalls, IndexBuilds int64
	// Extractions is the number of extraction model calls, and Extracted
	// the facts they stored.
	Extractions, Extracted int64
	// ExtractFailures counts extractions that failed: the model call,
	// its answer, or the store (StoreFailures counts the last).
	ExtractFailures, StoreFailures int64
}

// Memory is a long-term memory over a [longterm.Store]: an
// [ai.LongTermMemory], and the calls that list, export, edit and delete
// a principal's facts. It is safe for concurrent use.
type Memory struct {
	store      longterm.Store
	mode       ai.RetrievalMode
	methods    map[string]ai.RetrievalMode
	maxRecall  int
	maxExtract int
	extract    bool
	extractOpt []llms.CallOption // WithJSONMode, then Options.ExtractCallOptions
	anonymous  string
	embedder   embeddings.Embedder
	logger     *slog.Logger
	tools      []ai.Tool

	mu      sync.Mutex
	max     int
	lru     *list.List // of *entry, most recent first
	entries map[string]*list.Element

	recalls, builds, extractions, extracted, extractFailures, storeFailures atomic.Int64
}

// entry is the index of one principal's facts, at a revision.
type entry struct {
	principal string

	mu    sync.Mutex
	rev   longterm.Revision
	facts map[string]longterm.Fact
	ix    *knowledge.Index
}

// New returns a long-term memory over store configured by opts.
func New(store longterm.Store, opts *Options) *Memory {
	if opts == nil {
		opts = &Options{}
	}
	m := &Memory{
		store: store, mode: opts.Mode, methods: opts.Methods, maxRecall: opts.MaxRecall, maxExtract: opts.MaxExtract,
		extract: !opts.NoExtract, anonymous: opts.Anonymous, embedder: opts.Embedder, logger: opts.Logger,
		max: opts.MaxIndexes, lru: list.New(), entries: map[string]*list.Element{},
	}
	m.extractOpt = append([]llms.CallOption{llms.WithJSONMode()}, opts.ExtractCallOptions...)
	if m.maxRecall <= 0 {
		m.maxRecall = DefaultMaxRecall
	}
	if m.maxExtract <= 0 {
		m.maxExtract = DefaultMaxExtract
	}
	if m.max <= 0 {
		m.max = DefaultMaxIndexes
	}
	m.tools = m.makeTools()
	return m
}

// Stats returns what the memory counted so far.
func (m *Memory) Stats() Stats {
	return Stats{
		Recalls: m.recalls.Load(), IndexBuilds: m.builds.Load(),
		Extractions: m.extractions.Load(), Extracted: m.extracted.Load(),
		ExtractFailures: m.extractFailures.Load(), StoreFailures: m.storeFailures.Load(),
	}
}

// Principal returns the principal name whose facts a request of ctx
// uses: its principal's, or Options.Anonymous; ErrNoPrincipal when
// neither.
func (m *Memory) Principal(ctx context.Context) (string, error) {
	if p := chat.PrincipalFrom(ctx); p != nil {
		if name := p.Name(); name != "" {
			return name, nil
		}
	}
	if m.anonymous != "" {
		return m.anonymous, nil
	}
	return "", ErrNoPrincipal
}

// LongTermMode implements [ai.LongTermMemory].
func (m *Memory) LongTermMode(method string) ai.RetrievalMode {
	if mode, ok := m.methods[method]; ok {
		return mode
	}
	return m.mode
}

// LongTermTools implements [ai.LongTermMemory]: remember, recall and
// forget.
func (m *Memory) LongTermTools() []ai.Tool { return m.tools }

// Recall implements [ai.LongTermMemory]: the texts of the facts of the
// request's principal most relevant to user, best first.
func (m *Memory) Recall(ctx context.Context, user string) ([]string, error) {
	p, err := m.Principal(ctx)
	if err != nil {
		return nil, nil // anonymous: nothing to recall
	}
	facts, err := m.Search(ctx, p, user, m.maxRecall)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(facts))
	for i, f := range facts {
		out[i] = f.Text
	}
	return out, nil
}

// Search returns principal's facts most relevant to query, best first,
// at most k: those that share a term with it (or, with an embedder, are
// close to it). It reads the principal's revision from the store (one
// round trip) and, when its index is missing or behind, the facts.
func (m *Memory) Search(ctx context.Context, principal, query string, k int) ([]longterm.Fact, error) {
	m.recalls.Add(1)
	e, err := m.index(ctx, principal)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ix == nil || e.ix.Len() == 0 || strings.TrimSpace(query) == "" {
		return nil, nil
	}
	hits, err := e.ix.Search(ctx, query, k, knowledge.Auto, 0)
	if err != nil {
		return nil, fmt.Errorf("recall: searching: %w", err)
	}
	out := make([]longterm.Fact, 0, len(hits))
	for _, h := range hits {
		if f, ok := e.facts[h.ID]; ok {
			out = append(out, f)
		}
	}
	return out, nil
}

// index returns principal's entry, at the store's revision.
func (m *Memory) index(ctx context.Context, principal string) (*entry, error) {
	rev, err := m.store.Revision(ctx, principal)
	if err != nil {
		return nil, fmt.Errorf("recall: reading the revision: %w", err)
	}
	e := m.entry(principal)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ix != nil && e.rev == rev {
		return e, nil
	}
	if rev == 0 {
		e.rev, e.facts, e.ix = 0, map[string]longterm.Fact{}, nil
		return e, nil
	}
	facts, rev, err := m.store.List(ctx, principal)
	if err != nil {
		return nil, fmt.Errorf("recall: reading the facts: %w", err)
	}
	if err := m.rebuild(ctx, e, facts, rev); err != nil {
		return nil, err
	}
	m.builds.Add(1)
	return e, nil
}

// rebuild makes e's index of facts at rev; e.mu is held.
func (m *Memory) rebuild(ctx context.Context, e *entry, facts []longterm.Fact, rev longterm.Revision) error {
	ix, err := knowledge.New(&knowledge.IndexOptions{Embedder: m.embedder})
	if err != nil {
		return fmt.Errorf("recall: %w", err)
	}
	byID := make(map[string]longterm.Fact, len(facts))
	chunks := make([]knowledge.Chunk, 0, len(facts))
	for _, f := range facts {
		byID[f.ID] = f
		chunks = append(chunks, knowledge.Chunk{ID: f.ID, Text: f.Text})
	}
	if err := ix.Add(ctx, chunks...); err != nil {
		e.ix = nil
		return fmt.Errorf("recall: indexing: %w", err)
	}
	e.rev, e.facts, e.ix = rev, byID, ix
	return nil
}

// entry returns principal's entry, made (empty) when missing, as the
// most recently used; the least recently used beyond the cap go.
func (m *Memory) entry(principal string) *entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.entries[principal]; ok {
		m.lru.MoveToFront(el)
		return el.Value.(*entry)
	}
	e := &entry{principal: principal}
	m.entries[principal] = m.lru.PushFront(e)
	for m.lru.Len() > m.max {
		old := m.lru.Back()
		m.lru.Remove(old)
		delete(m.entries, old.Value.(*entry).principal)
	}
	return e
}

// cached returns principal's entry if it is kept, without making one.
func (m *Memory) cached(principal string) *entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.entries[principal]; ok {
		return el.Value.(*entry)
	}
	return nil
}

// drop forgets principal's index.
func (m *Memory) drop(principal string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.entries[principal]; ok {
		m.lru.Remove(el)
		delete(m.entries, principal)
	}
}

// wrote brings principal's cached index up to a write of this process
// that returned rev: when the index was at rev-1 nobody else wrote in
// between, and the write is applied to it — added facts are indexed
// incrementally, a change (an edit, a deletion) to the cached facts
// rebuilds the index from them, without reading the store. Otherwise the
// index is marked stale and the next recall reads the facts again.
func (m *Memory) wrote(ctx context.Context, principal string, rev longterm.Revision, added []longterm.Fact, change func(facts map[string]longterm.Fact)) {
	e := m.cached(principal)
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.ix != nil && e.rev == rev:
		return // the write changed nothing
	case e.ix == nil || e.rev == 0 || e.rev+1 != rev:
		e.ix, e.facts, e.rev = nil, nil, 0
		return
	}
	if change != nil {
		change(e.facts)
		facts := make([]longterm.Fact, 0, len(e.facts))
		for _, f := range e.facts {
			facts = append(facts, f)
		}
		if err := m.rebuild(ctx, e, facts, rev); err != nil {
			e.ix, e.facts, e.rev = nil, nil, 0
		}
		return
	}
	chunks := make([]knowledge.Chunk, len(added))
	for i, f := range added {
		chunks[i] = knowledge.Chunk{ID: f.ID, Text: f.Text}
	}
	if err := e.ix.Add(ctx, chunks...); err != nil {
		e.ix, e.facts, e.rev = nil, nil, 0
		return
	}
	for _, f := range added {
		e.facts[f.ID] = f
	}
	e.rev = rev
}

// Remember stores a new fact about principal (its id made by
// [longterm.NewID]) and returns it.
func (m *Memory) Remember(ctx context.Context, principal, text, source string) (longterm.Fact, error) {
	f := longterm.Fact{ID: longterm.NewID(), Text: strings.TrimSpace(text), Source: source}
	now := longterm.Time(time.Now())
	f.Created, f.Updated = now, now
	rev, err := m.store.Put(ctx, principal, f)
	if err != nil {
		return longterm.Fact{}, fmt.Errorf("recall: remembering: %w", err)
	}
	m.wrote(ctx, principal, rev, []longterm.Fact{f}, nil)
	return f, nil
}

// List returns all of principal's facts, oldest first.
func (m *Memory) List(ctx context.Context, principal string) ([]longterm.Fact, error) {
	facts, _, err := m.store.List(ctx, principal)
	if err != nil {
		return nil, fmt.Errorf("recall: listing: %w", err)
	}
	return facts, nil
}

// Export writes all of principal's facts to w as JSON
// ([longterm.Export]).
func (m *Memory) Export(ctx context.Context, principal string, w io.Writer) error {
	return longterm.WriteExport(ctx, m.store, principal, w)
}

// Edit replaces the text of principal's fact id.
func (m *Memory) Edit(ctx context.Context, principal, id, text string) error {
	old, err := m.store.Get(ctx, principal, id)
	if err != nil {
		return fmt.Errorf("recall: editing %q: %w", id, err)
	}
	f := longterm.Fact{ID: id, Text: strings.TrimSpace(text), Source: old.Source, Updated: longterm.Time(time.Now())}
	rev, err := m.store.Update(ctx, principal, f)
	if err != nil {
		return fmt.Errorf("recall: editing %q: %w", id, err)
	}
	m.wrote(ctx, principal, rev, nil, func(facts map[string]longterm.Fact) {
		facts[id] = longterm.Updated(old, f, f.Updated)
	})
	return nil
}

// Delete deletes principal's facts ids.
func (m *Memory) Delete(ctx context.Context, principal string, ids ...string) error {
	rev, err := m.store.Delete(ctx, principal, ids...)
	if err != nil {
		return fmt.Errorf("recall: deleting: %w", err)
	}
	m.wrote(ctx, principal, rev, nil, func(facts map[string]longterm.Fact) {
		for _, id := range ids {
			delete(facts, id)
		}
	})
	return nil
}

// Forget deletes everything remembered about principal, in the store
// and in this memory's cache: the right to be forgotten.
func (m *Memory) Forget(ctx context.Context, principal string) error {
	m.drop(principal)
	if err := m.store.DeleteAll(ctx, principal); err != nil {
		return fmt.Errorf("recall: forgetting: %w", err)
	}
	m.drop(principal)
	return nil
}

// source returns the conversation of ctx, for a fact's Source.
func source(ctx context.Context) string {
	if id, err := chat.ConversationID(ctx); err == nil {
		return id
	}
	return ""
}

var _ ai.LongTermMemory = (*Memory)(nil)

// llmsText returns the text parts of m.
func llmsText(m llms.MessageContent) string {
	var b strings.Builder
	for _, p := range m.Parts {
		if t, ok := p.(llms.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}
