package ai

import (
	"context"

	"github.com/tmc/langchaingo/llms"
)

// A ResultOffloader is a [ToolSource] that keeps large tool results out of
// the chat memory, and out of the prompts, as the agentic search keeps its
// passages (see [Knowledge.RememberPassages]): the memory keeps a short
// stub naming the result, and a tool of the source reads the result, or a
// part of it, on demand. Package runtime/offload makes one, which keeps
// the results in the conversation store with their chat scope.
//
// The service asks the first of its [Config.ToolSources] that is a
// ResultOffloader about each successful tool result, before the model is
// told it, except the agentic search tool's (whose passages the memory
// forgets by itself). What the memory keeps is what every later turn
// sends: the stub, byte for byte, so the cache-stable prefix of the
// prompts stays stable.
type ResultOffloader interface {
	ToolSource
	// OffloadResult returns what the turn's own model calls are told of
	// the result of ex (ex.Text, or a stub when the result is too large
	// even for them) and what the chat memory keeps of it (a stub, or
	// ex.Text when the result is small enough to keep). ctx is the
	// turn's: it carries the chat scope and the request's store batch.
	// It cannot fail the turn: a failure to keep the result is the
	// offloader's to report (in what it returns, and in its logs).
	OffloadResult(ctx context.Context, ex ToolExecution) (prompt, kept string)
}

// addResult adds the result of ex to the turn: to the prompt as the
// model is told it, and to what is committed as the memory keeps it (the
// passages' ids of an agentic search, an offloader's stub). ex.Text
// becomes what the model was told.
func (t *turn) addResult(ctx context.Context, ex *ToolExecution) {
	prompt, kept := ex.Text, ex.Text
	if ex.Err == nil {
		if ids, ok := t.s.know.keptPassages(ex); ok {
			kept = ids
		} else if o := t.s.offloader(); o != nil {
			prompt, kept = o.OffloadResult(ctx, *ex)
			ex.Text = prompt
		}
	}
	r := llms.ToolCallResponse{ToolCallID: ex.ID, Name: ex.Name, Content: prompt}
	t.prompt = append(t.prompt, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{r}})
	r.Content = kept
	t.msgs = append(t.msgs, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{r}})
}

// offloader returns the first of the service's sources that is a
// [ResultOffloader], or nil.
func (s *Service) offloader() ResultOffloader {
	for _, src := range s.sources {
		if o, ok := src.(ResultOffloader); ok {
			return o
		}
	}
	return nil
}
