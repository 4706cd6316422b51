package mcptools

import (
	"context"
	"net/http"
	"os/exec"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Command returns the [Options.Transport] of a server that runs as a
// command and talks MCP over its stdin and stdout: each session starts
// name with args, and closing the session closes the command's stdin and
// waits for it to exit (signalling it after a few seconds). The process
// lives as long as its session, not as the context that opened it. Its
// stderr is discarded; for another set-up (environment, directory,
// stderr), return an &mcp.CommandTransport of your own exec.Cmd.
func Command(name string, args ...string) func(context.Context) (mcp.Transport, error) {
	return func(context.Context) (mcp.Transport, error) {
		return &mcp.CommandTransport{Command: exec.Command(name, args...)}, nil
	}
}

// StreamableHTTP returns the [Options.Transport] of a server at endpoint
// over MCP's streamable HTTP transport. client nil means
// http.DefaultClient; give one with a Transport that adds credentials
// when the server needs them.
func StreamableHTTP(endpoint string, client *http.Client) func(context.Context) (mcp.Transport, error) {
	return func(context.Context) (mcp.Transport, error) {
		return &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: client}, nil
	}
}
