package boltstore

// An arena hands out the byte slices a write transaction puts into the
// file (bbolt keeps a key or value it is given until the transaction
// ends), from one buffer the committer reuses from transaction to
// transaction: the saves of a group allocate nothing for them. A nil
// arena (without group commit) allocates each slice.
type arena struct{ buf []byte }

// minArena is the size of an arena's first buffer.
const minArena = 64 << 10

// alloc returns an empty slice of capacity n, valid until reset.
func (a *arena) alloc(n int) []byte {
	if a == nil {
		return make([]byte, 0, n)
	}
	if cap(a.buf)-len(a.buf) < n {
		// The slices handed out so far keep the old buffer alive until
		// the transaction ends; the new one is kept after it.
		a.buf = make([]byte, 0, max(2*cap(a.buf), n, minArena))
	}
	l := len(a.buf)
	a.buf = a.buf[:l+n]
	return a.buf[l : l : l+n]
}

// reset makes the arena's buffer free for the next transaction: none of
// the slices it handed out may be used after.
func (a *arena) reset() { a.buf = a.buf[:0] }
