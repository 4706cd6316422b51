package mcptools

import (
	"testing"
	"time"
)

// TestDefaultTimeouts: a source bounds its calls and its connections
// unless told otherwise, so a server that never answers cannot hold a turn
// that has no deadline of its own; a negative value lifts the bound.
func TestDefaultTimeouts(t *testing.T) {
	for _, c := range []struct {
		call, connect         time.Duration
		wantCall, wantConnect time.Duration
	}{
		{0, 0, DefaultCallTimeout, DefaultConnectTimeout},
		{time.Second, 2 * time.Second, time.Second, 2 * time.Second},
		{-1, 0, -1, DefaultConnectTimeout},
	} {
		s, err := newSource(&Options{Name: "lore", Transport: Command("lore-server"), CallTimeout: c.call, ConnectTimeout: c.connect})
		if err != nil {
			t.Fatal(err)
		}
		if s.opts.CallTimeout != c.wantCall || s.opts.ConnectTimeout != c.wantConnect {
			t.Errorf("CallTimeout %v, ConnectTimeout %v: got %v, %v; want %v, %v",
				c.call, c.connect, s.opts.CallTimeout, s.opts.ConnectTimeout, c.wantCall, c.wantConnect)
		}
	}
}
