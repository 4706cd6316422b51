package moderation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
)

// DefaultOpenAIBaseURL is the base URL of OpenAI's API.
const DefaultOpenAIBaseURL = "https://api.openai.com/v1"

// DefaultOpenAIModel is the moderation model asked when
// [OpenAIOptions.Model] is "".
const DefaultOpenAIModel = "omni-moderation-latest"

// maxResponseBytes bounds the body of a moderations response.
const maxResponseBytes = 1 << 20

// OpenAIOptions configure an [OpenAI] moderator.
type OpenAIOptions struct {
	// BaseURL is the API's base URL, ending in /v1; "" means
	// [DefaultOpenAIBaseURL].
	BaseURL string
	// APIKey is sent as the bearer token. Required by OpenAI.
	APIKey string
	// Model is the moderation model; "" means [DefaultOpenAIModel].
	Model string
	// HTTPClient makes the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
}

// OpenAI is a [Moderator] asking OpenAI's POST /v1/moderations: a text
// is flagged when OpenAI flags it, for the categories it flags.
type OpenAI struct {
	url, key, model string
	client          *http.Client
}

// NewOpenAI returns the moderator configured by opts (nil: the defaults,
// with no API key).
func NewOpenAI(opts *OpenAIOptions) *OpenAI {
	var o OpenAIOptions
	if opts != nil {
		o = *opts
	}
	m := &OpenAI{url: strings.TrimSuffix(o.BaseURL, "/"), key: o.APIKey, model: o.Model, client: o.HTTPClient}
	if m.url == "" {
		m.url = DefaultOpenAIBaseURL
	}
	m.url += "/moderations"
	if m.model == "" {
		m.model = DefaultOpenAIModel
	}
	if m.client == nil {
		m.client = http.DefaultClient
	}
	return m
}

// An APIError is an error answer of the moderations endpoint.
type APIError struct {
	// Status is the HTTP status.
	Status int
	// Type, Code and Message are OpenAI's error fields.
	Type, Code, Message string
}

// Error implements error.
func (e *APIError) Error() string {
	s := fmt.Sprintf("moderation: OpenAI answered %d", e.Status)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// moderationRequest is the body of POST /v1/moderations.
type moderationRequest struct {
	Model string `json:"model"`
	Input string `json:"input"`
}

// moderationResponse is its answer.
type moderationResponse struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Results []struct {
		Flagged    bool               `json:"flagged"`
		Categories map[string]bool    `json:"categories"`
		Scores     map[string]float64 `json:"category_scores"`
	} `json:"results"`
}

// errorResponse is OpenAI's error body.
type errorResponse struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
	} `json:"error"`
}

// categoryOrder is the order OpenAI lists its categories in, for the
// Categories of a Verdict; categories it adds later follow, sorted.
var categoryOrder = []string{
	"harassment", "harassment/threatening", "hate", "hate/threatening",
	"illicit", "illicit/violent", "self-harm", "self-harm/instructions",
	"self-harm/intent", "sexual", "sexual/minors", "violence", "violence/graphic",
}

// Moderate asks OpenAI to judge text.
func (m *OpenAI) Moderate(ctx context.Context, text string) (Verdict, error) {
	body, err := json.Marshal(moderationRequest{Model: m.model, Input: text})
	if err != nil {
		return Verdict{}, fmt.Errorf("moderation: encoding the request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.url, bytes.NewReader(body))
	if err != nil {
		return Verdict{}, fmt.Errorf("moderation: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if m.key != "" {
		req.Header.Set("Authorization", "Bearer "+m.key)
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return Verdict{}, fmt.Errorf("moderation: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return Verdict{}, fmt.Errorf("moderation: reading the response: %w", err)
	}
	if len(raw) > maxResponseBytes {
		return Verdict{}, fmt.Errorf("moderation: the response is larger than %d bytes", maxResponseBytes)
	}
	if resp.StatusCode/100 != 2 {
		e := &APIError{Status: resp.StatusCode}
		var er errorResponse
		if json.Unmarshal(raw, &er) == nil {
			e.Type, e.Message = er.Error.Type, er.Error.Message
			if c, ok := er.Error.Code.(string); ok {
				e.Code = c
			}
		}
		return Verdict{}, e
	}
	var mr moderationResponse
	if err := json.Unmarshal(raw, &mr); err != nil {
		return Verdict{}, fmt.Errorf("moderation: decoding the response: %w", err)
	}
	if len(mr.Results) != 1 {
		return Verdict{}, fmt.Errorf("moderation: %w: %d results for one input", errMalformed, len(mr.Results))
	}
	r := mr.Results[0]
	v := Verdict{Flagged: r.Flagged, Scores: r.Scores}
	for _, c := range categoryOrder {
		if r.Categories[c] {
			v.Categories = append(v.Categories, c)
		}
	}
	var extra []string
	for c, on := range r.Categories {
		if on && !slices.Contains(categoryOrder, c) {
			extra = append(extra, c)
		}
	}
	slices.Sort(extra)
	v.Categories = append(v.Categories, extra...)
	// A category flagged without the overall flag still flags the text.
	v.Flagged = v.Flagged || len(v.Categories) > 0
	return v, nil
}

// errMalformed marks a response that does not have the API's shape.
var errMalformed = errors.New("malformed response")
