package chatstore

import (
	"bytes"
	"maps"
	"slices"
)

// Snapshot returns a copy of the batch as it is now: a save in the middle
// of a request (a checkpoint) commits the snapshot, then [Batch.Forget]s
// it, while the request goes on writing to b.
func (b *Batch) Snapshot() *Batch {
	b.mu.Lock()
	defer b.mu.Unlock()
	return &Batch{writes: maps.Clone(b.writes), order: slices.Clone(b.order)}
}

// Forget removes from b the writes of s, a [Batch.Snapshot] of b that was
// committed, which b still holds unchanged; a key written again since the
// snapshot keeps its new value, to be committed by the next save. (Stores
// with incremental encodings build a new value from the staged one: a key
// written again while its snapshot was being committed is then committed
// twice, which such a store refuses as a conflict.)
func (b *Batch) Forget(s *Batch) {
	s.mu.Lock()
	committed := maps.Clone(s.writes)
	s.mu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, v := range committed {
		if cur, ok := b.writes[k]; ok && (cur == nil) == (v == nil) && bytes.Equal(cur, v) {
			delete(b.writes, k)
		}
	}
	b.order = slices.DeleteFunc(b.order, func(k string) bool {
		_, ok := b.writes[k]
		return !ok
	})
}
