// Package fleet is the fleet test of chatgen: three server processes
// (cmd/fleetnode) on a durable store behind a real load balancer (nginx,
// HAProxy, with the configurations of docs/deploy), hundreds of Go
// clients with reconnection chatting while each node is restarted in turn
// (SIGTERM: a drain; then kill -9), and a count of every turn: none lost,
// none run twice, every conversation intact. The test runs when
// CHATGEN_FLEET=1 (make fleet). This file holds the application the nodes
// serve.
package fleet

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
)

// Route is the application's one route (the default).
const Route = "turn"

// CounterBean is the name of the durable bean counting a conversation's
// turns.
const CounterBean = "github.com/chatscopes/chatgen/internal/fleet.counter"

// Counter is the durable chat-scoped bean counting a conversation's
// committed turns.
type Counter struct{ N int }

// askMethod is what chatgen generates for a chat-scoped AI method with a
// constant system message and no tools.
var askMethod = ai.Method{Name: "Ask", Kind: chat.KindChat, System: "Count the messages."}

// maxRecorded bounds the requests the scripted model keeps: it records
// every request, and a node serves tens of thousands of them.
const maxRecorded = 1000

// An App is the chat application of a fleet node: route "turn" counts
// its turn in a durable bean, logs its execution, asks a model whose chat
// memory is in the store (the scripted model answers how many messages it
// got), and answers "turn N: <message> (M messages)". A client sending
// its k-th message expects N = k and M = 2k (the system message, k user
// messages, k-1 answers): a turn lost, run twice, or a memory that lost
// or doubled a message shows in the answer.
type App struct {
	node     string
	turnTime time.Duration
	model    *llmtest.Model
	counter  *chat.Bean[*Counter]
	svc      *ai.Service

	logMu sync.Mutex
	log   io.Writer
}

// NewApp returns the application of the node named node, whose chat
// memories are in memories; it writes a line "<node> <message>" to execLog
// for each execution of a turn, before the turn is saved. Each turn takes
// turnTime more (the model's time to answer), or until its context ends.
func NewApp(node string, memories memory.Store, execLog io.Writer, turnTime time.Duration) *App {
	a := &App{node: node, log: execLog, turnTime: turnTime}
	a.model = llmtest.NewModel(llmtest.Rules(llmtest.WhenFunc(nil, func(req *llmtest.Request) (llmtest.Reply, error) {
		return llmtest.Reply{Text: fmt.Sprintf("%d messages", len(req.Messages))}, nil
	})), nil)
	a.counter = chat.NewBean(CounterBean, &chat.BeanOptions{Durable: true},
		func(context.Context) (*Counter, error) { return &Counter{}, nil })
	a.svc = ai.NewService("github.com/chatscopes/chatgen/internal/fleet.Counter", &ai.Config{
		Model: a.model,
		// Larger than any conversation of the test: the memory is
		// checked whole.
		Memory: memory.NewManager(&memory.ManagerOptions{Policy: memory.Window(100_000, nil), Store: memories}),
	})
	return a
}

// Package returns the application's chat package.
func (a *App) Package() *chatimpl.Package {
	p := chatimpl.NewPackage("github.com/chatscopes/chatgen/internal/fleet")
	p.AddRoute(chatimpl.RouteSpec{Name: Route, Default: true, Handle: a.turn})
	return p
}

func (a *App) turn(ctx context.Context) error {
	req := chat.Request(ctx)
	msg := req.UserMessage()
	if strings.ContainsAny(msg, "\n\r") {
		return &chat.Failure{Reason: chat.ErrBadRequest.Reason, Err: fmt.Errorf("a message of more than one line")}
	}
	if err := a.logExecution(msg); err != nil {
		return err
	}
	c, err := a.counter.Lookup(ctx)
	if err != nil {
		return err
	}
	c.N++
	r, err := a.svc.Chat(ctx, &ai.Request{Method: &askMethod, User: msg})
	if err != nil {
		return err
	}
	if a.model.Calls() > maxRecorded {
		a.model.Reset()
	}
	if a.turnTime > 0 {
		t := time.NewTimer(a.turnTime)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return chat.SendValue(ctx, fmt.Sprintf("turn %d: %s (%s)", c.N, msg, r.Content))
}

// logExecution writes the execution's line in one write, which the
// kernel keeps even if the process is killed right after.
func (a *App) logExecution(msg string) error {
	a.logMu.Lock()
	defer a.logMu.Unlock()
	if _, err := io.WriteString(a.log, a.node+" "+msg+"\n"); err != nil {
		return fmt.Errorf("fleet: logging an execution: %w", err)
	}
	return nil
}

// Answer is the answer the application gives to the k-th message msg of
// a conversation.
func Answer(k int, msg string) string {
	return fmt.Sprintf("turn %d: %s (%d messages)", k, msg, 2*k)
}
