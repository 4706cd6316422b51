// Package memory is the chat memory of chatgen's AI services: what an AI
// service remembers of a conversation and sends back to the model, with the
// semantics of langchain4j's MessageWindowChatMemory and
// TokenWindowChatMemory.
//
// A message is langchaingo's [llms.MessageContent]: a system, human or ai
// message (an ai message may carry [llms.ToolCall] parts), or a tool message
// carrying one [llms.ToolCallResponse]. A [Memory] holds the messages of one
// memory id under a [Policy]:
//
//   - [Window](n) keeps the newest turns that total at most n messages;
//   - [TokenWindow](max, tokenizer) keeps the newest turns that fit in max
//     tokens, counting each message once ([EstimateTokens] by default);
//   - [Compressing](max, summarizer, opts) is a token memory that, instead
//     of forgetting its oldest messages, folds them into a summary written
//     by a [Summarizer] ([NewModelSummarizer]: a language model), pinned
//     after the system message and stored with the messages. It summarises
//     in batches, when the messages cross a high-water mark, down to a
//     low-water mark, and a failing summarizer loses nothing.
//
// All evict (or summarise) whole turns, the oldest first: a turn is a user
// message and every message up to the next one (AI messages, tool calls,
// tool results). So the messages after the system message always start
// with a user message, as every provider wants, and a tool call never
// leaves without its results; a window may hold fewer messages than its
// size, and the newest turn is kept even when it alone exceeds it. All
// keep one system message, first; an identical one is ignored and a
// different one replaces it. [Memory.Add] is a transaction: an AI turn
// (user message, tool calls, tool results, answer) goes in whole or not at
// all, with a single store write.
//
// A [Store] persists the lists: [NewInMemoryStore] (the default) or the
// durable [NewFileStore]; Redis or SQL stores implement the same interface,
// encode messages with [MarshalMessages], and can check themselves with
// package storetest. A [Manager] hands out the memory of each id and
// deletes it when its chat scope ends.
//
// A short example:
//
//	memories := memory.NewManager(&memory.ManagerOptions{Policy: memory.TokenWindow(4000, nil, nil)})
//	mem, err := memories.Memory(ctx, "scope-1#example.com/app.Assistant.Chat")
//	if err != nil { … }
//	err = mem.Add(ctx,
//		llms.TextParts(llms.ChatMessageTypeSystem, "You are terse."),
//		llms.TextParts(llms.ChatMessageTypeHuman, "Hi"),
//		llms.TextParts(llms.ChatMessageTypeAI, "Hello."))
//	msgs, err := mem.Messages(ctx) // system, human, ai
//	…
//	err = memories.Delete(ctx, "scope-1#example.com/app.Assistant.Chat") // the scope ended
package memory
