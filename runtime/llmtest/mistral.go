package llmtest

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// MistralServer is a Mistral chat-completions server on a loopback
// [httptest.Server], answering from a [Script]. Point langchaingo's
// mistral client at it with mistral.WithEndpoint(srv.URL) and any
// non-empty key.
//
// Mistral's wire is OpenAI's chat completions (see [Server], whose code it
// shares) with Mistral's stricter rules, checked before the script sees the
// request and answered with Mistral's texts and error body
// {"object":"error","message","type":"invalid_request_error","param":null,
// "code":null}:
//
//   - an Authorization: Bearer header (any non-empty key; else 401);
//   - a tool message needs its tool_call_id ("Tool call id has to be
//     defined."), and every tool-call id, in assistant and tool messages,
//     is 9 characters of a-z, A-Z, 0-9 ("Tool call id was X but must be
//     a-z, A-Z, 0-9, with a length of 9.");
//   - roles follow Mistral's order: system messages first, then user and
//     assistant messages, an assistant message followed by a user message
//     or, when it calls tools, by tool messages, which an assistant message
//     follows ("Unexpected role 'user' after role 'tool'"); two assistant
//     messages in a row are refused too;
//   - the tool messages after an assistant message answer as many calls as
//     it made ("Not the same number of function calls and responses");
//   - the last message is a user or tool message ("Expected last role User
//     or Tool (or Assistant with prefix True) for serving but got
//     assistant").
//
// Generated tool-call ids are Mistral-shaped: call00001, call00002, ….
// Answers have no reasoning_content; usage is {prompt_tokens,
// completion_tokens, total_tokens}. Streamed, all tool calls come whole in
// one delta (as Mistral sends them, never argument fragments), and the
// finish chunk carries the usage, followed by "data: [DONE]".
type MistralServer struct {
	// URL is the root URL of the API, without /v1 (such as
	// http://127.0.0.1:38461): pass it to mistral.WithEndpoint.
	URL string

	loopback
}

// mistralDialect is Mistral's variant of the chat-completions wire.
var mistralDialect = chatDialect{
	fail:           writeMistralError,
	validate:       validateMistral,
	authorize:      authorizeBearer,
	wholeToolCalls: true,
	usageInFinish:  true,
}

// NewMistralServer starts a MistralServer answering from script.
func NewMistralServer(script Script, opts *Options) *MistralServer {
	s := &MistralServer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		s.serveChat(w, r, &mistralDialect)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeMistralError(w, http.StatusNotFound, "Not Found")
	})
	s.init(script, opts, CacheRulesWire, func(n int) string { return fmt.Sprintf("call%05d", n) }, mux)
	s.URL = s.ts.URL
	return s
}

// authorizeBearer requires a non-empty bearer token.
func authorizeBearer(w http.ResponseWriter, r *http.Request) bool {
	if key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && key != "" {
		return true
	}
	writeMistralError(w, http.StatusUnauthorized, "Unauthorized")
	return false
}

// mistralToolCallID is the form of a Mistral tool-call id.
var mistralToolCallID = regexp.MustCompile(`^[a-zA-Z0-9]{9}$`)

// mistralRole returns the wire role of a message.
func mistralRole(r llms.ChatMessageType) string {
	switch r {
	case llms.ChatMessageTypeSystem:
		return "system"
	case llms.ChatMessageTypeAI:
		return "assistant"
	case llms.ChatMessageTypeTool, llms.ChatMessageTypeFunction:
		return "tool"
	default:
		return "user"
	}
}

// validateMistral makes Mistral's checks on a conversation and returns its
// message for the first violation, or "".
func validateMistral(msgs []llms.MessageContent) string {
	if len(msgs) == 0 {
		return "messages: List should have at least 1 item after validation, not 0"
	}
	badID := func(id string) string {
		return fmt.Sprintf("Tool call id was %s but must be a-z, A-Z, 0-9, with a length of 9.", id)
	}
	prev := ""
	calls, results := 0, 0
	for _, m := range msgs {
		role := mistralRole(m.Role)
		n := 0 // tool calls of this message
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.ToolCall:
				if !mistralToolCallID.MatchString(p.ID) {
					return badID(p.ID)
				}
				n++
			case llms.ToolCallResponse:
				if p.ToolCallID == "" {
					return "Tool call id has to be defined."
				}
				if !mistralToolCallID.MatchString(p.ToolCallID) {
					return badID(p.ToolCallID)
				}
			}
		}
		allowed := false
		switch prev {
		case "", "system":
			allowed = role == "system" || role == "user"
		case "user":
			allowed = role == "user" || role == "assistant"
		case "assistant":
			allowed = role == "user" || role == "tool" && calls > 0
		case "tool":
			allowed = role == "tool" || role == "assistant"
		}
		if !allowed {
			return fmt.Sprintf("Unexpected role '%s' after role '%s'", role, prev)
		}
		if prev == "tool" && role != "tool" && calls != results {
			return "Not the same number of function calls and responses"
		}
		switch role {
		case "assistant":
			calls, results = n, 0
		case "tool":
			results++
		}
		prev = role
	}
	if prev == "tool" && calls != results {
		return "Not the same number of function calls and responses"
	}
	if prev == "assistant" {
		return "Expected last role User or Tool (or Assistant with prefix True) for serving but got assistant"
	}
	return ""
}

// writeMistralError writes a Mistral error body.
func writeMistralError(w http.ResponseWriter, status int, message string) {
	typ := "invalid_request_error"
	if status >= 500 {
		typ = "internal_server_error"
	}
	writeJSON(w, status, map[string]any{
		"object": "error", "message": message, "type": typ, "param": nil, "code": nil,
	})
}
