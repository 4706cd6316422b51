package a2aserver

import (
	"bytes"
	"encoding/json"
	"strings"
)

// The A2A protocol versions served, and the request header that chooses
// one (absent: 0.3).
const (
	versionHeader = "A2A-Version"
	version1      = "1.0"
	version03     = "0.3"
)

// A version is the protocol version of a request.
type version int

const (
	v03 version = iota
	v1
)

// versionOf returns the version an A2A-Version header asks for.
func versionOf(h string) (version, bool) {
	switch strings.TrimSpace(h) {
	case "", "0.3", "0.3.0":
		return v03, true
	case "1.0", "1", "1.0.0":
		return v1, true
	}
	return 0, false
}

// JSON-RPC and A2A error codes.
const (
	codeParseError          = -32700
	codeInvalidRequest      = -32600
	codeMethodNotFound      = -32601
	codeInvalidParams       = -32602
	codeInternal            = -32603
	codeTaskNotFound        = -32001
	codeTaskNotCancelable   = -32002
	codePushNotSupported    = -32003
	codeUnsupported         = -32004
	codeExtendedCardMissing = -32007
	codeVersionNotSupported = -32009
	codeUnauthenticated     = -31401
)

// An rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return e.Message }

// An rpcRequest is a JSON-RPC request.
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// idOrNull returns the id to answer an invalid request with: its own when
// it is a valid id, else null.
func (r *rpcRequest) idOrNull() json.RawMessage {
	if r != nil && validID(r.ID) {
		return r.ID
	}
	return nil
}

// validID reports whether id is a JSON-RPC id: a string, a number or null.
func validID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return false
	}
	switch id[0] {
	case '"':
		var s string
		return json.Unmarshal(id, &s) == nil
	case 'n':
		return string(id) == "null"
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		var n json.Number
		return json.Unmarshal(id, &n) == nil
	}
	return false
}

// parseRequest parses one JSON-RPC request; on an error, the request
// returned holds what could be read of it.
func parseRequest(raw []byte) (*rpcRequest, *rpcError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' {
		if !json.Valid(raw) {
			return nil, &rpcError{Code: codeParseError, Message: "Parse error: the body is not JSON"}
		}
		return nil, &rpcError{Code: codeInvalidRequest, Message: "Invalid Request: batches are not supported"}
	}
	var req rpcRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		if !json.Valid(raw) {
			return nil, &rpcError{Code: codeParseError, Message: "Parse error: the body is not JSON"}
		}
		return nil, &rpcError{Code: codeInvalidRequest, Message: "Invalid Request: " + err.Error()}
	}
	if req.JSONRPC != "2.0" {
		return &req, &rpcError{Code: codeInvalidRequest, Message: `Invalid Request: jsonrpc must be "2.0"`}
	}
	if !validID(req.ID) {
		return &req, &rpcError{Code: codeInvalidRequest, Message: "Invalid Request: the id must be a string, a number or null"}
	}
	if req.Method == "" {
		return &req, &rpcError{Code: codeInvalidRequest, Message: "Invalid Request: no method"}
	}
	return &req, nil
}

// An rpcResponse is a JSON-RPC response.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

func errorResponse(id json.RawMessage, e *rpcError) *rpcResponse {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	return &rpcResponse{JSONRPC: "2.0", ID: id, Error: e}
}

func resultResponse(id json.RawMessage, v any) *rpcResponse {
	return &rpcResponse{JSONRPC: "2.0", ID: id, Result: v}
}

func invalidParams(msg string) *rpcError {
	return &rpcError{Code: codeInvalidParams, Message: "Invalid params: " + msg}
}

func taskNotFound() *rpcError {
	return &rpcError{Code: codeTaskNotFound, Message: "Task not found"}
}
