package durable_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/boltstore"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/redisstore"
)

// logBuffer is a slog handler's buffer, safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestCorruptStateIsNotBusy saves a conversation, spoils its record in the
// store — Redis: a version field that is not a number; bbolt: a state that
// is not JSON — and resumes it: the resume is refused (ResumeRefused, which
// clients do not retry), not ConversationBusy or Unavailable (which they
// retry for ever); the error matches chatstore.ErrCorruptState and names the
// conversation, and the router logs it at ERROR.
func TestCorruptStateIsNotBusy(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) (chatstore.ConversationStore, func(id string) chatstore.ConversationStore)
	}{
		{"redis", func(t *testing.T) (chatstore.ConversationStore, func(string) chatstore.ConversationStore) {
			c := redistest.Client(t)
			prefix := redistest.Prefix(t, c, "chatgen-corrupt")
			s, err := redisstore.New(c, &redisstore.Options{Prefix: prefix, TTL: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			return s, func(id string) chatstore.ConversationStore {
				if err := c.HSet(t.Context(), prefix+"c{"+id+"}:conv", "v", "garbage").Err(); err != nil {
					t.Fatal(err)
				}
				return s
			}
		}},
		{"bolt", func(t *testing.T) (chatstore.ConversationStore, func(string) chatstore.ConversationStore) {
			path := filepath.Join(t.TempDir(), "chat.db")
			s, err := boltstore.Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			return s, func(id string) chatstore.ConversationStore {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				db, err := bolt.Open(path, 0o600, nil)
				if err != nil {
					t.Fatal(err)
				}
				err = db.Update(func(tx *bolt.Tx) error {
					// The record (see runtime/boltstore's record.go):
					// a header of 24 bytes, the memory ids with their
					// length, the state.
					b, key := tx.Bucket([]byte("data")), append([]byte(id), 0)
					v := b.Get(key)
					n, k := binary.Uvarint(v[24:])
					spoilt := append(bytes.Clone(v[:24+k+int(n)]), "{not json"...) // all but the state stays
					return b.Put(key, spoilt)
				})
				if err != nil {
					t.Fatal(err)
				}
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				s, err = boltstore.Open(path, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, spoil := tc.store(t)
			ctx := t.Context()
			r, err := chat.NewRouter(&chat.RouterOptions{Store: store, Node: "node-a"}, app(nil))
			if err != nil {
				t.Fatal(err)
			}
			c, err := r.Connect(ctx, "count")
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Detach(ctx); err != nil {
				t.Fatal(err)
			}
			store = spoil(c.ID())
			var logs logBuffer
			r, err = chat.NewRouter(&chat.RouterOptions{Store: store, Node: "node-b", Logger: slog.New(slog.NewTextHandler(&logs, nil))}, app(nil))
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Resume(ctx, c.ID(), c.ResumeToken())
			if !errors.Is(err, chat.ErrResumeRefused) || !errors.Is(err, chatstore.ErrCorruptState) || !strings.Contains(err.Error(), c.ID()) {
				t.Fatalf("resuming a conversation whose record is spoilt: %v; want ResumeRefused, matching ErrCorruptState, naming %s", err, c.ID())
			}
			if l := logs.String(); !strings.Contains(l, "level=ERROR") || !strings.Contains(l, c.ID()) {
				t.Fatalf("the log: %s", l)
			}
			_, err = store.Load(context.Background(), c.ID())
			if !errors.Is(err, chatstore.ErrCorruptState) {
				t.Fatalf("Load: %v", err)
			}
		})
	}
}
