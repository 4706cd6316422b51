package llmtest_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/embeddings"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// cosine returns the cosine similarity of two unit vectors.
func cosine(a, b []float32) float64 {
	var dot float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
	}
	return dot
}

func TestEmbeddingsThroughLangchaingo(t *testing.T) {
	srv, llm := newServer(t, llmtest.Sequence(), nil)
	e, err := embeddings.NewEmbedder(llm)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	texts := []string{"The smith forged a steel sword.", "Forging steel swords at the smithy.", "Frost witches of the north."}
	vecs, err := e.EmbedDocuments(ctx, texts)
	if err != nil {
		t.Fatalf("EmbedDocuments: %v", err)
	}
	if len(vecs) != 3 {
		t.Fatalf("got %d vectors, want 3", len(vecs))
	}
	for i, v := range vecs {
		if len(v) != llmtest.EmbeddingDimensions {
			t.Fatalf("vector %d has %d dimensions, want %d", i, len(v), llmtest.EmbeddingDimensions)
		}
		if n := cosine(v, v); math.Abs(n-1) > 1e-5 {
			t.Errorf("vector %d has squared length %v, want 1", i, n)
		}
		if want := llmtest.Embed(texts[i], llmtest.EmbeddingDimensions); cosine(v, want) < 1-1e-5 {
			t.Errorf("vector %d is not Embed(text)", i)
		}
	}
	if near, far := cosine(vecs[0], vecs[1]), cosine(vecs[0], vecs[2]); near <= far {
		t.Errorf("cosine(forged steel sword, forging steel swords) = %.3f, not above cosine(…, frost witches) = %.3f", near, far)
	}
	q, err := e.EmbedQuery(ctx, texts[0])
	if err != nil {
		t.Fatalf("EmbedQuery: %v", err)
	}
	if cosine(q, vecs[0]) < 1-1e-5 {
		t.Error("the query's vector differs from the same text's document vector")
	}
	if got := srv.EmbeddingCalls(); got != 2 {
		t.Errorf("EmbeddingCalls = %d, want 2", got)
	}
	if srv.Calls() != 0 {
		t.Errorf("embeddings were recorded as chat requests: Calls = %d", srv.Calls())
	}
}

func TestEmbeddingsDimensions(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Sequence(), nil)
	t.Cleanup(srv.Close)
	llm, err := srv.Client(openai.WithEmbeddingModel("text-embedding-3-small"), openai.WithEmbeddingDimensions(64))
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := llm.CreateEmbedding(context.Background(), []string{"mithril helm"})
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs[0]) != 64 {
		t.Fatalf("got %d dimensions, want 64", len(vecs[0]))
	}

	// langchaingo's default model, ada-002, takes no dimensions.
	llm, err = srv.Client(openai.WithEmbeddingDimensions(64))
	if err != nil {
		t.Fatal(err)
	}
	_, err = llm.CreateEmbedding(context.Background(), []string{"mithril helm"})
	mustContain(t, err, "400", "This model does not support specifying dimensions.")
}

func TestEmbeddingsWire(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Sequence(), nil)
	t.Cleanup(srv.Close)
	url := srv.URL + "/embeddings"

	status, body := rawPost(t, srv.HTTPClient(), url, `{"model":"text-embedding-3-small","input":["iron","steel"],"user":"u1"}`)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	var resp struct {
		Object string `json:"object"`
		Model  string `json:"model"`
		Data   []struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Object != "list" || resp.Model != "text-embedding-3-small" || len(resp.Data) != 2 ||
		resp.Data[1].Object != "embedding" || resp.Data[1].Index != 1 {
		t.Fatalf("unexpected response: %s", body)
	}
	if tokens := llmtest.EstimateTextTokens("iron") + llmtest.EstimateTextTokens("steel"); resp.Usage.PromptTokens != tokens || resp.Usage.TotalTokens != tokens {
		t.Fatalf("unexpected response: %s", body)
	}

	// base64: the same vector, as little-endian float32 values.
	status, body = rawPost(t, srv.HTTPClient(), url, `{"model":"m","input":"iron","encoding_format":"base64"}`)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	var b64 struct {
		Data []struct {
			Embedding string `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &b64); err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(b64.Data[0].Embedding)
	if err != nil || len(raw) != 4*llmtest.EmbeddingDimensions {
		t.Fatalf("base64 embedding: %d bytes, %v", len(raw), err)
	}
	for i, want := range resp.Data[0].Embedding {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])); got != want {
			t.Fatalf("base64 value %d = %v, want %v", i, got, want)
		}
	}

	// Token arrays are accepted, one input or many.
	for _, input := range []string{`[1,2,3]`, `[[1,2],[3]]`} {
		if status, body := rawPost(t, srv.HTTPClient(), url, `{"model":"m","input":`+input+`}`); status != http.StatusOK {
			t.Errorf("input %s: status %d: %s", input, status, body)
		}
	}
}

func TestEmbeddingsRejectsBadRequests(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Sequence(), nil)
	t.Cleanup(srv.Close)
	tooMany := `["` + strings.Repeat(`a","`, 2048) + `a"]`
	for _, tc := range []struct{ body, want string }{
		{`{"input":"iron"}`, "you must provide a model parameter"},
		{`{"model":"m"}`, "'input' is a required property"},
		{`{"model":"m","input":null}`, "'input' is a required property"},
		{`{"model":"m","input":"iron","temperature":1}`, "Unrecognized request argument supplied: temperature"},
		{`{"model":"m","input":["iron",""]}`, "'$.input' is invalid."},
		{`{"model":"m","input":[]}`, "'$.input' is invalid."},
		{`{"model":"m","input":[[]]}`, "'$.input' is invalid."},
		{`{"model":"m","input":{"text":"iron"}}`, "'$.input' is invalid."},
		{`{"model":"m","input":` + tooMany + `}`, "'$.input' is invalid."},
		{`{"model":"m","input":"iron","encoding_format":"int8"}`, "Invalid value: 'int8'. Supported values are: 'float' and 'base64'."},
		{`{"model":"m","input":"iron","dimensions":0}`, "Invalid value for 'dimensions' = 0."},
		{`{"model":"text-embedding-ada-002","input":"iron","dimensions":8}`, "This model does not support specifying dimensions."},
		{`{"model":"m","input":"iron"} {}`, "malformed JSON body"},
		{`[1]`, "malformed JSON body"},
	} {
		status, body := rawPost(t, srv.HTTPClient(), srv.URL+"/embeddings", tc.body)
		if status != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400: %s", tc.body, status, body)
			continue
		}
		if msg, typ := apiError(t, body); !strings.Contains(msg, tc.want) || typ != "invalid_request_error" {
			t.Errorf("%s: error %q (%s), want %q", tc.body, msg, typ, tc.want)
		}
	}
	resp, err := srv.HTTPClient().Get(srv.URL + "/embeddings")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: status %d, want 405", resp.StatusCode)
	}
	if got := srv.EmbeddingCalls(); got != 0 {
		t.Errorf("EmbeddingCalls = %d after rejected requests, want 0", got)
	}
}

func TestEmbedIsDeterministic(t *testing.T) {
	a, b := llmtest.Embed("Mithril was forged in starfire", 32), llmtest.Embed("Mithril was forged in starfire", 32)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("Embed differs at %d: %v vs %v", i, a[i], b[i])
		}
	}
	for _, x := range llmtest.Embed("!!! ...", 8) {
		if x != 0 {
			t.Fatalf("a text without words embeds to %v, want zeros", llmtest.Embed("!!! ...", 8))
		}
	}
}
