package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestAGUIServesTheArmorer: -agui ADDR serves the routes to AG-UI
// clients: a thread is a conversation that follows its hand-offs (the
// menu hands over to the weapon builder), and the state shows the scope
// stack and the weapon on the workbench as it changes.
func TestAGUIServesTheArmorer(t *testing.T) {
	a := newOfflineApp(t)
	h, err := newAGUIHandler(a, storage{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveAGUIHTTP(ctx, h, ln) }()
	url := "http://" + ln.Addr().String() + aguiPath

	run := func(runID, text string) []map[string]any {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"threadId": "player", "runId": runID,
			"messages": []any{map[string]any{"id": runID + "-u", "role": "user", "content": text}}})
		res, err := http.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var evs []map[string]any
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var ev map[string]any
				if err := json.Unmarshal([]byte(data), &ev); err != nil {
					t.Fatal(err)
				}
				evs = append(evs, ev)
			}
		}
		if len(evs) == 0 || evs[len(evs)-1]["type"] != "RUN_FINISHED" {
			t.Fatalf("%q: %v", text, evs)
		}
		return evs
	}
	// state applies the run's snapshot and the kinds of change its deltas
	// make, and returns the last state's routes and weapon.
	state := func(evs []map[string]any) (routes []string, weapon string) {
		var ops []string
		for _, ev := range evs {
			switch ev["type"] {
			case "STATE_SNAPSHOT":
				snap := ev["snapshot"].(map[string]any)
				for _, s := range snap["scopes"].([]any) {
					routes = append(routes, s.(map[string]any)["route"].(string))
				}
			case "STATE_DELTA":
				b, _ := json.Marshal(ev["delta"])
				ops = append(ops, string(b))
			}
		}
		return routes, strings.Join(ops, " ")
	}
	routes, _ := state(run("r1", "hello"))
	if strings.Join(routes, ",") != "menu" {
		t.Errorf("the first snapshot's scopes: %v", routes)
	}
	_, deltas := state(run("r2", "build a sword"))
	for _, want := range []string{`"path":"/scopes/1"`, `"route":"weapon"`, `"path":"/beans/weapon"`, `"sword"`} {
		if !strings.Contains(deltas, want) {
			t.Errorf("the deltas of the hand-off lack %s: %s", want, deltas)
		}
	}
	routes, deltas = state(run("r3", "call it Nightfall"))
	if strings.Join(routes, ",") != "menu,weapon" || !strings.Contains(deltas, `"Nightfall"`) {
		t.Errorf("the third run: scopes %v, deltas %s", routes, deltas)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serveAGUIHTTP: %v", err)
	}
	if st := a.router.Stats(); st.Conversations != 0 || st.Scopes != 0 {
		t.Errorf("stats after the server ended %+v", st)
	}
}
