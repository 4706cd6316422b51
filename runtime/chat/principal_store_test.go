package chat_test

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/pgtest"
	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/boltstore"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/pgstore"
	"github.com/chatscopes/chatgen/runtime/redisstore"
)

// everyStore opens a store of each kind the project has, over the shared
// Redis and PostgreSQL of the machine (a prefix, a schema of the test's
// own).
func everyStore(t *testing.T) map[string]chatstore.ConversationStore {
	t.Helper()
	stores := map[string]chatstore.ConversationStore{"memory": chat.NewInMemoryConversationStore(nil)}

	bolt, err := boltstore.Open(filepath.Join(t.TempDir(), "conversations.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bolt.Close() })
	stores["bbolt"] = bolt

	rc := redistest.Client(t)
	rs, err := redisstore.New(rc, &redisstore.Options{Prefix: redistest.Prefix(t, rc, "chatgen-principal"), TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	stores["redis"] = rs

	pool := pgtest.Pool(t, nil)
	if _, err := pgstore.Migrate(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	ps, err := pgstore.New(t.Context(), pool, &pgstore.Options{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	stores["postgres"] = ps
	return stores
}

// A principal whose name is not valid UTF-8 is refused at Connect and
// Resume, the same way over every store: before, the stores that encode
// the state saved it as U+FFFD and refused its resumes for ever, while
// the in-memory store resumed it. A name that is valid UTF-8, however far
// from ASCII, is kept exactly by every store and resumes.
func TestPrincipalNameNotUTF8(t *testing.T) {
	stores := everyStore(t)
	for _, kind := range slices.Sorted(maps.Keys(stores)) {
		t.Run(kind, func(t *testing.T) {
			app := newDurableApp(chat.NewInMemoryConversationStore(nil))
			router := func(node string) *chat.Router {
				r, err := chat.NewRouter(&chat.RouterOptions{Store: stores[kind], Node: node}, app.pkg)
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			a, b := router("a"), router("b")

			for _, name := range []string{"ann\xff", "\xc3(", "bob\xed\xa0\x80"} {
				ctx := chat.WithPrincipal(bg, chat.User{ID: name})
				c, err := a.Connect(ctx, "")
				if !errors.Is(err, chat.ErrForbidden) || !errors.Is(err, chat.ErrInvalidPrincipal) {
					if c != nil {
						_ = c.Close(bg)
					}
					t.Fatalf("Connect as %q: %v, want Forbidden (ErrInvalidPrincipal)", name, err)
				}
				wantStats(t, a, 0, 0)
				if _, err := b.Resume(ctx, "any", "token"); !errors.Is(err, chat.ErrForbidden) || !errors.Is(err, chat.ErrInvalidPrincipal) {
					t.Fatalf("Resume as %q: %v, want Forbidden (ErrInvalidPrincipal)", name, err)
				}
			}

			// A name far from ASCII, valid UTF-8: kept exactly.
			zoe := chat.WithPrincipal(bg, chat.User{ID: "Zoë 🦊 \u200d\U0010FFFF"})
			c, err := a.Connect(zoe, "")
			if err != nil {
				t.Fatal(err)
			}
			mustTurn(t, c, "build")
			id, token := c.ID(), c.ResumeToken()
			if err := c.Detach(bg); err != nil {
				t.Fatal(err)
			}
			// Another principal, whose name differs in one byte, is refused.
			other := chat.WithPrincipal(bg, chat.User{ID: "Zoë 🦊 \u200d\U0010FFFE"})
			if _, err := b.Resume(other, id, token); !errors.Is(err, chat.ErrResumeRefused) {
				t.Fatalf("another principal's resume: %v", err)
			}
			c2, err := b.Resume(zoe, id, token)
			if err != nil {
				t.Fatalf("resuming as the same principal: %v", err)
			}
			if got := mustTurn(t, c2, "name Dawn"); !slices.Equal(got, []string{"draft Dawn/0 injected scratch 1@1/builder"}) {
				t.Fatalf("after the resume: %q", got)
			}
			if err := c2.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}
