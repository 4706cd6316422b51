package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// TestOTelWalkthrough: with -otel, the walkthrough exports one trace per
// request to standard output, the model and tool calls (nested AI
// services included) under the request span, and the metrics at
// shutdown. It installs the global providers for good: the tests after
// it export to a provider that is shut down.
func TestOTelWalkthrough(t *testing.T) {
	var out lockedBuffer
	shutdown, err := setupOTel(&out)
	if err != nil {
		t.Fatal(err)
	}
	a := newOfflineApp(t)
	var chat strings.Builder
	if err := runTerminal(context.Background(), a.router, strings.NewReader(strings.Join(walkthrough, "\n")+"\n"), &chat); err != nil {
		t.Fatal(err)
	}
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	type span struct {
		Name        string
		SpanContext struct{ TraceID, SpanID string }
		Parent      struct{ SpanID string }
	}
	var spans []span
	names := map[string]bool{}
	dec := json.NewDecoder(&out.buf)
	metrics := false
	for dec.More() {
		var v map[string]json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		if _, ok := v["ScopeMetrics"]; ok {
			metrics = strings.Contains(string(v["ScopeMetrics"]), "gen_ai.client.token.usage")
			continue
		}
		raw, _ := json.Marshal(v)
		var s span
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		spans = append(spans, s)
		names[s.Name] = true
	}
	roots := 0
	for _, s := range spans {
		if s.Parent.SpanID == "0000000000000000" {
			roots++
		}
	}
	if roots != len(walkthrough) {
		t.Fatalf("%d request traces, want %d", roots, len(walkthrough))
	}
	for _, want := range []string{"route menu", "route weapon", "route enchant", "invoke_agent MainMenu.Chat",
		"execute_tool buildWeapon", "invoke_agent WeaponBuilder.Chat", "chat scripted", "execute_tool bind"} {
		if !names[want] {
			t.Errorf("no span %q among %v", want, names)
		}
	}
	if !metrics {
		t.Error("no GenAI metrics exported at shutdown")
	}
}
