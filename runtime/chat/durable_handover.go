package chat

import "sync"

// convLocks serialises, per conversation id, the changes of which
// Conversation of a router serves a conversation: Resume (which may detach
// an old session, then takes the lease, saves and registers the new one),
// Detach and Close. Without it, the teardown of an old session could
// release the lease (or delete the conversation) that a resume on the same
// node has just taken: the store renews a node's own lease with the same
// token, so the old session's Release would end the new session's lease.
//
// Lock order: a conversation's id lock before its Conversation.mu. Nothing
// that holds Conversation.mu (a request in handle) takes an id lock.
type convLocks struct {
	mu sync.Mutex
	m  map[string]*convLock
}

// convLock is the lock of one conversation id, with the number of
// goroutines holding or waiting for it: it leaves the map with the last.
type convLock struct {
	mu   sync.Mutex
	refs int
}

// lock locks id and returns its unlock.
func (l *convLocks) lock(id string) (unlock func()) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*convLock{}
	}
	cl := l.m[id]
	if cl == nil {
		cl = &convLock{}
		l.m[id] = cl
	}
	cl.refs++
	l.mu.Unlock()
	cl.mu.Lock()
	return func() {
		cl.mu.Unlock()
		l.mu.Lock()
		if cl.refs--; cl.refs == 0 {
			delete(l.m, id)
		}
		l.mu.Unlock()
	}
}

// size returns the number of ids locked or waited for (for tests).
func (l *convLocks) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}
