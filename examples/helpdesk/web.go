package main

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/chatscopes/chatgen/runtime/ws"
)

//go:embed web
var webFiles embed.FS

// handler serves the page and the chat endpoint (with the JavaScript
// client) on one mux.
func (a *app) handler(logger *slog.Logger) (http.Handler, *ws.Server, error) {
	page, err := fs.Sub(webFiles, "web")
	if err != nil {
		return nil, nil, err
	}
	chatServer := ws.NewServer(a.router, &ws.ServerOptions{Logger: logger})
	mux := http.NewServeMux()
	mux.Handle("/_chat/", chatServer)
	mux.Handle("/", http.FileServerFS(page))
	return mux, chatServer, nil
}

// serve serves the page on addr until ctx is done.
func serve(ctx context.Context, a *app, addr string, logger *slog.Logger) error {
	h, chatServer, err := a.handler(logger)
	if err != nil {
		return err
	}
	defer chatServer.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Printf("helpdesk: open http://%s/\n", ln.Addr())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
