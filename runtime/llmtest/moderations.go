package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
)

// This file holds the OpenAI moderations endpoint of [Server].

// ModerationCategories are the categories of OpenAI's moderation models,
// in the order the API lists them.
var ModerationCategories = []string{
	"harassment", "harassment/threatening", "hate", "hate/threatening",
	"illicit", "illicit/violent", "self-harm", "self-harm/instructions",
	"self-harm/intent", "sexual", "sexual/minors", "violence", "violence/graphic",
}

// moderationWords are the words that make the moderations endpoint flag
// a text, by category (see [ModerationScores]).
var moderationWords = map[string][]string{
	"harassment":      {"idiot", "moron"},
	"hate":            {"i hate"},
	"illicit":         {"steal", "lockpick"},
	"self-harm":       {"hurt myself"},
	"sexual":          {"explicit"},
	"violence":        {"kill", "murder"},
	"illicit/violent": {"poison"},
}

// moderationModels are the models POST /v1/moderations takes; only the
// omni models take images.
var moderationModels = []string{"omni-moderation-latest", "omni-moderation-2024-09-26", "text-moderation-latest", "text-moderation-stable", "text-moderation-007"}

// DefaultModerationModel is the model of a moderations request that
// names none, as at OpenAI.
const DefaultModerationModel = "omni-moderation-latest"

// ModerationScores returns the scores the moderations endpoint gives text,
// by category: 0.98 for a category one of whose words the text holds
// (case-insensitive: "idiot" or "moron" harassment, "i hate" hate,
// "steal" or "lockpick" illicit, "poison" illicit/violent, "hurt myself"
// self-harm, "explicit" sexual, "kill" or "murder" violence), else
// 0.0001. A category scoring 0.5 or more is flagged.
func ModerationScores(text string) map[string]float64 {
	lower := strings.ToLower(text)
	scores := make(map[string]float64, len(ModerationCategories))
	for _, c := range ModerationCategories {
		scores[c] = 0.0001
		for _, w := range moderationWords[c] {
			if strings.Contains(lower, w) {
				scores[c] = 0.98
			}
		}
	}
	return scores
}

// moderationEndpoint is POST /v1/moderations: it answers without the
// script, from [ModerationScores], and counts its calls.
type moderationEndpoint struct {
	calls atomic.Int64
}

// ModerationCalls returns the number of moderations requests answered so
// far (rejected ones are not counted).
func (e *moderationEndpoint) ModerationCalls() int { return int(e.calls.Load()) }

// moderationFields are the fields a moderations request may have.
var moderationFields = []string{"model", "input"}

// moderationResponse is the answer to POST /v1/moderations.
type moderationResponse struct {
	ID      string             `json:"id"`
	Model   string             `json:"model"`
	Results []moderationResult `json:"results"`
}

type moderationResult struct {
	Flagged      bool                `json:"flagged"`
	Categories   map[string]bool     `json:"categories"`
	Scores       map[string]float64  `json:"category_scores"`
	AppliedTypes map[string][]string `json:"category_applied_input_types"`
}

// handleModerations serves POST /v1/moderations.
func (e *moderationEndpoint) handleModerations(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r, writeError)
	if !ok {
		return
	}
	if key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); !ok || key == "" {
		writeError(w, http.StatusUnauthorized, "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).")
		return
	}
	model, texts, images, status, msg := decodeModerationRequest(body)
	if msg != "" {
		writeError(w, status, msg)
		return
	}
	n := e.calls.Add(1)
	resp := moderationResponse{ID: fmt.Sprintf("modr-%d", n), Model: model}
	for _, text := range texts {
		res := moderationResult{Scores: ModerationScores(text), Categories: map[string]bool{}, AppliedTypes: map[string][]string{}}
		for _, c := range ModerationCategories {
			flagged := res.Scores[c] >= 0.5
			res.Categories[c] = flagged
			res.Flagged = res.Flagged || flagged
			res.AppliedTypes[c] = []string{}
			if text != "" {
				res.AppliedTypes[c] = append(res.AppliedTypes[c], "text")
			}
			if images > 0 {
				res.AppliedTypes[c] = append(res.AppliedTypes[c], "image")
			}
		}
		resp.Results = append(resp.Results, res)
	}
	writeJSON(w, http.StatusOK, resp)
}

// decodeModerationRequest decodes and checks a moderations request as
// OpenAI does. It returns the model, the texts to score (one per result:
// the input string, each string of an input array, or the text parts of
// a multimodal input together) and the number of images, or the status
// and message of the error.
func decodeModerationRequest(body []byte) (model string, texts []string, images, status int, msg string) {
	bad := func(m string) (string, []string, int, int, string) { return "", nil, 0, http.StatusBadRequest, m }
	var fields map[string]json.RawMessage
	if err := decodeStrictJSON(body, &fields); err != nil {
		return bad("llmtest: invalid request: " + err.Error())
	}
	for name := range fields {
		if !slices.Contains(moderationFields, name) {
			return bad("Unrecognized request argument supplied: " + name)
		}
	}
	model = DefaultModerationModel
	if raw, ok := fields["model"]; ok {
		if err := json.Unmarshal(raw, &model); err != nil {
			return bad("Invalid type for 'model': expected a string.")
		}
		if !slices.Contains(moderationModels, model) {
			return "", nil, 0, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model)
		}
	}
	raw := bytes.TrimSpace(fields["input"])
	if len(raw) == 0 || string(raw) == "null" {
		return bad("'input' is a required property")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return model, []string{s}, 0, 0, ""
	}
	var strs []string
	if json.Unmarshal(raw, &strs) == nil {
		if len(strs) == 0 {
			return bad(invalidModerationInput)
		}
		return model, strs, 0, 0, ""
	}
	var parts []json.RawMessage
	if json.Unmarshal(raw, &parts) != nil || len(parts) == 0 {
		return bad(invalidModerationInput)
	}
	if !strings.HasPrefix(model, "omni-") {
		return bad(fmt.Sprintf("Model %s does not support multimodal (image or object) inputs; use omni-moderation-latest.", model))
	}
	var text []string
	for i, p := range parts {
		var part struct {
			Type     string           `json:"type"`
			Text     *string          `json:"text"`
			ImageURL *json.RawMessage `json:"image_url"`
		}
		if err := decodeStrictJSON(p, &part); err != nil {
			return bad(fmt.Sprintf("Invalid value for 'input[%d]': %v", i, err))
		}
		switch part.Type {
		case "text":
			if part.Text == nil || part.ImageURL != nil {
				return bad(fmt.Sprintf("Invalid value for 'input[%d]': a text part has a string 'text' and nothing else.", i))
			}
			text = append(text, *part.Text)
		case "image_url":
			var img struct {
				URL *string `json:"url"`
			}
			if part.ImageURL == nil || part.Text != nil || json.Unmarshal(*part.ImageURL, &img) != nil || img.URL == nil || *img.URL == "" {
				return bad(fmt.Sprintf("Invalid value for 'input[%d]': an image_url part has an 'image_url' object with a 'url'.", i))
			}
			images++
		default:
			return bad(fmt.Sprintf("Invalid value for 'input[%d].type': expected 'text' or 'image_url'.", i))
		}
	}
	if images > 1 {
		return bad("Only one image can be provided per request.")
	}
	return model, []string{strings.Join(text, "\n")}, images, 0, ""
}

// invalidModerationInput is the message for an input that is neither a
// string, nor a non-empty array of strings or of input parts.
const invalidModerationInput = "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference."
