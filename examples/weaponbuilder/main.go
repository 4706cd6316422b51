// Command weaponbuilder is an armorer for a fantasy video game, built with
// chat scopes: a Main Menu AI route hands the player over to nested
// conversations — a weapon builder, with an enchantment conversation nested
// inside it, and an armour builder — each keeping its state in a scoped
// bean and its own chat memory, and handing back when done.
//
// It serves a web page (the JavaScript client over the websocket endpoint)
// and, with -terminal, chats in the terminal through the local client. It
// runs offline on a scripted model unless OPENAI_API_KEY is set.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

//go:generate go run github.com/chatscopes/chatgen/cmd/chatgen

func main() {
	addr := flag.String("addr", "localhost:8080", "address to serve the web page on")
	terminal := flag.Bool("terminal", false, "chat in the terminal instead of serving the web page")
	withOTel := flag.Bool("otel", false, "export OpenTelemetry traces and metrics to standard output")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	err := func() (err error) {
		if *withOTel {
			shutdown, err := setupOTel(os.Stdout)
			if err != nil {
				return err
			}
			defer func() { err = errors.Join(err, shutdown(context.Background())) }()
		}
		return run(ctx, *addr, *terminal, logger)
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "weaponbuilder:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, addr string, terminal bool, logger *slog.Logger) error {
	model, about, err := modelFromEnv()
	if err != nil {
		return err
	}
	a, err := newApp(model, logger)
	if err != nil {
		return err
	}
	if terminal {
		fmt.Printf("weaponbuilder: talking to %s\n", about)
		return runTerminal(ctx, a.router, os.Stdin, os.Stdout)
	}
	return serve(ctx, a, addr, about, logger)
}
