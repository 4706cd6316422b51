package ai

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tmc/langchaingo/llms"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
)

// benchTools is a generated-style package-level tool table.
var benchTools = []Tool{
	{
		Definition: llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
			Name:        "weather",
			Description: "Weather tells the weather in a city.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"the city"}},"required":["city"],"additionalProperties":false}`),
		}},
		Invoke: func(_ context.Context, arguments string) (any, error) {
			var args struct {
				City string `json:"city"`
			}
			if err := json.Unmarshal([]byte(arguments), &args); err != nil {
				return nil, &ArgumentsError{Err: err}
			}
			return "sunny in " + args.City, nil
		},
	},
	{
		Definition: llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
			Name:        "price",
			Description: "Price tells the price of a metal, in gold coins.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"metal":{"type":"string","enum":["iron","steel","mithril"]}},"required":["metal"],"additionalProperties":false}`),
		}},
		Immediate: true,
		Invoke:    func(context.Context, string) (any, error) { return 10, nil },
	},
}

var sinkTools []llms.Tool

// BenchmarkToolSchemas measures what a request costs for its tool schemas:
// the definitions are one slice per Method, made on first use (slice), and
// the service passes it to the model as llms.WithTools(slice)
// (call-options: the options of a turn, made once per turn and reused by
// its model calls).
func BenchmarkToolSchemas(b *testing.B) {
	m := &Method{Name: "Ask", Tools: benchTools}
	b.Run("slice", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkTools, _ = m.definitions(dialect{})
		}
	})
	b.Run("call-options", func(b *testing.B) {
		s := NewService("example.com/app.Assistant", &Config{Model: llmtest.NewModel(llmtest.Sequence(), nil)})
		t := &turn{s: s, m: m}
		t.defs, _ = m.definitions(s.dialect)
		var o llms.CallOptions
		b.ReportAllocs()
		for b.Loop() {
			t.setOptions()
			for _, opt := range t.opts {
				opt(&o)
			}
			if defs, _ := m.definitions(s.dialect); &o.Tools[0] != &defs[0] {
				b.Fatal("the tools were copied")
			}
		}
	})
}

// fastModel answers a tool call and then a text, alternately, from
// prebuilt responses, recording nothing: it leaves the service's own
// cost.
type fastModel struct {
	n     int
	call  *llms.ContentResponse
	final *llms.ContentResponse
}

func newFastModel() *fastModel {
	info := map[string]any{"PromptTokens": 100, "CompletionTokens": 10, "TotalTokens": 110}
	return &fastModel{
		call: &llms.ContentResponse{Choices: []*llms.ContentChoice{{StopReason: "tool_calls", GenerationInfo: info,
			ToolCalls: []llms.ToolCall{{ID: "call_1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "weather", Arguments: `{"city":"Paris"}`}}}}}},
		final: &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "It is sunny in Paris.", StopReason: "stop", GenerationInfo: info}}},
	}
}

func (m *fastModel) GenerateContent(context.Context, []llms.MessageContent, ...llms.CallOption) (*llms.ContentResponse, error) {
	m.n++
	if m.n%2 == 1 {
		// A fresh copy of the tool call: the service normalises calls in
		// place, as it may with a provider's response.
		c := *m.call.Choices[0]
		c.ToolCalls = append([]llms.ToolCall(nil), c.ToolCalls...)
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{&c}}, nil
	}
	return m.final, nil
}

func (m *fastModel) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// BenchmarkAITurn measures one chat-scoped turn with one tool call (two
// model calls, one tool, one memory commit into a window of 10 messages).
func BenchmarkAITurn(b *testing.B) {
	run := func(b *testing.B, model llms.Model, reset func(), tel ...Telemetry) {
		cfg := &Config{Model: model}
		if len(tel) > 0 {
			cfg.Telemetry = tel[0]
		}
		benchBareTurn(b, cfg, reset)
	}
	b.Run("llmtest.Model", func(b *testing.B) {
		m := llmtest.NewModel(llmtest.Rules(
			llmtest.When(llmtest.AfterToolResult(""), llmtest.Reply{Text: "It is sunny in Paris."}),
			llmtest.When(nil, llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "weather", Arguments: `{"city":"Paris"}`}}}),
		), nil)
		run(b, m, m.Reset)
	})
	b.Run("bare-model", func(b *testing.B) {
		run(b, newFastModel(), nil)
	})
	b.Run("generated", func(b *testing.B) {
		benchGeneratedTurn(b, newFastModel())
	})
	// The bare-model turn with OpenTelemetry's no-op providers given
	// explicitly (the default, above, is the globals with no SDK: no-op
	// too), and with the SDK recording every span (exported nowhere) and
	// every metric (read by nobody).
	b.Run("bare-model/otel-noop", func(b *testing.B) {
		run(b, newFastModel(), nil, Telemetry{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()})
	})
	b.Run("bare-model/otel-sdk", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		run(b, newFastModel(), nil, Telemetry{TracerProvider: tp, MeterProvider: mp})
	})
}

// benchWeather is the chat-scoped tool bean of benchGeneratedTurn.
type benchWeather struct{}

func (*benchWeather) Weather(_ context.Context, city string) (string, error) {
	return "sunny in " + city, nil
}

var benchWeatherBean = chat.NewBean[*benchWeather]("example.com/app.Weather", nil, func(context.Context) (*benchWeather, error) {
	return new(benchWeather), nil
})

// benchAsk is what chatgen generates for
// Ask(ctx context.Context, userMessage string) (string, error) with a
// constant system message and the tools of benchWeather.
var benchAsk = Method{
	Name:   "Ask",
	Kind:   chat.KindChat,
	System: "You are terse.",
	Tools: []Tool{{
		Definition: benchTools[0].Definition,
		Invoke: BeanTool(benchWeatherBean, func(ctx context.Context, w *benchWeather, args struct {
			City string `json:"city"`
		}) (any, error) {
			return w.Weather(ctx, args.City)
		}),
	}, {
		Definition: benchTools[1].Definition,
		Immediate:  true,
		Invoke: BeanTool(benchWeatherBean, func(context.Context, *benchWeather, struct{}) (any, error) {
			return 10, nil
		}),
	}},
}

func benchGeneratedAsk(ctx context.Context, svc *Service, userMessage string) (string, error) {
	reply, err := svc.Chat(ctx, &Request{Method: &benchAsk, User: userMessage})
	if err != nil {
		return "", err
	}
	return reply.Content, nil
}

// benchGeneratedTurn measures BenchmarkAITurn's turn made through the
// generated method: its prompt and tool code included.
func benchGeneratedTurn(b *testing.B, model llms.Model) {
	s := NewService("example.com/app.Assistant", &Config{
		Model:  model,
		Memory: memory.NewManager(&memory.ManagerOptions{Policy: memory.Window(memory.DefaultMaxMessages, nil)}),
	})
	ctx, err := chat.Begin(context.Background(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer chat.End(ctx)
	b.ReportAllocs()
	for b.Loop() {
		answer, err := benchGeneratedAsk(ctx, s, "Weather in Paris?")
		if err != nil {
			b.Fatal(err)
		}
		if answer != "It is sunny in Paris." {
			b.Fatalf("answer %q", answer)
		}
	}
}
