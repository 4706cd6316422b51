package agui_test

import (
	"testing"

	"github.com/chatscopes/chatgen/runtime/agui"
)

// BenchmarkAGUIStreamedRun: one run of a route streaming 100 chunks over
// loopback HTTP, read to its end (about 105 AG-UI events per run).
func BenchmarkAGUIStreamedRun(b *testing.B) {
	a := newApp(b, &agui.Options{Route: "stream100"})
	body := input("bench", "r", "go")
	b.ReportAllocs()
	for b.Loop() {
		evs := a.run(b, body)
		if len(evs) != 104 {
			b.Fatalf("%d events", len(evs))
		}
	}
}
