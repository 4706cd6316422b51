package chat

import (
	"encoding/json"
	"time"
)

// A ClientToolCall is the data of a ClientTool event ([EventClientTool]):
// the model called a tool that the client runs (an AI service's tool
// marked //chat:tool client), and the turn paused until the client sends
// the result. The client answers with the data of its next request:
//
//	{"clientTool": "<id>", "result": <any JSON value>}   the call's result
//	{"clientTool": "<id>", "error": "why"}               the call failed or the user refused it
//	{"cancel": "<id>"}                                   stop the paused turn
//
// [SessionBuilder.OnClientTool] answers so on its own.
type ClientToolCall struct {
	// ID identifies the call: the answer names it.
	ID string `json:"id"`
	// Tool is the tool's name; Arguments the model's arguments (a JSON
	// object).
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// CallID is the model's id of the tool call.
	CallID string `json:"callId"`
	// Deadline, when set, is the time after which the server no longer
	// takes the result: an answer after it tells the model that the
	// client did not answer in time.
	Deadline *time.Time `json:"deadline,omitempty"`
	// Agent and Session name the sub-agent, and its session, whose turn
	// made the call; "" for a call of the top-level turn.
	Agent   string `json:"agent,omitempty"`
	Session string `json:"session,omitempty"`
}

// The request data keys of an answer to a paused turn: a client tool call
// ([ClientToolCall]) or, with KeyCancel, a tool call waiting for the
// user's confirmation too.
const (
	KeyClientTool = "clientTool" // the id of the client tool call answered (string)
	KeyResult     = "result"     // the call's result (any JSON value)
	KeyError      = "error"      // why the call failed or was refused (string), instead of a result
	KeyCancel     = "cancel"     // the id of the paused call whose turn stops (string)
)
