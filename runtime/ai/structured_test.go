package ai_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// Weapon is a structured result.
type Weapon struct {
	Name   string `json:"name"`
	Damage int    `json:"damage"`
}

const weaponSchema = `{"type":"object","properties":{"name":{"type":"string"},"damage":{"type":"integer"}},"required":["name","damage"]}`

func (f *fixture) weaponReq(user string) *ai.Request {
	return &ai.Request{
		Method: &ai.Method{
			Name: "Forge", Kind: chat.KindChat,
			System: "You forge weapons.",
			Schema: json.RawMessage(weaponSchema), Output: ai.OutputJSON,
		},
		User: user,
	}
}

func TestStructuredWithOneRetry(t *testing.T) {
	f := newServerFixture(t, llmtest.Sequence(
		llmtest.Reply{Text: `{"name": "Blade", "damage": "high"}`},
		llmtest.Reply{Text: "```json\n{\"name\":\"Blade\",\"damage\":7}\n```"},
	), &ai.Config{})
	ctx := begin(t)
	w, r, err := ai.Structured[Weapon](ctx, f.svc, f.weaponReq("A blade, please."))
	if err != nil {
		t.Fatal(err)
	}
	if w != (Weapon{Name: "Blade", Damage: 7}) || r.Content != `{"name":"Blade","damage":7}` || r.ModelCalls != 2 {
		t.Fatalf("weapon %+v, reply %+v", w, r)
	}
	reqs := f.requests()
	if !reqs[0].JSONMode || !reqs[1].JSONMode {
		t.Fatal("JSON mode not requested")
	}
	system := describe(reqs[0].Messages)[0]
	if !strings.HasPrefix(system, "system: You forge weapons.\n\n") || !strings.Contains(system, "JSON") || !strings.Contains(system, weaponSchema) {
		t.Fatalf("system message %q", system)
	}
	second := describe(reqs[1].Messages)
	if len(second) != 4 || second[2] != `ai: {"name": "Blade", "damage": "high"}` ||
		!strings.HasPrefix(second[3], "human: Your answer could not be used: ") || !strings.Contains(second[3], "cannot unmarshal") {
		t.Fatalf("retry request %q", second)
	}
	id := strings.Replace(memID(t, ctx), ".Ask", ".Forge", 1)
	wantStrings(t, "memory", f.memory(ctx, id),
		system, "human: A blade, please.", "ai: ```json\n{\"name\":\"Blade\",\"damage\":7}\n```")
}

func TestStructuredFailsTwice(t *testing.T) {
	f := newServerFixture(t, llmtest.Sequence(
		llmtest.Reply{Text: "A fine blade!"},
		llmtest.Reply{Text: `{"name":`},
	), &ai.Config{})
	ctx := begin(t)
	_, r, err := ai.Structured[Weapon](ctx, f.svc, f.weaponReq("A blade, please."))
	if !errors.Is(err, ai.ErrInvalidOutput) || r != nil {
		t.Fatalf("reply %+v, err %v", r, err)
	}
	if f.srv.Calls() != 2 {
		t.Fatalf("%d calls", f.srv.Calls())
	}
	wantStrings(t, "memory", f.memory(ctx, strings.Replace(memID(t, ctx), ".Ask", ".Forge", 1)))
}

func TestStructuredNoCallLeftForRetry(t *testing.T) {
	f := newModelFixture(t, llmtest.Sequence(llmtest.Reply{Text: "nope"}), &ai.Config{MaxModelCalls: 1})
	_, _, err := ai.Structured[Weapon](begin(t), f.svc, f.weaponReq("x"))
	if !errors.Is(err, ai.ErrInvalidOutput) || !errors.Is(err, ai.ErrTooManyModelCalls) {
		t.Fatalf("err %v", err)
	}
}

func TestStructuredImmediate(t *testing.T) {
	f := newModelFixture(t, llmtest.Sequence(calls(call("show", `{"card":"Ace"}`))), &ai.Config{})
	req := f.weaponReq("Show me.")
	req.Method.Tools = f.tools
	w, r, err := ai.Structured[Weapon](begin(t), f.svc, req)
	if err != nil || w != (Weapon{}) || !r.Immediate || r.Executions[0].Result != (Card{Title: "Ace"}) {
		t.Fatalf("weapon %+v, reply %+v, err %v", w, r, err)
	}
}

func TestChatJSONOutput(t *testing.T) {
	f := newModelFixture(t, llmtest.Sequence(
		llmtest.Reply{Text: "Sure: ```json\n[1, 2]\n```"},
		llmtest.Reply{Text: "not json"},
		llmtest.Reply{Text: `{"ok":true}`},
	), &ai.Config{})
	ctx := begin(t)
	req := f.weaponReq("list")
	req.Method.Schema = nil
	r := must[*ai.Reply](t)(f.svc.Chat(ctx, req))
	if r.Content != "[1, 2]" || r.ModelCalls != 1 || !f.requests()[0].JSONMode {
		t.Fatalf("reply %+v", r)
	}
	r = must[*ai.Reply](t)(f.svc.Chat(ctx, req))
	if r.Content != `{"ok":true}` || r.ModelCalls != 2 {
		t.Fatalf("reply %+v", r)
	}
}
