//go:build unix

package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/boltstore"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/redisstore"
)

// BenchmarkResume measures what a client that lost its connection waits
// for, with each store: a new websocket, a Connect with resume (the
// conversation is loaded, leased and its token rotated) and the first
// answer in the weapon builder, where it was (a turn of the scripted model
// that reads the memory and saves the turn). One op is all of it; the
// connection is then dropped without Disconnect, which detaches the
// conversation for the next op.
func BenchmarkResume(b *testing.B) {
	b.Run("bbolt", func(b *testing.B) {
		db, err := boltstore.Open(filepath.Join(b.TempDir(), "chat.db"), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		benchmarkResume(b, storage{conversations: db, memories: db.Memories()})
	})
	b.Run("redis", func(b *testing.B) {
		prefix := redisPrefix(b)
		rs, err := redisstore.New(redistest.Client(b), &redisstore.Options{Prefix: prefix})
		if err != nil {
			b.Fatal(err)
		}
		benchmarkResume(b, storage{conversations: rs, memories: rs.Memories()})
	})
}

// frame is the part of a server frame the benchmark reads.
type frame struct {
	Type           string          `json:"type"`
	Data           json.RawMessage `json:"data"`
	ConversationID string          `json:"conversationId"`
	ResumeToken    string          `json:"resumeToken"`
}

func benchmarkResume(b *testing.B, store storage) {
	a, err := newApp(context.Background(), llmtest.NewModel(llmtest.ScriptFunc(playArmorer), nil), slog.New(slog.DiscardHandler), store)
	if err != nil {
		b.Fatal(err)
	}
	h, chatServer, err := a.handler(slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(h)
	defer hs.Close()
	defer chatServer.Close()
	url := "ws" + strings.TrimPrefix(hs.URL, "http") + "/_chat/routes"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// request sends v and returns the terminator, failing on Failed.
	request := func(c *websocket.Conn, v any) frame {
		raw, _ := json.Marshal(v)
		if err := c.Write(ctx, websocket.MessageText, raw); err != nil {
			b.Fatal(err)
		}
		for {
			_, msg, err := c.Read(ctx)
			if err != nil {
				b.Fatal(err)
			}
			var f frame
			if err := json.Unmarshal(msg, &f); err != nil {
				b.Fatal(err)
			}
			switch f.Type {
			case "Completed":
				return f
			case "Failed":
				b.Fatalf("%s answered %s", raw, msg)
			}
		}
	}
	dial := func() *websocket.Conn {
		c, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	chatMsg := func(scope json.RawMessage, text string) map[string]any {
		return map[string]any{"type": "ChatRouteMessage", "chatId": "c", "scopeId": scope, "data": map[string]string{"userMessage": text}}
	}

	c := dial()
	f := request(c, map[string]any{"type": "Connect", "chatId": "c"})
	id, token := f.ConversationID, f.ResumeToken
	if id == "" {
		b.Fatal("the server keeps no conversations")
	}
	f = request(c, chatMsg(f.Data, "I want to build a sword"))
	request(c, chatMsg(f.Data, "call it Dawnbreaker"))
	// drop closes the connection without Disconnect and waits until the
	// server has detached the conversation, as it has by the time a client
	// that lost its connection comes back. (A client quicker than that may
	// be answered ConversationBusy, and tries again.)
	drop := func(c *websocket.Conn) {
		c.CloseNow()
		for a.router.Stats().Conversations != 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	drop(c)

	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		c := dial()
		f := request(c, map[string]any{"type": "Connect", "chatId": "c", "resume": map[string]string{"conversationId": id, "token": token}})
		token = f.ResumeToken
		if got := request(c, chatMsg(f.Data, "hmm")); string(got.Data) != string(f.Data) {
			b.Fatalf("the turn after the resume left the weapon builder: scope %s, want %s", got.Data, f.Data)
		}
		b.StopTimer()
		drop(c)
		b.StartTimer()
	}
}
