package a2aserver

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
)

// This file holds the A2A 1.0 wire shapes (the proto-JSON of lf.a2a.v1)
// and their conversion from and to a2a-go's 0.3 types, which the handler
// keeps its tasks in.

// A part1 is a Part: exactly one of text, raw, url and data.
type part1 struct {
	Text      *string         `json:"text,omitempty"`
	Raw       []byte          `json:"raw,omitempty"`
	URL       string          `json:"url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Metadata  map[string]any  `json:"metadata,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
}

type message1 struct {
	MessageID      string         `json:"messageId"`
	ContextID      string         `json:"contextId,omitempty"`
	TaskID         string         `json:"taskId,omitempty"`
	Role           string         `json:"role"`
	Parts          []part1        `json:"parts"`
	Metadata       map[string]any `json:"metadata,omitempty"`
	Extensions     []string       `json:"extensions,omitempty"`
	ReferenceTasks []string       `json:"referenceTaskIds,omitempty"`
}

type status1 struct {
	State     string    `json:"state"`
	Message   *message1 `json:"message,omitempty"`
	Timestamp string    `json:"timestamp,omitempty"`
}

type artifact1 struct {
	ArtifactID  string         `json:"artifactId"`
	Name        string         `json:"name,omitempty"`
	Description string         `json:"description,omitempty"`
	Parts       []part1        `json:"parts"`
	Metadata    map[string]any `json:"metadata,omitempty"`
}

type task1Wire struct {
	ID        string         `json:"id"`
	ContextID string         `json:"contextId"`
	Status    status1        `json:"status"`
	Artifacts []artifact1    `json:"artifacts,omitempty"`
	History   []message1     `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

type statusUpdate1 struct {
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Status    status1        `json:"status"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

type artifactUpdate1 struct {
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Artifact  artifact1      `json:"artifact"`
	Append    bool           `json:"append,omitempty"`
	LastChunk bool           `json:"lastChunk,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// A sendRequest1 is the params of SendMessage and SendStreamingMessage.
type sendRequest1 struct {
	Message       *message1 `json:"message"`
	Configuration *struct {
		AcceptedOutputModes []string `json:"acceptedOutputModes"`
		HistoryLength       *int     `json:"historyLength"`
		ReturnImmediately   bool     `json:"returnImmediately"`
	} `json:"configuration"`
	Metadata map[string]any `json:"metadata"`
}

// A listRequest1 is the params of ListTasks.
type listRequest1 struct {
	ContextID        string `json:"contextId"`
	Status           string `json:"status"`
	PageSize         *int   `json:"pageSize"`
	PageToken        string `json:"pageToken"`
	HistoryLength    *int   `json:"historyLength"`
	IncludeArtifacts *bool  `json:"includeArtifacts"`
	// StatusTimestampAfter keeps the tasks whose status changed after it.
	StatusTimestampAfter *time.Time `json:"statusTimestampAfter"`
}

type listResponse1 struct {
	Tasks         []task1 `json:"tasks"`
	NextPageToken string  `json:"nextPageToken"`
	PageSize      int     `json:"pageSize"`
	TotalSize     int     `json:"totalSize"`
}

// A task1 is a task on the 1.0 wire.
type task1 = *task1Wire

// state1 returns the 1.0 name of a task state.
func state1(s a2a.TaskState) string {
	if s == a2a.TaskStateUnspecified || s == a2a.TaskStateUnknown {
		return "TASK_STATE_UNSPECIFIED"
	}
	return "TASK_STATE_" + strings.ToUpper(strings.ReplaceAll(string(s), "-", "_"))
}

// stateOf1 returns the task state a 1.0 name names.
func stateOf1(name string) (a2a.TaskState, bool) {
	for _, s := range []a2a.TaskState{a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateCompleted, a2a.TaskStateFailed,
		a2a.TaskStateCanceled, a2a.TaskStateInputRequired, a2a.TaskStateRejected, a2a.TaskStateAuthRequired} {
		if state1(s) == name {
			return s, true
		}
	}
	return "", false
}

func role1(r a2a.MessageRole) string {
	switch r {
	case a2a.MessageRoleUser:
		return "ROLE_USER"
	case a2a.MessageRoleAgent:
		return "ROLE_AGENT"
	}
	return "ROLE_UNSPECIFIED"
}

func parts1(ps a2a.ContentParts) []part1 {
	out := make([]part1, 0, len(ps))
	for _, p := range ps {
		switch p := p.(type) {
		case a2a.TextPart:
			text := p.Text
			out = append(out, part1{Text: &text, Metadata: p.Metadata})
		case a2a.DataPart:
			b, err := json.Marshal(p.Data)
			if err != nil {
				b = []byte("null")
			}
			out = append(out, part1{Data: b, Metadata: p.Metadata, MediaType: "application/json"})
		case a2a.FilePart:
			q := part1{Metadata: p.Metadata}
			switch f := p.File.(type) {
			case a2a.FileURI:
				q.URL, q.Filename, q.MediaType = f.URI, f.Name, f.MimeType
			case a2a.FileBytes:
				q.Filename, q.MediaType = f.Name, f.MimeType
				q.Raw, _ = base64.StdEncoding.DecodeString(f.Bytes)
			}
			out = append(out, q)
		}
	}
	return out
}

func message1Of(m *a2a.Message) *message1 {
	if m == nil {
		return nil
	}
	refs := make([]string, len(m.ReferenceTasks))
	for i, r := range m.ReferenceTasks {
		refs[i] = string(r)
	}
	return &message1{MessageID: m.ID, ContextID: m.ContextID, TaskID: string(m.TaskID), Role: role1(m.Role),
		Parts: parts1(m.Parts), Metadata: m.Metadata, Extensions: m.Extensions, ReferenceTasks: refs}
}

func status1Of(s a2a.TaskStatus) status1 {
	out := status1{State: state1(s.State), Message: message1Of(s.Message)}
	if s.Timestamp != nil {
		out.Timestamp = s.Timestamp.UTC().Format(time.RFC3339Nano)
	}
	return out
}

func artifact1Of(a *a2a.Artifact) artifact1 {
	return artifact1{ArtifactID: string(a.ID), Name: a.Name, Description: a.Description, Parts: parts1(a.Parts), Metadata: a.Metadata}
}

// task1 returns t on the 1.0 wire.
func task1Of(t *a2a.Task) task1 {
	out := &task1Wire{ID: string(t.ID), ContextID: t.ContextID, Status: status1Of(t.Status), Metadata: t.Metadata}
	for _, a := range t.Artifacts {
		out.Artifacts = append(out.Artifacts, artifact1Of(a))
	}
	for _, m := range t.History {
		out.History = append(out.History, *message1Of(m))
	}
	return out
}

// streamResponse1 returns the StreamResponse of an event.
func streamResponse1(ev a2a.Event) any {
	switch ev := ev.(type) {
	case *a2a.Task:
		return map[string]any{"task": task1Of(ev)}
	case *a2a.Message:
		return map[string]any{"message": message1Of(ev)}
	case *a2a.TaskStatusUpdateEvent:
		return map[string]any{"statusUpdate": statusUpdate1{TaskID: string(ev.TaskID), ContextID: ev.ContextID, Status: status1Of(ev.Status), Metadata: ev.Metadata}}
	case *a2a.TaskArtifactUpdateEvent:
		return map[string]any{"artifactUpdate": artifactUpdate1{TaskID: string(ev.TaskID), ContextID: ev.ContextID,
			Artifact: artifact1Of(ev.Artifact), Append: ev.Append, LastChunk: ev.LastChunk, Metadata: ev.Metadata}}
	}
	return nil
}

// decode returns the message as a2a-go's type.
func (m *message1) decode() (*a2a.Message, error) {
	out := &a2a.Message{ID: m.MessageID, ContextID: m.ContextID, TaskID: a2a.TaskID(m.TaskID), Metadata: m.Metadata, Extensions: m.Extensions}
	switch m.Role {
	case "ROLE_USER", "user":
		out.Role = a2a.MessageRoleUser
	case "ROLE_AGENT", "agent":
		out.Role = a2a.MessageRoleAgent
	case "", "ROLE_UNSPECIFIED":
	default:
		return nil, fmt.Errorf("unknown message.role %q", m.Role)
	}
	for _, r := range m.ReferenceTasks {
		out.ReferenceTasks = append(out.ReferenceTasks, a2a.TaskID(r))
	}
	for i, p := range m.Parts {
		switch {
		case p.Text != nil:
			out.Parts = append(out.Parts, a2a.TextPart{Text: *p.Text, Metadata: p.Metadata})
		case len(p.Data) > 0:
			var v any
			if err := json.Unmarshal(p.Data, &v); err != nil {
				return nil, fmt.Errorf("message.parts[%d].data: %w", i, err)
			}
			out.Parts = append(out.Parts, a2a.DataPart{Data: dataOf(p.Data), Metadata: p.Metadata})
		case p.URL != "":
			out.Parts = append(out.Parts, a2a.FilePart{File: a2a.FileURI{URI: p.URL, FileMeta: a2a.FileMeta{Name: p.Filename, MimeType: p.MediaType}}, Metadata: p.Metadata})
		case len(p.Raw) > 0:
			out.Parts = append(out.Parts, a2a.FilePart{File: a2a.FileBytes{Bytes: base64.StdEncoding.EncodeToString(p.Raw), FileMeta: a2a.FileMeta{Name: p.Filename, MimeType: p.MediaType}}, Metadata: p.Metadata})
		default:
			return nil, errors.New("message.parts[" + fmt.Sprint(i) + "] has no content")
		}
	}
	return out, nil
}

// sortByTime sorts tasks by the time of their status, oldest first.
func sortByTime(ts []*a2a.Task) {
	at := func(t *a2a.Task) time.Time {
		if t.Status.Timestamp == nil {
			return time.Time{}
		}
		return *t.Status.Timestamp
	}
	slices.SortStableFunc(ts, func(a, b *a2a.Task) int { return at(a).Compare(at(b)) })
}
