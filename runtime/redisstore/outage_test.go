package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/redisstore"
	"github.com/redis/go-redis/v9"
	"github.com/tmc/langchaingo/llms"
)

// saver saves turns of one conversation: each turn appends "turn N" to a
// memory, in the request's batch, and saves.
type saver struct {
	s   *redisstore.Store
	l   chatstore.Lease
	st  *chatstore.ConversationState
	mem string
}

// startSaver acquires conversation "c" for node-a and saves its first
// five turns.
func startSaver(t *testing.T, s *redisstore.Store) *saver { return startSaverOf(t, s, "c") }

// startSaverOf acquires conversation id for node-a and saves its first
// five turns, in memory id+"#memory".
func startSaverOf(t *testing.T, s *redisstore.Store, id string) *saver {
	t.Helper()
	ctx := t.Context()
	l, err := s.Acquire(ctx, id, "node-a", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	v := &saver{s: s, l: l, mem: id + "#memory",
		st: &chatstore.ConversationState{ID: id, Scopes: []chatstore.ScopeState{{ID: id, Memories: []string{id + "#memory"}}}}}
	for range 5 {
		if err := v.turn(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return v
}

func (v *saver) turn(ctx context.Context) error {
	b := chatstore.NewBatch()
	err := v.s.Memories().Apply(chatstore.WithBatch(ctx, b), v.mem, memory.Change{
		Tail: []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, fmt.Sprint("turn ", v.st.Version+1))},
	})
	if err != nil {
		return err
	}
	v.st.Principal = fmt.Sprint("turn ", v.st.Version+1)
	return v.s.Save(ctx, v.st, v.l, b)
}

// requireConsistent checks that the stored state and memory of
// conversation "c" are those of one and the same turn, at least turn min,
// and returns the state.
func requireConsistent(t *testing.T, s *redisstore.Store, mem string, min uint64) *chatstore.ConversationState {
	t.Helper()
	return requireConsistentOf(t, s, "c", mem, min)
}

// requireConsistentOf is requireConsistent for conversation id.
func requireConsistentOf(t *testing.T, s *redisstore.Store, id, mem string, min uint64) *chatstore.ConversationState {
	t.Helper()
	st, err := s.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.Memories().Get(t.Context(), mem)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint("turn ", st.Version)
	last := ""
	if len(m) > 0 {
		last = m[len(m)-1].Parts[0].(llms.TextContent).Text
	}
	if st.Version < min || st.Principal != want || len(m) != int(st.Version) || last != want {
		t.Fatalf("state %q at version %d (at least %d expected), memory of %d messages ending %q",
			st.Principal, st.Version, min, len(m), last)
	}
	return st
}

// TestOutage stops the Redis of a conversation in the middle of it, twice:
// frozen (SIGSTOP: requests time out) and killed (SIGKILL: connections are
// refused) then started again. Each failed call returns an error that
// names the operation and wraps the network error; no save is
// half-written (the state and the memory are always of the same turn);
// and the conversation goes on when Redis is back.
func TestOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	srv := redistest.StartServer(t)
	// The timeouts are what a save to a frozen Redis waits for; they are
	// generous, so that a slow answer on a loaded machine is no timeout.
	c := redis.NewClient(&redis.Options{Network: srv.Network(), Addr: srv.Addr(), MaxRetries: -1,
		DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	defer c.Close()
	s, err := redisstore.New(c, &redisstore.Options{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	v := startSaver(t, s)

	t.Run("Frozen", func(t *testing.T) {
		srv.Signal(syscall.SIGSTOP)
		err := v.turn(ctx)
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() || !strings.Contains(err.Error(), `redisstore: saving conversation "c"`) {
			srv.Signal(syscall.SIGCONT)
			t.Fatalf("Save to a frozen Redis: %v, want a wrapped timeout", err)
		}
		if _, err := s.Load(ctx, "c"); !errors.As(err, &ne) || errors.Is(err, chatstore.ErrConversationNotFound) {
			srv.Signal(syscall.SIGCONT)
			t.Fatalf("Load from a frozen Redis: %v, want a wrapped timeout", err)
		}
		srv.Signal(syscall.SIGCONT)
		// The save that timed out was sent: Redis may have run it after
		// waking up, or not. Either way it ran whole or not at all, and the
		// version tells which.
		v.st = requireConsistent(t, s, v.mem, 5)
		t.Logf("the save that timed out was applied: %v", v.st.Version == 6)
		if err := v.turn(ctx); err != nil {
			t.Fatalf("the turn after Redis woke up: %v", err)
		}
		requireConsistent(t, s, v.mem, v.st.Version)
	})

	t.Run("Killed", func(t *testing.T) {
		// Save turns until Redis dies under them. The goroutine's turns
		// write v.st: read the version it starts from before it starts.
		start := v.st.Version
		acked := make(chan uint64, 1000)
		failed := make(chan error, 1)
		go func() {
			for {
				if err := v.turn(ctx); err != nil {
					failed <- err
					return
				}
				acked <- v.st.Version
			}
		}()
		var last uint64
		for last < start+20 {
			select {
			case last = <-acked:
			case err := <-failed:
				t.Fatalf("a save failed before Redis was killed: %v", err)
			}
		}
		srv.Kill()
		err := <-failed
		close(acked)
		for n := range acked {
			last = n
		}
		var ne net.Error
		if !errors.As(err, &ne) && !errors.Is(err, io.EOF) || !strings.Contains(err.Error(), `redisstore: saving conversation "c"`) {
			t.Fatalf("Save when Redis died: %v, want a wrapped network error", err)
		}
		t.Logf("Redis killed after turn %d: %v", last, err)
		_, err = s.Acquire(ctx, "c", "node-a", time.Hour)
		if !errors.As(err, &ne) || !strings.Contains(err.Error(), `redisstore: acquiring conversation "c"`) {
			t.Fatalf("Acquire while Redis is down: %v", err)
		}

		srv.Start()
		st := requireConsistent(t, s, v.mem, last)
		// The conversation goes on: the lease survived in the file, and
		// renewing it keeps its token.
		l, err := s.Acquire(ctx, "c", "node-a", time.Hour)
		if err != nil || l.Token != v.l.Token {
			t.Fatalf("Acquire after the restart: %+v, %v; want token %d", l, err, v.l.Token)
		}
		v.st = st
		if err := v.turn(ctx); err != nil {
			t.Fatalf("the turn after the restart: %v", err)
		}
		requireConsistent(t, s, v.mem, st.Version) // st is v.st: its Version is the new one
	})
}
