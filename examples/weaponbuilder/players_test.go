package main

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/ws"
)

// converse opens a conversation of player on a, says lines, closes it,
// and returns the answers (the Main Menu streams them).
func converse(t *testing.T, a *app, player string, lines ...string) []string {
	t.Helper()
	var got []string
	var answer strings.Builder // written by the request's goroutine, read after it ends
	client := chat.NewLocalClient(a.router)
	defer client.Close()
	s, err := client.Builder().OnStream(func(chunk string) { answer.WriteString(chunk) }).
		Connect(chat.WithPrincipal(t.Context(), chat.User{ID: player}), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range lines {
		answer.Reset()
		if err := s.Chat(t.Context(), line); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		got = append(got, answer.String())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return got
}

// menuRequests returns the Main Menu's model requests among reqs (not
// the long-term memory's extraction calls).
func menuRequests(reqs []llmtest.Request) []llmtest.Request {
	var out []llmtest.Request
	for _, r := range reqs {
		if slices.Contains(r.ToolNames(), "buildWeapon") {
			out = append(out, r)
		}
	}
	return out
}

// The armorer remembers a returning player, through langchaingo's OpenAI
// client against llmtest on the offline script, in the bbolt data file:
// Ada tells her name and favourite weapon kind in one conversation; after
// a restart, in a new conversation, her greeting reaches the model with
// both facts recalled, and the armorer welcomes her back by name and
// offers her kind. Bob, in the same words, gets no fact of hers.
func TestArmorerRemembersReturningPlayer(t *testing.T) {
	data := filepath.Join(t.TempDir(), "weaponbuilder.db")
	open := func() (*app, *llmtest.Server, func() error) {
		srv := llmtest.NewServer(llmtest.ScriptFunc(playArmorer), nil)
		t.Cleanup(srv.Close)
		model, err := srv.Client()
		if err != nil {
			t.Fatal(err)
		}
		store, closeStore, err := openStorage(storageFlags{data: data})
		if err != nil {
			t.Fatal(err)
		}
		a, err := newApp(context.Background(), model, slog.New(slog.DiscardHandler), store)
		if err != nil {
			t.Fatal(err)
		}
		return a, srv, closeStore
	}

	first, srv1, close1 := open()
	got := converse(t, first, "ada", "Hello! My name is Ada, and my favourite weapon is the axe.")
	if len(got) != 1 || !strings.Contains(got[0], "Well met, Ada!") {
		t.Fatalf("the first conversation answered %q", got)
	}
	if n := len(srv1.Requests()) - len(menuRequests(srv1.Requests())); n != 1 {
		t.Fatalf("%d extraction calls after the turn, want 1", n)
	}
	if st := first.players.Stats(); st.Extracted != 2 || st.ExtractFailures != 0 {
		t.Fatalf("extraction stats %+v, want the 2 facts stored", st)
	}
	facts, err := first.players.List(t.Context(), "ada")
	if err != nil {
		t.Fatal(err)
	}
	if len(facts) != 2 {
		t.Fatalf("ada's facts: %+v", facts)
	}
	if err := close1(); err != nil { // the process exits
		t.Fatal(err)
	}

	// A restart: a new process on the same data file.
	second, srv2, close2 := open()
	t.Cleanup(func() { close2() })
	greeting := "Hello, it's Ada again! Do you remember my favourite weapon?"
	got = converse(t, second, "ada", greeting)
	want := "Welcome back, Ada! Another axe, as you like them?"
	if len(got) != 1 || !strings.Contains(got[0], want) {
		t.Fatalf("the returning player was answered %q, want %q", got, want)
	}
	menu := menuRequests(srv2.Requests())
	if len(menu) == 0 {
		t.Fatal("no model request of the Main Menu")
	}
	sent := menu[0].LastUserText()
	for _, f := range []string{`"The player's name is Ada."`, `"The player's favourite weapon kind is the axe."`} {
		if !strings.HasPrefix(sent, ai.FactsHeader) || !strings.Contains(sent, f) {
			t.Fatalf("the model was sent %q, want the fact %s", sent, f)
		}
	}

	got = converse(t, second, "bob", greeting)
	menu = menuRequests(srv2.Requests())
	sent = menu[len(menu)-1].LastUserText()
	if strings.Contains(sent, "<facts>") || strings.Contains(sent, "Ada.") || len(got) == 0 || strings.Contains(got[0], "Welcome back") {
		t.Fatalf("another player was sent %q and answered %q", sent, got)
	}
	if facts, err := second.players.List(t.Context(), "bob"); err != nil || len(facts) != 1 || facts[0].Text != "The player's name is Ada." {
		// Bob said "it's Ada": the armorer takes him at his word, for him only.
		t.Fatalf("bob's facts: %+v, %v", facts, err)
	}
}

// On the web: the page gives a browser its player cookie, the websocket
// connections that carry it are that player's, and the player's second
// conversation is welcomed back; a connection without the cookie is
// anonymous and remembered by nobody.
func TestPageCookieNamesThePlayer(t *testing.T) {
	srv := serveOffline(t)
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == playerCookie {
			cookie = c
		}
	}
	if cookie == nil || len(cookie.Value) != 26 || !cookie.HttpOnly {
		t.Fatalf("the page set the cookies %v", resp.Cookies())
	}
	talk := func(header http.Header, line string) string {
		t.Helper()
		c, err := ws.Dial(t.Context(), srv.URL, &ws.DialOptions{Header: header, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var answer strings.Builder
		s, err := c.Builder().OnStream(func(chunk string) { answer.WriteString(chunk) }).Connect(t.Context(), "")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Chat(t.Context(), line); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return answer.String()
	}
	withCookie := http.Header{"Cookie": {cookie.String()}}
	talk(withCookie, "Hi, I'm Brynja and I prefer the bow.")
	if got := talk(withCookie, "Hello again, it's Brynja! Do you remember my favourite weapon?"); !strings.Contains(got, "Welcome back, Brynja! Another bow") {
		t.Fatalf("the returning player was answered %q", got)
	}
	if got := talk(nil, "Hello again, it's Brynja! Do you remember my favourite weapon?"); strings.Contains(got, "Welcome back") {
		t.Fatalf("an anonymous connection was answered %q", got)
	}
}
