package llmtest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// postModeration posts body to /v1/moderations and returns the status
// and the decoded answer.
func postModeration(t *testing.T, srv *llmtest.Server, method, auth, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+"/moderations", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := srv.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%d %s: %v", resp.StatusCode, raw, err)
	}
	return resp.StatusCode, v
}

func TestModerationsAnswers(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Sequence(), nil)
	t.Cleanup(srv.Close)
	status, v := postModeration(t, srv, "POST", "Bearer k", `{"input":["a fine sword","I will murder you, idiot"]}`)
	if status != 200 || v["model"] != "omni-moderation-latest" || !strings.HasPrefix(v["id"].(string), "modr-") {
		t.Fatalf("%d %v", status, v)
	}
	results := v["results"].([]any)
	if len(results) != 2 {
		t.Fatalf("results %v", results)
	}
	first, second := results[0].(map[string]any), results[1].(map[string]any)
	if first["flagged"] != false || second["flagged"] != true {
		t.Fatalf("flags %v %v", first["flagged"], second["flagged"])
	}
	cats := second["categories"].(map[string]any)
	if cats["violence"] != true || cats["harassment"] != true || cats["hate"] != false || len(cats) != len(llmtest.ModerationCategories) {
		t.Fatalf("categories %v", cats)
	}
	if types := second["category_applied_input_types"].(map[string]any)["violence"].([]any); len(types) != 1 || types[0] != "text" {
		t.Fatalf("applied types %v", types)
	}
	status, v = postModeration(t, srv, "POST", "Bearer k", `{"model":"omni-moderation-2024-09-26","input":[{"type":"text","text":"explicit"},{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}`)
	if status != 200 {
		t.Fatalf("%d %v", status, v)
	}
	r := v["results"].([]any)[0].(map[string]any)
	if r["flagged"] != true || len(r["category_applied_input_types"].(map[string]any)["sexual"].([]any)) != 2 {
		t.Fatalf("multimodal %v", r)
	}
	if srv.ModerationCalls() != 2 {
		t.Fatalf("%d calls", srv.ModerationCalls())
	}
}

// The endpoint rejects what OpenAI rejects, before counting a call.
func TestModerationsRejects(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Sequence(), nil)
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name, method, auth, body string
		status                   int
		message                  string
	}{
		{"GET", "GET", "Bearer k", ``, 405, "use POST"},
		{"no key", "POST", "", `{"input":"x"}`, 401, "API key"},
		{"not JSON", "POST", "Bearer k", `{"input":`, 400, "malformed JSON"},
		{"unknown field", "POST", "Bearer k", `{"input":"x","temperature":0}`, 400, "Unrecognized request argument supplied: temperature"},
		{"no input", "POST", "Bearer k", `{"model":"omni-moderation-latest"}`, 400, "'input' is a required property"},
		{"null input", "POST", "Bearer k", `{"input":null}`, 400, "'input' is a required property"},
		{"number input", "POST", "Bearer k", `{"input":42}`, 400, "'$.input' is invalid"},
		{"empty array", "POST", "Bearer k", `{"input":[]}`, 400, "'$.input' is invalid"},
		{"model not a string", "POST", "Bearer k", `{"input":"x","model":7}`, 400, "'model'"},
		{"unknown model", "POST", "Bearer k", `{"input":"x","model":"gpt-4o"}`, 404, "does not exist"},
		{"image for a text model", "POST", "Bearer k", `{"input":[{"type":"image_url","image_url":{"url":"u"}}],"model":"text-moderation-latest"}`, 400, "does not support multimodal"},
		{"part without text", "POST", "Bearer k", `{"input":[{"type":"text"}]}`, 400, "input[0]"},
		{"image without url", "POST", "Bearer k", `{"input":[{"type":"image_url","image_url":{}}]}`, 400, "input[0]"},
		{"unknown part", "POST", "Bearer k", `{"input":[{"type":"audio"}]}`, 400, "input[0].type"},
		{"two images", "POST", "Bearer k", `{"input":[{"type":"image_url","image_url":{"url":"a"}},{"type":"image_url","image_url":{"url":"b"}}]}`, 400, "Only one image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, v := postModeration(t, srv, tc.method, tc.auth, tc.body)
			e, _ := v["error"].(map[string]any)
			if status != tc.status || e == nil || !strings.Contains(e["message"].(string), tc.message) {
				t.Fatalf("%d %v; want %d with %q", status, v, tc.status, tc.message)
			}
		})
	}
	if srv.ModerationCalls() != 0 {
		t.Fatalf("%d calls counted", srv.ModerationCalls())
	}
}
