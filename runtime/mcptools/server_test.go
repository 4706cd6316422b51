package mcptools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chatscopes/chatgen/runtime/mcptools"
)

// The tests' MCP servers are real ones, built with the SDK: over stdio the
// test binary runs itself as the server (TestMain), over streamable HTTP
// an httptest server on loopback serves one.

// serverArg is the first argument that makes the test binary an MCP
// server over stdio; the second is the variant.
const serverArg = "mcptools-test-server"

func TestMain(m *testing.M) {
	if len(os.Args) >= 3 && os.Args[1] == serverArg {
		if os.Args[2] == "crash" {
			fmt.Fprint(os.Stderr, strings.Repeat("x", 5000)+"\nlore: cannot read /etc/lore.yaml\nlore: giving up\n")
			os.Exit(2)
		}
		if os.Args[2] == "mute" {
			// A server that reads and never answers.
			_, _ = io.Copy(io.Discard, os.Stdin)
			os.Exit(0)
		}
		if v := os.Args[2]; v == "http-sse" || v == "http-json" {
			// The "hard" server over streamable HTTP on loopback, in a
			// process of its own: it prints its URL, and ends with its
			// stdin.
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				fmt.Fprintln(os.Stderr, "test server:", err)
				os.Exit(1)
			}
			fmt.Printf("http://%s\n", ln.Addr())
			srv := newServer("hard", false)
			go func() {
				_, _ = io.Copy(io.Discard, os.Stdin)
				os.Exit(0)
			}()
			_ = http.Serve(ln, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
				&mcp.StreamableHTTPOptions{JSONResponse: v == "http-json"}))
			os.Exit(1)
		}
		if v := os.Args[2]; v == "deaf" || v == "stubborn" {
			// A server that goes on after its input ends: "deaf" until
			// SIGTERM or SIGUSR1, "stubborn" (which ignores SIGTERM)
			// until SIGUSR1 or SIGKILL.
			sigs := make(chan os.Signal, 1)
			signal.Notify(sigs, syscall.SIGUSR1)
			if v == "stubborn" {
				signal.Notify(sigs, syscall.SIGTERM)
			}
			_ = newServer("lore", true).Run(context.Background(), &mcp.StdioTransport{})
			for sig := range sigs {
				if sig == syscall.SIGUSR1 {
					os.Exit(0)
				}
			}
		}
		srv := newServer(os.Args[2], true)
		if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// stdio returns the transport of the test binary run as the server
// variant; more arguments, such as a mark to find the process by, are
// passed on and ignored.
func stdio(variant string, more ...string) func(context.Context) (mcp.Transport, error) {
	return mcptools.Command(os.Args[0], append([]string{serverArg, variant}, more...)...)
}

type legendArgs struct {
	Topic string `json:"topic" jsonschema:"what the legend is about"`
}

// newServer returns the lore server: "legend" tells a legend (an error
// result for an unknown topic), "count" counts its calls per session,
// "slow" answers when cancelled; over stdio, "die" makes the process
// exit during the call. The variant "bad" adds a tool with a broken input
// schema and one whose name models reject. The variant "hard" adds "tome",
// which answers with n bytes, and "stuck", which never answers, even when
// cancelled. The variant "env" adds "get_env", which tells the process's
// environment. The variant "tasks" adds "ritual", callable only as a
// task. Over stdio the variant "mute" is a process that reads its
// input and never answers, and "crash" one that writes to its stderr and
// exits.
func newServer(variant string, stdio bool) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "lore", Version: "v1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "legend", Description: "Legend tells the legend of a topic."},
		func(_ context.Context, _ *mcp.CallToolRequest, args legendArgs) (*mcp.CallToolResult, any, error) {
			if args.Topic == "unknown" {
				return nil, nil, errors.New("no legend speaks of that")
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "The legend of " + args.Topic + ": forged in starfire."}}}, nil, nil
		})
	var mu sync.Mutex
	counts := map[*mcp.ServerSession]int{}
	mcp.AddTool(srv, &mcp.Tool{Name: "count", Description: "Count counts its calls in this session."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			counts[req.Session]++
			n := counts[req.Session]
			mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(n)}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "slow", Description: "Slow answers when it is cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	if stdio {
		mcp.AddTool(srv, &mcp.Tool{Name: "die", Description: "Die ends the server's process."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				os.Exit(3)
				return nil, nil, nil
			})
	}
	if variant == "hard" {
		mcp.AddTool(srv, &mcp.Tool{Name: "tome", Description: "Tome recites a tome of n bytes."},
			func(_ context.Context, _ *mcp.CallToolRequest, args struct {
				N int `json:"n"`
			}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("é", args.N/2)}}}, nil, nil
			})
	}
	if variant == "hard" {
		mcp.AddTool(srv, &mcp.Tool{Name: "stuck", Description: "Stuck never answers, even when cancelled."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				select {}
			})
	}
	if variant == "tasks" {
		mcp.AddTool(srv, &mcp.Tool{Name: "ritual", Description: "Ritual runs a long ritual, only as an MCP task."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return nil, nil, errors.New("ritual: call me as a task")
			})
		srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				res, err := next(ctx, method, req)
				if list, ok := res.(*mcp.ListToolsResult); ok && err == nil {
					return taskOnlyList{list}, nil
				}
				return res, err
			}
		})
	}
	if variant == "env" {
		mcp.AddTool(srv, &mcp.Tool{Name: "get_env", Description: "GetEnv tells the server's environment."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(os.Environ(), "\n")}}}, nil, nil
			})
	}
	if variant == "bad" {
		noop := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran"}}}, nil
		}
		srv.AddTool(&mcp.Tool{Name: "broken", Description: "Broken has a broken schema.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":7}}}`)}, noop)
		srv.AddTool(&mcp.Tool{Name: "read.scroll", Description: "A name with a dot.",
			InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
		srv.AddTool(&mcp.Tool{Name: "3d_scroll", Description: "A name Gemini rejects: it starts with a digit.",
			InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
	}
	return srv
}

// httpServer serves the lore server over streamable HTTP on loopback.
type httpServer struct {
	*httptest.Server
	mcp    *mcp.Server
	client *http.Client // the clients' own, whose idle connections the test closes
}

func newHTTPServer(t testing.TB, variant string) *httpServer {
	t.Helper()
	srv := newServer(variant, false)
	h := &httpServer{mcp: srv}
	h.Server = httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	h.client = &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		h.client.CloseIdleConnections()
		h.Close()
	})
	return h
}

// transport returns the transport of a client of h.
func (h *httpServer) transport() func(context.Context) (mcp.Transport, error) {
	return mcptools.StreamableHTTP(h.URL, h.client)
}

// sessions counts the sessions the server holds.
func (h *httpServer) sessions() int {
	n := 0
	for range h.mcp.Sessions() {
		n++
	}
	return n
}

// taskOnlyList is a tools/list result in which "ritual" is callable only
// as a task (execution.taskSupport "required", MCP 2025-11-25), which the
// SDK's mcp.Tool cannot say.
type taskOnlyList struct{ *mcp.ListToolsResult }

func (l taskOnlyList) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(l.ListToolsResult)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for _, t := range m["tools"].([]any) {
		if tool := t.(map[string]any); tool["name"] == "ritual" {
			tool["execution"] = map[string]any{"taskSupport": "required"}
		}
	}
	return json.Marshal(m)
}

// waitSessions returns the number of sessions on the server once it is
// want, or after 10 s: the server ends a session a client closed after
// answering the close, so its count lags the client's by a moment.
func (h *httpServer) waitSessions(want int) int {
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := h.sessions()
		if n == want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(time.Millisecond)
	}
}
