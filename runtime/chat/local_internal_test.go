package chat

import (
	"context"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

// A closed session leaves its client: a long-lived client does not
// accumulate the sessions it served.
func TestClosedSessionsLeaveTheClient(t *testing.T) {
	p := chatimpl.NewPackage("example.com/internal")
	p.AddRoute(chatimpl.RouteSpec{Name: "r", Handle: func(context.Context) error { return nil }})
	r, err := NewRouter(nil, p)
	if err != nil {
		t.Fatal(err)
	}
	c := NewLocalClient(r)
	defer c.Close()
	count := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.sessions)
	}
	var open []Session
	for range 5 {
		s, err := c.Builder().Connect(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, s)
	}
	if n := count(); n != 5 {
		t.Fatalf("%d sessions, want 5", n)
	}
	for i, s := range open {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if n := count(); n != 4-i {
			t.Fatalf("%d sessions after closing %d, want %d", n, i+1, 4-i)
		}
	}
	if st := r.Stats(); st != (Stats{}) {
		t.Fatalf("stats %+v", st)
	}
}
