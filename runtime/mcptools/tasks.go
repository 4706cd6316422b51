package mcptools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool may say that it runs only as an MCP task (execution.taskSupport
// "required", MCP 2025-11-25): called the usual way, it fails. This
// client does not support tasks, so such a tool is left out. The SDK's
// mcp.Tool (v1.8.0) does not keep the field: the source reads it from the
// tools/list responses as they arrive — on the connection over stdio, on
// the HTTP responses over streamable HTTP (whose connection cannot be
// wrapped).

// taskTools records the tools of a session listed as callable only as
// tasks.
type taskTools struct {
	mu    sync.Mutex
	names map[string]bool
}

// required reports whether the tool name is callable only as a task.
func (tt *taskTools) required(name string) bool {
	if tt == nil {
		return false
	}
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return tt.names[name]
}

// observeResult notes the task-only tools of a result, if it is a
// tools/list one.
func (tt *taskTools) observeResult(result []byte) {
	if !bytes.Contains(result, []byte(`"taskSupport"`)) {
		return
	}
	var list struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution *struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &list) != nil {
		return
	}
	tt.mu.Lock()
	defer tt.mu.Unlock()
	for _, t := range list.Tools {
		if t.Execution != nil && t.Execution.TaskSupport == "required" {
			if tt.names == nil {
				tt.names = make(map[string]bool)
			}
			tt.names[t.Name] = true
		}
	}
}

// observeMessage notes the task-only tools of a JSON-RPC message.
func (tt *taskTools) observeMessage(raw []byte) {
	if !bytes.Contains(raw, []byte(`"taskSupport"`)) {
		return
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(raw, &msg) == nil && msg.Result != nil {
		tt.observeResult(msg.Result)
	}
}

// watchTasks is a transport whose connections are watched for task-only
// tools.
type watchTasks struct {
	mcp.Transport
	tt *taskTools
}

// Connect implements mcp.Transport.
func (w watchTasks) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := w.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &watchedConn{Connection: c, tt: w.tt}, nil
}

type watchedConn struct {
	mcp.Connection
	tt *taskTools
}

// Read implements mcp.Connection: it notes the task-only tools of a
// response before the client sees it.
func (c *watchedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil && resp.Result != nil {
		c.tt.observeResult(resp.Result)
	}
	return msg, err
}

// isToolsList reports whether req posts a tools/list request.
func isToolsList(req *http.Request) bool {
	if req.Method != http.MethodPost || req.GetBody == nil {
		return false
	}
	body, err := req.GetBody()
	if err != nil {
		return false
	}
	defer body.Close()
	var msg struct {
		Method string `json:"method"`
	}
	b, err := io.ReadAll(io.LimitReader(body, 64<<10))
	return err == nil && json.Unmarshal(b, &msg) == nil && msg.Method == "tools/list"
}

// tasksBody is the body of a response to tools/list, which it reads for
// task-only tools as the client reads it: the whole JSON body, or each
// event of a stream.
type tasksBody struct {
	io.ReadCloser
	tt     *taskTools
	events bool
	buf    bytes.Buffer // the body, or the current event
}

func (b *tasksBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.buf.Write(p[:n])
	if !b.events {
		if err == io.EOF {
			b.tt.observeMessage(b.buf.Bytes())
			b.buf.Reset()
		}
		return n, err
	}
	for {
		data := b.buf.Bytes()
		i := bytes.Index(data, []byte("\n\n"))
		if j := bytes.Index(data, []byte("\r\n\r\n")); j >= 0 && (i < 0 || j < i) {
			i = j
		}
		if i < 0 {
			break
		}
		b.observeEvent(data[:i])
		b.buf.Next(i + 2)
	}
	return n, err
}

// observeEvent notes the task-only tools of the data of an event.
func (b *tasksBody) observeEvent(event []byte) {
	var data bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(event))
	sc.Buffer(nil, len(event)+1)
	for sc.Scan() {
		line := bytes.TrimRight(sc.Bytes(), "\r")
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(d, []byte(" ")))
		}
	}
	b.tt.observeMessage(data.Bytes())
}
