package llmtest

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode"
)

// This file holds the OpenAI embeddings endpoint of [Server].

// EmbeddingDimensions is the number of dimensions of the vectors the
// embeddings endpoint returns when the request does not set dimensions.
const EmbeddingDimensions = 256

// maxEmbeddingInputs is the most inputs one embeddings request may hold,
// as at OpenAI.
const maxEmbeddingInputs = 2048

// embeddingEndpoint is POST /v1/embeddings: it answers without the script,
// with deterministic vectors (see [Embed]), and counts its calls.
type embeddingEndpoint struct {
	calls atomic.Int64
}

// EmbeddingCalls returns the number of embeddings requests answered with
// vectors so far (rejected ones are not counted; Reset does not clear it).
func (e *embeddingEndpoint) EmbeddingCalls() int { return int(e.calls.Load()) }

// embeddingRequest is the body of POST /v1/embeddings.
type embeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
	User           string          `json:"user"`
}

// embeddingFields are the fields an embeddings request may have.
var embeddingFields = []string{"model", "input", "encoding_format", "dimensions", "user"}

// embeddingResponse is the answer to POST /v1/embeddings.
type embeddingResponse struct {
	Object string          `json:"object"`
	Data   []embeddingData `json:"data"`
	Model  string          `json:"model"`
	Usage  embeddingUsage  `json:"usage"`
}

// embeddingData is one vector of an embeddings response: an array of
// numbers, or a base64 string of little-endian float32 values.
type embeddingData struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

// embeddingUsage is the usage of an embeddings response.
type embeddingUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// invalidInput is OpenAI's message for an input it cannot embed (an
// empty string in an array, an empty array, too many inputs).
const invalidInput = "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference."

// handleEmbeddings serves POST /v1/embeddings.
func (e *embeddingEndpoint) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r, writeError)
	if !ok {
		return
	}
	req, inputs, msg := decodeEmbeddingRequest(body)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	dims := EmbeddingDimensions
	if req.Dimensions != nil {
		dims = *req.Dimensions
	}
	resp := embeddingResponse{Object: "list", Model: req.Model, Data: make([]embeddingData, len(inputs))}
	for i, in := range inputs {
		v := Embed(in, dims)
		var enc any = v
		if req.EncodingFormat == "base64" {
			b := make([]byte, 0, 4*len(v))
			for _, x := range v {
				b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
			}
			enc = base64.StdEncoding.EncodeToString(b)
		}
		resp.Data[i] = embeddingData{Object: "embedding", Index: i, Embedding: enc}
		resp.Usage.PromptTokens += EstimateTextTokens(in)
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens
	e.calls.Add(1)
	writeJSON(w, http.StatusOK, resp)
}

// decodeEmbeddingRequest decodes and checks an embeddings request as
// OpenAI does, returning the texts to embed or OpenAI's error message.
// Token arrays are embedded as the text of their numbers.
func decodeEmbeddingRequest(body []byte) (*embeddingRequest, []string, string) {
	var fields map[string]json.RawMessage
	if err := decodeStrictJSON(body, &fields); err != nil {
		return nil, nil, "llmtest: invalid request: " + err.Error()
	}
	for name := range fields {
		if !slices.Contains(embeddingFields, name) {
			return nil, nil, "Unrecognized request argument supplied: " + name
		}
	}
	var req embeddingRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, nil, "llmtest: invalid request: " + err.Error()
	}
	switch {
	case req.Model == "":
		return nil, nil, "you must provide a model parameter"
	case len(bytes.TrimSpace(req.Input)) == 0 || string(bytes.TrimSpace(req.Input)) == "null":
		return nil, nil, "'input' is a required property"
	case req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64":
		return nil, nil, fmt.Sprintf("Invalid value: '%s'. Supported values are: 'float' and 'base64'.", req.EncodingFormat)
	case req.Dimensions != nil && strings.HasPrefix(req.Model, "text-embedding-ada"):
		return nil, nil, "This model does not support specifying dimensions."
	case req.Dimensions != nil && (*req.Dimensions < 1 || *req.Dimensions > 3072):
		return nil, nil, fmt.Sprintf("Invalid value for 'dimensions' = %d. Must be between 1 and 3072.", *req.Dimensions)
	}
	inputs, ok := embeddingInputs(req.Input)
	if !ok {
		return nil, nil, invalidInput
	}
	return &req, inputs, ""
}

// embeddingInputs returns the texts of an input: a string, an array of
// non-empty strings, an array of tokens or an array of token arrays.
func embeddingInputs(raw json.RawMessage) ([]string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}, true
	}
	var strs []string
	if json.Unmarshal(raw, &strs) == nil {
		if len(strs) == 0 || len(strs) > maxEmbeddingInputs || slices.Contains(strs, "") {
			return nil, false
		}
		return strs, true
	}
	var tokens []int
	if json.Unmarshal(raw, &tokens) == nil {
		if len(tokens) == 0 {
			return nil, false
		}
		return []string{tokenText(tokens)}, true
	}
	var arrays [][]int
	if json.Unmarshal(raw, &arrays) != nil || len(arrays) == 0 || len(arrays) > maxEmbeddingInputs {
		return nil, false
	}
	out := make([]string, len(arrays))
	for i, a := range arrays {
		if len(a) == 0 {
			return nil, false
		}
		out[i] = tokenText(a)
	}
	return out, true
}

// tokenText is the text embedded for an array of tokens: their numbers.
func tokenText(tokens []int) string {
	parts := make([]string, len(tokens))
	for i, t := range tokens {
		parts[i] = strconv.Itoa(t)
	}
	return strings.Join(parts, " ")
}

// Embed returns the vector the embeddings endpoint returns for text: a
// deterministic hashed bag of words and character trigrams, of dims
// dimensions and length 1 (all zero for a text without letters or
// digits). Texts sharing words, or parts of words (forge, forged), have
// a positive cosine similarity; it knows no synonyms. Each lower-cased
// word counts 1 (0.25 for words of three letters or fewer, mostly
// function words), and each trigram of a longer word, padded with spaces,
// 0.5; a feature's FNV-1a hash picks its dimension and its sign.
func Embed(text string, dims int) []float32 {
	v := make([]float64, dims)
	add := func(feature string, weight float64) {
		h := fnv.New64a()
		_, _ = h.Write([]byte(feature))
		sum := h.Sum64()
		if sum>>63 == 1 {
			weight = -weight
		}
		v[sum%uint64(dims)] += weight
	}
	for word := range strings.FieldsFuncSeq(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		rs := []rune(word)
		if len(rs) <= 3 {
			add("w:"+word, 0.25)
			continue
		}
		add("w:"+word, 1)
		padded := append(append([]rune{' '}, rs...), ' ')
		for i := 0; i+3 <= len(padded); i++ {
			add("t:"+string(padded[i:i+3]), 0.5)
		}
	}
	var norm float64
	for _, x := range v {
		norm += x * x
	}
	out := make([]float32, dims)
	if norm == 0 {
		return out
	}
	norm = math.Sqrt(norm)
	for i, x := range v {
		out[i] = float32(x / norm)
	}
	return out
}
