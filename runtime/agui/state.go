package agui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// A Shown is one value of a conversation the AG-UI state shows: under
// Key in the state's "beans" object. Build it with [ShowBean].
type Shown struct {
	// Key is the value's key in the state's "beans" object.
	Key string
	// Value returns the value in the scope of ctx, a request of the
	// thread's conversation; ok is false when there is none (the key is
	// then left out). The value is encoded as JSON.
	Value func(ctx context.Context) (v any, ok bool)
}

// ShowBean shows the instance of bean in the conversation's current
// scope (or its parents, as [chat.Bean.Lookup] finds it) under key: the
// bean's value itself, or what view returns for it when view is not nil
// (the part of a bean a front end may see). A scope without an instance
// shows nothing under key: showing a bean never makes one.
func ShowBean[T any](key string, bean *chat.Bean[T], view func(T) any) Shown {
	return Shown{Key: key, Value: func(ctx context.Context) (any, bool) {
		v, ok := bean.Peek(ctx)
		if !ok {
			return nil, false
		}
		if view != nil {
			return view(v), true
		}
		return v, true
	}}
}

// showsState reports whether the runs of h carry the AG-UI state.
func (h *Handler) showsState() bool { return h.opts.ShowScope || len(h.opts.Show) > 0 }

// A stateTracker follows the AG-UI state of one run: the scope stack and
// the shown beans, read in the request's context.
type stateTracker struct {
	ctx   context.Context // the request's, while it runs
	shown []Shown
	conv  string // the conversation's id
	last  any    // the state last sent, as decoded JSON
}

// state returns the state now, as decoded JSON.
func (st *stateTracker) state() (any, error) {
	scopes := []any{}
	current := ""
	for id, route := range chat.Scopes(st.ctx) {
		scopes = append(scopes, map[string]any{"id": id, "route": route})
		current = id
	}
	beans := map[string]json.RawMessage{}
	for _, sh := range st.shown {
		v, ok := sh.Value(st.ctx)
		if !ok {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("agui: encoding the shown value %q: %w", sh.Key, err)
		}
		beans[sh.Key] = b
	}
	raw, err := json.Marshal(map[string]any{"conversationId": st.conv, "scopeId": current, "scopes": scopes, "beans": beans})
	if err != nil {
		return nil, fmt.Errorf("agui: encoding the state: %w", err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("agui: decoding the state: %w", err)
	}
	return v, nil
}

// snapshot sends the state as a STATE_SNAPSHOT.
func (e *encoder) snapshot() error {
	v, err := e.st.state()
	if err != nil {
		return err
	}
	e.st.last = v
	e.emit(map[string]any{"type": "STATE_SNAPSHOT", "snapshot": v})
	return nil
}

// delta sends what changed in the state since it was last sent as a
// STATE_DELTA, when something did.
func (e *encoder) delta() error {
	v, err := e.st.state()
	if err != nil {
		return err
	}
	ops := diff(nil, "", e.st.last, v)
	e.st.last = v
	if len(ops) > 0 {
		e.emit(map[string]any{"type": "STATE_DELTA", "delta": ops})
	}
	return nil
}

// stateEvent maps one event of the route, then sends the state's delta
// when no message is open (an AG-UI message nests no other event).
func (e *encoder) stateEvent(ev chat.Event) error {
	if err := e.event(ev); err != nil {
		return err
	}
	if ev.Type == protocol.EventStream || e.text != "" || e.reasoning != "" {
		return nil
	}
	return e.delta()
}

// runShowing runs the request of a run on conv with the state shown: a
// STATE_SNAPSHOT first, a STATE_DELTA after each event that changes it
// and at the end.
func (h *Handler) runShowing(ctx context.Context, conv *chat.Conversation, creq *chat.RouteRequest, e *encoder) *chat.Failure {
	e.st = &stateTracker{shown: h.opts.Show, conv: conv.ID()}
	_, f := conv.Run(ctx, conv.ScopeID(), creq, e.stateEvent, func(ctx context.Context) error {
		e.st.ctx = ctx
		defer func() { e.st.ctx = nil }()
		if err := e.snapshot(); err != nil {
			return err
		}
		err := chat.Execute(ctx)
		e.closeOpen()
		return errors.Join(err, e.delta())
	})
	return f
}

// An op is one operation of a JSON Patch (RFC 6902), as @ag-ui/core
// types the delta of STATE_DELTA.
type op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// pointer appends the reference token key to the JSON Pointer path.
func pointer(path, key string) string {
	key = strings.ReplaceAll(key, "~", "~0")
	key = strings.ReplaceAll(key, "/", "~1")
	return path + "/" + key
}

// diff appends to ops the operations that turn a into b, both decoded
// JSON, at path.
func diff(ops []op, path string, a, b any) []op {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok {
			break
		}
		for _, k := range sortedKeys(a) {
			if _, ok := bm[k]; !ok {
				ops = append(ops, op{Op: "remove", Path: pointer(path, k)})
			}
		}
		for _, k := range sortedKeys(bm) {
			if av, ok := a[k]; ok {
				ops = diff(ops, pointer(path, k), av, bm[k])
			} else {
				ops = append(ops, op{Op: "add", Path: pointer(path, k), Value: nullable(bm[k])})
			}
		}
		return ops
	case []any:
		bs, ok := b.([]any)
		if !ok {
			break
		}
		n := min(len(a), len(bs))
		for i := range n {
			ops = diff(ops, path+"/"+strconv.Itoa(i), a[i], bs[i])
		}
		for i := len(a) - 1; i >= n; i-- {
			ops = append(ops, op{Op: "remove", Path: path + "/" + strconv.Itoa(i)})
		}
		for i := n; i < len(bs); i++ {
			ops = append(ops, op{Op: "add", Path: path + "/" + strconv.Itoa(i), Value: nullable(bs[i])})
		}
		return ops
	default:
		if a == b {
			return ops
		}
	}
	if equalJSON(a, b) {
		return ops
	}
	return append(ops, op{Op: "replace", Path: path, Value: nullable(b)})
}

// jsonNull is a JSON null that omitempty keeps.
type jsonNull struct{}

func (jsonNull) MarshalJSON() ([]byte, error) { return []byte("null"), nil }

// nullable is v, a JSON null being kept as the value of an operation.
func nullable(v any) any {
	if v == nil {
		return jsonNull{}
	}
	return v
}

// equalJSON reports whether the decoded JSON values a and b are equal.
func equalJSON(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, v := range a {
			if bv, ok := bm[k]; !ok || !equalJSON(v, bv) {
				return false
			}
		}
		return true
	case []any:
		bs, ok := b.([]any)
		if !ok || len(a) != len(bs) {
			return false
		}
		for i := range a {
			if !equalJSON(a[i], bs[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
