package memory

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/chatscopes/chatgen/runtime/internal/jsonstr"
	"github.com/tmc/langchaingo/llms"
)

// MarshalMessages encodes msgs as a JSON array, losslessly: decoding the
// result with [UnmarshalMessages] gives back messages equal to msgs. Stores
// that keep messages as text (files, Redis, SQL) should use it.
//
// The format is the one of langchaingo's own MessageContent JSON in its
// "parts" form, which json.Unmarshal into []llms.MessageContent also reads:
//
//	[{"role":"ai","parts":[{"type":"tool_call","tool_call":{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}}]},
//	 {"role":"tool","parts":[{"type":"tool_response","tool_response":{"tool_call_id":"call_1","name":"f","content":"42"}}]}]
//
// It differs from json.Marshal of the messages in three ways, all to stay
// lossless: a message with a single text part keeps the parts form (the
// short {"role","text"} form turns an empty text part into no part at all);
// llms.CachedContent, which langchaingo cannot encode, is written as
// {"type":"cached","cache_control":{"type":…,"duration_ns":…},"part":{…}};
// and a nil part is written as null. Pointer parts (*llms.TextContent, …)
// are written as the values they point to.
func MarshalMessages(msgs []llms.MessageContent) ([]byte, error) {
	return appendMessages(make([]byte, 0, encodedSize(msgs)), msgs)
}

// encodedSize estimates the length of the encoding of msgs, so that
// MarshalMessages allocates its buffer once for a chat of text parts
// (escapes and other parts may still grow it).
func encodedSize(msgs []llms.MessageContent) int {
	n := 2
	for _, m := range msgs {
		n += len(`{"role":"","parts":[]},`) + len(m.Role)
		for _, p := range m.Parts {
			n += len(`{"type":"text","text":""},`)
			if t, ok := derefPart(p).(llms.TextContent); ok {
				n += len(t.Text)
			} else {
				n += 64
			}
		}
	}
	return n
}

// appendMessages appends the encoding of msgs by [MarshalMessages] to dst
// and returns the extended buffer (on error, dst unchanged).
//
// It writes the bytes json.Marshal would write for the wire form of the
// messages, but writes the roles and text parts (nearly every part of a
// chat) itself instead of through reflection: a durable turn encodes its
// memory's new messages, and a store without edits (the in-memory one) its
// whole window, so this is on the hot path of every durable turn. Other
// parts go through json.Marshal, as before. TestAppendMessagesIsJSON
// checks the bytes against json.Marshal.
func appendMessages(dst []byte, msgs []llms.MessageContent) ([]byte, error) {
	start := len(dst)
	dst = append(dst, '[')
	for i, m := range msgs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"role":`...)
		dst = jsonstr.Append(dst, string(m.Role))
		dst = append(dst, `,"parts":`...)
		if m.Parts == nil {
			dst = append(dst, "null}"...)
			continue
		}
		dst = append(dst, '[')
		for j, p := range m.Parts {
			if j > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendPart(dst, p); err != nil {
				return dst[:start], fmt.Errorf("memory: message %d, part %d: %w", i, j, err)
			}
		}
		dst = append(dst, "]}"...)
	}
	return append(dst, ']'), nil
}

// appendPart appends the JSON of p's wire form: a text part directly,
// any other through json.Marshal.
func appendPart(dst []byte, p llms.ContentPart) ([]byte, error) {
	if t, ok := derefPart(p).(llms.TextContent); ok {
		dst = append(dst, `{"type":"text","text":`...)
		return append(jsonstr.Append(dst, t.Text), '}'), nil
	}
	wp, err := toWire(p)
	if err != nil {
		return dst, err
	}
	b, err := json.Marshal(wp)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// UnmarshalMessages decodes a JSON array written by [MarshalMessages]. It
// also reads the output of json.Marshal on []llms.MessageContent, including
// its short {"role","text"} form.
func UnmarshalMessages(data []byte) ([]llms.MessageContent, error) {
	var w []wireMessage
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("memory: decoding messages: %w", err)
	}
	return fromWireMessages(w)
}

func fromWireMessages(w []wireMessage) ([]llms.MessageContent, error) {
	if w == nil {
		return nil, nil
	}
	msgs := make([]llms.MessageContent, len(w))
	for i, wm := range w {
		msgs[i].Role = wm.Role
		switch {
		case wm.Parts != nil:
			msgs[i].Parts = make([]llms.ContentPart, len(wm.Parts))
			for j, wp := range wm.Parts {
				p, err := fromWire(wp)
				if err != nil {
					return nil, fmt.Errorf("memory: decoding message %d, part %d: %w", i, j, err)
				}
				msgs[i].Parts[j] = p
			}
		case wm.Text != nil:
			msgs[i].Parts = []llms.ContentPart{llms.TextContent{Text: *wm.Text}}
		}
	}
	return msgs, nil
}

type wireMessage struct {
	Role  llms.ChatMessageType `json:"role"`
	Text  *string              `json:"text,omitempty"` // read only: langchaingo's short form
	Parts []*wirePart          `json:"parts"`
}

type wirePart struct {
	Type         string            `json:"type"`
	Text         *string           `json:"text,omitempty"`
	ImageURL     *wireImageURL     `json:"image_url,omitempty"`
	Binary       *wireBinary       `json:"binary,omitempty"`
	ToolCall     *wireToolCall     `json:"tool_call,omitempty"`
	ToolResponse *wireToolResponse `json:"tool_response,omitempty"`
	CacheControl *wireCacheControl `json:"cache_control,omitempty"`
	Part         *wirePart         `json:"part,omitempty"`
}

type wireImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

type wireBinary struct {
	MIMEType string `json:"mime_type"`
	Data     string `json:"data"`
}

type wireToolCall struct {
	ID       string             `json:"id"`
	Type     string             `json:"type"`
	Function *llms.FunctionCall `json:"function"`
}

type wireToolResponse struct {
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
	Content    string `json:"content"`
}

type wireCacheControl struct {
	Type     string `json:"type,omitempty"`
	Duration int64  `json:"duration_ns,omitempty"`
}

const (
	typeText         = "text"
	typeImageURL     = "image_url"
	typeBinary       = "binary"
	typeToolCall     = "tool_call"
	typeToolResponse = "tool_response"
	typeCached       = "cached"
)

func toWire(p llms.ContentPart) (*wirePart, error) {
	switch p := derefPart(p).(type) {
	case nil:
		return nil, nil
	case llms.TextContent:
		return &wirePart{Type: typeText, Text: &p.Text}, nil
	case llms.ImageURLContent:
		return &wirePart{Type: typeImageURL, ImageURL: &wireImageURL{URL: p.URL, Detail: p.Detail}}, nil
	case llms.BinaryContent:
		return &wirePart{Type: typeBinary, Binary: &wireBinary{
			MIMEType: p.MIMEType,
			Data:     base64.StdEncoding.EncodeToString(p.Data),
		}}, nil
	case llms.ToolCall:
		return &wirePart{Type: typeToolCall, ToolCall: &wireToolCall{ID: p.ID, Type: p.Type, Function: p.FunctionCall}}, nil
	case llms.ToolCallResponse:
		return &wirePart{Type: typeToolResponse, ToolResponse: &wireToolResponse{
			ToolCallID: p.ToolCallID, Name: p.Name, Content: p.Content,
		}}, nil
	case llms.CachedContent:
		inner, err := toWire(p.ContentPart)
		if err != nil {
			return nil, err
		}
		wp := &wirePart{Type: typeCached, Part: inner}
		if p.CacheControl != nil {
			wp.CacheControl = &wireCacheControl{Type: p.CacheControl.Type, Duration: int64(p.CacheControl.Duration)}
		}
		return wp, nil
	default:
		return nil, fmt.Errorf("unsupported content part type %T", p)
	}
}

func fromWire(wp *wirePart) (llms.ContentPart, error) {
	if wp == nil {
		return nil, nil
	}
	switch wp.Type {
	case typeText, "":
		var t llms.TextContent
		if wp.Text != nil {
			t.Text = *wp.Text
		}
		return t, nil
	case typeImageURL:
		if wp.ImageURL == nil {
			return nil, fmt.Errorf("image_url part without image_url")
		}
		return llms.ImageURLContent{URL: wp.ImageURL.URL, Detail: wp.ImageURL.Detail}, nil
	case typeBinary:
		if wp.Binary == nil {
			return nil, fmt.Errorf("binary part without binary")
		}
		data, err := base64.StdEncoding.DecodeString(wp.Binary.Data)
		if err != nil {
			return nil, fmt.Errorf("binary data: %w", err)
		}
		return llms.BinaryContent{MIMEType: wp.Binary.MIMEType, Data: data}, nil
	case typeToolCall:
		if wp.ToolCall == nil {
			return nil, fmt.Errorf("tool_call part without tool_call")
		}
		return llms.ToolCall{ID: wp.ToolCall.ID, Type: wp.ToolCall.Type, FunctionCall: wp.ToolCall.Function}, nil
	case typeToolResponse:
		if wp.ToolResponse == nil {
			return nil, fmt.Errorf("tool_response part without tool_response")
		}
		r := wp.ToolResponse
		return llms.ToolCallResponse{ToolCallID: r.ToolCallID, Name: r.Name, Content: r.Content}, nil
	case typeCached:
		inner, err := fromWire(wp.Part)
		if err != nil {
			return nil, err
		}
		c := llms.CachedContent{ContentPart: inner}
		if wp.CacheControl != nil {
			c.CacheControl = &llms.CacheControl{Type: wp.CacheControl.Type, Duration: time.Duration(wp.CacheControl.Duration)}
		}
		return c, nil
	default:
		return nil, fmt.Errorf("unknown content part type %q", wp.Type)
	}
}
