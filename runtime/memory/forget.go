package memory

// A Forgetter is a [Provider] that can forget a memory without deleting
// its messages: the memory's conversation left the process (it was
// detached, or is served by another node now), and its store keeps the
// messages for the next process to serve it. [Manager] is one.
type Forgetter interface {
	Provider
	// Forget drops what the provider holds of id in this process; the
	// store keeps its messages. The next Memory call for id reads them
	// again.
	Forget(id string)
}

var _ Forgetter = (*Manager)(nil)

// Forget implements [Forgetter]: it removes the memory of id from the
// Manager without touching the store. A memory of id still held by someone
// returns [ErrDeleted] from then on, so that it cannot write what it holds
// over what another process wrote since; [Manager.Memory] builds a fresh
// one from the store.
func (m *Manager) Forget(id string) {
	m.mu.Lock()
	e, ok := m.entries[id]
	delete(m.entries, id)
	m.mu.Unlock()
	if !ok {
		return
	}
	<-e.done
	if e.mem != nil {
		e.mem.mu.Lock()
		e.mem.deleted = true
		e.mem.mu.Unlock()
	}
}
