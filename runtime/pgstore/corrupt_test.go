package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/pgtest"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore"
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

// echo is an app of one route that answers what it is sent.
func echo() *chatimpl.Package {
	p := chatimpl.NewPackage("github.com/chatscopes/chatgen/runtime/pgstore_test")
	p.AddRoute(chatimpl.RouteSpec{Name: "echo", Default: true, Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		return chat.SendValue(ctx, req.UserMessage())
	}})
	return p
}

// TestCorruptRows saves a conversation, spoils its row by SQL — a state
// of {} or null, a version of -1 — and reads it: Load fails with an
// error matching chatstore.ErrCorruptState that names it, as with the
// other stores, and a resume of it is refused (ResumeRefused, which
// clients do not retry; not Unavailable, which they retry for ever). A
// save onto the row of version -1 is refused as corrupt too.
func TestCorruptRows(t *testing.T) {
	for _, tc := range []struct{ name, spoil string }{
		{"empty object state", "UPDATE chatgen_conversations SET state = '{}' WHERE id = $1"},
		{"null state", "UPDATE chatgen_conversations SET state = 'null' WHERE id = $1"},
		{"version -1", "UPDATE chatgen_conversations SET version = -1 WHERE id = $1"},
		{"version other than the state's", "UPDATE chatgen_conversations SET version = version + 1 WHERE id = $1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			pool := pgtest.Pool(t, nil)
			s := migrated(t, pool, nil)
			r, err := chat.NewRouter(&chat.RouterOptions{Store: s, Node: "node-a"}, echo())
			if err != nil {
				t.Fatal(err)
			}
			c, err := r.Connect(ctx, "echo")
			if err != nil {
				t.Fatal(err)
			}
			id := c.ID()
			saved, err := s.Load(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Detach(ctx); err != nil {
				t.Fatal(err)
			}
			if tag, err := pool.Exec(ctx, tc.spoil, []byte(id)); err != nil || tag.RowsAffected() != 1 {
				t.Fatalf("spoiling the row: %v, %v", tag, err)
			}

			_, err = s.Load(ctx, id)
			if !errors.Is(err, chatstore.ErrCorruptState) || !strings.Contains(err.Error(), id) {
				t.Fatalf("Load of the spoilt row: %v; want an error matching ErrCorruptState, naming %s", err, id)
			}

			var logs logBuffer
			r2, err := chat.NewRouter(&chat.RouterOptions{Store: s, Node: "node-b", Logger: slog.New(slog.NewTextHandler(&logs, nil))}, echo())
			if err != nil {
				t.Fatal(err)
			}
			_, err = r2.Resume(ctx, id, c.ResumeToken())
			if !errors.Is(err, chat.ErrResumeRefused) || !errors.Is(err, chatstore.ErrCorruptState) || errors.Is(err, chat.ErrUnavailable) {
				t.Fatalf("resuming the spoilt conversation: %v; want ResumeRefused matching ErrCorruptState", err)
			}
			if l := logs.String(); !strings.Contains(l, "level=ERROR") || !strings.Contains(l, id) {
				t.Fatalf("the router's log: %s", l)
			}

			if tc.name == "version -1" {
				l, err := s.Acquire(ctx, id, "node-c", time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				err = s.Save(ctx, saved, l, nil)
				if !errors.Is(err, chatstore.ErrCorruptState) || !strings.Contains(err.Error(), id) {
					t.Fatalf("Save onto a row of version -1: %v; want an error matching ErrCorruptState, naming %s", err, id)
				}
			}
		})
	}
}
