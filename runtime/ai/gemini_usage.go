package ai

import (
	"context"
	"encoding/json"
	"io"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// Gemini sends usageMetadata in every response of a stream: the prompt's
// count in each response before the last, the whole call's in the last.
// Google's Go SDK (generative-ai-go, under llms/googleai) calls
// streamGenerateContent even for a call that does not stream, and its
// merged response keeps the usage of the first response (genai
// joinResponses: "TODO: Take the last UsageMetadata"), so langchaingo
// reports an answer of more than one response with the prompt's tokens
// and no output. [Transport] reads the usage of the last response of
// each generateContent and streamGenerateContent answer off the wire, and
// the service counts the call with it, once.

// geminiUsage is a response's usageMetadata, as the API sends it.
type geminiUsage struct {
	Prompt     int `json:"promptTokenCount"`
	Candidates int `json:"candidatesTokenCount"`
	Thoughts   int `json:"thoughtsTokenCount"`
	ToolPrompt int `json:"toolUsePromptTokenCount"`
	Cached     int `json:"cachedContentTokenCount"`
	Total      int `json:"totalTokenCount"`
}

// apply writes u in info, under the keys llms/googleai uses (int32, as it
// does): the prompt (with the tokens of tool-use prompts, billed as input
// too), the candidates as the completion and the total, which counts the
// model's thinking ([dialect.usage] makes that output).
func (u geminiUsage) apply(info map[string]any) {
	p, c, t := int32(u.Prompt+u.ToolPrompt), int32(u.Candidates), int32(u.Total)
	info["input_tokens"], info["PromptTokens"] = p, p
	info["output_tokens"], info["CompletionTokens"] = c, c
	info["total_tokens"], info["TotalTokens"] = t, t
	if u.Cached > 0 {
		cached := int32(u.Cached)
		info["CachedTokens"], info["CacheReadInputTokens"] = cached, cached
		info["NonCachedInputTokens"] = int32(u.Prompt) - cached
	} else {
		delete(info, "CachedTokens")
		delete(info, "CacheReadInputTokens")
		delete(info, "NonCachedInputTokens")
	}
}

// geminiGenerate reports whether path is a call of Gemini's
// generateContent or streamGenerateContent (the Gemini API's and Vertex
// AI's REST paths end so).
func geminiGenerate(path string) bool {
	return strings.HasSuffix(path, ":streamGenerateContent") || strings.HasSuffix(path, ":generateContent")
}

// useGeminiUsage makes resp count the usage of the last response Gemini
// sent for the call, as [Transport] read it into rec. Without it (the
// client does not go through Transport), a call whose reported usage has
// no output although it answered is logged, once per service: its usage
// is the prompt's only.
func (t *turn) useGeminiUsage(ctx context.Context, resp *llms.ContentResponse, rec *httpRecord) {
	if resp == nil {
		return
	}
	if u, ok := rec.geminiUsage(); ok {
		for _, c := range resp.Choices {
			if c == nil {
				continue
			}
			if c.GenerationInfo == nil {
				c.GenerationInfo = make(map[string]any)
			}
			u.apply(c.GenerationInfo)
		}
		return
	}
	if seen, _, _ := rec.outcome(); seen {
		return // through Transport, which found no usage: nothing to correct
	}
	c := pickChoice(resp)
	if c == nil || (c.Content == "" && len(c.ToolCalls) == 0) {
		return
	}
	if u := t.s.dialect.usage(c.GenerationInfo); u.CompletionTokens == 0 && t.s.geminiWarned.CompareAndSwap(false, true) {
		t.s.log().WarnContext(ctx, "ai: the googleai client reported no output tokens: Google's SDK keeps the usage "+
			"of a stream's first response, the prompt's; give the client ai.Transport to count each call whole",
			"service", t.s.name, "method", t.m.Name)
	}
}

// maxUsageBytes bounds the usageMetadata object read off the wire (a few
// hundred bytes with its per-modality details).
const maxUsageBytes = 16 << 10

// usageKey is the field of a response the scanner looks for.
const usageKey = "usageMetadata"

// usageBody passes a Gemini answer's body through, reading the
// usageMetadata of each response into rec as the client reads the body.
// It takes both framings: a JSON array of responses and server-sent
// events of one response each; each response is an outermost JSON object.
type usageBody struct {
	io.ReadCloser
	rec *httpRecord

	depth    int // open objects and arrays inside the outermost object; 0 outside one
	inStr    bool
	esc      bool
	key      [len(usageKey)]byte
	keyLen   int // the length of the last string of the outermost object (beyond len(key): not usageKey)
	state    uint8
	capture  bool // reading a usageMetadata object into buf
	overflow bool
	buf      []byte
}

// The states of a usageBody between the tokens of an outermost object.
const (
	usageNone     uint8 = iota
	usageString         // a string of the object just ended: maybe a key
	usageKeyColon       // the key was usageKey and its colon came
)

// Read implements io.Reader.
func (b *usageBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.scan(p[:n])
	return n, err
}

// scan advances the scanner over p.
func (b *usageBody) scan(p []byte) {
	for _, c := range p {
		if b.capture {
			if len(b.buf) < maxUsageBytes {
				b.buf = append(b.buf, c)
			} else {
				b.overflow = true
			}
		}
		if b.inStr {
			switch {
			case b.esc:
				b.esc = false
			case c == '\\':
				b.esc = true
			case c == '"':
				b.inStr = false
				if b.depth == 1 {
					b.state = usageString
				}
				continue
			}
			if b.depth == 1 {
				if b.keyLen < len(b.key) {
					b.key[b.keyLen] = c
				}
				b.keyLen++
			}
			continue
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			// Between tokens: the state holds.
		case '"':
			b.inStr = true
			if b.depth == 1 {
				b.keyLen, b.state = 0, usageNone
			}
		case ':':
			if b.depth == 1 && b.state == usageString && b.keyLen == len(usageKey) && string(b.key[:]) == usageKey {
				b.state = usageKeyColon
			} else {
				b.state = usageNone
			}
		case '{', '[':
			if b.depth == 1 && c == '{' && b.state == usageKeyColon {
				b.capture, b.overflow = true, false
				b.buf = append(b.buf[:0], c)
			}
			if b.depth > 0 || c == '{' { // outside a response, the array of a JSON stream is not counted
				b.depth++
			}
			b.state = usageNone
		case '}', ']':
			if b.depth > 0 {
				b.depth--
			}
			if b.capture && b.depth == 1 {
				b.capture = false
				b.found()
			}
			b.state = usageNone
		default:
			b.state = usageNone
		}
	}
}

// found records the usageMetadata object just read.
func (b *usageBody) found() {
	if b.overflow {
		return
	}
	var u geminiUsage
	if json.Unmarshal(b.buf, &u) == nil {
		b.rec.setGeminiUsage(u)
	}
}
