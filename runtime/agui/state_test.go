package agui_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/agui"
)

// aguiState is the AG-UI state of the test application.
type aguiState struct {
	ConversationID string `json:"conversationId"`
	ScopeID        string `json:"scopeId"`
	Scopes         []struct{ ID, Route string }
	Beans          map[string]json.RawMessage
}

// TestNPMStateDeltas: @ag-ui/client applies the STATE_DELTA events of
// runs whose route changes a shown bean and the scope stack (pushes a
// scope, pops it), and ends each run holding the state the next run's
// fresh STATE_SNAPSHOT shows.
func TestNPMStateDeltas(t *testing.T) {
	dir := npmClient(t)
	a := newApp(t, &agui.Options{Route: "nest", Show: showTally()})
	lines := nodeRun(t, dir, "state.mjs", a)
	if len(lines) != 3 {
		t.Fatalf("output: %q", lines)
	}
	type result struct {
		Types    []string
		State    json.RawMessage
		Snapshot json.RawMessage
		Deltas   int
	}
	res := make([]result, 3)
	states := make([]aguiState, 3)
	for i := range res {
		if err := json.Unmarshal([]byte(lines[i]), &res[i]); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(res[i].State, &states[i]); err != nil {
			t.Fatal(err)
		}
		if len(res[i].Types) < 3 || res[i].Types[1] != "STATE_SNAPSHOT" || !slices.Contains(res[i].Types, "STATE_DELTA") || res[i].Deltas == 0 {
			t.Errorf("run %d: %v (%d operations)", i, res[i].Types, res[i].Deltas)
		}
		if i > 0 && !sameJSON(t, res[i-1].State, res[i].Snapshot) {
			t.Errorf("the state after run %d, deltas applied, is not the next run's snapshot:\n%s\n%s", i-1, res[i-1].State, res[i].Snapshot)
		}
	}
	wantTally := []string{`{"n":11}`, `{"n":111}`, `{"n":112}`}
	wantRoutes := [][]string{{"nest", "nested"}, {"nest"}, {"nest"}}
	for i, st := range states {
		var routes []string
		for _, s := range st.Scopes {
			routes = append(routes, s.Route)
		}
		if string(st.Beans["tally"]) != wantTally[i] || !slices.Equal(routes, wantRoutes[i]) ||
			st.ConversationID != st.Scopes[0].ID || st.ScopeID != st.Scopes[len(st.Scopes)-1].ID {
			t.Errorf("the state after run %d: %+v (tally %s)", i, st, st.Beans["tally"])
		}
	}
}

func sameJSON(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

// TestStateEvents: a run with the state shown starts with its snapshot,
// sends a delta after a change (never inside an open message), nests as
// AG-UI requires; without Show or ShowScope no state event is sent, and
// no bean is shown that Show does not name.
func TestStateEvents(t *testing.T) {
	a := newApp(t, &agui.Options{Route: "nest", Show: showTally()})
	evs := a.run(t, input("st", "r1", "push"))
	checkNesting(t, evs)
	got := strings.Join(types(evs), " ")
	want := "RUN_STARTED STATE_SNAPSHOT TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END STATE_DELTA TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END STATE_DELTA RUN_FINISHED"
	if got != want {
		t.Fatalf("events:\n%s\nwant\n%s", got, want)
	}
	first, _ := json.Marshal(evs[5]["delta"])
	if string(first) != `[{"op":"add","path":"/beans/tally","value":{"n":1}}]` {
		t.Errorf("the first delta: %s", first)
	}
	second, _ := json.Marshal(evs[9]["delta"])
	for _, part := range []string{`"path":"/beans/tally/n","value":11`, `"op":"replace","path":"/scopeId"`, `"op":"add","path":"/scopes/1"`, `"route":"nested"`} {
		if !strings.Contains(string(second), part) {
			t.Errorf("the second delta %s lacks %s", second, part)
		}
	}

	plain := newApp(t, &agui.Options{Route: "nest"})
	if got := strings.Join(types(plain.run(t, input("st", "r1", "push"))), " "); strings.Contains(got, "STATE") {
		t.Errorf("state events without Show: %s", got)
	}
	scopes := newApp(t, &agui.Options{Route: "nest", ShowScope: true})
	evs = scopes.run(t, input("st", "r1", "push"))
	snap, _ := json.Marshal(evs[1]["snapshot"])
	last, _ := json.Marshal(evs[len(evs)-2])
	if !strings.Contains(string(snap), `"beans":{}`) || strings.Contains(string(last), "tally") {
		t.Errorf("ShowScope shows a bean: %s %s", snap, last)
	}
}
