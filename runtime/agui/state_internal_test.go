package agui

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// apply applies ops (RFC 6902 add, remove, replace) to doc, as a JSON
// Patch library does, for the test of diff.
func apply(t *testing.T, doc any, ops []op) any {
	t.Helper()
	for _, o := range ops {
		raw, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		var dec struct {
			Op, Path string
			Value    any
		}
		if err := json.Unmarshal(raw, &dec); err != nil {
			t.Fatal(err)
		}
		if dec.Path == "" {
			doc = dec.Value
			continue
		}
		tokens := strings.Split(dec.Path[1:], "/")
		for i, tok := range tokens {
			tokens[i] = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		}
		doc = applyAt(t, doc, tokens, dec.Op, dec.Value)
	}
	return doc
}

func applyAt(t *testing.T, doc any, tokens []string, opName string, v any) any {
	t.Helper()
	tok := tokens[0]
	switch d := doc.(type) {
	case map[string]any:
		if len(tokens) > 1 {
			d[tok] = applyAt(t, d[tok], tokens[1:], opName, v)
			return d
		}
		if opName == "remove" {
			delete(d, tok)
		} else {
			d[tok] = v
		}
		return d
	case []any:
		i, err := strconv.Atoi(tok)
		if err != nil {
			t.Fatalf("index %q", tok)
		}
		if len(tokens) > 1 {
			d[i] = applyAt(t, d[i], tokens[1:], opName, v)
			return d
		}
		switch opName {
		case "remove":
			return append(d[:i], d[i+1:]...)
		case "add":
			return append(d[:i], append([]any{v}, d[i:]...)...)
		}
		d[i] = v
		return d
	}
	t.Fatalf("path into a %T", doc)
	return nil
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestDiff: the operations diff makes turn the old state into the new
// one, keys escaped as JSON Pointer requires, arrays grown and shrunk,
// nulls kept as values.
func TestDiff(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{`{}`, `{}`},
		{`{"a":1}`, `{"a":2}`},
		{`{"a":1,"b":[1,2,3]}`, `{"b":[1,5],"c":{"d":null}}`},
		{`{"scopes":[{"id":"x"}]}`, `{"scopes":[{"id":"x"},{"id":"y","route":"r"}]}`},
		{`{"a/b~c":{"x":[]}}`, `{"a/b~c":{"x":[null,true]},"~":"/"}`},
		{`{"a":{"b":1}}`, `{"a":[1]}`},
		{`{"a":"s"}`, `{"a":{"s":1}}`},
		{`[1,2]`, `{"x":1}`},
	} {
		a, b := decode(t, c.a), decode(t, c.b)
		ops := diff(nil, "", a, b)
		got := apply(t, decode(t, c.a), ops)
		if !reflect.DeepEqual(got, b) {
			raw, _ := json.Marshal(ops)
			t.Errorf("%s → %s: the patch %s gives %v", c.a, c.b, raw, got)
		}
		if c.a == c.b && len(ops) != 0 {
			t.Errorf("%s: operations for no change: %v", c.a, ops)
		}
	}
}
