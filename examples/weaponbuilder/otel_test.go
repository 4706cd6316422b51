package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
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
		SpanKind    int
		StartTime   time.Time
		Attributes  []struct {
			Key   string
			Value struct{ Value any }
		}
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

	// The tree docs/observability.md shows: each trace's spans by parent,
	// in start order, with a few of their attributes.
	children := map[string][]span{}
	for _, s := range spans {
		children[s.Parent.SpanID] = append(children[s.Parent.SpanID], s)
	}
	for _, c := range children {
		slices.SortStableFunc(c, func(a, b span) int { return a.StartTime.Compare(b.StartTime) })
	}
	shown := []struct{ key, as string }{
		{"chat.route", "route"}, {"chat.outcome", "outcome"},
		{"gen_ai.usage.input_tokens", "input_tokens"}, {"gen_ai.usage.output_tokens", "output_tokens"},
		{"gen_ai.response.finish_reasons", "finish_reasons"}, {"gen_ai.tool.name", "name"},
	}
	kinds := map[int]string{1: "internal", 2: "server", 3: "client"}
	var tree strings.Builder
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		for _, s := range children[parent] {
			fmt.Fprintf(&tree, "%s%s  [%s]", strings.Repeat("  ", depth), s.Name, kinds[s.SpanKind])
			var attrs []string
			for _, sh := range shown {
				for _, a := range s.Attributes {
					if a.Key != sh.key {
						continue
					}
					v := a.Value.Value
					if l, ok := v.([]any); ok && len(l) == 1 {
						v = l[0]
					}
					attrs = append(attrs, fmt.Sprintf("%s=%v", sh.as, v))
				}
			}
			if len(attrs) > 0 {
				tree.WriteString("  " + strings.Join(attrs, " "))
			}
			tree.WriteByte('\n')
			walk(s.SpanContext.SpanID, depth+1)
		}
	}
	walk("0000000000000000", 0)
	checkDocTrace(t, len(spans), tree.String())
}

// updateDocs makes the tests that check docs against the example rewrite
// the docs instead.
var updateDocs = flag.Bool("update", false, "rewrite the docs the tests compare with the example")

// checkDocTrace compares the span count and the tree of the walkthrough
// with docs/observability.md's, which -update rewrites.
func checkDocTrace(t *testing.T, n int, tree string) {
	t.Helper()
	const doc = "../../docs/observability.md"
	raw, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	const intro = "As a tree (each trace's spans by\nparent, in start order, with a few of their attributes):\n\n```\n"
	i := strings.Index(text, intro)
	if i < 0 {
		t.Fatalf("%s: the trace tree's introduction is gone", doc)
	}
	start := i + len(intro)
	end := strings.Index(text[start:], "```\n")
	if end < 0 {
		t.Fatalf("%s: the trace tree's block does not end", doc)
	}
	end += start
	count := regexp.MustCompile(`prints \d+ spans, one trace per request`)
	want := count.ReplaceAllString(text[:start], fmt.Sprintf("prints %d spans, one trace per request", n)) + tree + text[end:]
	if want == text {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(doc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s shows another trace than the walkthrough makes (go test ./examples/weaponbuilder -run TestOTelWalkthrough -update rewrites it); the walkthrough's, %d spans:\n%s", doc, n, tree)
}
