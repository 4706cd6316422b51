package ai

import (
	"encoding/json"
	"testing"
)

func TestIsToolCallDelta(t *testing.T) {
	for chunk, want := range map[string]bool{
		`[{"id":"call_1","type":"function","function":{"name":"weather","arguments":""}}]`:                        true,
		`[{"type":"","function":{"name":"","arguments":"{\"city\":"}}]`:                                           true,
		`[{"type":"","function":{"name":"","arguments":"1"}},{"type":"","function":{"name":"","arguments":"2"}}]`: true,
		`[{"id":"call_1","type":"function","function":{"name":"weather","arguments":""},"index":0}]`:              false, // unknown key
		`[{"type":"function"}]`: false,
		`[]`:                    false,
		`[1, 2, 3]`:             false,
		`["a"]`:                 false,
		`[{"type":"x","function":{"name":"n","arguments":""}}] and more`: false,
		`Hello`: false,
		`[`:     false,
		``:      false,
	} {
		if got := isToolCallDelta([]byte(chunk)); got != want {
			t.Errorf("isToolCallDelta(%s) = %v, want %v", chunk, got, want)
		}
	}
}

func TestDecodeJSON(t *testing.T) {
	type W struct {
		Name string `json:"name"`
	}
	for _, tc := range []struct {
		in, text string
		ok       bool
	}{
		{`{"name":"a"}`, `{"name":"a"}`, true},
		{"  {\"name\":\"a\"}\n", `{"name":"a"}`, true},
		{"```json\n{\"name\":\"a\"}\n```", `{"name":"a"}`, true},
		{"```\n{\"name\":\"a\"}\n```\n", `{"name":"a"}`, true},
		{"Here you go:\n```json\n{\"name\":\"a\"}\n```\nEnjoy.", `{"name":"a"}`, true},
		{"```json\n{\"name\":1}\n```", "", false},
		{`{"name":`, "", false},
		{"", "", false},
		{"A sword.", "", false},
	} {
		var w W
		text, err := decodeJSON(tc.in, &w)
		if (err == nil) != tc.ok || text != tc.text || (tc.ok && w.Name != "a") {
			t.Errorf("decodeJSON(%q) = %q, %+v, %v", tc.in, text, w, err)
		}
	}
}

func TestWithJSONInstruction(t *testing.T) {
	got := withJSONInstruction("Be brief.", json.RawMessage(` {"type":"object"} `))
	want := "Be brief.\n\nAnswer with a single JSON value and nothing else: no explanation, no Markdown code fence. The value must conform to this JSON schema:\n{\"type\":\"object\"}"
	if got != want {
		t.Fatalf("got %q", got)
	}
	if got := withJSONInstruction("", nil); got != "Answer with a single JSON value and nothing else: no explanation, no Markdown code fence." {
		t.Fatalf("got %q", got)
	}
}
