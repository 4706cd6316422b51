package otelchat_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// A request the client stops is recorded as a stop, not an error: its
// span's chat.outcome is Cancelled with no error status, and the counter
// chatgen.requests.cancelled counts it.
func TestTraceOfAStoppedRequest(t *testing.T) {
	s := newSDK(t)
	started := make(chan struct{}, 1)
	router, _ := calculator(t, s, llmtest.ScriptFunc(func(*llmtest.Request) (llmtest.Reply, error) {
		started <- struct{}{}
		return llmtest.Reply{Text: "a very long answer", Delay: time.Minute}, nil
	}), &ai.Config{})
	client := chat.NewLocalClient(router)
	defer client.Close()
	sess, err := client.Builder().Connect(context.Background(), "calc")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	call := sess.ChatAsync(ctx, "1+1?")
	select { // the model call is under way
	case <-started:
	case <-call.Done():
		t.Fatalf("the call ended first: %v", call.Err())
	}
	cancel()
	<-call.Done()
	if err := call.Err(); !errors.Is(err, chat.ErrCancelled) {
		t.Fatalf("the stopped call: %v", err)
	}
	req := s.span(t, "route calc")[0]
	if req.Status().Code == codes.Error || !slices.Contains(attrs(req.Attributes()), "chat.outcome=Cancelled") ||
		slices.ContainsFunc(attrs(req.Attributes()), func(a string) bool { return a == "error.type=Cancelled" }) {
		t.Fatalf("request span %v %q", req.Status(), attrs(req.Attributes()))
	}
	m, ok := s.metrics(t)["chatgen.requests.cancelled"]
	if !ok {
		t.Fatal("no chatgen.requests.cancelled")
	}
	sum := m.Data.(metricdata.Sum[int64])
	if len(sum.DataPoints) != 1 || sum.DataPoints[0].Value != 1 {
		t.Fatalf("chatgen.requests.cancelled: %+v", sum.DataPoints)
	}
	if route, _ := sum.DataPoints[0].Attributes.Value("chat.route"); route.AsString() != "calc" {
		t.Fatalf("chatgen.requests.cancelled attributes: %v", sum.DataPoints[0].Attributes)
	}
}
