package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/chatscopes/chatgen/runtime/agent"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/plan"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// runTerminal is the terminal face of the help desk: it reads the
// customer's lines from in and prints to out what the agents send — who
// answers, the plan as it changes, the sub-agents' steps and the answers —
// through the local client.
func runTerminal(ctx context.Context, router *chat.Router, in io.Reader, out io.Writer) error {
	client := chat.NewLocalClient(router)
	defer client.Close()
	session, err := eventPrinter(client.Builder(), out).Connect(ctx, "")
	if err != nil {
		return err
	}
	defer session.Close()
	fmt.Fprintln(out, "Ask about an invoice or a refund, or to plan an office move. An empty line or EOF quits.")
	scanner := bufio.NewScanner(in)
	for {
		fmt.Fprint(out, "> ")
		if !scanner.Scan() {
			return scanner.Err()
		}
		line := strings.TrimSpace(scanner.Text())
		if line == "" {
			return nil
		}
		if err := session.Chat(ctx, line); err != nil {
			fmt.Fprintf(out, "  ! %v\n", err)
		}
	}
}

// eventPrinter sets handlers on b that print the help desk's events to out.
// A sub-agent's streamed text is printed, a line per session, before the
// next event that is not a sub-agent's (the planner's next step).
func eventPrinter(b *chat.SessionBuilder, out io.Writer) *chat.SessionBuilder {
	var order []string
	streams := map[string]*strings.Builder{}
	flush := func() {
		for _, key := range order {
			fmt.Fprintf(out, "  [%s] %s\n", key, streams[key])
		}
		order, streams = order[:0], map[string]*strings.Builder{}
	}
	return b.
		OnMessage(func(m string) { flush(); fmt.Fprintf(out, "desk: %s\n", m) }).
		OnError(func(m string) { fmt.Fprintf(out, "  ! %s\n", m) }).
		On(agent.EventAgent, func(ev chat.Event) {
			var a agent.Event
			if ev.Decode(&a) == nil {
				fmt.Fprintf(out, "  ── %s answers (from %s) ──\n", a.Name, a.From)
			}
		}).
		On(protocol.EventPlan, func(ev chat.Event) {
			var p plan.Plan
			if ev.Decode(&p) == nil {
				flush()
				fmt.Fprint(out, planText(&p))
			}
		}).
		On(ai.EventSubAgent, func(ev chat.Event) {
			var a ai.AgentEvent
			if ev.Decode(&a) != nil {
				return
			}
			if a.Type == "Stream" || a.Type == "Text" {
				key := a.Agent + " " + a.Session
				if streams[key] == nil {
					streams[key] = &strings.Builder{}
					order = append(order, key)
				}
				streams[key].WriteString(a.Text)
				return
			}
			fmt.Fprintf(out, "  [%s %s] %s %s\n", a.Agent, a.Session, a.Type, a.Tool)
		})
}

// planText is the plan as the terminal shows it.
func planText(p *plan.Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  plan %q (%s)\n", p.Name, p.State)
	for i, s := range p.Subtasks {
		fmt.Fprintf(&b, "    %d. [%s] %s\n", i, s.State, s.Name)
	}
	return b.String()
}
