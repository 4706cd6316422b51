package otelchat_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/otelchat"
)

// sdk is an OpenTelemetry SDK recording into memory.
type sdk struct {
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

func newSDK(t *testing.T) *sdk {
	s := &sdk{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	s.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(s.spans))
	s.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(s.reader))
	t.Cleanup(func() {
		_ = s.tp.Shutdown(context.Background())
		_ = s.mp.Shutdown(context.Background())
	})
	return s
}

// tree renders the ended spans as an indented tree, children in start
// order: "name [kind]".
func (s *sdk) tree() string {
	spans := s.spans.Ended()
	slices.SortStableFunc(spans, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	var b strings.Builder
	var walk func(parent trace.SpanID, depth int)
	walk = func(parent trace.SpanID, depth int) {
		for _, sp := range spans {
			if sp.Parent().SpanID() == parent {
				fmt.Fprintf(&b, "%s%s [%s]\n", strings.Repeat("  ", depth), sp.Name(), sp.SpanKind())
				walk(sp.SpanContext().SpanID(), depth+1)
			}
		}
	}
	walk(trace.SpanID{}, 0)
	return b.String()
}

// span returns the ended spans called name.
func (s *sdk) span(t *testing.T, name string) []sdktrace.ReadOnlySpan {
	t.Helper()
	var out []sdktrace.ReadOnlySpan
	for _, sp := range s.spans.Ended() {
		if sp.Name() == name {
			out = append(out, sp)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no span %q in:\n%s", name, s.tree())
	}
	return out
}

// attrs renders a span's attributes as "key=value", sorted.
func attrs(kvs []attribute.KeyValue) []string {
	out := make([]string, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, string(kv.Key)+"="+kv.Value.String())
	}
	slices.Sort(out)
	return out
}

func wantAttrs(t *testing.T, what string, sp sdktrace.ReadOnlySpan, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := attrs(sp.Attributes()); !slices.Equal(got, want) {
		t.Fatalf("%s attributes:\n got  %q\n want %q", what, got, want)
	}
}

// metrics collects the metrics, by name.
func (s *sdk) metrics(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := s.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

var addTool = llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
	Name: "add", Description: "Add adds two numbers.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`),
}}

var askMethod = ai.Method{
	Name: "Ask", Kind: chat.KindChat, System: "You add numbers.",
	Tools: []ai.Tool{{Definition: addTool, Invoke: func(_ context.Context, args string) (any, error) {
		var in struct{ A, B int }
		if err := json.Unmarshal([]byte(args), &in); err != nil {
			return nil, &ai.ArgumentsError{Err: err}
		}
		return in.A + in.B, nil
	}}},
}

// calculator is a router whose route "calc" answers with an AI service
// on langchaingo's real OpenAI client against a scripted server, all
// instrumented with the SDK.
func calculator(t *testing.T, s *sdk, script llmtest.Script, opts *ai.Config) (*chat.Router, *llmtest.Server) {
	cfg := *opts
	t.Helper()
	srv := llmtest.NewServer(script, nil)
	t.Cleanup(srv.Close)
	llm, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model = llm
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Telemetry.TracerProvider, cfg.Telemetry.MeterProvider = s.tp, s.mp
	cfg.Telemetry.ModelName = llmtest.DefaultModelName
	svc := ai.NewService("example.com/calc.Calculator", &cfg)
	p := chatimpl.NewPackage("example.com/calc")
	p.AddRoute(chatimpl.RouteSpec{Name: "calc", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		r, err := svc.Chat(ctx, &ai.Request{Method: &askMethod, User: req.UserMessage()})
		if err != nil {
			return err
		}
		return chat.SendValue(ctx, r.Content)
	}})
	router, err := chat.NewRouter(&chat.RouterOptions{
		Logger:     slog.New(slog.DiscardHandler),
		RouteHooks: []chat.RouteHook{otelchat.RouteHook(&otelchat.Options{TracerProvider: s.tp, MeterProvider: s.mp})},
	}, p)
	if err != nil {
		t.Fatal(err)
	}
	return router, srv
}

// TestTraceOfATurnWithATool: the span tree and attributes of a real turn
// with a tool call, and the metrics it records.
func TestTraceOfATurnWithATool(t *testing.T) {
	s := newSDK(t)
	router, srv := calculator(t, s, llmtest.Sequence(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "add", Arguments: `{"a":2,"b":3}`}}},
		llmtest.Reply{Text: "It is 5."},
	), &ai.Config{})
	reg, err := otelchat.Observe(router, fixedConns(3), &otelchat.Options{MeterProvider: s.mp})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()

	client := chat.NewLocalClient(router)
	defer client.Close()
	var answer string
	sess, err := client.Builder().OnMessage(func(text string) { answer = text }).Connect(context.Background(), "calc")
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Chat(context.Background(), "2+3?"); err != nil || answer != "It is 5." {
		t.Fatalf("answer %q, err %v", answer, err)
	}

	if got, want := s.tree(), `route calc [server]
  invoke_agent Calculator.Ask [internal]
    chat scripted [client]
    execute_tool add [internal]
    chat scripted [client]
`; got != want {
		t.Fatalf("span tree:\n%s\nwant:\n%s", got, want)
	}
	conv := "gen_ai.conversation.id=" + sess.ScopeID()
	wantAttrs(t, "request", s.span(t, "route calc")[0],
		"chat.route=calc", "chat.scope.id="+sess.ScopeID(), conv, "chat.outcome=ok")
	wantAttrs(t, "turn", s.span(t, "invoke_agent Calculator.Ask")[0],
		"gen_ai.operation.name=invoke_agent", "gen_ai.agent.name=Calculator.Ask", "gen_ai.provider.name=openai", conv,
		fmt.Sprintf("gen_ai.usage.input_tokens=%d", srv.Requests()[0].PromptTokens+srv.Requests()[1].PromptTokens),
		fmt.Sprintf("gen_ai.usage.output_tokens=%d", llmtest.EstimateTextTokens("add")+llmtest.EstimateTextTokens(`{"a":2,"b":3}`)+llmtest.EstimateTextTokens("It is 5.")))
	chats := s.span(t, "chat scripted")
	for i, finish := range []string{"tool_calls", "stop"} {
		out := llmtest.EstimateTextTokens("It is 5.")
		if i == 0 {
			out = llmtest.EstimateTextTokens("add") + llmtest.EstimateTextTokens(`{"a":2,"b":3}`)
		}
		wantAttrs(t, "model call", chats[i],
			"gen_ai.operation.name=chat", "gen_ai.provider.name=openai", "gen_ai.request.model=scripted", conv,
			fmt.Sprintf("gen_ai.usage.input_tokens=%d", srv.Requests()[i].PromptTokens),
			fmt.Sprintf("gen_ai.usage.output_tokens=%d", out),
			`gen_ai.response.finish_reasons=["`+finish+`"]`)
	}
	tool := s.span(t, "execute_tool add")[0]
	wantAttrs(t, "tool call", tool,
		"gen_ai.operation.name=execute_tool", "gen_ai.tool.name=add", "gen_ai.tool.call.id=call_1", "gen_ai.tool.type=function", conv)
	for _, sp := range s.spans.Ended() {
		if sp.Status().Code != codes.Unset {
			t.Fatalf("span %s has status %v", sp.Name(), sp.Status())
		}
	}

	m := s.metrics(t)
	reqs := m["chatgen.requests"].Data.(metricdata.Sum[int64]).DataPoints
	if len(reqs) != 1 || reqs[0].Value != 1 || !slices.Equal(attrs(reqs[0].Attributes.ToSlice()), []string{"chat.outcome=ok", "chat.route=calc"}) {
		t.Fatalf("chatgen.requests %+v", reqs)
	}
	if d := m["chatgen.request.duration"].Data.(metricdata.Histogram[float64]).DataPoints; len(d) != 1 || d[0].Count != 1 {
		t.Fatalf("chatgen.request.duration %+v", d)
	}
	if d := m["gen_ai.client.operation.duration"].Data.(metricdata.Histogram[float64]).DataPoints; len(d) != 1 || d[0].Count != 2 ||
		!slices.Equal(attrs(d[0].Attributes.ToSlice()), []string{"gen_ai.operation.name=chat", "gen_ai.provider.name=openai", "gen_ai.request.model=scripted"}) {
		t.Fatalf("gen_ai.client.operation.duration %+v", d)
	}
	tokens := map[string]int64{}
	for _, dp := range m["gen_ai.client.token.usage"].Data.(metricdata.Histogram[int64]).DataPoints {
		typ, _ := dp.Attributes.Value("gen_ai.token.type")
		tokens[typ.AsString()] = dp.Sum
	}
	in := int64(srv.Requests()[0].PromptTokens + srv.Requests()[1].PromptTokens)
	if tokens["input"] != in || tokens["output"] == 0 {
		t.Fatalf("gen_ai.client.token.usage %v, want %d input tokens", tokens, in)
	}
	gauges := func() []string {
		var out []string
		for _, name := range []string{"chatgen.conversations", "chatgen.scopes", "chatgen.ws.connections"} {
			dps := s.metrics(t)[name].Data.(metricdata.Sum[int64]).DataPoints
			out = append(out, fmt.Sprintf("%s=%d", name, dps[0].Value))
		}
		return out
	}
	if got := gauges(); !slices.Equal(got, []string{"chatgen.conversations=1", "chatgen.scopes=1", "chatgen.ws.connections=3"}) {
		t.Fatalf("gauges %q", got)
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	if got := gauges(); !slices.Equal(got, []string{"chatgen.conversations=0", "chatgen.scopes=0", "chatgen.ws.connections=3"}) {
		t.Fatalf("gauges after close %q", got)
	}
}

type fixedConns int

func (n fixedConns) Connections() int { return int(n) }

// TestTraceOfFailures: a failed request, a failed model call and failed
// tool calls carry error.type and an error status; content is recorded on
// opt-in only.
func TestTraceOfFailures(t *testing.T) {
	s := newSDK(t)
	veto := func(next ai.ToolHandler) ai.ToolHandler {
		return func(ctx context.Context, call *ai.ToolCall) (any, error) {
			if strings.Contains(call.Arguments, "13") {
				return nil, ai.Veto("13 is unlucky.")
			}
			return next(ctx, call)
		}
	}
	router, _ := calculator(t, s, llmtest.Sequence(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "add", Arguments: `{"a":13,"b":1}`}, {Name: "sub", Arguments: `{}`}}},
		llmtest.Reply{Status: 503, ErrorMessage: "overloaded"},
	), &ai.Config{ToolHooks: []ai.ToolHook{veto}, Telemetry: ai.Telemetry{RecordContent: true}})
	client := chat.NewLocalClient(router)
	defer client.Close()
	sess, err := client.Builder().Connect(context.Background(), "calc")
	if err != nil {
		t.Fatal(err)
	}
	err = sess.Chat(context.Background(), "13+1?")
	if !errors.Is(err, chat.ErrServerError) {
		t.Fatalf("err %v", err)
	}
	req := s.span(t, "route calc")[0]
	if req.Status().Code != codes.Error || !slices.Contains(attrs(req.Attributes()), "error.type=ServerError") ||
		!slices.Contains(attrs(req.Attributes()), "chat.outcome=ServerError") {
		t.Fatalf("request span %v %q", req.Status(), attrs(req.Attributes()))
	}
	chats := s.span(t, "chat scripted")
	if chats[1].Status().Code != codes.Error || !slices.Contains(attrs(chats[1].Attributes()), "error.type=503") {
		t.Fatalf("failed model call %v %q", chats[1].Status(), attrs(chats[1].Attributes()))
	}
	in := attrs(chats[0].Attributes())
	if !slices.ContainsFunc(in, func(a string) bool {
		return strings.HasPrefix(a, `gen_ai.input.messages=[{"role":"system","parts":[{"type":"text","content":"You add numbers."}]},{"role":"user"`)
	}) || !slices.ContainsFunc(in, func(a string) bool {
		return strings.HasPrefix(a, `gen_ai.output.messages=[{"role":"assistant","parts":[{"type":"tool_call","id":"call_1","name":"add","arguments":{"a":13,"b":1}}`)
	}) {
		t.Fatalf("content not recorded: %q", in)
	}
	for name, want := range map[string][]string{
		"execute_tool add": {"error.type=vetoed", `gen_ai.tool.call.arguments={"a":13,"b":1}`, "gen_ai.tool.call.result=13 is unlucky."},
		"execute_tool sub": {"error.type=unknown_tool"},
	} {
		sp := s.span(t, name)[0]
		for _, w := range want {
			if sp.Status().Code != codes.Error || !slices.Contains(attrs(sp.Attributes()), w) {
				t.Fatalf("%s: %v %q, want %q", name, sp.Status(), attrs(sp.Attributes()), w)
			}
		}
	}
}

// TestTraceKeepsErrorTextsOut: without RecordContent, no span carries the
// text of an error, which may repeat what the user wrote (a tool's "no
// such item: …", a provider's error): the status description is the
// error.type; with RecordContent the text is there.
func TestTraceKeepsErrorTextsOut(t *testing.T) {
	const secret = "my card 4111-1111"
	findTool := llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
		Name: "find", Description: "Find finds an item.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"item":{"type":"string"}},"required":["item"]}`),
	}}
	method := ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You find items.",
		Tools: []ai.Tool{{Definition: findTool, Invoke: func(_ context.Context, args string) (any, error) {
			var in struct{ Item string }
			if err := json.Unmarshal([]byte(args), &in); err != nil {
				return nil, &ai.ArgumentsError{Err: err}
			}
			return nil, fmt.Errorf("no such item: %s", in.Item)
		}}},
	}
	for _, content := range []bool{false, true} {
		t.Run(fmt.Sprintf("RecordContent=%v", content), func(t *testing.T) {
			s := newSDK(t)
			srv := llmtest.NewServer(llmtest.Sequence(
				llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "find", Arguments: `{"item":"` + secret + `"}`}}},
				llmtest.Reply{Status: 500, ErrorMessage: "cannot answer about " + secret},
			), nil)
			t.Cleanup(srv.Close)
			llm, err := srv.Client()
			if err != nil {
				t.Fatal(err)
			}
			svc := ai.NewService("example.com/shop.Finder", &ai.Config{Model: llm, Logger: slog.New(slog.DiscardHandler),
				Telemetry: ai.Telemetry{TracerProvider: s.tp, MeterProvider: s.mp, RecordContent: content}})
			p := chatimpl.NewPackage("example.com/shop")
			p.AddRoute(chatimpl.RouteSpec{Name: "find", Handle: func(ctx context.Context) error {
				req := chat.Request(ctx)
				_, err := svc.Chat(ctx, &ai.Request{Method: &method, User: req.UserMessage()})
				return err
			}})
			router, err := chat.NewRouter(&chat.RouterOptions{
				Logger: slog.New(slog.DiscardHandler),
				RouteHooks: []chat.RouteHook{otelchat.RouteHook(&otelchat.Options{
					TracerProvider: s.tp, MeterProvider: s.mp, RecordContent: content})},
			}, p)
			if err != nil {
				t.Fatal(err)
			}
			client := chat.NewLocalClient(router)
			defer client.Close()
			sess, err := client.Builder().Connect(context.Background(), "find")
			if err != nil {
				t.Fatal(err)
			}
			if err := sess.Chat(context.Background(), "where is "+secret+"?"); !errors.Is(err, chat.ErrServerError) {
				t.Fatalf("err %v", err)
			}
			for name, desc := range map[string]string{ // span: its status description without content
				"route find":              "ServerError",
				"invoke_agent Finder.Ask": "500",
				"execute_tool find":       "tool_error",
			} {
				sp := s.span(t, name)[0]
				if sp.Status().Code != codes.Error {
					t.Fatalf("%s: status %v", name, sp.Status())
				}
				if got := sp.Status().Description; content != strings.Contains(got, secret) || !content && got != desc {
					t.Fatalf("%s: status description %q (RecordContent %v)", name, got, content)
				}
			}
			chats := s.span(t, "chat")
			if d := chats[len(chats)-1].Status().Description; content != strings.Contains(d, secret) || !content && d != "500" {
				t.Fatalf("model call: status description %q (RecordContent %v)", d, content)
			}
			if content {
				return
			}
			for _, sp := range s.spans.Ended() {
				texts := []string{sp.Name(), sp.Status().Description}
				for _, a := range sp.Attributes() {
					texts = append(texts, a.Value.String())
				}
				for _, ev := range sp.Events() {
					texts = append(texts, ev.Name)
					for _, a := range ev.Attributes {
						texts = append(texts, a.Value.String())
					}
				}
				for _, txt := range texts {
					if strings.Contains(txt, secret) || strings.Contains(txt, "no such item") {
						t.Fatalf("span %s carries %q", sp.Name(), txt)
					}
				}
			}
		})
	}
}
