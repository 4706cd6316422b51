package main

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/otelchat"
	"github.com/chatscopes/chatgen/runtime/ws"
)

//go:embed web
var webFiles embed.FS

// handler serves the page and the chat endpoint (with the JavaScript
// client and the routes module) on one mux, and what pages written for
// newer Quarkus versions load besides: the import map script and the
// routes module at the URL Quarkus serves it on.
func (a *app) handler(logger *slog.Logger) (http.Handler, *ws.Server, error) {
	page, err := fs.Sub(webFiles, "web")
	if err != nil {
		return nil, nil, err
	}
	chatServer := ws.NewServer(a.router, &ws.ServerOptions{Logger: logger, Authenticator: playerAuth})
	mux := http.NewServeMux()
	mux.Handle("/_chat/", chatServer)
	mux.Handle(ws.ImportMapPath, chatServer)
	mux.Handle(ws.QuarkusAPIPath, chatServer)
	// Browsers ask for /favicon.ico whatever the page says: the icon
	// answers there too, so the console shows no 404.
	mux.HandleFunc("/favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/svg+xml")
		http.ServeFileFS(w, r, page, "favicon.svg")
	})
	mux.HandleFunc("GET /armory", a.serveArmory)
	mux.Handle("/", withPlayerCookie(http.FileServerFS(page)))
	return mux, chatServer, nil
}

// playerCookie holds a browser's player id: a random id the page sets on
// the first visit, and the principal of that browser's conversations, so
// that the armorer remembers the player — their name, their favourite
// weapon kind — in their next conversations (app.players). A browser
// without it (or a client that is not a browser) talks anonymously, and
// is remembered by nobody.
const playerCookie = "weaponbuilder-player"

// playerAuth is the websocket server's authenticator: the principal of a
// connection is the player its cookie names.
func playerAuth(r *http.Request) (chat.Principal, error) {
	c, err := r.Cookie(playerCookie)
	if err != nil || len(c.Value) != 26 {
		return nil, nil // anonymous
	}
	return chat.User{ID: "player:" + c.Value}, nil
}

// withPlayerCookie gives a browser its player id when it has none.
func withPlayerCookie(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := r.Cookie(playerCookie); err != nil {
			http.SetCookie(w, &http.Cookie{Name: playerCookie, Value: rand.Text(), Path: "/",
				MaxAge: int(factRetention / time.Second), HttpOnly: true, SameSite: http.SameSiteLaxMode})
		}
		next.ServeHTTP(w, r)
	})
}

// serveArmory answers what the armory holds, as the inventory event's
// JSON. The armory is the forge's, shared by every conversation, and the
// inventory events come only with a conversation's own requests: the page
// asks for it when it connects, and when it comes back into view.
func (a *app) serveArmory(w http.ResponseWriter, r *http.Request) {
	inv := inventory(a.armory, "")
	if inv.Weapons == nil {
		inv.Weapons = []Weapon{}
	}
	if inv.Armor == nil {
		inv.Armor = []Armor{}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(inv)
}

// serve serves the web page on addr until ctx ends, then shuts down: the
// requests in flight finish, and the clients are told to reconnect. With a
// data file their conversations are kept and resumed when the server is
// back; without, they end.
func serve(ctx context.Context, a *app, addr, about string, logger *slog.Logger) error {
	h, chatServer, err := a.handler(logger)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	// The gauges of the live conversations, scopes and connections (read
	// only when metrics are collected: free without -otel).
	gauges, err := otelchat.Observe(a.router, chatServer, nil)
	if err != nil {
		return err
	}
	defer gauges.Unregister()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("weaponbuilder: talking to %s\n", about)
	fmt.Printf("weaponbuilder: open http://%s/ in your browser\n", ln.Addr())
	fmt.Printf("weaponbuilder: or chat in the terminal: go run ./examples/weaponbuilder -terminal\n")
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = errors.Join(chatServer.Shutdown(shutdown), srv.Shutdown(shutdown))
	if serveErr := <-errc; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	return err
}
