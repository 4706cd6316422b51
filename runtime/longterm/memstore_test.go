package longterm_test

import (
	"testing"

	"github.com/chatscopes/chatgen/runtime/longterm"
	"github.com/chatscopes/chatgen/runtime/longterm/longtermtest"
)

func TestMemStore(t *testing.T) {
	longtermtest.Run(t, func(t *testing.T, o longtermtest.Options) longterm.Store {
		return longterm.NewMemStore(&longterm.MemOptions{Limits: o.Limits, Retention: o.Retention})
	})
}
