package ai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/schema"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// RetrievalMode is how a service uses its [Knowledge].
type RetrievalMode uint8

const (
	// RetrievalGeneric retrieves before the model call, with the user's
	// message (rewritten by [Knowledge.Rewrite] when set), and adds the
	// passages to that turn's prompt only: never to the chat memory.
	RetrievalGeneric RetrievalMode = iota
	// RetrievalAgentic offers the model a search tool
	// ([Knowledge.ToolName]) and lets it decide when to search.
	RetrievalAgentic
	// RetrievalOff: the method does not use the knowledge.
	RetrievalOff
)

// String returns "generic", "agentic" or "off".
func (m RetrievalMode) String() string {
	switch m {
	case RetrievalGeneric:
		return "generic"
	case RetrievalAgentic:
		return "agentic"
	case RetrievalOff:
		return "off"
	}
	return fmt.Sprintf("RetrievalMode(%d)", uint8(m))
}

// Defaults of [Knowledge].
const (
	// DefaultMaxPassages is the most passages a retrieval gives the model
	// when [Knowledge.MaxPassages] is 0.
	DefaultMaxPassages = 4
	// DefaultSearchTool is the name of the agentic search tool when
	// [Knowledge.ToolName] is "".
	DefaultSearchTool = "search_knowledge"
)

// Errors of retrieval, for errors.Is.
var (
	// ErrRetrieval: the retriever (or the query rewrite) failed or timed
	// out, and the turn failed before any model call. Nothing of the turn
	// is remembered: the conversation goes on with the next message.
	ErrRetrieval = errors.New("retrieval failed")
	// ErrNoRetriever: a [Knowledge] has neither Retriever nor ForScope.
	// [Service.Check] reports it.
	ErrNoRetriever = errors.New("knowledge without a retriever")
)

// Knowledge is what an AI service answers from ([Config.Knowledge]): a
// langchaingo retriever (any vectorstores.ToRetriever, or a search of
// your own), used as [Knowledge.Mode] says.
//
// In generic mode the passages retrieved for a turn are sent to the
// model with that turn's user message (after the history, so a cached
// prompt prefix stays valid) and never reach the memory: the next turn
// retrieves afresh. In agentic mode the model gets a search tool whose
// results, passages as JSON, are tool results like any other, except that
// the memory keeps only the passages' ids (see RememberPassages).
//
// Inside a request, the passages used reach the client as a Sources
// event ([protocol.EventSources], data [Sources]); with telemetry on, each
// retrieval is a "retrieval" span recording the passages' ids and
// scores (their content and the query only with
// [Telemetry.RecordContent]).
type Knowledge struct {
	// Name names the knowledge in logs and telemetry
	// (gen_ai.data_source.id); "" means "knowledge".
	Name string
	// Retriever finds the passages of every scope, unless ForScope is
	// set.
	Retriever schema.Retriever
	// ForScope, when set, makes the retriever of a chat scope: called on
	// the first retrieval in a scope (every scope, nested or not, has its
	// own, like a per-chat bean), and the retriever is closed when the
	// scope ends or leaves the process (when it has a Close() error or
	// Close() method: an io.Closer, say). Retrieval outside a scope then
	// fails with an error matching chat.ErrNotActive. It is called with
	// the context of the retrieval (bounded by Timeout): what it opens
	// for the scope must not depend on that context.
	ForScope func(ctx context.Context) (schema.Retriever, error)
	// Mode is how the service's methods use the knowledge, unless Methods
	// says otherwise.
	Mode RetrievalMode
	// Methods overrides Mode for the methods it names (by their
	// interface method's name).
	Methods map[string]RetrievalMode
	// MaxPassages is the most passages one retrieval gives the model (the
	// retriever's first ones); 0 means [DefaultMaxPassages].
	MaxPassages int
	// Rewrite, in generic mode, turns the user's message and the turn's
	// history (the memory's messages) into the query to retrieve with
	// ("and the fees?" after a question on a product becomes a question
	// on the product's fees); an empty query means the message. Nil
	// retrieves with the user's message as it is. [RewriteWithModel]
	// makes one that asks a model: its call is not one of the turn's
	// (neither counted in Reply.ModelCalls nor seen by ModelHooks).
	Rewrite func(ctx context.Context, user string, history []llms.MessageContent) (string, error)
	// Augment, in generic mode, makes the text of the user message the
	// model is sent from the user's message and the passages (never
	// empty); nil means [AugmentMessage].
	Augment func(user string, passages []schema.Document) string
	// Timeout bounds each retrieval (and rewrite); 0 means none. A
	// retriever that ignores its context is waited for.
	Timeout time.Duration
	// Degrade, in generic mode, answers without passages when the
	// retrieval fails (the failure is logged as a warning) rather than
	// failing the turn with [ErrRetrieval]. In agentic mode a failed
	// search is always told to the model, as a tool's error is.
	Degrade bool
	// ToolName and ToolDescription name and describe the agentic search
	// tool; "" means [DefaultSearchTool] and a description of it.
	ToolName, ToolDescription string
	// NoEvents sends no Sources event.
	NoEvents bool
	// RememberPassages keeps, in agentic mode, the passages of the search
	// tool's results in the memory. Without it the memory keeps their ids
	// only ({"passages": [ids], "note": …}): the turn's own model calls
	// read the passages, later turns search again if they need them, so
	// prompts do not grow with every search of the conversation.
	RememberPassages bool
}

// Source is a passage the model was given, as the client is told of it:
// the "id", "title" and "source" of the document's Metadata and its
// relevance score.
type Source struct {
	ID     string  `json:"id"`
	Title  string  `json:"title,omitempty"`
	Source string  `json:"source,omitempty"`
	Score  float32 `json:"score"`
}

// Sources is the data of a Sources event ([protocol.EventSources]): the
// passages one retrieval gave the model, best first.
type Sources struct {
	// Query is what was searched for: the user's message, rewritten or
	// not, or the agentic search tool's query.
	Query string `json:"query"`
	// Sources are the passages, best first.
	Sources []Source `json:"sources"`
}

// ChatEventType makes Sources the Sources event.
func (Sources) ChatEventType() string { return protocol.EventSources }

// Passage is one result of the agentic search tool, as the model reads
// it (JSON).
type Passage struct {
	Source
	Content string `json:"content"`
}

// knowledge is a service's Knowledge, ready for use.
type knowledge struct {
	cfg  Knowledge
	name string
	max  int
	bean *chat.Bean[*scopedRetriever] // nil without ForScope
	tool Tool                         // the agentic search tool
	def  []llms.Tool                  // its definition, in the service's form
	err  error                        // making def failed
}

// searchParams is the JSON Schema of the search tool's arguments.
const searchParams = `{"type":"object","properties":{"query":{"type":"string","description":"What to search for: a standalone question or keywords."}},"required":["query"],"additionalProperties":false}`

// newKnowledge returns the knowledge of s made from cfg, or nil for none.
func newKnowledge(s *Service, cfg *Knowledge) *knowledge {
	if cfg == nil {
		return nil
	}
	k := &knowledge{cfg: *cfg, name: cfg.Name, max: cfg.MaxPassages}
	if k.name == "" {
		k.name = "knowledge"
	}
	if k.max <= 0 {
		k.max = DefaultMaxPassages
	}
	if forScope := k.cfg.ForScope; forScope != nil {
		k.bean = chat.NewBean("ai.Knowledge "+s.name+" "+k.name, &chat.BeanOptions{Kind: chat.KindPerChat},
			func(ctx context.Context) (*scopedRetriever, error) {
				r, err := forScope(ctx)
				if err != nil {
					return nil, err
				}
				if r == nil {
					return nil, ErrNoRetriever
				}
				return &scopedRetriever{r: r}, nil
			})
	}
	name, desc := cfg.ToolName, cfg.ToolDescription
	if name == "" {
		name = DefaultSearchTool
	}
	if desc == "" {
		desc = "Searches the knowledge base (" + k.name + ") and returns the passages most relevant to the query, best first, as JSON: [{id, title, source, score, content}]. Search whenever the answer may be in the documents; cite passages by title."
	}
	k.tool = Tool{Name: name, Description: desc, Parameters: json.RawMessage(searchParams), Invoke: func(ctx context.Context, args string) (any, error) {
		return s.search(ctx, args)
	}}
	k.def, k.err = s.dialect.definitions([]Tool{k.tool})
	return k
}

// mode returns the retrieval mode of method.
func (k *knowledge) mode(method string) RetrievalMode {
	if m, ok := k.cfg.Methods[method]; ok {
		return m
	}
	return k.cfg.Mode
}

// check reports a knowledge that cannot retrieve, or whose search tool
// clashes with a tool of a declared method.
func (k *knowledge) check(s *Service) error {
	if k.cfg.Retriever == nil && k.cfg.ForScope == nil {
		return fmt.Errorf("ai: %s: Config.Knowledge: %w: set its Retriever or ForScope", s.name, ErrNoRetriever)
	}
	if k.err != nil {
		return fmt.Errorf("ai: %s: the knowledge search tool: %w", s.name, k.err)
	}
	if err := k.checkModes(s); err != nil {
		return err
	}
	for _, m := range s.methods {
		if k.mode(m.Name) != RetrievalAgentic {
			continue
		}
		if s.dialect.noTools {
			return fmt.Errorf("ai: %s.%s searches its knowledge with a tool: %w", s.name, m.Name, s.dialect.toolsError())
		}
		if _, ok := findTool(m.Tools, k.tool.Name); ok {
			return fmt.Errorf("ai: %s.%s: %w: the knowledge search tool %q clashes with the generated tool %q (set Knowledge.ToolName)", s.name, m.Name, ErrToolClash, k.tool.Name, k.tool.Name)
		}
	}
	return nil
}

// checkModes reports an unknown mode, and a method in Methods that the
// service does not declare (when generated code declared its methods).
func (k *knowledge) checkModes(s *Service) error {
	if k.cfg.Mode > RetrievalOff {
		return fmt.Errorf("ai: %s: Config.Knowledge.Mode: unknown %v", s.name, k.cfg.Mode)
	}
	var names []string
	for _, m := range s.methods {
		names = append(names, m.Name)
	}
	for name, mode := range k.cfg.Methods {
		if mode > RetrievalOff {
			return fmt.Errorf("ai: %s: Config.Knowledge.Methods[%q]: unknown %v", s.name, name, mode)
		}
		if len(names) > 0 && !slices.Contains(names, name) {
			return fmt.Errorf("ai: %s: Config.Knowledge.Methods names %q, which is not a method of the service (its methods: %s)", s.name, name, strings.Join(names, ", "))
		}
	}
	return nil
}

// withTool returns tools and defs with the search tool added, for a
// method that searches agentically.
func (k *knowledge) withTool(tools []Tool, defs []llms.Tool) ([]Tool, []llms.Tool, error) {
	if k.err != nil {
		return nil, nil, k.err
	}
	if _, ok := findTool(tools, k.tool.Name); ok {
		return nil, nil, fmt.Errorf("%w: the knowledge search tool %q clashes with another tool of that name (set Knowledge.ToolName)", ErrToolClash, k.tool.Name)
	}
	out := make([]Tool, 0, len(tools)+1)
	out = append(append(out, tools...), k.tool)
	outDefs := make([]llms.Tool, 0, len(defs)+1)
	outDefs = append(append(outDefs, defs...), k.def...)
	return out, outDefs, nil
}

// scopedRetriever is the retriever of one scope: a per-chat bean, closed
// when its scope ends or leaves the process.
type scopedRetriever struct{ r schema.Retriever }

// DetachBean implements chat.DetachableBean: the retriever is this
// process's, and the node where the scope goes on makes its own.
func (sr *scopedRetriever) DetachBean(context.Context) error { return sr.Close() }

// Close closes the retriever when it can be closed.
func (sr *scopedRetriever) Close() error {
	switch c := sr.r.(type) {
	case io.Closer:
		return c.Close()
	case interface{ Close() }:
		c.Close()
	}
	return nil
}

// retriever returns the retriever of the scope in ctx.
func (k *knowledge) retriever(ctx context.Context) (schema.Retriever, error) {
	if k.bean == nil {
		return k.cfg.Retriever, nil
	}
	sr, err := k.bean.Lookup(ctx)
	if err != nil {
		return nil, fmt.Errorf("the retriever of the scope: %w", err)
	}
	return sr.r, nil
}

// retrieve returns the passages for query, at most k.max, in a retrieval
// span when tracing is on.
func (s *Service) retrieve(ctx context.Context, method, query string) ([]schema.Document, error) {
	k := s.know
	if tr, traced := s.tel.tracer(); traced {
		return s.retrieveTraced(ctx, tr, method, query)
	}
	return k.get(ctx, query)
}

// get asks the scope's retriever for the passages of query.
func (k *knowledge) get(ctx context.Context, query string) ([]schema.Document, error) {
	if k.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, k.cfg.Timeout)
		defer cancel()
	}
	r, err := k.retriever(ctx)
	if err != nil {
		return nil, err
	}
	docs, err := r.GetRelevantDocuments(ctx, query)
	if err != nil {
		return nil, err
	}
	if len(docs) > k.max {
		docs = docs[:k.max]
	}
	return docs, nil
}

// sources describes docs for the client.
func sources(docs []schema.Document) []Source {
	out := make([]Source, len(docs))
	for i, d := range docs {
		out[i] = Source{ID: meta(d, "id"), Title: meta(d, "title"), Source: meta(d, "source"), Score: d.Score}
	}
	return out
}

// meta returns the metadata key of d as a string.
func meta(d schema.Document, key string) string {
	switch v := d.Metadata[key].(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}

// sendSources sends the Sources event of a retrieval, inside a request,
// and adds them to what the turn collects for its Reply. It returns the
// sources of docs.
func (s *Service) sendSources(ctx context.Context, method, query string, docs []schema.Document) []Source {
	src := sources(docs)
	if len(docs) == 0 {
		return src
	}
	if c, ok := ctx.Value(sourcesKey{}).(*sourceLog); ok {
		c.add(src)
	}
	if s.know.cfg.NoEvents || chat.Request(ctx) == nil {
		return src
	}
	if err := chat.Response(ctx).Event(protocol.EventSources, Sources{Query: query, Sources: src}); err != nil {
		s.log().WarnContext(ctx, "ai: the Sources event was not sent", "service", s.name, "method", method, "err", err)
	}
	return src
}

// sourceLog collects the sources of an agentic turn (its searches may run
// concurrently, with ParallelTools).
type sourceLog struct {
	mu   sync.Mutex
	list []Source
}

type sourcesKey struct{}

func (c *sourceLog) add(src []Source) {
	c.mu.Lock()
	c.list = append(c.list, src...)
	c.mu.Unlock()
}

func (c *sourceLog) all() []Source {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.list
}

// augment retrieves the passages of the turn's user message, in generic
// mode, and puts them in the prompt's copy of it: the memory gets the
// message as the user wrote it. It runs after begin, when the user
// message is the last of the prompt.
func (t *turn) augment(ctx context.Context, user string, history []llms.MessageContent) error {
	k := t.s.know
	n := len(t.prompt)
	if user == "" || n == 0 || t.prompt[n-1].Role != llms.ChatMessageTypeHuman {
		return nil // resuming a paused turn: no new message
	}
	query, err := k.query(ctx, user, history)
	var docs []schema.Document
	if err == nil {
		docs, err = t.s.retrieve(ctx, t.m.Name, query)
	}
	if err != nil {
		if ctx.Err() != nil {
			return t.errorf("%w", context.Cause(ctx))
		}
		if !k.cfg.Degrade {
			return t.errorf("%w: %s: %w", ErrRetrieval, k.name, err)
		}
		t.s.log().WarnContext(ctx, "ai: retrieval failed; answering without passages",
			"service", t.s.name, "method", t.m.Name, "knowledge", k.name, "err", err)
		return nil
	}
	if len(docs) == 0 {
		return nil
	}
	t.reply.Sources = t.s.sendSources(ctx, t.m.Name, query, docs)
	format := k.cfg.Augment
	if format == nil {
		format = AugmentMessage
	}
	// Sent, never committed: t.msgs keeps the message as it was.
	t.prompt[n-1] = llms.TextParts(llms.ChatMessageTypeHuman, format(user, docs))
	t.passages = docs
	return nil
}

// query returns what a generic retrieval searches for: user, or its
// rewrite when the knowledge has a Rewrite.
func (k *knowledge) query(ctx context.Context, user string, history []llms.MessageContent) (string, error) {
	if k.cfg.Rewrite == nil {
		return user, nil
	}
	if k.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, k.cfg.Timeout)
		defer cancel()
	}
	q, err := k.cfg.Rewrite(ctx, user, history)
	if err != nil {
		return "", fmt.Errorf("rewriting the query: %w", err)
	}
	if strings.TrimSpace(q) == "" {
		return user, nil
	}
	return q, nil
}

// augmentHeader opens the default augmented message.
const augmentHeader = "Passages from the knowledge base that may help (answer from them when they are relevant, and cite their titles; say so when they do not answer):\n"

// AugmentMessage is the default [Knowledge.Augment]: the passages,
// numbered, each with its title and source, then a line "Message:" and
// the user's message. runtime/llmtest reads this format back: its
// LastUserTyped matches, and Request.UserTyped returns, what follows the
// passages.
func AugmentMessage(user string, passages []schema.Document) string {
	return augmentText(user, passages, nil, nil)
}

// augmentText is the text of the turn's user message with the passages
// of a generic retrieval, the recalled long-term facts (see
// [FactsHeader]) and the blocks of the service's context sources (see
// [ContextHeader]), in that order, before the line "Message:".
func augmentText(user string, passages []schema.Document, facts []string, blocks []contextBlock) string {
	n := len(augmentHeader) + len(user) + 16
	for _, d := range passages {
		n += len(d.PageContent) + len(meta(d, "title")) + len(meta(d, "source")) + 16
	}
	for _, f := range facts {
		n += len(f) + 8
	}
	for _, c := range blocks {
		n += len(c.name) + len(c.text) + 48
	}
	var b strings.Builder
	b.Grow(n)
	if len(passages) > 0 {
		b.WriteString(augmentHeader)
		for i, d := range passages {
			b.WriteString("\n[")
			b.WriteString(strconv.Itoa(i + 1))
			b.WriteString("]")
			if title := meta(d, "title"); title != "" {
				b.WriteString(" ")
				b.WriteString(title)
			}
			if src := meta(d, "source"); src != "" {
				b.WriteString(" (")
				b.WriteString(src)
				b.WriteString(")")
			}
			b.WriteString("\n")
			b.WriteString(strings.TrimSpace(d.PageContent))
			b.WriteString("\n")
		}
	}
	if len(facts) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		writeFacts(&b, facts)
	}
	if len(blocks) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		writeBlocks(&b, blocks)
	}
	b.WriteString("\nMessage:\n")
	b.WriteString(user)
	return b.String()
}

// search runs the agentic search tool: its arguments are {"query": …}.
func (s *Service) search(ctx context.Context, arguments string) (any, error) {
	var args struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal([]byte(arguments), &args); err != nil {
		return nil, &ArgumentsError{Err: err}
	}
	if strings.TrimSpace(args.Query) == "" {
		return nil, &ArgumentsError{Err: errors.New("query is empty")}
	}
	method := ""
	if m, ok := ctx.Value(methodKey{}).(string); ok {
		method = m
	}
	docs, err := s.retrieve(ctx, method, args.Query)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrRetrieval, s.know.name, err)
	}
	src := s.sendSources(ctx, method, args.Query, docs)
	out := make([]Passage, len(docs))
	for i, d := range docs {
		out[i] = Passage{Source: src[i], Content: d.PageContent}
	}
	return out, nil
}

type methodKey struct{}

// agenticTurn prepares a turn of method m that searches agentically: it
// adds the search tool, and returns the context that tells the tool the
// method and collects the turn's sources.
func (s *Service) agenticTurn(ctx context.Context, m *Method, tools []Tool, defs []llms.Tool) (context.Context, *sourceLog, []Tool, []llms.Tool, error) {
	tools, defs, err := s.know.withTool(tools, defs)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	log := new(sourceLog)
	ctx = context.WithValue(context.WithValue(ctx, sourcesKey{}, log), methodKey{}, m.Name)
	return ctx, log, tools, defs, nil
}

// RewriteWithModel returns a [Knowledge.Rewrite] that asks model to turn
// the user's message and the last turns of the history (up to six
// messages of text) into a standalone search query. On the first turn
// (no earlier message) it asks nothing and returns the message.
func RewriteWithModel(model llms.Model, opts ...llms.CallOption) func(ctx context.Context, user string, history []llms.MessageContent) (string, error) {
	return func(ctx context.Context, user string, history []llms.MessageContent) (string, error) {
		var lines []string
		for _, m := range history {
			if m.Role != llms.ChatMessageTypeHuman && m.Role != llms.ChatMessageTypeAI {
				continue
			}
			var text strings.Builder
			for _, p := range m.Parts {
				if tc, ok := p.(llms.TextContent); ok {
					text.WriteString(tc.Text)
				}
			}
			if text.Len() == 0 {
				continue
			}
			who := "User"
			if m.Role == llms.ChatMessageTypeAI {
				who = "Assistant"
			}
			lines = append(lines, who+": "+text.String())
		}
		if len(lines) == 0 {
			return user, nil
		}
		if len(lines) > 6 {
			lines = lines[len(lines)-6:]
		}
		prompt := []llms.MessageContent{
			llms.TextParts(llms.ChatMessageTypeSystem, "You turn the last message of a conversation into a standalone search query for a knowledge base. Answer with the query only."),
			llms.TextParts(llms.ChatMessageTypeHuman, "Conversation:\n"+strings.Join(lines, "\n")+"\n\nLast message: "+user+"\n\nStandalone search query:"),
		}
		resp, err := model.GenerateContent(ctx, prompt, opts...)
		if err != nil {
			return "", err
		}
		choice := pickChoice(resp)
		if choice == nil {
			return "", ErrEmptyResponse
		}
		return strings.TrimSpace(choice.Content), nil
	}
}

// forgottenNote tells the model, in a remembered search result, where its
// passages went.
const forgottenNote = "the passages' text is not remembered: search again to read them"

// keptPassages returns what the memory keeps of ex, a call of the
// agentic search tool: the ids of its passages (unless RememberPassages),
// or ok false when ex is no such call. The prompt keeps the passages for
// the turn's own model calls.
func (k *knowledge) keptPassages(ex *ToolExecution) (string, bool) {
	if k == nil || k.cfg.RememberPassages || ex.Name != k.tool.Name {
		return "", false
	}
	ps, ok := ex.Result.([]Passage)
	if !ok {
		return "", false
	}
	ids := make([]string, len(ps))
	for j, p := range ps {
		ids[j] = p.ID
	}
	b, err := json.Marshal(struct {
		Passages []string `json:"passages"`
		Note     string   `json:"note"`
	}{ids, forgottenNote})
	if err != nil {
		return "", false
	}
	return string(b), true
}
