package ai

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/guardrail"
	"github.com/chatscopes/chatgen/runtime/memory"
)

// DefaultMaxModelCalls is the number of model calls a request may make when
// [Config.MaxModelCalls] is 0.
const DefaultMaxModelCalls = 10

// Errors of this package, for errors.Is. The errors the service returns
// wrap them after the prefix "ai: <service>.<Method>: ".
var (
	// ErrNoModel: the service has no [Config.Model].
	ErrNoModel = errors.New("no model configured")
	// ErrTooManyModelCalls: the model still asked for tools when the
	// request had made [Config.MaxModelCalls] model calls.
	ErrTooManyModelCalls = errors.New("too many model calls")
	// ErrInvalidOutput: a structured answer did not decode, even after the
	// corrective retry.
	ErrInvalidOutput = errors.New("invalid structured output")
	// ErrEmptyResponse: the model answered with no choice at all.
	ErrEmptyResponse = errors.New("the model returned no choices")
	// ErrIncompleteStream: a streamed answer ended without its finish
	// reason (the body closed early, or held nothing a model sends), so
	// it is not a complete turn: nothing of it is committed to memory.
	ErrIncompleteStream = errors.New("the model's stream ended without a finish reason")
	// ErrUnknownTool is the [ToolExecution.Err] of a call of a tool the
	// request does not offer. It never ends a request: the model is told.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrInvalidRequest: the [Request] is malformed (nil, or without a
	// Method).
	ErrInvalidRequest = errors.New("invalid request")
	// ErrUnknownMethod: [Config.MethodGuardrails] names a method the
	// service does not have.
	ErrUnknownMethod = errors.New("unknown method")
	// ErrReentrant: a tool called the AI service method that is running it,
	// on the same memory: waiting for the memory would deadlock.
	ErrReentrant = errors.New("re-entrant call on the same memory")
)

// Config configures one AI service; applications pass it at registration
// (a field of the generated Deps). A nil *Config is the zero Config: a
// service without a model, which chat.NewRouter refuses.
type Config struct {
	// Model answers the requests. Required: calls fail with [ErrNoModel]
	// when it is nil.
	Model llms.Model
	// Client is the langchaingo client Model is, which decides how the
	// service shapes what it sends (see [Client]). The zero value,
	// [ClientAuto], detects it from Model's type; set it for a model that
	// wraps a client and has no Unwrap() llms.Model method.
	Client Client
	// Memory provides the chat memory of each memory id. Nil means a
	// [memory.Manager] with memory.Window(memory.DefaultMaxMessages, nil) over
	// an in-memory store, created once per Service.
	Memory memory.Provider
	// MaxModelCalls is the most model calls one request (one top-level
	// method call) may make; 0 means [DefaultMaxModelCalls].
	MaxModelCalls int
	// ParallelTools runs the tool calls of one model reply concurrently,
	// all of them at once. The results are still reported to the model in
	// call order. Without it, only the calls of concurrent tools
	// ([Tool.Concurrent]: sub-agents) run concurrently, bounded by
	// AgentConcurrency, the others one after the other.
	ParallelTools bool
	// AgentConcurrency is how many calls of concurrent tools
	// ([Tool.Concurrent]) of one model reply run at once when
	// ParallelTools is off; 0 means [DefaultAgentConcurrency].
	AgentConcurrency int
	// TurnBudget is the most model calls a top-level turn may make with
	// the turns of the sub-agents it runs (see [WithAgent]), all
	// together: each turn is also bounded by its own service's
	// MaxModelCalls. 0 means 5 × MaxModelCalls. The budget of the
	// top-level turn's service is the one that counts; a turn over it
	// fails with [ErrTurnBudget].
	TurnBudget int
	// Options are added to every model call, before the service's own
	// (tools, JSON mode, streaming).
	Options []llms.CallOption
	// Logger receives the service's logs; nil means slog.Default().
	Logger *slog.Logger
	// ToolSources add tools to every method of the service, after its
	// generated ones: the tools of MCP servers (package runtime/mcptools),
	// for example. See [ToolSource]. A source that is a [ContextSource]
	// (package runtime/plan's tool box) also puts a block in each turn's
	// per-request context slot.
	ToolSources []ToolSource

	// ToolTimeout bounds each call of a tool without a timeout of its own
	// ([Tool.Timeout]); 0 means none. See [ErrToolTimeout].
	ToolTimeout time.Duration
	// ClientToolResultLimit bounds the size in bytes of the JSON result a
	// client sends for a tool it runs ([Tool.Client]); 0 means 64 KiB. A
	// larger result fails the answer with BadRequest.
	ClientToolResultLimit int
	// ModelTimeout bounds each model call (each attempt, with Retry); 0
	// means none. See [ErrModelTimeout].
	ModelTimeout time.Duration
	// Retry retries model calls that failed for a reason that may pass
	// (429, 5xx, a transport error); the zero value retries none.
	Retry Retry
	// ModelHooks wrap every model call, the first outermost (see
	// [ModelHook]).
	ModelHooks []ModelHook
	// ToolHooks wrap every tool call, the first outermost (see
	// [ToolHook]).
	ToolHooks []ToolHook
	// ForwardThinking sends the model's reasoning (ContentChoice's
	// ReasoningContent, streamed as it comes when the provider streams
	// it) to the client as Thinking events of the request the turn runs
	// in. Reasoning is never remembered.
	ForwardThinking bool
	// Telemetry configures the OpenTelemetry spans and metrics of the
	// service; the zero value uses the global providers.
	Telemetry Telemetry
	// Knowledge, when set, is what the service answers from: a retriever
	// used before each turn or as a search tool (see [Knowledge]).
	Knowledge *Knowledge

	// Guardrails check the user message before the model call and the
	// model's answer before it is committed, in every method (see package
	// runtime/guardrail and "Guardrails" in docs/guide.md); nil means
	// none.
	Guardrails *guardrail.Set
	// MethodGuardrails are the guardrails of the methods they name (the
	// interface method's name): a method's set replaces Guardrails for
	// it, as LangChain4j's method-level guardrails take precedence (a nil
	// set turns them off for the method). [Service.Check] refuses a name
	// that is not a method of the service ([ErrUnknownMethod]).
	MethodGuardrails map[string]*guardrail.Set
	// LongTerm, when set, is what the service remembers about the
	// principal of each request across conversations: facts recalled
	// before each turn and extracted after it, or used through tools (see
	// [LongTermMemory]; package runtime/longterm/recall makes one).
	LongTerm LongTermMemory

	// PromptCacheTTL is how long the provider keeps a cached prompt
	// prefix after its last use; 0 means [DefaultPromptCacheTTL]. With a
	// client that takes prompt-cache breakpoints (Anthropic's), the
	// service writes a turn's prompt to the cache only when the gaps it
	// has seen between the memory's turns say the next request will
	// likely come within it (see "Prompt caching" in docs/guide.md).
	PromptCacheTTL time.Duration
	// Now is the clock those gaps are read on; nil means time.Now.
	Now func() time.Time
}

// Service is one configured AI service (one //chat:ai interface): it runs
// the requests of its generated methods against the model, with the tool
// loop and the chat memory.
//
// A Service is safe for concurrent use. Turns on the same memory id are
// serialised: a second turn waits (or gives up when its context ends)
// until the first has committed or failed, so that the two never read the
// same history and interleave their writes. Turns on different memory ids
// run concurrently.
type Service struct {
	name     string
	model    llms.Model
	memory   memory.Provider
	maxCalls int
	parallel bool
	options  []llms.CallOption
	// agentConc and turnBudget are Config.AgentConcurrency and
	// TurnBudget, defaults applied.
	agentConc, turnBudget int
	logger                *slog.Logger // nil: slog.Default() at the time of use
	sources               []ToolSource
	methods               []*Method // declared by AddMethods, for Check
	dialect               dialect   // how the model's client is sent the conversation
	client                Client    // Config.Client, checked by Check

	clientResultLimit         int // Config.ClientToolResultLimit, defaulted
	toolTimeout, modelTimeout time.Duration
	retry                     Retry
	modelHooks                ModelHandler // nil without hooks
	toolHooks                 ToolHandler  // nil without hooks
	thinking                  bool
	tel                       *telemetry
	know                      *knowledge // nil without Config.Knowledge
	guards                    *guardrail.Set
	methodGuards              map[string]*guardrail.Set
	long                      *longTerm // nil without Config.LongTerm
	// sleep waits between retries; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
	// geminiWarned: the warning that a googleai call's usage lacks its
	// output (the client is not through Transport) was logged.
	geminiWarned atomic.Bool

	mu  sync.Mutex
	ids map[string]*memState // memory ids in use or attached to a scope

	// gaps are the times between each memory's turns, for the prompt
	// cache's breakpoints; now and cacheTTL are Config.Now and
	// Config.PromptCacheTTL, defaulted.
	gaps     cacheGaps
	now      func() time.Time
	cacheTTL time.Duration
}

// NewService returns the service name ("import/path.Type") configured by
// cfg, which may be nil (a service without a model) and is not kept: the
// caller may reuse it. It never fails: a missing model is reported by
// [Service.Check] (which [Register] registers, so that chat.NewRouter
// fails) and by each call. Generated code registers its services with
// [Register], which calls it.
func NewService(name string, cfg *Config) *Service {
	if cfg == nil {
		cfg = &Config{}
	}
	s := &Service{
		name:     name,
		model:    cfg.Model,
		memory:   cfg.Memory,
		maxCalls: cfg.MaxModelCalls,
		parallel: cfg.ParallelTools,
		options:  slices.Clip(slices.Clone(cfg.Options)),
		logger:   cfg.Logger,
		sources:  slices.Clip(slices.Clone(cfg.ToolSources)),
		ids:      make(map[string]*memState),
		now:      cfg.Now,
		cacheTTL: cmp.Or(cfg.PromptCacheTTL, DefaultPromptCacheTTL),
		client:   cfg.Client,

		toolTimeout:       cfg.ToolTimeout,
		clientResultLimit: cmp.Or(cfg.ClientToolResultLimit, defaultClientToolResultLimit),
		modelTimeout:      cfg.ModelTimeout,
		retry:             cfg.Retry.withDefaults(),
		modelHooks:        chainModelHooks(cfg.ModelHooks),
		toolHooks:         chainToolHooks(cfg.ToolHooks),
		thinking:          cfg.ForwardThinking,
		tel:               newTelemetry(cfg.Telemetry, cfg.Model),
		sleep:             sleep,
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.guards = s.observed(cfg.Guardrails)
	if cfg.MethodGuardrails != nil {
		s.methodGuards = make(map[string]*guardrail.Set, len(cfg.MethodGuardrails))
		for name, set := range cfg.MethodGuardrails {
			s.methodGuards[name] = s.observed(set)
		}
	}
	c := cfg.Client
	if c == ClientAuto || validClient(c) != nil {
		c = detectClient(cfg.Model)
	}
	s.dialect = newDialect(c)
	s.know = newKnowledge(s, cfg.Knowledge)
	s.long = newLongTerm(s, cfg.LongTerm)
	if s.memory == nil {
		s.memory = memory.NewManager(&memory.ManagerOptions{Policy: memory.Window(memory.DefaultMaxMessages, nil)})
	}
	if s.maxCalls <= 0 {
		s.maxCalls = DefaultMaxModelCalls
	}
	s.agentConc = cfg.AgentConcurrency
	if s.agentConc <= 0 {
		s.agentConc = DefaultAgentConcurrency
	}
	s.turnBudget = cfg.TurnBudget
	if s.turnBudget <= 0 {
		s.turnBudget = 5 * s.maxCalls
	}
	return s
}

// Check reports a service that cannot answer: without a model it returns
// an error matching [ErrNoModel]; when a tool of a [ToolLister] among its
// tool sources has the name of a tool of a method declared with
// [Service.AddMethods] (or of another source's), an error matching
// [ErrToolClash] that names both; for a nil tool source, an error matching
// [ErrNilToolSource]. [Register] registers it with the
// package (chatimpl.Package.AddCheck), so a router built with such a service
// fails at chat.NewRouter rather than on its first request.
func (s *Service) Check() error {
	if s.model == nil {
		return fmt.Errorf("ai: %s: %w: set the Model of its ai.Config", s.name, ErrNoModel)
	}
	if err := validClient(s.client); err != nil {
		return fmt.Errorf("ai: %s: Config.Client: %w", s.name, err)
	}
	if err := s.checkTools(); err != nil {
		return err
	}
	if err := s.checkGuardrails(); err != nil {
		return err
	}
	if s.know != nil {
		if err := s.know.check(s); err != nil {
			return err
		}
	}
	if s.long != nil {
		if err := s.long.check(s); err != nil {
			return err
		}
	}
	return s.checkSources()
}

// checkTools reports tools the model's client cannot carry: the tools of
// a declared method, or tool sources.
func (s *Service) checkTools() error {
	if !s.dialect.noTools {
		return nil
	}
	for _, m := range s.methods {
		if len(m.Tools) > 0 {
			return fmt.Errorf("ai: %s.%s offers %d tools: %w", s.name, m.Name, len(m.Tools), s.dialect.toolsError())
		}
	}
	if len(s.sources) > 0 {
		return fmt.Errorf("ai: %s has tool sources: %w", s.name, s.dialect.toolsError())
	}
	return nil
}

// Client returns the client the service shapes its requests for:
// [Config.Client], or the one detected from the model.
func (s *Service) Client() Client { return s.dialect.client }

// Name returns the service's name, "import/path.Type".
func (s *Service) Name() string { return s.name }

// Memory returns the service's memory provider: [Config.Memory] or the
// default one.
func (s *Service) Memory() memory.Provider { return s.memory }

func (s *Service) log() *slog.Logger {
	if s.logger != nil {
		return s.logger
	}
	return slog.Default()
}

// Chat runs one turn: it sends the system message, the memory and the user
// message to the model, runs the tool loop, commits the turn to memory and
// returns the model's final answer. Input guardrails check the user
// message first and output guardrails the final answer
// ([Config.Guardrails]); a guardrail that stops the turn returns an
// error wrapping a *guardrail.Error, and nothing of the turn is
// remembered. With [OutputJSON] the answer must be
// JSON (see [Structured]); Reply.Content is then the JSON text.
func (s *Service) Chat(ctx context.Context, req *Request) (*Reply, error) {
	asJSON := req != nil && req.Method != nil && req.Method.Output == OutputJSON
	var check func(string) (string, error)
	if asJSON {
		check = checkJSON
	}
	return s.run(ctx, req, runMode{json: asJSON, check: check})
}

// Stream runs one turn like [Service.Chat] but streams the model's text as
// it comes: the sequence yields text chunks only (never tool-call fragments
// or empty chunks), runs the tool calls between the streamed model calls,
// and commits the turn to memory once the last model call has finished.
// If the turn fails (the model, the memory, a cancelled ctx, too many
// model calls), the sequence yields one final ("", err) and commits
// nothing — but a turn the user stopped (ctx cancelled with the cause
// chat.ErrCancelled, see [chat.Cancelled]) commits the user message and
// the text streamed so far, marked with [InterruptedMarker]. Stopping the
// iteration early aborts the model call in progress and commits nothing.
//
// Every iteration of the sequence runs a new turn. Chunks of successive
// model calls (text before a tool call, then the answer) are yielded as
// the model sends them, without a separator. [OutputJSON] asks for JSON
// but the streamed text is not checked.
//
// Output guardrails ([Config.Guardrails]) see the whole answer once the
// model has finished it. Inside a request the chunks go out as they come,
// and an answer the guardrails rewrite, reprompt or fail is withdrawn with
// a Retract event (protocol.EventRetract) before the replacement is yielded;
// outside a request, where nothing can withdraw a chunk, the chunks of the
// answer are held back until the guardrails accept it.
func (s *Service) Stream(ctx context.Context, req *Request) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		sink := &streamSink{yield: yield}
		asJSON := req != nil && req.Method != nil && req.Method.Output == OutputJSON
		_, err := s.run(ctx, req, runMode{json: asJSON, stream: sink})
		if err != nil && !sink.stopped.Load() {
			yield("", err)
		}
	}
}

// Structured runs one turn like [Service.Chat] whatever the method's
// Output says, asking for JSON: the model call gets llms.WithJSONMode() and
// the system message an instruction to answer with JSON conforming to the
// method's Schema.
// The answer is decoded into T (a ```json fence around it is tolerated).
// When it does not decode, the model gets one corrective retry: a
// follow-up user message with the error, asking for only the JSON; a
// second failure is an error wrapping [ErrInvalidOutput]. The memory gets
// the final, valid exchange only.
//
// When the turn ends on immediate tools (Reply.Immediate), nothing is
// decoded: T is its zero value and the executions are in the Reply.
func Structured[T any](ctx context.Context, s *Service, req *Request) (T, *Reply, error) {
	var v T
	check := func(content string) (string, error) {
		var tmp T
		text, err := decodeJSON(content, &tmp)
		if err != nil {
			return "", err
		}
		v = tmp
		return text, nil
	}
	reply, err := s.run(ctx, req, runMode{json: true, check: check})
	if err != nil {
		var zero T
		return zero, nil, err
	}
	return v, reply, nil
}

// streamSink passes the text chunks of a streamed turn to the iteration.
type streamSink struct {
	yield   func(string, error) bool
	stopped atomic.Bool // the iteration stopped: abort, commit nothing
	// yielded reports that the current model call streamed some text; a
	// provider that ignores WithStreamingFunc streams nothing, and its
	// answer is then yielded whole.
	yielded atomic.Bool
	// sent reports that chunks went out since the turn began or last
	// retracted them (output guardrails retract them).
	sent atomic.Bool
	// hold keeps the chunks back until the output guardrails accept the
	// answer: a stream with output guardrails outside a request, where
	// no Retract event can withdraw them.
	hold   bool
	heldMu sync.Mutex
	held   []string
	// partial is the text the current model call streamed so far: what
	// the user saw of an answer the user stops (turn.interrupted).
	partial []byte
}

// errStopped aborts a model call whose stream's consumer stopped.
var errStopped = errors.New("ai: stream consumer stopped")

func (k *streamSink) onChunk(_ context.Context, chunk []byte) error {
	if k.stopped.Load() {
		return errStopped
	}
	if len(chunk) == 0 || isToolCallDelta(chunk) {
		return nil
	}
	k.yielded.Store(true)
	if k.hold {
		k.heldMu.Lock()
		k.held = append(k.held, string(chunk))
		k.heldMu.Unlock()
		return nil
	}
	k.partial = append(k.partial, chunk...)
	if !k.emit(string(chunk)) {
		return errStopped
	}
	return nil
}

// emit yields text, reporting false when the iteration stopped.
func (k *streamSink) emit(text string) bool {
	k.sent.Store(true)
	if !k.yield(text, nil) {
		k.stopped.Store(true)
		return false
	}
	return true
}

// flush yields the chunks held back, reporting false when the iteration
// stopped.
func (k *streamSink) flush() bool {
	k.heldMu.Lock()
	held := k.held
	k.held = nil
	k.heldMu.Unlock()
	for _, c := range held {
		if !k.emit(c) {
			return false
		}
	}
	return true
}

// drop forgets the chunks held back.
func (k *streamSink) drop() {
	k.heldMu.Lock()
	k.held = nil
	k.heldMu.Unlock()
}

// errorf returns an error of a request of method m, prefixed with the
// service and the method.
func (s *Service) errorf(m, format string, args ...any) error {
	return fmt.Errorf("ai: %s.%s: "+format, append([]any{s.name, m}, args...)...)
}
