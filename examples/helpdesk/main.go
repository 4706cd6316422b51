// Command helpdesk is a help desk built with chat scopes and agents: a
// triage agent hands customers off to a specialist (billing) or to a
// planner, an orchestrator that keeps a plan (runtime/plan) and fans the
// work out to two sub-agents at once, a researcher and a policy checker
// (runtime/agent/subagent). It runs offline on a scripted model
// (runtime/llmtest), serves a web page that shows who answers, the plan
// and the sub-agents' progress, and with -terminal chats in the terminal.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

//go:generate go tool chatgen

func main() {
	addr := flag.String("addr", "localhost:8081", "address to serve the web page on")
	terminal := flag.Bool("terminal", false, "chat in the terminal instead of serving the web page")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := run(ctx, *addr, *terminal, logger); err != nil {
		fmt.Fprintln(os.Stderr, "helpdesk:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, addr string, terminal bool, logger *slog.Logger) error {
	a, err := newApp(offlineModel(), logger)
	if err != nil {
		return err
	}
	if terminal {
		fmt.Println("helpdesk: talking to the offline scripted model")
		return runTerminal(ctx, a.router, os.Stdin, os.Stdout)
	}
	return serve(ctx, a, addr, logger)
}
