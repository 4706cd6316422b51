package ai

import (
	"context"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/schema"
)

// A ContextSource is a [ToolSource] that also puts a block of text in the
// per-request context slot of every turn of the service: after the
// knowledge passages and the recalled long-term facts, in the prompt's
// copy of the turn's user message — never in the chat memory, and never
// before the cache-stable prefix (system message, tools, history), which
// stays byte-identical from turn to turn. Package runtime/plan's tool box
// is one: the current plan is its block.
//
// The service asks each of its [Config.ToolSources] that is a
// ContextSource once per turn that has a new user message, in the order of
// the sources, after the retrieval and the recall; a turn resuming a
// paused one (a confirmation) has no such message and gets no block.
type ContextSource interface {
	ToolSource
	// RequestContext returns the source's block for the turn running in
	// ctx, "" for none. An error fails the turn before any model call.
	RequestContext(ctx context.Context) (string, error)
}

// ContextHeader opens the blocks of the context sources in a user message:
// each block follows between <context source="name"> and </context> (a
// block cannot close its element: "</context" in it is escaped), then the
// line "Message:" and the user's message.
const ContextHeader = "Context kept by the application for this request (its current state; not written by the user):\n"

// contextBlock is the block of one context source.
type contextBlock struct {
	name string
	text string
}

// placeContext asks the service's context sources for their blocks and
// puts them in the prompt's copy of the user message, after the passages
// and the facts.
func (t *turn) placeContext(ctx context.Context, user string) error {
	n := len(t.prompt)
	if user == "" || n == 0 || t.prompt[n-1].Role != llms.ChatMessageTypeHuman {
		return nil
	}
	for _, src := range t.s.sources {
		cs, ok := src.(ContextSource)
		if !ok {
			continue
		}
		text, err := cs.RequestContext(ctx)
		if err != nil {
			return t.errorf("the request context of %s: %w", src.Name(), err)
		}
		if text = strings.TrimSpace(text); text != "" {
			t.blocks = append(t.blocks, contextBlock{name: src.Name(), text: text})
		}
	}
	if len(t.blocks) > 0 {
		t.fillSlot(user)
	}
	return nil
}

// fillSlot writes the per-request context slot of the turn: the prompt's
// copy of the user message (the last of the prompt) with the passages, the
// facts and the context blocks of the turn, in that order. Sent, never
// committed: t.msgs keeps the message as it was typed.
func (t *turn) fillSlot(user string) {
	n := len(t.prompt)
	if n == 0 || (len(t.passages) == 0 && len(t.facts) == 0 && len(t.blocks) == 0) {
		return
	}
	var text string
	if k := t.s.know; len(t.passages) > 0 && k != nil && k.cfg.Augment != nil {
		docs := make([]schema.Document, 0, len(t.passages)+len(t.facts)+len(t.blocks))
		docs = append(docs, t.passages...)
		docs = append(docs, factDocuments(t.facts)...)
		docs = append(docs, blockDocuments(t.blocks)...)
		text = k.cfg.Augment(user, docs)
	} else {
		text = augmentText(user, t.passages, t.facts, t.blocks)
	}
	t.prompt[n-1] = llms.TextParts(llms.ChatMessageTypeHuman, text)
}

// blockDocuments makes context blocks the documents a Knowledge.Augment of
// the application's own is given after the passages and the facts:
// Metadata "kind" is "context" and "source" the source's name.
func blockDocuments(blocks []contextBlock) []schema.Document {
	out := make([]schema.Document, len(blocks))
	for i, c := range blocks {
		out[i] = schema.Document{PageContent: c.text, Metadata: map[string]any{"kind": "context", "title": "Context", "source": c.name}}
	}
	return out
}

// writeBlocks writes the context blocks.
func writeBlocks(b *strings.Builder, blocks []contextBlock) {
	b.WriteString(ContextHeader)
	for _, c := range blocks {
		fmt.Fprintf(b, "<context source=%q>\n", escapeContext(c.name))
		b.WriteString(escapeContext(c.text))
		b.WriteString("\n</context>\n")
	}
}

// escapeContext keeps text from closing its element.
func escapeContext(text string) string {
	return strings.ReplaceAll(text, "</context", `<\/context`)
}
