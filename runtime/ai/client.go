package ai

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/tmc/langchaingo/llms"
)

// Client names the langchaingo client a service talks to. Each client
// turns langchaingo's messages and tools into its provider's wire in its
// own way, with its own gaps; a Service shapes what it sends to fit the
// client (see [Config.Client]). The shaping happens at the client's door:
// the chat memory, the model hooks and telemetry always see the
// conversation as langchaingo models it.
type Client string

// The clients a Service knows how to shape for. Any other llms.Model is
// sent the conversation as langchaingo models it, as to [ClientOpenAI].
const (
	// ClientAuto detects the client from the type of [Config.Model] (the
	// zero value of [Config.Client]). A model that wraps another and has
	// an Unwrap() llms.Model method is looked through.
	ClientAuto Client = ""
	// ClientOpenAI is langchaingo's llms/openai, and any client that
	// carries the conversation as langchaingo models it. Use it for every
	// OpenAI-compatible endpoint: Ollama's /v1, Mistral's, vLLM, LM Studio.
	ClientOpenAI Client = "openai"
	// ClientAnthropic is langchaingo's llms/anthropic.
	ClientAnthropic Client = "anthropic"
	// ClientGoogleAI is langchaingo's llms/googleai (and its vertex
	// package).
	ClientGoogleAI Client = "googleai"
	// ClientOllama is langchaingo's llms/ollama, on Ollama's native
	// /api/chat. It cannot carry tools: use ClientOpenAI on Ollama's /v1.
	ClientOllama Client = "ollama"
	// ClientMistral is langchaingo's llms/mistral. It cannot carry tool
	// results: use ClientOpenAI on Mistral's endpoint.
	ClientMistral Client = "mistral"
)

// ErrToolsUnsupported: the service's model is a client that cannot carry
// tool calls, and the service has tools. It is reported by
// [Service.Check] (so chat.NewRouter fails) and by every turn of a method
// with tools: tools are never silently dropped. The error says which client
// to use instead.
var ErrToolsUnsupported = errors.New("the model's client cannot carry tool calls")

// ErrUnknownClient: [Config.Client] is none of the Client constants.
var ErrUnknownClient = errors.New("unknown client")

// clientPackages maps the import paths of langchaingo's clients to the
// Client they are. Detection reads the model's type: it needs no import
// of any client, so an application links only the client it uses.
var clientPackages = map[string]Client{
	"github.com/tmc/langchaingo/llms/openai":          ClientOpenAI,
	"github.com/tmc/langchaingo/llms/anthropic":       ClientAnthropic,
	"github.com/tmc/langchaingo/llms/googleai":        ClientGoogleAI,
	"github.com/tmc/langchaingo/llms/googleai/vertex": ClientGoogleAI,
	"github.com/tmc/langchaingo/llms/ollama":          ClientOllama,
	"github.com/tmc/langchaingo/llms/mistral":         ClientMistral,
}

// detectClient returns the client model is, looking through wrappers with
// an Unwrap() llms.Model method; ClientOpenAI for any other model.
func detectClient(model llms.Model) Client {
	for range 16 { // a bound against a wrapper that unwraps to itself
		if model == nil {
			break
		}
		t := reflect.TypeOf(model)
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if c, ok := clientPackages[t.PkgPath()]; ok {
			return c
		}
		u, ok := model.(interface{ Unwrap() llms.Model })
		if !ok {
			break
		}
		model = u.Unwrap()
	}
	return ClientOpenAI
}

// dialect is what a Service does differently for its client. Every
// difference between langchaingo's clients that the runtime meets lives
// here, each with the client behaviour it answers.
type dialect struct {
	client Client
	// splitAI sends each part of an AI message as an AI message of its
	// own. llms/anthropic's handleAIMessage sends only Parts[0] of an AI
	// message, so the text before a tool call, or a second tool call,
	// would be lost and Anthropic would refuse the tool_result that
	// answers it. Anthropic combines consecutive assistant (and user)
	// messages into one turn, so the split reaches it whole. Empty text
	// parts are left out: Anthropic refuses empty text blocks.
	splitAI bool
	// splitResults sends each tool result in a tool message of its own.
	// llms/anthropic's handleToolMessage sends only Parts[0], and
	// llms/openai sends one tool message per message. It is how the
	// memory keeps them; the flag undoes a merge made elsewhere.
	splitResults bool
	// mergeResults sends the tool results that answer one model reply in
	// one tool message. Gemini refuses a function-call turn answered by
	// fewer function-response parts than it had calls ("the number of
	// function response parts is equal to the number of function call
	// parts"), and llms/googleai makes one content per message.
	mergeResults bool
	// mapParameters passes tool parameters as map[string]any in the
	// subset of JSON Schema Gemini takes. llms/googleai's convertTools
	// accepts nothing else ("unsupported type json.RawMessage of
	// Parameters"), its convertSchemaRecursive wants a string "type" and
	// an object with "properties".
	mapParameters bool
	// noTools: the client cannot carry tool calls, so a service with
	// tools is refused, with advice. llms/ollama sends text and images
	// only (it never sends tools, and fails on a tool-call part);
	// llms/mistral sends tool results without tool_call_id, which Mistral
	// refuses ("Tool call id has to be defined.").
	noTools bool
	// useInstead is the advice given with noTools.
	useInstead string
	// reasonless: the client never reports a finish reason, so a cleanly
	// ended stream is recognised otherwise (see finish). llms/ollama drops
	// Ollama's done_reason; it keeps the answer only when the final
	// done:true object arrives, so a cut stream returns no content and no
	// token counts.
	reasonless bool
	// pairStreaming gives a call that has only a streaming reasoning
	// function a text streaming function too. llms/anthropic asks
	// Anthropic for a stream when either is set, but reads the answer as a
	// stream only when the text one is (anthropicclient/messages.go
	// createMessage), so thinking without streaming failed with "parse
	// response: invalid character 'e'".
	pairStreaming bool
	// cacheMarks places prompt-cache breakpoints (llms.CachedContent)
	// on the stable prefix of every request (see markCache). Anthropic
	// caches only the prefixes that end at a block with cache_control, and
	// llms/anthropic sends the marker only on the parts of a human message
	// (handleHumanMessage): its system prompt is one string, and it sends
	// AI and tool messages without one.
	cacheMarks bool
	// wireUsage: the client reports the usage of a stream's first
	// response, so the usage of each call is read off the wire, by
	// Transport, from its last response. llms/googleai's SDK
	// (generative-ai-go) always streams and keeps the first response's
	// usageMetadata, which Gemini sends with the prompt's count only
	// (see gemini_usage.go).
	wireUsage bool
	// unspecifiedReason is the finish reason the client reports when the
	// provider sent none (llms/googleai reports genai's
	// "FinishReasonUnspecified" for a stream cut before its last chunk).
	unspecifiedReason string
}

// newDialect returns the dialect of client c.
func newDialect(c Client) dialect {
	d := dialect{client: c}
	switch c {
	case ClientAnthropic:
		d.splitAI, d.splitResults, d.pairStreaming, d.cacheMarks = true, true, true, true
	case ClientGoogleAI:
		d.mergeResults, d.mapParameters, d.wireUsage = true, true, true
		d.unspecifiedReason = "FinishReasonUnspecified"
	case ClientOllama:
		d.noTools, d.reasonless = true, true
		d.useInstead = "use langchaingo's llms/openai client on Ollama's OpenAI-compatible endpoint " +
			"(openai.WithBaseURL(\"http://localhost:11434/v1\"))"
	case ClientMistral:
		d.noTools = true
		d.useInstead = "use langchaingo's llms/openai client on Mistral's OpenAI-compatible endpoint " +
			"(openai.WithBaseURL(\"https://api.mistral.ai/v1\"))"
	case ClientOpenAI:
		d.splitResults = true
	}
	return d
}

// validClient reports an unknown [Config.Client].
func validClient(c Client) error {
	switch c {
	case ClientAuto, ClientOpenAI, ClientAnthropic, ClientGoogleAI, ClientOllama, ClientMistral:
		return nil
	}
	return fmt.Errorf("%w %q: use one of the ai.Client constants", ErrUnknownClient, string(c))
}

// toolsError is the error of tools offered through a client that cannot
// carry them.
func (d dialect) toolsError() error {
	return fmt.Errorf("%w: langchaingo's llms/%s; %s", ErrToolsUnsupported, d.client, d.useInstead)
}

// messages returns msgs shaped for the client; msgs itself when the client
// needs no change. msgs is never modified.
func (d dialect) messages(msgs []llms.MessageContent) []llms.MessageContent {
	return d.messagesMarked(msgs, -1)
}

// messagesMarked is messages with the prompt-cache breakpoints the client
// takes placed on msgs[:limit] only (all of msgs for a negative limit):
// see markCache.
func (d dialect) messagesMarked(msgs []llms.MessageContent, limit int) []llms.MessageContent {
	if !d.needsShaping(msgs) {
		if d.cacheMarks {
			return markCache(msgs, limit)
		}
		return msgs
	}
	out := make([]llms.MessageContent, 0, len(msgs)+4)
	for _, m := range msgs {
		switch {
		case m.Role == llms.ChatMessageTypeAI && d.splitAI:
			for _, p := range m.Parts {
				if t, ok := p.(llms.TextContent); ok && t.Text == "" {
					continue
				}
				out = append(out, llms.MessageContent{Role: m.Role, Parts: []llms.ContentPart{p}})
			}
		case m.Role == llms.ChatMessageTypeTool && d.splitResults:
			for _, p := range m.Parts {
				out = append(out, llms.MessageContent{Role: m.Role, Parts: []llms.ContentPart{p}})
			}
		case m.Role == llms.ChatMessageTypeTool && d.mergeResults && len(out) > 0 && out[len(out)-1].Role == llms.ChatMessageTypeTool:
			last := &out[len(out)-1]
			last.Parts = append(last.Parts, m.Parts...)
		case m.Role == llms.ChatMessageTypeTool && d.mergeResults:
			// A copy of Parts: the merge appends to it.
			out = append(out, llms.MessageContent{Role: m.Role, Parts: append([]llms.ContentPart(nil), m.Parts...)})
		default:
			out = append(out, m)
		}
	}
	if d.cacheMarks {
		return markCache(out, shapedLimit(msgs, out, limit))
	}
	return out
}

// maxCacheMarks is the most blocks with cache_control Anthropic takes in
// one request ("A maximum of 4 blocks with cache_control may be
// provided").
const maxCacheMarks = 4

// markCache returns msgs with prompt-cache breakpoints on the stable
// prefix of the request, for a provider that caches explicitly
// (Anthropic). Every request of a method is laid out system message,
// tools, memory (the pinned summary first, then history), new turn, and
// each extends the previous one until the memory evicts; the breakpoints
// go on the last part of three human messages:
//
//   - the last one (the newest turn's user message; in a tool loop, the
//     turn's message before the tool exchange): its prefix is written, for
//     the next request to read;
//   - the one before it (the previous turn's, written by the previous
//     request): read whole, however many blocks a tool loop added since
//     (Anthropic looks back only 20 blocks from a breakpoint);
//   - the first one (the summary of a Compressing memory, or the oldest
//     message of a window), whose prefix outlives the history after it.
//
// Marks the caller placed (a model hook, say) count against Anthropic's
// limit of 4, and no mark is added beyond it; a part already marked is
// left as it is. When the caller placed more than 4 (a mark is a part
// wrapped in llms.CachedContent with a CacheControl, in any message),
// the first and the last three are sent, the others unmarked, and none
// is added: the first's prefix outlives the history after it, the last
// ones write and read the newest prefixes. So a request never carries
// more than 4. msgs is never modified: a marked or unmarked message gets
// new parts. Placing breakpoints costs nothing at
// Anthropic: a write is billed from the longest prefix read to the last
// breakpoint, wherever the others are.
//
// Only where they pay: the service adds marks to msgs[:limit] only (all of
// msgs for a negative limit), the messages the memory keeps in place for
// the next request or that the previous request had
// (memory.StableMemory). A memory that evicts on every turn (a sliding
// window once full) gets none, instead of a write of its whole prompt at
// 1.25× the input price that no request reads.
func markCache(msgs []llms.MessageContent, limit int) []llms.MessageContent {
	var humans []int // human messages whose last part can carry a mark
	var placed [][2]int
	for i, m := range msgs {
		for j, p := range m.Parts {
			if isMark(p) {
				placed = append(placed, [2]int{i, j})
			}
		}
		if limit >= 0 && i >= limit {
			continue
		}
		if m.Role == llms.ChatMessageTypeHuman && len(m.Parts) > 0 && markable(m.Parts[len(m.Parts)-1]) {
			humans = append(humans, i)
		}
	}
	if len(placed) > maxCacheMarks {
		return unmark(msgs, placed[1:len(placed)-(maxCacheMarks-1)])
	}
	marks := len(placed)
	if len(humans) == 0 || marks == maxCacheMarks {
		return msgs
	}
	out := slices.Clone(msgs)
	picks := []int{humans[len(humans)-1]}
	if len(humans) > 1 {
		picks = append(picks, humans[len(humans)-2])
	}
	if len(humans) > 2 {
		picks = append(picks, humans[0])
	}
	for _, i := range picks[:min(len(picks), maxCacheMarks-marks)] {
		parts := slices.Clone(out[i].Parts)
		last := len(parts) - 1
		parts[last] = llms.CachedContent{ContentPart: parts[last], CacheControl: &llms.CacheControl{Type: "ephemeral"}}
		out[i].Parts = parts
	}
	return out
}

// shapedLimit returns the limit in out, msgs shaped, of limit in msgs:
// shaping splits AI and tool messages only, and keeps human messages as
// they are, in order.
func shapedLimit(msgs, out []llms.MessageContent, limit int) int {
	if limit < 0 {
		return limit
	}
	humans := 0 // human messages before limit in msgs
	for _, m := range msgs[:min(limit, len(msgs))] {
		if m.Role == llms.ChatMessageTypeHuman {
			humans++
		}
	}
	for i, m := range out {
		if m.Role != llms.ChatMessageTypeHuman {
			continue
		}
		if humans == 0 {
			return i
		}
		humans--
	}
	return len(out)
}

// isMark reports whether p is a prompt-cache breakpoint: a part wrapped
// in llms.CachedContent with a CacheControl (without one, llms/anthropic
// sends the part unmarked).
func isMark(p llms.ContentPart) bool {
	c, ok := p.(llms.CachedContent)
	return ok && c.CacheControl != nil
}

// unmark returns msgs with the marks at drop (message and part indexes,
// in order) replaced by the parts they wrap.
func unmark(msgs []llms.MessageContent, drop [][2]int) []llms.MessageContent {
	out := slices.Clone(msgs)
	prev := -1
	for _, at := range drop {
		i, j := at[0], at[1]
		if i != prev {
			out[i].Parts = slices.Clone(out[i].Parts)
			prev = i
		}
		out[i].Parts[j] = out[i].Parts[j].(llms.CachedContent).ContentPart
	}
	return out
}

// markable reports whether llms/anthropic sends a cache_control on p, in
// a human message: a non-empty text, or an image.
func markable(p llms.ContentPart) bool {
	switch p := p.(type) {
	case llms.TextContent:
		return p.Text != ""
	case llms.BinaryContent:
		return true
	}
	return false
}

// needsShaping reports whether messages would change msgs.
func (d dialect) needsShaping(msgs []llms.MessageContent) bool {
	prevTool := false
	for _, m := range msgs {
		switch {
		case m.Role == llms.ChatMessageTypeAI && d.splitAI:
			if len(m.Parts) != 1 {
				return true
			}
			if t, ok := m.Parts[0].(llms.TextContent); ok && t.Text == "" {
				return true
			}
		case m.Role == llms.ChatMessageTypeTool && d.splitResults && len(m.Parts) > 1:
			return true
		case m.Role == llms.ChatMessageTypeTool && d.mergeResults && prevTool:
			return true
		}
		prevTool = m.Role == llms.ChatMessageTypeTool
	}
	return false
}

// definition returns the client's form of tool t's definition.
func (d dialect) definition(t *Tool) (llms.Tool, error) {
	name, desc, params, err := t.parts()
	if err != nil {
		return llms.Tool{}, err
	}
	def := llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: name, Description: desc}}
	if !d.mapParameters {
		def.Function.Parameters = params
		return def, nil
	}
	m, err := geminiSchema(params)
	if err != nil {
		return llms.Tool{}, fmt.Errorf("tool %q: %w", name, err)
	}
	def.Function.Parameters = m
	return def, nil
}

// definitions returns the client's form of the definitions of tools.
func (d dialect) definitions(tools []Tool) ([]llms.Tool, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	defs := make([]llms.Tool, len(tools))
	for i := range tools {
		var err error
		if defs[i], err = d.definition(&tools[i]); err != nil {
			return nil, err
		}
	}
	return defs, nil
}

// finish returns the finish reason of a model call's choice, and whether
// the client says the answer ended cleanly although it reports no reason.
//
// A streamed answer ends with a finish reason; without one the stream was
// cut (or held no model output) and the turn must not commit part of an
// answer (see [ErrIncompleteStream]). A client that never reports one
// (reasonless) is taken to have ended cleanly when it returned what it
// keeps only at the stream's clean end.
func (d dialect) finish(choice *llms.ContentChoice) (reason string, clean bool) {
	reason = choice.StopReason
	if d.unspecifiedReason != "" && reason == d.unspecifiedReason {
		reason = ""
	}
	if reason != "" || !d.reasonless {
		return reason, reason != ""
	}
	// llms/ollama fills Content and the token counts from the final
	// done:true object only; a cut stream has neither.
	p, _ := count(choice.GenerationInfo["PromptTokens"])
	c, _ := count(choice.GenerationInfo["CompletionTokens"])
	return "", choice.Content != "" || p > 0 || c > 0
}

// usage reads the token usage a choice reports, wherever the client puts
// it:
//   - PromptTokens/CompletionTokens/TotalTokens: llms/openai, llms/ollama,
//     llms/googleai;
//   - InputTokens/OutputTokens: llms/anthropic;
//   - "usage", a struct with prompt_tokens/completion_tokens/total_tokens
//     JSON fields: llms/mistral (the mistral-go SDK's UsageInfo).
//
// The prompt-cache figures: PromptCachedTokens (llms/openai, OpenAI's
// prompt_tokens_details.cached_tokens); CacheReadInputTokens and
// CacheCreationInputTokens (llms/anthropic; llms/googleai sets the first
// too, with CachedTokens, from Gemini's cachedContentTokenCount).
// Anthropic's input_tokens leaves the cached tokens out: the prompt is
// InputTokens plus both cache figures, as OpenTelemetry's
// gen_ai.usage.input_tokens wants it.
//
// Gemini counts the model's thinking in the total only
// (thoughtsTokenCount), and llms/googleai reports candidatesTokenCount as
// the completion: when the total exceeds prompt plus completion, the
// difference is output too, so CompletionTokens is total minus prompt.
func (d dialect) usage(info map[string]any) Usage {
	var u Usage
	if len(info) == 0 {
		return u
	}
	read, _ := count(info["PromptCachedTokens"])
	if read == 0 {
		read, _ = count(info["CacheReadInputTokens"])
	}
	write, _ := count(info["CacheCreationInputTokens"])
	p, okP := count(info["PromptTokens"])
	if !okP {
		if p, okP = count(info["InputTokens"]); okP {
			p += read + write
		}
	}
	c, okC := count(info["CompletionTokens"])
	if !okC {
		c, okC = count(info["OutputTokens"])
	}
	t, okT := count(info["TotalTokens"])
	if !okP && !okC && !okT {
		if raw, ok := info["usage"]; ok && raw != nil {
			p, c, t = usageStruct(raw)
		}
	}
	if t > p+c {
		c = t - p
	}
	if t < p+c {
		t = p + c
	}
	u.PromptTokens, u.CompletionTokens, u.TotalTokens = p, c, t
	u.CacheReadTokens, u.CacheWriteTokens = read, write
	return u
}

// usageStruct reads the counts of a usage value with OpenAI's JSON field
// names (prompt_tokens, completion_tokens, total_tokens).
func usageStruct(v any) (p, c, t int) {
	b, err := json.Marshal(v)
	if err != nil {
		return 0, 0, 0
	}
	var u struct {
		Prompt     json.Number `json:"prompt_tokens"`
		Completion json.Number `json:"completion_tokens"`
		Total      json.Number `json:"total_tokens"`
	}
	if json.Unmarshal(b, &u) != nil {
		return 0, 0, 0
	}
	p, _ = count(u.Prompt)
	c, _ = count(u.Completion)
	t, _ = count(u.Total)
	return p, c, t
}

// geminiSchema converts a JSON Schema of tool parameters to the form
// llms/googleai takes: a map[string]any whose every schema has a string
// "type" (a ["T","null"] type becomes "T"; a schema without a type, or
// with anyOf/oneOf, gets the first alternative's) and whose keys are those
// Gemini's Schema has (the client ignores the others); for a tool without
// parameters, an empty map.
func geminiSchema(params json.RawMessage) (map[string]any, error) {
	if len(params) == 0 || string(params) == "null" {
		return map[string]any{}, nil
	}
	var v any
	if err := json.Unmarshal(params, &v); err != nil {
		return nil, fmt.Errorf("its parameters are not JSON: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("its parameters are a JSON %T, not a schema object", v)
	}
	s := geminiNode(m, 0)
	if props, _ := s["properties"].(map[string]any); len(props) == 0 {
		// Gemini refuses an OBJECT without properties ("should be non-empty
		// for OBJECT type"): a tool without parameters gets an empty
		// schema, which llms/googleai sends as no type at all.
		return map[string]any{}, nil
	}
	s["type"] = "object"
	return s, nil
}

// geminiNode converts one schema node; depth bounds a recursive schema.
func geminiNode(m map[string]any, depth int) map[string]any {
	out := make(map[string]any, len(m))
	if depth > 32 {
		out["type"] = "string"
		return out
	}
	for _, alt := range []string{"anyOf", "oneOf"} {
		if list, ok := m[alt].([]any); ok && m["type"] == nil {
			for _, a := range list {
				if am, ok := a.(map[string]any); ok && am["type"] != "null" {
					return geminiNode(am, depth+1)
				}
			}
		}
	}
	switch t := m["type"].(type) {
	case string:
		out["type"] = t
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok && s != "null" {
				out["type"] = s
				break
			}
		}
	}
	if d, ok := m["description"].(string); ok {
		out["description"] = d
	}
	if e, ok := m["enum"]; ok {
		out["enum"] = e
	}
	if props, ok := m["properties"].(map[string]any); ok {
		conv := make(map[string]any, len(props))
		for k, p := range props {
			if pm, ok := p.(map[string]any); ok {
				conv[k] = geminiNode(pm, depth+1)
			} else {
				conv[k] = map[string]any{"type": "string"}
			}
		}
		out["properties"] = conv
		if out["type"] == nil {
			out["type"] = "object"
		}
	}
	if items, ok := m["items"].(map[string]any); ok {
		out["items"] = geminiNode(items, depth+1)
		if out["type"] == nil {
			out["type"] = "array"
		}
	} else if out["type"] == "array" {
		// Gemini wants the items of an array.
		out["items"] = map[string]any{"type": "string"}
	}
	if req, ok := m["required"].([]any); ok {
		rs := make([]any, 0, len(req))
		for _, r := range req {
			if s, ok := r.(string); ok {
				rs = append(rs, s)
			}
		}
		out["required"] = rs
	}
	if out["type"] == nil {
		out["type"] = "string"
	}
	return out
}

// String returns the client's name, "auto" for ClientAuto.
func (c Client) String() string {
	if c == ClientAuto {
		return "auto"
	}
	return string(c)
}

// toolFormKey names the form of tool definitions a dialect sends, for the
// per-method cache.
func (d dialect) toolForm() int {
	if d.mapParameters {
		return 1
	}
	return 0
}
