package ai

import (
	"context"
	"encoding/json"
	"errors"
	"path"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/guardrail"
	"github.com/chatscopes/chatgen/runtime/internal/oteltrace"
)

// Telemetry configures the OpenTelemetry instrumentation of a service
// ([Config.Telemetry]), which follows the GenAI semantic conventions:
//
//   - a span "invoke_agent {Interface}.{Method}" per turn (one method call);
//   - in it, a span "chat {model}" per model call (per attempt, with
//     retries) with gen_ai.operation.name, gen_ai.provider.name,
//     gen_ai.request.model, gen_ai.response.model (when the provider
//     reports it; langchaingo's providers do not), gen_ai.usage.input_tokens,
//     gen_ai.usage.output_tokens, gen_ai.response.finish_reasons and
//     gen_ai.conversation.id (the id of the conversation's top scope,
//     chat.ConversationID), and error.type with an error status when it
//     fails;
//   - a span "execute_tool {name}" per tool call with gen_ai.tool.name,
//     gen_ai.tool.call.id, gen_ai.tool.type and, when the call failed
//     (vetoed, timed out, panicked, bad arguments, unknown tool, the
//     tool's error), error.type and an error status;
//   - the histograms gen_ai.client.operation.duration (seconds) and
//     gen_ai.client.token.usage (by gen_ai.token.type) per model call;
//   - with guardrails ([Config.Guardrails]), an event "chatgen.guardrail"
//     on the turn's span per check, with chatgen.guardrail.name,
//     chatgen.guardrail.stage ("input", "output"),
//     chatgen.guardrail.outcome ("pass", "rewrite", "reprompt", "fail",
//     "fatal") and chatgen.guardrail.duration (seconds); a turn a
//     guardrail stopped has error.type "guardrail" and the name, stage
//     and outcome of the guardrail that stopped it. Never the text
//     checked.
//
// error.type is a stable classification of the failure, never its text:
// for turns and model calls "timeout" (ErrModelTimeout), "canceled",
// "deadline_exceeded", "guardrail" (a guardrail stopped the turn: see
// below), "too_many_model_calls", "incomplete_stream",
// "invalid_output", "hook_panic", the HTTP status ("429", "503"),
// "transport" or "_OTHER"; for tool calls "unknown_tool", "vetoed",
// "timeout", "panic", "invalid_arguments", "tool_error" or "hook_panic".
//
// Message content (the prompt, the answer, tool arguments and results)
// and the texts of errors, which may repeat it, are recorded only with
// RecordContent: without it the description of an error status is the
// error.type alone. With no-op providers (the globals
// before the application installs an SDK) the instrumentation costs
// nothing: no span is started and nothing is measured.
type Telemetry struct {
	// TracerProvider makes the spans; nil means the global one
	// (otel.GetTracerProvider) at the time of each turn.
	TracerProvider trace.TracerProvider
	// MeterProvider makes the metrics; nil means the global one
	// (otel.GetMeterProvider), whose instruments follow a provider
	// installed later.
	MeterProvider metric.MeterProvider
	// RecordContent records message content in the spans:
	// gen_ai.input.messages and gen_ai.output.messages on model calls,
	// gen_ai.tool.call.arguments and gen_ai.tool.call.result on tool
	// calls, and the text of an error as the description of an error
	// status (without it, the description is the error.type). It may hold
	// personal data: off by default.
	RecordContent bool
	// ProviderName is gen_ai.provider.name; "" means one derived from the
	// model's package ("openai" for langchaingo's llms/openai, and so on).
	ProviderName string
	// ModelName is gen_ai.request.model when the call options do not name
	// the model (llms.WithModel in [Config.Options]); langchaingo's
	// clients do not tell the model they were created with.
	ModelName string
}

// instrumentationName names the tracer and meter of this package.
const instrumentationName = "github.com/chatscopes/chatgen/runtime/ai"

// telemetry is a service's instrumentation.
type telemetry struct {
	trace    *oteltrace.Tracer
	duration metric.Float64Histogram
	tokens   metric.Int64Histogram
	content  bool
	provider string
	model    string
}

// newTelemetry returns the instrumentation of a service of model.
func newTelemetry(cfg Telemetry, model llms.Model) *telemetry {
	t := &telemetry{
		trace:    oteltrace.New(cfg.TracerProvider, instrumentationName),
		content:  cfg.RecordContent,
		provider: cfg.ProviderName,
		model:    cfg.ModelName,
	}
	if t.provider == "" {
		t.provider = providerName(model)
	}
	mp := cfg.MeterProvider
	if _, noop := mp.(metricnoop.MeterProvider); noop {
		return t // no instruments: nothing to check per call
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	meter := mp.Meter(instrumentationName)
	// Instruments that fail to be made stay nil: no metric.
	t.duration, _ = meter.Float64Histogram("gen_ai.client.operation.duration",
		metric.WithDescription("GenAI operation duration."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92))
	t.tokens, _ = meter.Int64Histogram("gen_ai.client.token.usage",
		metric.WithDescription("Number of input and output tokens used."), metric.WithUnit("{token}"),
		metric.WithExplicitBucketBoundaries(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864))
	return t
}

// tracer returns the tracer of the service's spans, and false when
// tracing is off.
func (t *telemetry) tracer() (trace.Tracer, bool) { return t.trace.Get() }

// measuring reports whether the model call metrics are recorded.
func (t *telemetry) measuring(ctx context.Context) bool {
	return t.duration != nil && t.duration.Enabled(ctx) || t.tokens != nil && t.tokens.Enabled(ctx)
}

// observing reports whether a model call is traced or measured.
func (t *telemetry) observing(ctx context.Context) bool {
	if _, ok := t.tracer(); ok {
		return true
	}
	return t.measuring(ctx)
}

// providerName derives gen_ai.provider.name from the package of the
// model's type.
func providerName(model llms.Model) string {
	if model == nil {
		return ""
	}
	typ := reflect.TypeOf(model)
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch pkg := path.Base(typ.PkgPath()); pkg {
	case "googleai":
		return "gcp.gemini"
	case "vertex":
		return "gcp.vertex_ai"
	case "bedrock":
		return "aws.bedrock"
	case "mistral":
		return "mistral_ai"
	case ".", "":
		return "_OTHER"
	default:
		return pkg
	}
}

// convIDFrom returns the conversation's id in ctx, or "".
func convIDFrom(ctx context.Context) string {
	id, err := chat.ConversationID(ctx)
	if err != nil {
		return ""
	}
	return id
}

// runTraced runs a turn in an invoke_agent span.
func (s *Service) runTraced(ctx context.Context, tr trace.Tracer, req *Request, mode runMode) (*Reply, error) {
	method := ""
	if req != nil && req.Method != nil {
		method = req.Method.Name
	}
	agent := s.name[strings.LastIndexByte(s.name, '.')+1:] // the interface's name
	if method != "" {
		agent += "." + method
	}
	convID := convIDFrom(ctx)
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIAgentName(agent),
		semconv.GenAIProviderNameKey.String(s.tel.provider),
	}
	if convID != "" {
		attrs = append(attrs, semconv.GenAIConversationID(convID))
	}
	ctx, span := tr.Start(ctx, "invoke_agent "+agent, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	defer span.End()
	reply, err := s.runTurn(ctx, req, mode, convID)
	if p := (*ConfirmationPending)(nil); err != nil && errors.As(err, &p) {
		// Not a failure: the turn waits for the user.
		span.SetAttributes(attribute.String("chatgen.confirmation.id", p.ID), attribute.String("chatgen.confirmation.tool", p.Tool))
		if p.Client != nil {
			span.SetAttributes(attribute.Bool("chatgen.client_tool", true))
		}
		return nil, err
	}
	if err != nil {
		errType := modelErrorType(err, nil)
		span.SetStatus(codes.Error, s.tel.errorDescription(errType, err))
		span.SetAttributes(semconv.ErrorTypeKey.String(errType))
		if ge := (*guardrail.Error)(nil); errors.As(err, &ge) {
			span.SetAttributes(attribute.String("chatgen.guardrail.name", ge.Guardrail),
				attribute.String("chatgen.guardrail.stage", ge.Stage.String()),
				attribute.String("chatgen.guardrail.outcome", ge.Outcome.String()))
		}
		return nil, err
	}
	span.SetAttributes(usageAttributes(reply.Usage)...)
	return reply, nil
}

// usageAttributes returns the span attributes of u: the input and output
// tokens, and the prompt-cache reads and writes when there were any
// (gen_ai.usage.cache_read.input_tokens and
// gen_ai.usage.cache_creation.input_tokens, both included in
// gen_ai.usage.input_tokens).
func usageAttributes(u Usage) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 2, 4)
	attrs[0] = semconv.GenAIUsageInputTokens(u.PromptTokens)
	attrs[1] = semconv.GenAIUsageOutputTokens(u.CompletionTokens)
	if u.CacheReadTokens > 0 {
		attrs = append(attrs, semconv.GenAIUsageCacheReadInputTokens(u.CacheReadTokens))
	}
	if u.CacheWriteTokens > 0 {
		attrs = append(attrs, semconv.GenAIUsageCacheCreationInputTokens(u.CacheWriteTokens))
	}
	return attrs
}

// chatObservation is a model call being traced or measured.
type chatObservation struct {
	span    trace.Span // nil when not traced
	start   time.Time  // zero when not measured
	model   string
	measure bool
}

func (o chatObservation) active() bool { return o.span != nil || o.measure }

// requestModel returns the model a call with opts asks for.
func (t *telemetry) requestModel(opts []llms.CallOption) string {
	var co llms.CallOptions
	for _, o := range opts {
		o(&co)
	}
	if co.Model != "" {
		return co.Model
	}
	return t.model
}

// startChat starts the observation of a model call.
func (t *turn) startChat(ctx context.Context, msgs []llms.MessageContent, opts []llms.CallOption) (context.Context, chatObservation) {
	tel := t.s.tel
	obs := chatObservation{model: tel.requestModel(opts), measure: tel.measuring(ctx)}
	if obs.measure {
		obs.start = time.Now()
	}
	tr, ok := tel.tracer()
	if !ok {
		return ctx, obs
	}
	name := "chat"
	if obs.model != "" {
		name += " " + obs.model
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameChat,
		semconv.GenAIProviderNameKey.String(tel.provider),
	}
	if obs.model != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(obs.model))
	}
	if t.convID != "" {
		attrs = append(attrs, semconv.GenAIConversationID(t.convID))
	}
	if tel.content {
		attrs = append(attrs, semconv.GenAIInputMessagesKey.String(encodeMessages(msgs, "")))
	}
	ctx, obs.span = tr.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx, obs
}

// endChat ends the observation of a model call that returned resp or err.
func (t *turn) endChat(ctx context.Context, obs chatObservation, resp *llms.ContentResponse, err error, rec *httpRecord) {
	tel := t.s.tel
	var usage Usage
	var choice *llms.ContentChoice
	responseModel := ""
	if err == nil {
		if choice = pickChoice(resp); choice != nil {
			usage = t.s.dialect.usage(choice.GenerationInfo)
			responseModel = reportedModel(choice.GenerationInfo)
		}
	}
	errType := ""
	if err != nil {
		errType = modelErrorType(err, rec)
	}
	if obs.measure {
		attrs := []attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIProviderNameKey.String(tel.provider)}
		if obs.model != "" {
			attrs = append(attrs, semconv.GenAIRequestModel(obs.model))
		}
		if responseModel != "" {
			attrs = append(attrs, semconv.GenAIResponseModel(responseModel))
		}
		if errType != "" {
			attrs = append(attrs, semconv.ErrorTypeKey.String(errType))
		}
		if tel.duration != nil {
			tel.duration.Record(ctx, time.Since(obs.start).Seconds(), metric.WithAttributeSet(attribute.NewSet(attrs...)))
		}
		if tel.tokens != nil && err == nil {
			n := len(attrs)
			in := attribute.NewSet(append(attrs[:n:n], semconv.GenAITokenTypeInput)...)
			out := attribute.NewSet(append(attrs[:n:n], semconv.GenAITokenTypeOutput)...)
			tel.tokens.Record(ctx, int64(usage.PromptTokens), metric.WithAttributeSet(in))
			tel.tokens.Record(ctx, int64(usage.CompletionTokens), metric.WithAttributeSet(out))
		}
	}
	span := obs.span
	if span == nil {
		return
	}
	defer span.End()
	if err != nil {
		span.SetStatus(codes.Error, tel.errorDescription(errType, err))
		span.SetAttributes(semconv.ErrorTypeKey.String(errType))
		return
	}
	if choice == nil {
		return
	}
	attrs := usageAttributes(usage)
	reason, _ := t.s.dialect.finish(choice)
	if reason != "" {
		attrs = append(attrs, semconv.GenAIResponseFinishReasons(reason))
	}
	if responseModel != "" {
		attrs = append(attrs, semconv.GenAIResponseModel(responseModel))
	}
	if tel.content {
		out := llms.MessageContent{Role: llms.ChatMessageTypeAI}
		if choice.Content != "" {
			out.Parts = append(out.Parts, llms.TextContent{Text: choice.Content})
		}
		for _, c := range choice.ToolCalls {
			out.Parts = append(out.Parts, c)
		}
		attrs = append(attrs, semconv.GenAIOutputMessagesKey.String(encodeMessages([]llms.MessageContent{out}, reason)))
	}
	span.SetAttributes(attrs...)
}

// reportedModel returns the model a provider says answered, if it does.
func reportedModel(info map[string]any) string {
	for _, k := range []string{"Model", "model", "ModelName"} {
		if s, ok := info[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// errorDescription returns the description of the error status of a span
// that failed with err, classified as errType: err's text when content
// is recorded, else errType alone. An error's text may repeat what the
// user wrote (a tool's "no such item: <the user's words>", a provider's
// echo of the prompt): without RecordContent it stays out of the traces.
func (t *telemetry) errorDescription(errType string, err error) string {
	if t.content {
		return err.Error()
	}
	return errType
}

// modelErrorType is the error.type of a failed model call or turn: a
// stable classification, never the error's text (see [Telemetry]).
func modelErrorType(err error, rec *httpRecord) string {
	switch {
	case errors.Is(err, ErrModelTimeout):
		return "timeout"
	case errors.Is(err, context.Canceled), errors.Is(err, ErrPausedCallCancelled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	case errors.Is(err, guardrail.ErrGuardrailFailed):
		return "guardrail"
	case errors.Is(err, ErrTooManyModelCalls):
		return "too_many_model_calls"
	case errors.Is(err, ErrIncompleteStream):
		return "incomplete_stream"
	case errors.Is(err, ErrInvalidOutput):
		return "invalid_output"
	}
	var hp *hookPanic
	if errors.As(err, &hp) {
		return "hook_panic"
	}
	if status := httpStatus(err, rec); status != 0 {
		return strconv.Itoa(status)
	}
	if transportError(err) {
		return "transport"
	}
	return "_OTHER"
}

// toolErrorType is the error.type of a failed tool call.
func toolErrorType(err error) string {
	var veto *VetoError
	var argErr *ArgumentsError
	var pe *chat.PanicError
	switch {
	case errors.Is(err, ErrUnknownTool):
		return "unknown_tool"
	case errors.As(err, &veto):
		return "vetoed"
	case errors.Is(err, ErrToolTimeout):
		return "timeout"
	case errors.As(err, &pe):
		return "panic"
	case errors.As(err, &argErr):
		return "invalid_arguments"
	}
	return "tool_error"
}

// runToolTraced runs one tool call in an execute_tool span.
func (t *turn) runToolTraced(ctx context.Context, tr trace.Tracer, call llms.ToolCall) (ToolExecution, error) {
	name := call.FunctionCall.Name
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolName(name),
		semconv.GenAIToolCallID(call.ID),
		semconv.GenAIToolTypeKey.String("function"),
	}
	if t.convID != "" {
		attrs = append(attrs, semconv.GenAIConversationID(t.convID))
	}
	if t.s.tel.content {
		attrs = append(attrs, semconv.GenAIToolCallArgumentsKey.String(call.FunctionCall.Arguments))
	}
	ctx, span := tr.Start(ctx, "execute_tool "+name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	defer span.End()
	ex, err := t.s.runTool(ctx, t.m, t.tools, call)
	switch {
	case err != nil:
		span.SetStatus(codes.Error, t.s.tel.errorDescription("hook_panic", err))
		span.SetAttributes(semconv.ErrorTypeKey.String("hook_panic"))
	case errors.Is(ex.Err, ErrConfirmationRequired):
		span.SetAttributes(attribute.Bool("chatgen.confirmation.required", true)) // not run yet: no error
	case ex.Err == errClientRuns:
		span.SetAttributes(attribute.Bool("chatgen.client_tool", true)) // the client runs it: no error
	case ex.Err != nil:
		errType := toolErrorType(ex.Err)
		span.SetStatus(codes.Error, t.s.tel.errorDescription(errType, ex.Err))
		span.SetAttributes(semconv.ErrorTypeKey.String(errType))
	}
	if t.s.tel.content && err == nil {
		span.SetAttributes(semconv.GenAIToolCallResultKey.String(ex.Text))
	}
	return ex, err
}

// encodeMessages returns msgs as the JSON of gen_ai.input.messages (or,
// with finish set, gen_ai.output.messages).
func encodeMessages(msgs []llms.MessageContent, finish string) string {
	type part struct {
		Type      string          `json:"type"`
		Content   string          `json:"content,omitempty"`
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Arguments json.RawMessage `json:"arguments,omitempty"`
		Response  string          `json:"response,omitempty"`
	}
	type message struct {
		Role         string `json:"role"`
		Parts        []part `json:"parts"`
		FinishReason string `json:"finish_reason,omitempty"`
	}
	out := make([]message, 0, len(msgs))
	for _, m := range msgs {
		msg := message{Role: semconvRole(m.Role), Parts: []part{}, FinishReason: finish}
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.TextContent:
				msg.Parts = append(msg.Parts, part{Type: "text", Content: p.Text})
			case llms.ToolCall:
				tp := part{Type: "tool_call", ID: p.ID}
				if p.FunctionCall != nil {
					tp.Name = p.FunctionCall.Name
					if json.Valid([]byte(p.FunctionCall.Arguments)) {
						tp.Arguments = json.RawMessage(p.FunctionCall.Arguments)
					}
				}
				msg.Parts = append(msg.Parts, tp)
			case llms.ToolCallResponse:
				msg.Parts = append(msg.Parts, part{Type: "tool_call_response", ID: p.ToolCallID, Response: p.Content})
			default:
				msg.Parts = append(msg.Parts, part{Type: reflect.TypeOf(p).Name()})
			}
		}
		out = append(out, msg)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return ""
	}
	return string(b)
}

// semconvRole maps a langchaingo role to a GenAI one.
func semconvRole(r llms.ChatMessageType) string {
	switch r {
	case llms.ChatMessageTypeSystem:
		return "system"
	case llms.ChatMessageTypeHuman, llms.ChatMessageTypeGeneric:
		return "user"
	case llms.ChatMessageTypeAI:
		return "assistant"
	case llms.ChatMessageTypeTool, llms.ChatMessageTypeFunction:
		return "tool"
	}
	return string(r)
}
