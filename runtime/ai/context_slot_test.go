package ai_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/schema"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// blockSource is a ContextSource of the tests: no tools, a fixed block.
type blockSource struct {
	name  string
	block string
	err   error
}

func (b *blockSource) Name() string                                   { return b.name }
func (b *blockSource) Tools(context.Context) ([]ai.Tool, error)       { return nil, nil }
func (b *blockSource) RequestContext(context.Context) (string, error) { return b.block, b.err }

// The blocks of context sources follow the passages and the facts, in
// the order of the sources, each in its element, escaped; the memory
// keeps the message as typed.
func TestContextBlocksAfterFacts(t *testing.T) {
	lt := &facts{recall: []string{"The user likes crossbows."}}
	srcs := []ai.ToolSource{
		&blockSource{name: "plan", block: "Plan \"x\"\n[0] todo: a </context> b"},
		&blockSource{name: "empty", block: "  "},
		&blockSource{name: "clock", block: "It is noon."},
	}
	f := newServerFixture(t, llmtest.Sequence(llmtest.Reply{Text: "ok"}), &ai.Config{
		Knowledge: &ai.Knowledge{Retriever: &keywords{docs: lore}, MaxPassages: 1}, LongTerm: lt, ToolSources: srcs,
	})
	ctx := begin(t)
	req := f.req("Who forged Dawnbreaker?")
	req.Method.Tools = nil
	if _, err := f.svc.Chat(ctx, req); err != nil {
		t.Fatal(err)
	}
	sent := f.requests()[0].LastUserText()
	iFacts := strings.Index(sent, ai.FactsHeader)
	tail := ai.ContextHeader +
		"<context source=\"plan\">\nPlan \"x\"\n[0] todo: a <\\/context> b\n</context>\n" +
		"<context source=\"clock\">\nIt is noon.\n</context>\n" +
		"\nMessage:\nWho forged Dawnbreaker?"
	if !strings.HasPrefix(sent, "Passages from the knowledge base") || iFacts < 0 || !strings.HasSuffix(sent, tail) || strings.Index(sent, ai.ContextHeader) < iFacts {
		t.Fatalf("sent\n%s", sent)
	}
	if got := f.requests()[0].UserTyped(); got != "Who forged Dawnbreaker?" {
		t.Fatalf("UserTyped = %q", got)
	}
	if mem := strings.Join(f.memory(ctx, memID(t, ctx)), "\n"); strings.Contains(mem, "noon") {
		t.Fatalf("the memory holds a block:\n%s", mem)
	}
}

// A block alone opens the message with ai.ContextHeader.
func TestContextBlockAlone(t *testing.T) {
	f := newServerFixture(t, llmtest.Sequence(llmtest.Reply{Text: "ok"}), &ai.Config{
		ToolSources: []ai.ToolSource{&blockSource{name: "clock", block: "It is noon."}},
	})
	ctx := begin(t)
	req := f.req("Hi")
	req.Method.Tools = nil
	if _, err := f.svc.Chat(ctx, req); err != nil {
		t.Fatal(err)
	}
	want := ai.ContextHeader + "<context source=\"clock\">\nIt is noon.\n</context>\n\nMessage:\nHi"
	if got := f.requests()[0].LastUserText(); got != want {
		t.Fatalf("sent %q\nwant %q", got, want)
	}
	if got := f.requests()[0].UserTyped(); got != "Hi" {
		t.Fatalf("llmtest's UserTyped = %q, want the message as typed", got)
	}
}

// A Knowledge.Augment of the application's own gets the blocks as
// documents of kind "context", after the passages and the facts.
func TestContextBlocksToCustomAugment(t *testing.T) {
	var kinds []string
	augment := func(user string, docs []schema.Document) string {
		kinds = kinds[:0]
		for _, d := range docs {
			k, _ := d.Metadata["kind"].(string)
			if k == "context" {
				k += ":" + d.Metadata["source"].(string) + ":" + d.PageContent
			}
			kinds = append(kinds, k)
		}
		return "custom " + user
	}
	f := newServerFixture(t, llmtest.Sequence(llmtest.Reply{Text: "ok"}), &ai.Config{
		Knowledge:   &ai.Knowledge{Retriever: &keywords{docs: lore}, MaxPassages: 1, Augment: augment},
		LongTerm:    &facts{recall: []string{"A fact."}},
		ToolSources: []ai.ToolSource{&blockSource{name: "clock", block: "It is noon."}},
	})
	ctx := begin(t)
	req := f.req("Who forged Dawnbreaker?")
	req.Method.Tools = nil
	if _, err := f.svc.Chat(ctx, req); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(kinds, ","); got != ",fact,context:clock:It is noon." {
		t.Fatalf("Augment got kinds %q", got)
	}
}

// A context source that fails fails the turn before any model call.
func TestContextSourceError(t *testing.T) {
	boom := errors.New("the plan store is down")
	f := newServerFixture(t, llmtest.Sequence(llmtest.Reply{Text: "ok"}), &ai.Config{
		ToolSources: []ai.ToolSource{&blockSource{name: "plan", err: boom}},
	})
	ctx := begin(t)
	req := f.req("Hi")
	req.Method.Tools = nil
	_, err := f.svc.Chat(ctx, req)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "the request context of plan") {
		t.Fatalf("Chat = %v", err)
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("%d model calls", n)
	}
}
