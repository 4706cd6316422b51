package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/chatscopes/chatgen/runtime/a2aserver"
	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// newA2AHandler returns the armorer as an A2A agent: each context is a
// conversation that starts at the Main Menu. store is the router's
// conversation store (nil: none), read for the task history of the
// contexts another server started.
func newA2AHandler(a *app, store chatstore.ConversationStore, logger *slog.Logger) (*a2aserver.Handler, error) {
	return a2aserver.New(a.router, &a2aserver.Options{
		Name:          "weaponbuilder",
		Version:       "1",
		Description:   "The armorer of a fantasy game: tell it what weapon or armour to build; a context is one conversation with it, starting at the Main Menu.",
		Authenticator: playerAuth,
		Store:         store,
		Logger:        logger,
	})
}

// serveA2A serves the armorer as an A2A agent at http://where/ (its card
// at /.well-known/agent-card.json) until ctx is done.
func serveA2A(ctx context.Context, a *app, where string, store chatstore.ConversationStore, logger *slog.Logger) error {
	h, err := newA2AHandler(a, store, logger)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", where)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "weaponbuilder: A2A at http://%s/ (card at http://%s%s)\n", ln.Addr(), ln.Addr(), a2aserver.CardPath)
	return serveHandler(ctx, h, ln, h.Close)
}

// serveHandler serves h on ln until ctx is done, then shuts the server
// down and calls closeFn (which ends what h holds): the HTTP serving of
// the MCP and A2A endpoints.
func serveHandler(ctx context.Context, h http.Handler, ln net.Listener, closeFn func(context.Context) error) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return errors.Join(err, closeFn(context.Background()))
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := errors.Join(closeFn(shutdown), srv.Shutdown(shutdown))
	if serveErr := <-errc; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	return err
}
