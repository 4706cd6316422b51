package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/internal/tooltext"
)

// A conn is one client of the server: the application's, or a scope's
// (then it is the scope's bean, which the scope closes). It holds one
// session at a time and opens a new one when the last ended.
type conn struct {
	src *Source

	mu     sync.Mutex // held while a session opens: the turns that need it wait
	tools  []ai.Tool  // of the current session; guarded by mu
	closed bool       // guarded by mu

	sess  atomic.Pointer[session] // the current session; nil before the first
	stale atomic.Bool             // the server said its tool list changed
}

// session is one MCP client session and what watches it.
type session struct {
	cs      *mcp.ClientSession
	done    chan struct{} // closed when the session has ended
	closing atomic.Bool   // ended by us, not by the server
	lost    atomic.Bool   // a call found the connection gone
	suspect atomic.Bool   // a call failed in the transport: ping before reuse

	tooLarge *atomic.Bool // a message from the server went past MaxMessageBytes
	tasks    *taskTools   // the tools callable only as tasks
}

// ended reports whether the session is over, or known to be.
func (s *session) ended() bool {
	if s.lost.Load() {
		return true
	}
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// connectionLost reports whether err, of a call, says that the connection
// is gone: closed, its stream ended, or the server no longer knows the
// session (streamable HTTP's 404).
func connectionLost(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, mcp.ErrSessionMissing) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// protocolError reports whether err is an error the server answered with:
// the session is fine.
func protocolError(err error) bool {
	var we *jsonrpc.Error
	return errors.As(err, &we)
}

// live reports whether c holds a session that has not ended.
func (c *conn) live() bool {
	s := c.sess.Load()
	return s != nil && !s.ended()
}

// listed returns the tools of the current session.
func (c *conn) listed() []ai.Tool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tools
}

// get returns the tools of a live session: the current one, its tools
// listed again when the server said they changed, or a new one when it
// ended.
func (c *conn) get(ctx context.Context) ([]ai.Tool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("%s: %w", c.src.name, ErrClosed)
	}
	if s := c.sess.Load(); s != nil && !s.ended() && s.suspect.Load() {
		// A call failed in the transport: make sure the session still
		// answers before offering its tools again.
		pctx, cancel := context.WithTimeout(ctx, c.src.opts.ConnectTimeout)
		err := s.cs.Ping(pctx, nil)
		cancel()
		if err != nil && ctx.Err() == nil {
			c.src.opts.Logger.WarnContext(ctx, "mcptools: the MCP session does not answer; opening a new one",
				"server", c.src.opts.Name, "err", err)
			s.lost.Store(true)
		} else if err == nil {
			s.suspect.Store(false)
		}
	}
	if s := c.sess.Load(); s != nil && !s.ended() {
		if !c.stale.Load() {
			return c.tools, nil
		}
		c.stale.Store(false) // before listing: a change meanwhile lists again
		ctx, cancel := context.WithTimeout(ctx, c.src.opts.ConnectTimeout)
		tools, err := c.src.list(ctx, s.cs, c, s.tasks)
		cancel()
		if err == nil {
			c.tools = tools
			return tools, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		c.src.opts.Logger.WarnContext(ctx, "mcptools: listing the tools again failed; opening a new session",
			"server", c.src.opts.Name, "err", err)
		c.end(s)
	} else if s != nil {
		c.end(s)
	}
	s, tools, err := c.open(ctx)
	if err != nil {
		return nil, err
	}
	c.sess.Store(s)
	c.tools = tools
	return tools, nil
}

// open opens a session and lists its tools.
func (c *conn) open(ctx context.Context) (*session, []ai.Tool, error) {
	src := c.src
	ctx, cancel := context.WithTimeout(ctx, src.opts.ConnectTimeout)
	defer cancel()
	t, err := src.opts.Transport(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w: its transport: %w", src.name, ErrUnavailable, err)
	}
	tooLarge, tasks := new(atomic.Bool), new(taskTools)
	var stderr *stderrTail
	ct, _ := t.(*commandTransport)
	if ct != nil {
		if ct.cmd.Stderr == nil {
			stderr = &stderrTail{log: func(line string) {
				src.opts.Logger.Debug("mcptools: the MCP server's stderr", "server", src.opts.Name, "line", line)
			}}
			ct.cmd.Stderr = stderr
		}
		ct.procs = &src.procs
		ct.log = func(msg string, args ...any) {
			src.opts.Logger.Debug(msg, append([]any{"server", src.opts.Name}, args...)...)
		}
	}
	client := mcp.NewClient(src.opts.Client, &mcp.ClientOptions{
		Logger:                 src.opts.Logger,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { c.stale.Store(true) },
	})
	c.stale.Store(false)
	if st, ok := t.(*mcp.StreamableClientTransport); ok {
		t = boundHTTP(st, src.maxMessage, tooLarge, tasks)
	} else {
		t = watchTasks{Transport: t, tt: tasks}
	}
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		if ct != nil {
			ct.wait() // its last words, and no process left behind
		}
		return nil, nil, fmt.Errorf("%s: %w: connecting: %w%s", src.name, ErrUnavailable, err, stderr.suffix())
	}
	tools, err := src.list(ctx, cs, c, tasks)
	if err != nil {
		_ = cs.Close()
		if ct != nil {
			ct.wait()
		}
		if errors.Is(err, ErrUnavailable) {
			err = fmt.Errorf("%w%s", err, stderr.suffix())
		}
		return nil, nil, err
	}
	s := &session{cs: cs, done: make(chan struct{}), tooLarge: tooLarge, tasks: tasks}
	go func() {
		err := cs.Wait()
		close(s.done)
		if !s.closing.Load() && !s.lost.Load() {
			src.opts.Logger.Warn("mcptools: the MCP session ended; the next turn opens a new one",
				"server", src.opts.Name, "err", fmt.Sprintf("%v%s", err, stderr.suffix()))
		}
	}()
	src.opts.Logger.Debug("mcptools: session opened", "server", src.opts.Name, "session", cs.ID(), "tools", len(tools))
	return s, tools, nil
}

// end closes the session s. c.mu is held or c is being closed.
func (c *conn) end(s *session) {
	s.closing.Store(true)
	if err := s.cs.Close(); err != nil && !s.ended() {
		c.src.opts.Logger.Debug("mcptools: closing a session", "server", c.src.opts.Name, "err", err)
	}
}

// close ends the connection for good: its scope ended, or its source
// was closed. It implements the Close of a scoped bean.
func (c *conn) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	c.tools = nil
	c.src.forget(c)
	s := c.sess.Load()
	if s == nil {
		return nil
	}
	ended := s.ended() // then the error of Close is the server's exit status
	s.closing.Store(true)
	err := s.cs.Close()
	<-s.done
	if err != nil && !ended && !errors.Is(err, mcp.ErrConnectionClosed) {
		return fmt.Errorf("%s: closing the session: %w", c.src.name, err)
	}
	return nil
}

// Close closes the connection: a scope's session ends with its scope.
func (c *conn) Close() error { return c.close() }

// DetachBean implements chat.DetachableBean: the session is this
// process's, and closes when its scope leaves the process (its durable
// conversation is detached); the node where the scope goes on opens its
// own.
func (c *conn) DetachBean(context.Context) error { return c.close() }

// call calls the tool the server names name with the model's arguments.
// When the session has ended since the turn began (the server exited, or
// an earlier call broke the connection), nothing has been sent: it opens a
// new session and calls there. When the server answers that it no longer
// knows the session (it restarted), the call did not run: it is made
// again, once, on a new session.
func (c *conn) call(ctx context.Context, name, args string) (any, error) {
	src := c.src
	if !isObject(args) {
		return nil, &ai.ArgumentsError{Err: errors.New("the arguments are not a JSON object")}
	}
	s, err := c.current(ctx)
	if err != nil {
		return nil, &CallError{Server: src.opts.Name, Tool: name, Err: err}
	}
	res, err := c.callOn(ctx, s, name, args)
	if err != nil && errors.Is(err, mcp.ErrSessionMissing) && ctx.Err() == nil {
		if s, err = c.current(ctx); err == nil {
			res, err = c.callOn(ctx, s, name, args)
		}
	}
	if err != nil {
		return nil, &CallError{Server: src.opts.Name, Tool: name, Err: err}
	}
	text := tooltext.Clip(resultText(res), src.maxResult)
	if res.IsError {
		return nil, &ToolError{Server: src.opts.Name, Tool: name, Text: text}
	}
	if text == "" {
		return nil, nil
	}
	return text, nil
}

// current returns the session to call: the current one, or a new one
// when it has ended.
func (c *conn) current(ctx context.Context) (*session, error) {
	if s := c.sess.Load(); s != nil && !s.ended() {
		return s, nil
	}
	if _, err := c.get(ctx); err != nil {
		return nil, err
	}
	s := c.sess.Load()
	if s == nil || s.ended() {
		return nil, fmt.Errorf("%w: the session has ended", ErrUnavailable)
	}
	return s, nil
}

// callOn makes the call on s, noting what its failure says of s.
func (c *conn) callOn(ctx context.Context, s *session, name, args string) (*mcp.CallToolResult, error) {
	src := c.src
	callCtx := ctx
	if d := src.opts.CallTimeout; d > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	res, err := s.cs.CallTool(callCtx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err == nil {
		return res, nil
	}
	if s.tooLarge != nil && s.tooLarge.Load() {
		// The SDK ends the connection on a message it could not read.
		if s.lost.CompareAndSwap(false, true) {
			src.opts.Logger.WarnContext(ctx, "mcptools: a message from the MCP server exceeds MaxMessageBytes; the next call opens a new session",
				"server", src.opts.Name, "tool", name, "max_message_bytes", src.maxMessage)
		}
		// The SDK's error only repeats it.
		return nil, fmt.Errorf("%w: a message from the server exceeds MaxMessageBytes (%d bytes); the session ended", ErrMessageTooLarge, src.maxMessage)
	}
	switch {
	case ctx.Err() != nil:
	case callCtx.Err() != nil:
		err = fmt.Errorf("no answer within %v: %w", src.opts.CallTimeout, callCtx.Err())
	case s.ended() || connectionLost(err):
		if s.lost.CompareAndSwap(false, true) {
			src.opts.Logger.WarnContext(ctx, "mcptools: the MCP session ended during a call; the next call opens a new one",
				"server", src.opts.Name, "tool", name, "err", err)
		}
		err = fmt.Errorf("%w: the session ended during the call: %w", ErrUnavailable, err)
	case !protocolError(err):
		s.suspect.Store(true) // the next turn checks the session first
	}
	return nil, err
}

// isObject reports whether args is a JSON object.
func isObject(args string) bool {
	args = strings.TrimSpace(args)
	return strings.HasPrefix(args, "{") && json.Valid([]byte(args))
}
