// Package offload keeps large tool results out of an AI service's chat
// memory and prompts (context offload). A tool result over a size is kept
// in the conversation store, with its chat scope, and the memory keeps a
// short stub in its place — the result's id, size, line count and first
// bytes —; the model reads the result, or a range of it (bytes or lines),
// with the read_result tool when it needs it. The results of a scope are
// deleted with the scope.
//
// An [Offloader] is an [ai.ToolSource] (for [ai.Config.ToolSources]) and
// an [ai.ResultOffloader]: generated code does not change.
//
//	off := offload.New(&offload.Options{Store: db.Memories()})
//	cfg := &ai.Config{Model: llm, Memory: mem, ToolSources: []ai.ToolSource{off}}
//
// See "Memory beyond a conversation" in docs/guide.md.
package offload

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/memory"
)

// The defaults of [Options].
const (
	// DefaultThreshold is the size in bytes over which a tool result is
	// offloaded (about 2,000 tokens).
	DefaultThreshold = 8 << 10
	// DefaultInline is the size in bytes up to which an offloaded result
	// still reaches the turn's own model calls whole.
	DefaultInline = 32 << 10
	// DefaultMaxBytes is the most bytes of one result kept: the rest of a
	// larger one is dropped, and its stub says so.
	DefaultMaxBytes = 1 << 20
	// DefaultMaxResults is the most results a scope keeps: a newer one
	// takes the place of the oldest.
	DefaultMaxResults = 64
	// DefaultPreview is how many of a result's first bytes its stub shows.
	DefaultPreview = 300
	// DefaultMaxRead is the most bytes one read_result call returns.
	DefaultMaxRead = 4 << 10
)

// ToolRead is the name of the tool that reads an offloaded result.
const ToolRead = "read_result"

// DefaultBeanName is the name of the per-chat bean that lists a scope's
// offloaded results, when [Options.BeanName] is empty.
const DefaultBeanName = "github.com/chatscopes/chatgen/runtime/offload.Shelf"

// Errors of reading an offloaded result, for errors.Is. The model is told
// their message as the tool's result.
var (
	// ErrUnknown: the id names no result of the current chat scope (it
	// is made up, or another scope's, or another conversation's).
	ErrUnknown = errors.New("offload: no offloaded result has this id in this conversation")
	// ErrGone: the result was offloaded in this scope, but is no longer
	// kept: a newer one took its place (Options.MaxResults), or the
	// scope's memory was wiped.
	ErrGone = errors.New("offload: the result is no longer kept")
	// ErrRange: the range asked for is outside the result.
	ErrRange = errors.New("offload: the range is outside the result")
)

// Options configure an [Offloader]. The zero value (or nil) is ready to
// use, with an in-process store.
type Options struct {
	// Store keeps the results: the memory side of the router's
	// conversation store (boltstore's, redisstore's or pgstore's
	// Memories(), chatstoretest.InMemoryMemories), so that a
	// conversation resumed on another node can still read them and they
	// are saved, or not, with the request. Nil means a store in this
	// process (memory.NewInMemoryStore): a router with a conversation
	// store then refuses to start (chat.ErrMemoryNotDurable).
	Store memory.Store
	// Threshold is the size in bytes over which a tool result is
	// offloaded; 0 means [DefaultThreshold].
	Threshold int
	// Inline is the size in bytes up to which an offloaded result still
	// reaches the model calls of the turn that called the tool whole
	// (the memory, and so every later turn, has the stub); a larger one
	// is a stub there too. 0 means [DefaultInline]; a negative Inline
	// sends the stub at once, always.
	Inline int
	// MaxBytes is the most bytes of one result kept; 0 means
	// [DefaultMaxBytes].
	MaxBytes int
	// MaxResults is the most results one scope keeps; 0 means
	// [DefaultMaxResults].
	MaxResults int
	// Preview is how many of a result's first bytes its stub shows; 0
	// means [DefaultPreview], a negative Preview none.
	Preview int
	// MaxRead is the most bytes one read_result call returns; 0 means
	// [DefaultMaxRead].
	MaxRead int
	// BeanName names the per-chat bean listing a scope's results; ""
	// means [DefaultBeanName]. Give one offloader to every service of a
	// router (it is safe for concurrent use), or each its own name: two
	// offloaders with one name would save their lists over each other.
	BeanName string
	// Logger logs the results that could not be kept; nil means
	// slog.Default().
	Logger *slog.Logger
}

// An Offloader keeps large tool results out of the chat memory of the AI
// services it is a tool source of. Make one with [New]; it is safe for
// concurrent use by any number of services and conversations.
type Offloader struct {
	store                        memory.Store
	threshold, inline, maxBytes  int
	maxResults, preview, maxRead int
	log                          *slog.Logger
	bean                         *chat.Bean[*Shelf]
	tools                        []ai.Tool
}

// New returns an offloader.
func New(opts *Options) *Offloader {
	var o Options
	if opts != nil {
		o = *opts
	}
	off := &Offloader{store: o.Store, threshold: o.Threshold, inline: o.Inline, maxBytes: o.MaxBytes,
		maxResults: o.MaxResults, preview: o.Preview, maxRead: o.MaxRead, log: o.Logger}
	if off.store == nil {
		off.store = memory.NewInMemoryStore()
	}
	off.threshold = orDefault(off.threshold, DefaultThreshold)
	off.inline = orDefault(off.inline, DefaultInline)
	off.maxBytes = orDefault(off.maxBytes, DefaultMaxBytes)
	off.maxResults = orDefault(off.maxResults, DefaultMaxResults)
	off.preview = orDefault(off.preview, DefaultPreview)
	off.maxRead = orDefault(off.maxRead, DefaultMaxRead)
	if off.log == nil {
		off.log = slog.Default()
	}
	name := o.BeanName
	if name == "" {
		name = DefaultBeanName
	}
	off.bean = chat.NewBean(name, &chat.BeanOptions{Kind: chat.KindPerChat, Durable: true}, func(context.Context) (*Shelf, error) {
		return &Shelf{}, nil
	})
	off.tools = []ai.Tool{{
		Name: ToolRead,
		Description: "Reads a tool result that was too large to keep in the conversation (its stub names it: " +
			`{"offloaded": id, …}): a range of its bytes (offset, length) or of its lines (line, from 1, and lines). ` +
			fmt.Sprintf("At most %d bytes a call; the answer tells where the text read ends and whether more follows.", off.maxRead),
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"id":{"type":"string","description":"The id of the offloaded result."},` +
			`"offset":{"type":"integer","minimum":0,"description":"The first byte to read, from 0."},` +
			`"length":{"type":"integer","minimum":1,"description":"How many bytes to read."},` +
			`"line":{"type":"integer","minimum":1,"description":"The first line to read, from 1 (instead of offset)."},` +
			`"lines":{"type":"integer","minimum":1,"description":"How many lines to read, with line."}},` +
			`"required":["id"],"additionalProperties":false}`),
		Invoke: off.readTool,
	}}
	return off
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

var (
	_ ai.ResultOffloader = (*Offloader)(nil)
	_ ai.ToolLister      = (*Offloader)(nil)
)

// Name returns "offload".
func (o *Offloader) Name() string { return "offload" }

// Tools returns the read_result tool: the same slice on every call, so
// that the service's tools block does not change from turn to turn.
func (o *Offloader) Tools(context.Context) ([]ai.Tool, error) { return o.tools, nil }

// ListTools returns the read_result tool, for [ai.Service.Check].
func (o *Offloader) ListTools() []ai.Tool { return o.tools }

// Bean returns the durable per-chat bean listing the results offloaded
// in a scope.
func (o *Offloader) Bean() *chat.Bean[*Shelf] { return o.bean }

// CheckStore reports a store that would lose the results of durable
// conversations: an error matching [chat.ErrMemoryNotDurable] when the
// router has a conversation store and the offloader's is not its memory
// side. The AI services check their tool sources with it when the router
// is built.
func (o *Offloader) CheckStore(store chatstore.ConversationStore) error {
	if store == nil || o.keptInStore() {
		return nil
	}
	return fmt.Errorf("%w: the offloaded results are kept in %T; set offload.Options.Store to the router's store's memory side (store.Memories())", chat.ErrMemoryNotDurable, o.store)
}

func (o *Offloader) keptInStore() bool {
	_, ok := o.store.(chatstore.StagingStore)
	return ok
}

// A Shelf lists the results offloaded in one chat scope (the per-chat
// bean [Offloader.Bean]); it is saved with a durable conversation. Its
// methods are safe for concurrent use.
type Shelf struct {
	mu sync.Mutex
	// Next is the number of results offloaded so far in the scope.
	Next int `json:"next"`
	// Entries are the results kept, by slot (Next-1 is in slot
	// (Next-1) % MaxResults).
	Entries []Entry `json:"entries"`
}

// An Entry describes an offloaded result.
type Entry struct {
	// ID names the result for read_result.
	ID string `json:"id"`
	// Tool is the tool that returned it, Call the tool call's id.
	Tool string `json:"tool"`
	Call string `json:"call"`
	// Bytes and Lines are the size of what is kept.
	Bytes int `json:"bytes"`
	Lines int `json:"lines"`
	// Returned is the size of what the tool returned, when it was more
	// than [Options.MaxBytes] and only the first MaxBytes were kept.
	Returned int `json:"returned,omitempty"`
}

// shelfJSON is a Shelf's saved form.
type shelfJSON struct {
	Next    int     `json:"next"`
	Entries []Entry `json:"entries"`
}

// MarshalJSON saves the shelf with its scope, under its lock.
func (s *Shelf) MarshalJSON() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return json.Marshal(shelfJSON{Next: s.Next, Entries: s.Entries})
}

// UnmarshalJSON restores a saved shelf.
func (s *Shelf) UnmarshalJSON(b []byte) error {
	var v shelfJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Next, s.Entries = v.Next, v.Entries
	return nil
}

// List returns the results the shelf lists, oldest first.
func (s *Shelf) List() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.Entries)
	out := make([]Entry, 0, n)
	if n == 0 {
		return out
	}
	start := s.Next % n
	out = append(out, s.Entries[start:]...)
	return append(out, s.Entries[:start]...)
}

// stub is what the memory keeps of an offloaded result.
type stub struct {
	ID       string `json:"offloaded"`
	Tool     string `json:"tool"`
	Bytes    int    `json:"bytes"`
	Lines    int    `json:"lines"`
	Returned int    `json:"returned_bytes,omitempty"`
	Preview  string `json:"preview,omitempty"`
	Note     string `json:"note"`
}

// OffloadResult implements [ai.ResultOffloader]: a result over the
// threshold is kept in the store with the current chat scope, and the
// memory keeps its stub. A result that cannot be kept (no chat scope, a
// failing store) is cut to the threshold instead, and the failure logged.
func (o *Offloader) OffloadResult(ctx context.Context, ex ai.ToolExecution) (prompt, kept string) {
	text := ex.Text
	if len(text) <= o.threshold || ex.Name == ToolRead {
		return text, text
	}
	e, err := o.keep(ctx, ex)
	if err != nil {
		o.log.WarnContext(ctx, "offload: a large tool result could not be kept; it is cut",
			"tool", ex.Name, "call", ex.ID, "bytes", len(text), "err", err)
		cut := prefix(text, o.threshold) + fmt.Sprintf("\n[cut at %d of %d bytes: the rest could not be kept]", len(prefix(text, o.threshold)), len(text))
		return cut, cut
	}
	s := stub{ID: e.ID, Tool: e.Tool, Bytes: e.Bytes, Lines: e.Lines, Returned: e.Returned,
		Note: "The result is too large to keep in the conversation: call " + ToolRead + " with this id to read it, or a range of it."}
	if o.preview > 0 {
		s.Preview = prefix(text, o.preview)
	}
	b, err := json.Marshal(s)
	if err != nil { // strings and ints only: cannot happen
		b = []byte(`{"offloaded":` + strconv.Quote(e.ID) + `}`)
	}
	kept = string(b)
	if o.inline >= 0 && len(text) <= o.inline {
		return text, kept
	}
	return kept, kept
}

// keep stores the result of ex in the current scope and returns its entry.
func (o *Offloader) keep(ctx context.Context, ex ai.ToolExecution) (Entry, error) {
	scope, err := chat.ID(ctx)
	if err != nil {
		return Entry{}, err
	}
	shelf, err := o.bean.Lookup(ctx)
	if err != nil {
		return Entry{}, err
	}
	text := ex.Text
	e := Entry{Tool: ex.Name, Call: ex.ID}
	if len(text) > o.maxBytes {
		e.Returned = len(text)
		text = prefix(text, o.maxBytes)
	}
	e.Bytes, e.Lines = len(text), countLines(text)

	shelf.mu.Lock()
	defer shelf.mu.Unlock()
	n := shelf.Next
	e.ID = idOf(scope, n+1)
	slot := n % o.maxResults
	key := slotKey(scope, slot)
	if got, err := chat.AttachMemory(ctx, key, &slotMemory{store: o.store, key: key, durable: o.keptInStore()}); err != nil {
		return Entry{}, fmt.Errorf("attaching the result to its scope: %w", err)
	} else if got != scope {
		return Entry{}, fmt.Errorf("the current scope changed to %s: %w", got, chat.ErrNotActive)
	}
	msg := llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
		llms.ToolCallResponse{ToolCallID: e.ID, Name: ex.Name, Content: text},
	}}
	if err := o.store.Update(ctx, key, []llms.MessageContent{msg}); err != nil {
		return Entry{}, fmt.Errorf("storing the result: %w", err)
	}
	if slot < len(shelf.Entries) {
		shelf.Entries[slot] = e
	} else {
		shelf.Entries = append(shelf.Entries, e)
	}
	shelf.Next = n + 1
	return e, nil
}

// idOf returns the id of the n-th result of scope: n and a tag of the
// scope, so that an id of another scope is unknown here rather than one
// of this scope's.
func idOf(scope string, n int) string {
	sum := sha256.Sum256([]byte(scope))
	return hex.EncodeToString(sum[:3]) + "-" + strconv.Itoa(n)
}

// slotKey is the memory id of a slot of scope in the store.
func slotKey(scope string, slot int) string {
	return scope + "#offload:" + strconv.Itoa(slot)
}

// slotMemory is a slot of a scope's results, attached to the scope so
// that the store deletes it with the scope (and a wipe of the scope's
// memory deletes it).
type slotMemory struct {
	store   memory.Store
	key     string
	durable bool
}

var _ chatimpl.DurableMemory = (*slotMemory)(nil)

// ClearMemory implements [chatimpl.ScopedMemory]: the scope's memory is
// wiped, its stubs with it, and the result goes too.
func (m *slotMemory) ClearMemory(ctx context.Context) error { return m.store.Delete(ctx, m.key) }

// DeleteMemory implements [chatimpl.ScopedMemory].
func (m *slotMemory) DeleteMemory(ctx context.Context) error { return m.store.Delete(ctx, m.key) }

// KeptInStore implements [chatimpl.DurableMemory].
func (m *slotMemory) KeptInStore() bool { return m.durable }

// prefix returns the first n bytes of s at most, cut at a rune boundary.
func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// countLines counts the lines of s: the last one need not end with a
// newline.
func countLines(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}
