package a2atools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/a2atools"
)

// agentsStop are the real agents, with a func that stops each.
var agentsStop = []struct {
	name, rpc, version, canceled string // rpc: the JSON-RPC endpoint, relative to the base URL
	start                        func(t testing.TB) (string, func())
}{
	{"js-1.0", "a2a/jsonrpc", a2atools.Version1, "TASK_STATE_CANCELED", func(t testing.TB) (string, func()) { return jsAgentStop(t) }},
	{"go-0.3", "rpc", a2atools.Version03, "canceled", func(t testing.TB) (string, func()) { return goAgentStop(t, true) }},
}

// A remote that is down, slow past CallTimeout (its task is then
// cancelled), or answers too much fails the tool call only, with an error
// the model is told; the conversation and its memory go on.
func TestFaults(t *testing.T) {
	for _, ag := range agentsStop {
		t.Run(ag.name, func(t *testing.T) {
			leaktest.Check(t)
			u, stop := ag.start(t)
			fast := connect(t, u, &a2atools.Options{Name: "Fast", CallTimeout: 300 * time.Millisecond})
			small := connect(t, u, &a2atools.Options{Name: "Small", MaxMessageBytes: 100_000})
			short := connect(t, u, &a2atools.Options{Name: "Short", MaxResultBytes: 1000})
			a := newApp(t, nil, nil, fast, small, short)
			c := a.dial(t)

			start := time.Now()
			if got := c.chat(t, "ask Fast: slow"); got != `Fast said: error: A2A agent "Smith": no answer within 300ms: context deadline exceeded` {
				t.Fatalf("past CallTimeout: %q", got)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("the timed-out call took %v", d)
			}
			evs := c.takeAgentEvents()
			if len(evs) != 1 || evs[0].Type != "Status" || evs[0].Text != "working: slow work" || evs[0].ID == "" {
				t.Fatalf("the slow task's events: %+v", evs)
			}
			for state := ""; state != ag.canceled; {
				if time.Since(start) > 5*time.Second {
					t.Fatalf("the timed-out task is %s, want %s", state, ag.canceled)
				}
				time.Sleep(20 * time.Millisecond)
				state = taskState(t, u+ag.rpc, ag.version, evs[0].ID)
			}
			if got := c.chat(t, "ask Small: huge"); !strings.Contains(got, "A2A answer too large") || !strings.Contains(got, "MaxMessageBytes (100000 bytes)") {
				t.Fatalf("past MaxMessageBytes: %q", got)
			}
			got := c.chat(t, "ask Short: huge")
			if !strings.HasPrefix(got, "Short said: "+strings.Repeat("x", 1000)+"\n[the result was cut to 1000 of its 300000 bytes]") {
				t.Fatalf("past MaxResultBytes: %.200q", got)
			}
			// The conversations with the agent go on.
			if got := c.chat(t, "ask Small: hello"); !strings.HasSuffix(got, "of this context: hello") {
				t.Fatalf("after the faults: %q", got)
			}

			stop()
			got = c.chat(t, "ask Fast: hello")
			if !strings.HasPrefix(got, `Fast said: error: A2A agent "Smith": A2A agent unavailable: `) {
				t.Fatalf("the agent down: %q", got)
			}
			if got := c.chat(t, "hi"); got != "ok: hi" {
				t.Fatalf("after the agent went down: %q", got)
			}
			// The memory holds each call and its result, in order.
			reqs := a.llm.Requests()
			last := reqs[len(reqs)-1]
			calls, results := 0, 0
			for _, m := range last.Messages {
				for _, p := range m.Parts {
					switch p.(type) {
					case llms.ToolCall:
						calls++
					case llms.ToolCallResponse:
						results++
					}
				}
			}
			if calls != 5 || results != 5 {
				t.Fatalf("the memory holds %d calls and %d results, want 5 and 5", calls, results)
			}
		})
	}
}

// A card that cannot be fetched fails Connect with ErrUnavailable; one
// that is not an Agent Card this client can use, with ErrInvalidCard.
func TestInvalidCard(t *testing.T) {
	leaktest.Check(t)
	cards := map[string]string{
		"/notjson/":    `<html>`,
		"/noname/":     `{"description":"x","supportedInterfaces":[{"url":"/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`,
		"/grpconly/":   `{"name":"X","supportedInterfaces":[{"url":"/rpc","protocolBinding":"GRPC","protocolVersion":"1.0"}]}`,
		"/v2only/":     `{"name":"X","supportedInterfaces":[{"url":"/rpc","protocolBinding":"JSONRPC","protocolVersion":"2.0"}]}`,
		"/badurl/":     `{"name":"X","supportedInterfaces":[{"url":"ftp://x/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`,
		"/huge/":       `{"name":"` + strings.Repeat("x", 2<<20) + `"}`,
		"/good/":       `{"name":"Good","supportedInterfaces":[{"url":"/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`,
		"/goodlegacy/": `{"name":"Old","url":"/rpc","protocolVersion":"0.3.0"}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := cards[strings.TrimSuffix(r.URL.Path, a2atools.CardPath)]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	for path, want := range map[string]error{
		"/notjson/": a2atools.ErrInvalidCard, "/noname/": a2atools.ErrInvalidCard, "/grpconly/": a2atools.ErrInvalidCard,
		"/v2only/": a2atools.ErrInvalidCard, "/badurl/": a2atools.ErrInvalidCard, "/huge/": a2atools.ErrInvalidCard,
		"/missing/": a2atools.ErrUnavailable,
	} {
		_, err := a2atools.Connect(context.Background(), &a2atools.Options{URL: srv.URL + path, Logger: quiet})
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", path, err, want)
		}
	}
	_, err := a2atools.Connect(context.Background(), &a2atools.Options{URL: srv.URL + "/good/", Version: a2atools.Version03, Logger: quiet})
	if !errors.Is(err, a2atools.ErrInvalidCard) || !strings.Contains(err.Error(), "no JSON-RPC interface of A2A 0.3") {
		t.Errorf("0.3 forced on a 1.0 card: %v", err)
	}
	for path, version := range map[string]string{"/good/": a2atools.Version1, "/goodlegacy": a2atools.Version03, "/good/" + a2atools.CardPath: a2atools.Version1} {
		src, err := a2atools.Connect(context.Background(), &a2atools.Options{URL: srv.URL + path, Logger: quiet})
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if src.Version() != version {
			t.Errorf("%s: version %s, want %s", path, src.Version(), version)
		}
		src.Close()
	}
	srv.Close()
	if _, err := a2atools.Connect(context.Background(), &a2atools.Options{URL: srv.URL + "/good/", Logger: quiet}); !errors.Is(err, a2atools.ErrUnavailable) {
		t.Errorf("a server that is down: %v", err)
	}
	for _, o := range []a2atools.Options{{}, {URL: "ftp://x/"}, {URL: "http://x/", Version: "0.2"}, {URL: "http://x/", Name: "3d print"},
		{URL: "http://x/", MaxResultBytes: -2}, {URL: "http://x/", MaxMessageBytes: -2}, {URL: "http://x/", ConnectTimeout: -1}} {
		if _, err := a2atools.Connect(context.Background(), &o); err == nil {
			t.Errorf("Connect(%+v) did not fail", o)
		}
	}
}

// An agent that answers a JSON-RPC error, what is not JSON-RPC, an HTTP
// error, or a result that is no A2A result: each fails the call with an
// error saying so.
func TestBadAnswers(t *testing.T) {
	leaktest.Check(t)
	answers := map[string]func(w http.ResponseWriter, id string){
		"rpcerror": func(w http.ResponseWriter, id string) {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32001,"message":"Task not found"}}`, id)
		},
		"garbage": func(w http.ResponseWriter, id string) { _, _ = io.WriteString(w, `{"jsonrpc":`) },
		"http500": func(w http.ResponseWriter, id string) { http.Error(w, "boom", http.StatusInternalServerError) },
		"odd": func(w http.ResponseWriter, id string) {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"weird":1}}`, id)
		},
		"wrongid": func(w http.ResponseWriter, id string) {
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":"x99","result":{"weird":1}}`)
		},
		"stream": func(w http.ResponseWriter, id string) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"task\":{\"id\":\"t\",\"contextId\":\"c\",\"status\":{\"state\":\"TASK_STATE_SUBMITTED\"}}}}\n\n", id)
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32603,\"message\":\"agent crashed\"}}\n\n", id)
		},
	}
	var mode string
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	mux.HandleFunc("/"+a2atools.CardPath, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"name":"Odd","capabilities":{"streaming":%v},"supportedInterfaces":[{"url":%q,"protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`,
			r.URL.Query().Get("s") != "", srv.URL+"/rpc")
	})
	mux.HandleFunc("/rpc", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("A2A-Version") != "1.0" {
			http.Error(w, "no version", http.StatusBadRequest)
			return
		}
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		answers[mode](w, string(req.ID))
	})
	plain := connect(t, srv.URL+"/", nil)
	streamed := connect(t, srv.URL+"/"+a2atools.CardPath+"?s=1", nil)
	if plain.Version() != a2atools.Version1 {
		t.Fatal(plain.Version())
	}
	for m, want := range map[string]string{
		"rpcerror": "the agent answered with error -32001: Task not found",
		"garbage":  "A2A protocol error: the agent's answer is not JSON-RPC",
		"http500":  "A2A agent unavailable: HTTP status 500 Internal Server Error",
		"odd":      "A2A protocol error: a result that is neither a task, a message, nor an update",
		"wrongid":  `A2A protocol error: the agent answered request "x99", not `,
		"stream":   "the agent answered with error -32603: agent crashed",
	} {
		mode = m
		src := plain
		if m == "stream" {
			src = streamed
		}
		a := newApp(t, nil, nil, src)
		c := a.dial(t)
		got := c.chat(t, "ask Odd: hello")
		if !strings.HasPrefix(got, `Odd said: error: A2A agent "Odd": `+want) {
			t.Errorf("%s: %q, want %q", m, got, want)
		}
		if got := c.chat(t, "hi"); got != "ok: hi" {
			t.Errorf("%s: after: %q", m, got)
		}
	}
}
