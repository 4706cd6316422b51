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

	"github.com/chatscopes/chatgen/runtime/agui"
)

// aguiPath is the path of the AG-UI endpoint.
const aguiPath = "/agui"

// newAGUIHandler returns the armorer's routes for AG-UI clients: the
// state shows the scope stack and the weapon on the workbench; with a
// store (the data file or Redis), threads are durable across restarts
// and servers.
func newAGUIHandler(a *app, store storage, logger *slog.Logger) (*agui.Handler, error) {
	opts := &agui.Options{
		Logger: logger,
		Show:   []agui.Shown{agui.ShowBean("weapon", chatBeanWorkbench, func(w *Workbench) any { return w.ShowWeapon() })},
	}
	if store.conversations != nil {
		opts.Threads = agui.StoreThreads(store.conversations)
	}
	return agui.New(a.router, opts)
}

// serveAGUI serves the armorer to AG-UI clients at http://where/agui
// until ctx is done.
func serveAGUI(ctx context.Context, a *app, store storage, where string, logger *slog.Logger) error {
	h, err := newAGUIHandler(a, store, logger)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", where)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "weaponbuilder: AG-UI at http://%s%s\n", ln.Addr(), aguiPath)
	return serveAGUIHTTP(ctx, h, ln)
}

// serveAGUIHTTP serves h on ln until ctx is done, then ends its threads.
func serveAGUIHTTP(ctx context.Context, h *agui.Handler, ln net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle(aguiPath, h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return errors.Join(err, h.Close(context.Background()))
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := errors.Join(srv.Shutdown(shutdown), h.Close(shutdown))
	if serveErr := <-errc; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	return err
}
