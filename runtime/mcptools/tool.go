package mcptools

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chatscopes/chatgen/runtime/ai"
)

// A ToolError is a tool call the server answered with an error result
// (isError): the tool ran and failed. The model is told Text.
type ToolError struct {
	Server, Tool string // the server's Options.Name and the tool's name on the server
	Text         string // the result's content, as text
}

// Error implements error.
func (e *ToolError) Error() string {
	return fmt.Sprintf("MCP server %q, tool %q: %s", e.Server, e.Tool, e.Text)
}

// A CallError is a tool call that got no result: the session ended
// (wrapping [ErrUnavailable]), the call timed out (wrapping
// context.DeadlineExceeded), or the server answered with a protocol error
// (an unknown tool, arguments it rejects).
type CallError struct {
	Server, Tool string // the server's Options.Name and the tool's name on the server
	Err          error
}

// Error implements error.
func (e *CallError) Error() string {
	return fmt.Sprintf("MCP server %q, tool %q: %v", e.Server, e.Tool, e.Err)
}

// Unwrap returns the cause.
func (e *CallError) Unwrap() error { return e.Err }

// validName is what every model provider accepts as a tool name: OpenAI's,
// Anthropic's and Mistral's rule (letters, digits, '_' and '-', 64 at
// most), and Gemini's (a letter or '_' first).
var validName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$`)

// validPrefix is what may start a valid name and leave room for one more
// character.
var validPrefix = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_-]{0,62}$`)

// nameRule says what validName accepts.
const nameRule = "1 to 64 letters, digits, '_' and '-', starting with a letter or '_'"

// list lists the tools of the session cs, keeps those offered and makes
// them ai.Tools that call through c. Those the session's tasks says are
// callable only as tasks are left out.
func (s *Source) list(ctx context.Context, cs *mcp.ClientSession, c *conn, tasks *taskTools) ([]ai.Tool, error) {
	var tools []ai.Tool
	var all []string
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("%s: %w: listing its tools: %w", s.name, ErrUnavailable, err)
		}
		all = append(all, t.Name)
		if !s.offered(t.Name) {
			continue
		}
		if tasks.required(t.Name) {
			if s.allow[t.Name] {
				return nil, fmt.Errorf("%s: %w %q: it is callable only as an MCP task, which this client does not support", s.name, ErrUnusableTool, t.Name)
			}
			if _, warned := s.taskOnly.LoadOrStore(t.Name, true); !warned {
				s.opts.Logger.WarnContext(ctx, "mcptools: a tool of the MCP server is callable only as an MCP task, which this client does not support; it is left out",
					"server", s.opts.Name, "tool", t.Name)
			}
			continue
		}
		tool, err := s.definition(t)
		if err != nil {
			if s.allow[t.Name] {
				return nil, err
			}
			s.opts.Logger.ErrorContext(ctx, "mcptools: a tool of the MCP server is left out", "server", s.opts.Name, "err", err)
			continue
		}
		name := t.Name
		tool.Invoke = func(ctx context.Context, args string) (any, error) { return c.call(ctx, name, args) }
		tools = append(tools, tool)
	}
	for _, n := range s.opts.Allow {
		if !slices.Contains(all, n) {
			return nil, fmt.Errorf("%s: %w: it has no tool %q (it has %s)", s.name, ErrUnusableTool, n, quoted(all))
		}
	}
	return tools, nil
}

// definition returns the ai.Tool of the tool t, without its Invoke: what
// the model is told of it, its name (with the Prefix), its description and
// its input schema, as the server gives it. A schema that is not a JSON Schema of an object, or a name a model
// provider would reject, is an error wrapping ErrUnusableTool.
func (s *Source) definition(t *mcp.Tool) (ai.Tool, error) {
	name := s.opts.Prefix + t.Name
	if !validName.MatchString(name) {
		return ai.Tool{}, fmt.Errorf("%s: %w %q: models accept tool names of %s", s.name, ErrUnusableTool, name, nameRule)
	}
	raw, err := json.Marshal(t.InputSchema)
	if err != nil {
		return ai.Tool{}, fmt.Errorf("%s: %w %q: its input schema: %w", s.name, ErrUnusableTool, t.Name, err)
	}
	if err := checkSchema(raw); err != nil {
		return ai.Tool{}, fmt.Errorf("%s: %w %q: its input schema %s: %w", s.name, ErrUnusableTool, t.Name, clip(raw), err)
	}
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	if desc == "" && t.Annotations != nil {
		desc = t.Annotations.Title
	}
	return ai.Tool{Name: name, Description: desc, Parameters: json.RawMessage(raw)}, nil
}

// checkSchema reports why raw is not the JSON Schema of an object (draft
// 2020-12 or draft-07, local references only).
func checkSchema(raw []byte) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return fmt.Errorf("is not a JSON object")
	}
	var typ string
	if err := json.Unmarshal(obj["type"], &typ); err != nil || typ != "object" {
		return fmt.Errorf(`does not have "type": "object"`)
	}
	var schema jsonschema.Schema
	if err := json.Unmarshal(raw, &schema); err != nil {
		return err
	}
	if _, err := schema.Resolve(nil); err != nil {
		return err
	}
	return nil
}

// resultText is what the model is told of a result: its text contents,
// one per line (other contents described in brackets), or, without any,
// its structured content as JSON.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s %s]", c.Name, c.URI))
		case *mcp.EmbeddedResource:
			switch r := c.Resource; {
			case r == nil:
			case r.Text != "":
				parts = append(parts, r.Text)
			default:
				parts = append(parts, fmt.Sprintf("[resource %s %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob)))
			}
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	return strings.Join(parts, "\n")
}

// quoted lists names for a message: "a", "b"; "no tools" for none.
func quoted(names []string) string {
	if len(names) == 0 {
		return "no tools"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// clip shortens a schema for an error message.
func clip(raw []byte) string {
	const max = 120
	if len(raw) <= max {
		return string(raw)
	}
	return string(raw[:max]) + "…"
}
