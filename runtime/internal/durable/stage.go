package durable

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/tmc/langchaingo/llms"
)

// A Staged is a memory write staged in a [chatstore.Batch], in the encoding of
// the batch's values (a nil value, a deletion, is not a Staged). Messages
// are elements written by [EncodeMessages].
//
// A replacement holds the whole new list, in List. An edit changes the
// stored list without having read it: drop Drop messages from its front,
// put Head in front of what remains, append Tail. Staging edits is what
// lets a request add to a memory without first reading the memory's list
// from the store.
type Staged struct {
	Replace bool     // whether List replaces the stored list
	List    [][]byte // a replacement's list
	// BaseLen is, for an edit that had to know it, the length of the
	// stored list when the edit was staged; -1 when it was not read. A
	// save checks that the stored list still has this length, or at least
	// Drop messages when it was not read.
	BaseLen    int
	Drop       int
	Head, Tail [][]byte
}

const (
	kindReplace = 'R'
	kindEdit    = 'E'
)

// Marshal encodes s as a batch value.
func (s *Staged) Marshal() []byte {
	buf := make([]byte, 0, 1+binary.MaxVarintLen64+ListSize(s.List)+ListSize(s.Head)+ListSize(s.Tail))
	if s.Replace {
		buf = append(buf, kindReplace)
		return AppendList(buf, s.List)
	}
	buf = append(buf, kindEdit)
	buf = binary.AppendVarint(buf, int64(s.BaseLen))
	buf = binary.AppendUvarint(buf, uint64(s.Drop))
	buf = AppendList(buf, s.Head)
	return AppendList(buf, s.Tail)
}

// A list is the encoding of a list of elements that batch values and
// runtime/boltstore's memories use: the number of elements, then each
// element's length and bytes (uvarints).

// AppendList appends the list of elems to buf.
func AppendList(buf []byte, elems [][]byte) []byte {
	return AppendElems(binary.AppendUvarint(buf, uint64(len(elems))), elems)
}

// AppendElems appends elems to buf as a list's elements, without their
// number.
func AppendElems(buf []byte, elems [][]byte) []byte {
	for _, e := range elems {
		buf = binary.AppendUvarint(buf, uint64(len(e)))
		buf = append(buf, e...)
	}
	return buf
}

// ListSize returns the most bytes AppendList writes for elems.
func ListSize(elems [][]byte) int {
	n := binary.MaxVarintLen64
	for _, e := range elems {
		n += binary.MaxVarintLen64 + len(e)
	}
	return n
}

var errCorrupt = errors.New("corrupt staged memory write")

// UnmarshalStaged decodes a batch value written by [Staged.Marshal]. The
// result's elements share v's memory.
func UnmarshalStaged(v []byte) (Staged, error) {
	var s Staged
	if len(v) == 0 {
		return s, errCorrupt
	}
	kind, rest := v[0], v[1:]
	var ok bool
	switch kind {
	case kindReplace:
		s.Replace = true
		if s.List, rest, ok = ReadList(rest); !ok {
			return s, errCorrupt
		}
	case kindEdit:
		base, n := binary.Varint(rest)
		if n <= 0 || base < -1 {
			return s, errCorrupt
		}
		rest = rest[n:]
		drop, n := binary.Uvarint(rest)
		if n <= 0 || drop > math.MaxInt32 || base >= 0 && drop > uint64(base) {
			return s, errCorrupt
		}
		rest = rest[n:]
		s.BaseLen, s.Drop = int(base), int(drop)
		if s.Head, rest, ok = ReadList(rest); !ok {
			return s, errCorrupt
		}
		if s.Tail, rest, ok = ReadList(rest); !ok {
			return s, errCorrupt
		}
	default:
		return s, errCorrupt
	}
	if len(rest) != 0 {
		return s, errCorrupt
	}
	return s, nil
}

// ReadList reads a list written by AppendList from the front of buf and
// returns its elements, which share buf's memory, and what follows it;
// ok is false when buf does not start with a list.
func ReadList(buf []byte) (elems [][]byte, rest []byte, ok bool) {
	count, rest, ok := ReadCount(buf)
	if !ok {
		return nil, nil, false
	}
	if count > 0 {
		elems = make([][]byte, count)
	}
	for i := range elems {
		if elems[i], rest, ok = ReadElem(rest); !ok {
			return nil, nil, false
		}
	}
	return elems, rest, true
}

// ReadCount reads the number of elements of a list written by AppendList
// from the front of buf; rest starts with the elements.
func ReadCount(buf []byte) (count int, rest []byte, ok bool) {
	n, k := binary.Uvarint(buf)
	if k <= 0 || n > uint64(len(buf)) { // each element takes a byte at least
		return 0, nil, false
	}
	return int(n), buf[k:], true
}

// ReadElem reads one element, as AppendElems writes it, from the front of
// buf; elem shares buf's memory.
func ReadElem(buf []byte) (elem, rest []byte, ok bool) {
	l, k := binary.Uvarint(buf)
	if k <= 0 || l > uint64(len(buf)-k) {
		return nil, nil, false
	}
	end := k + int(l)
	return buf[k:end:end], buf[end:], true
}

// SkipElems returns buf after its first n elements.
func SkipElems(buf []byte, n int) (rest []byte, ok bool) {
	for range n {
		if _, buf, ok = ReadElem(buf); !ok {
			return nil, false
		}
	}
	return buf, true
}

// Len returns the length of the list s leaves, given the length of the
// stored list.
func (s *Staged) Len(stored int) int {
	if s.Replace {
		return len(s.List)
	}
	return len(s.Head) + stored - s.Drop + len(s.Tail)
}

// ApplyTo returns the list s leaves of the stored list. It fails when the
// stored list is not the one s was staged against.
func (s *Staged) ApplyTo(id string, stored [][]byte) ([][]byte, error) {
	if s.Replace {
		return s.List, nil
	}
	if err := s.Check(id, len(stored)); err != nil {
		return nil, err
	}
	return slices.Concat(s.Head, stored[s.Drop:], s.Tail), nil
}

// ErrChanged reports that a memory's stored list changed after a request
// staged an edit of it, and before the request's save. It matches
// [chatstore.ErrVersionConflict].
var ErrChanged = fmt.Errorf("%w: a memory changed since the request staged its change", chatstore.ErrVersionConflict)

// Check returns an error matching [ErrChanged] unless s can be applied to
// a stored list of n messages.
func (s *Staged) Check(id string, n int) error {
	if s.Replace || s.BaseLen == n || s.BaseLen < 0 && n >= s.Drop {
		return nil
	}
	want := fmt.Sprint(s.BaseLen)
	if s.BaseLen < 0 {
		want = fmt.Sprint("at least ", s.Drop)
	}
	return fmt.Errorf("%w: memory %q holds %d messages, the change needs %s", ErrChanged, id, n, want)
}

// A Base reads a store's memories as they are stored, outside of any batch.
type Base interface {
	// StoredLen returns the number of messages stored for id.
	StoredLen(ctx context.Context, id string) (int, error)
	// StoredElems returns the messages stored for id, as elements.
	StoredElems(ctx context.Context, id string) ([][]byte, error)
}

// A Stager stages memory writes in batches, for a store. Its methods
// behave as the methods of a memory.IncrementalStore whose contents are
// the store's as changed by the batch. Its zero value is ready to use.
type Stager struct {
	// CheckAdds makes an edit that drops nothing of the stored list (it
	// only adds messages) record the stored list's length when its change
	// tells it (memory.Change.Len, as Apply's seen), as an edit that drops
	// stored messages does: the save then checks that length, and refuses
	// to add to a list that is not the one the memory saw. The zero value
	// checks only what a drop needs.
	CheckAdds bool

	// locks serialise the read-modify-write of one id's staged value;
	// an id always uses the same one.
	locks [32]sync.Mutex
}

func (s *Stager) lock(id string) *sync.Mutex {
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(id); i++ {
		h = (h ^ uint32(id[i])) * 16777619
	}
	return &s.locks[h%uint32(len(s.locks))]
}

// Get returns the list of id as the batch leaves it.
func (s *Stager) Get(ctx context.Context, b *chatstore.Batch, base Base, id string) ([][]byte, error) {
	v, ok := b.Get(id)
	if !ok {
		return base.StoredElems(ctx, id)
	}
	if v == nil {
		return nil, nil
	}
	st, err := UnmarshalStaged(v)
	if err != nil {
		return nil, fmt.Errorf("memory %q: %w", id, err)
	}
	if st.Replace {
		return st.List, nil
	}
	stored, err := base.StoredElems(ctx, id)
	if err != nil {
		return nil, err
	}
	return st.ApplyTo(id, stored)
}

// Messages returns the messages of memory id as the request in ctx sees
// them: as its batch leaves them when ctx carries one ([chatstore.BatchFrom]),
// else as base stores them. It is the Get of every store's memory side.
func (s *Stager) Messages(ctx context.Context, base Base, id string) ([]llms.MessageContent, error) {
	var elems [][]byte
	var err error
	if b := chatstore.BatchFrom(ctx); b != nil {
		elems, err = s.Get(ctx, b, base, id)
	} else {
		elems, err = base.StoredElems(ctx, id)
	}
	if err != nil {
		return nil, err
	}
	return DecodeMessages(elems)
}

// Update stages the replacement of the list of id by elems.
func (s *Stager) Update(b *chatstore.Batch, id string, elems [][]byte) {
	mu := s.lock(id)
	mu.Lock()
	defer mu.Unlock()
	put(b, id, &Staged{Replace: true, List: elems})
}

// Delete stages the deletion of id.
func (s *Stager) Delete(b *chatstore.Batch, id string) {
	mu := s.lock(id)
	mu.Lock()
	defer mu.Unlock()
	b.Put(id, nil)
}

func put(b *chatstore.Batch, id string, st *Staged) {
	if st.Replace && len(st.List) == 0 {
		b.Put(id, nil)
		return
	}
	b.Put(id, st.Marshal())
}

// Apply stages a memory.Change of the list of id: drop messages from its
// front, put head in front of what remains, append tail. seen is the
// change's Len: the list's length as its memory knows it, through the
// batch (0 for unknown). When the change drops messages the batch has not
// put there itself, the stored list's length is needed: Apply takes it
// from seen, which the save then checks as it checks a length it read, or
// else reads it. With [Stager.CheckAdds], a change that only adds takes
// the length from seen too, when it is known. It fails, staging nothing,
// when drop is negative or greater than the list's length.
func (s *Stager) Apply(ctx context.Context, b *chatstore.Batch, base Base, id string, seen, drop int, head, tail [][]byte) error {
	if drop < 0 {
		return fmt.Errorf("memory: change of %q drops %d messages", id, drop)
	}
	mu := s.lock(id)
	mu.Lock()
	defer mu.Unlock()
	st := Staged{BaseLen: -1}
	switch v, ok := b.Get(id); {
	case !ok:
	case v == nil:
		st = Staged{Replace: true}
	default:
		var err error
		if st, err = UnmarshalStaged(v); err != nil {
			return fmt.Errorf("memory %q: %w", id, err)
		}
	}
	if s.CheckAdds && !st.Replace && st.BaseLen < 0 && seen > 0 {
		// What the batch leaves is st.Head ++ stored[st.Drop:] ++ st.Tail.
		n := seen - len(st.Head) - len(st.Tail) + st.Drop
		if n < st.Drop {
			return fmt.Errorf("%w: memory %q holds %d messages as the change saw it, the batch needs at least %d", ErrChanged, id, n, st.Drop)
		}
		st.BaseLen = n
	}
	if st.Replace {
		if drop > len(st.List) {
			return fmt.Errorf("memory: change of %q drops %d of %d messages", id, drop, len(st.List))
		}
		put(b, id, &Staged{Replace: true, List: slices.Concat(head, st.List[drop:], tail)})
		return nil
	}
	if drop <= len(st.Head) {
		st.Head = st.Head[drop:]
	} else {
		if st.BaseLen < 0 {
			var n int
			if seen > 0 {
				// What the batch leaves is st.Head ++ stored[st.Drop:] ++ st.Tail.
				n = seen - len(st.Head) - len(st.Tail) + st.Drop
			} else {
				var err error
				if n, err = base.StoredLen(ctx, id); err != nil {
					return err
				}
			}
			if n < st.Drop {
				return fmt.Errorf("%w: memory %q holds %d messages, the change needs at least %d", ErrChanged, id, n, st.Drop)
			}
			st.BaseLen = n
		}
		k := drop - len(st.Head)
		remaining := st.BaseLen - st.Drop
		switch {
		case k <= remaining:
			st.Drop += k
		case k-remaining <= len(st.Tail):
			st.Drop = st.BaseLen
			st.Tail = st.Tail[k-remaining:]
		default:
			return fmt.Errorf("memory: change of %q drops %d of %d messages", id, drop, st.Len(st.BaseLen))
		}
		st.Head = nil
	}
	st.Head = slices.Concat(head, st.Head)
	st.Tail = slices.Concat(st.Tail, tail)
	if st.BaseLen >= 0 && st.Drop == st.BaseLen {
		// All of the stored list is gone: the edit is a replacement.
		st = Staged{Replace: true, List: slices.Concat(st.Head, st.Tail)}
	}
	put(b, id, &st)
	return nil
}

// IDs returns the ids with messages as the batch leaves them, given those
// the store holds.
func (s *Stager) IDs(ctx context.Context, b *chatstore.Batch, base Base, stored []string) ([]string, error) {
	type staged struct {
		id string
		v  []byte
	}
	var all []staged
	b.All(func(id string, v []byte) { all = append(all, staged{id, v}) })
	if len(all) == 0 {
		return stored, nil
	}
	set := make(map[string]bool, len(stored)+len(all))
	for _, id := range stored {
		set[id] = true
	}
	for _, e := range all {
		if e.v == nil {
			delete(set, e.id)
			continue
		}
		st, err := UnmarshalStaged(e.v)
		if err != nil {
			return nil, fmt.Errorf("memory %q: %w", e.id, err)
		}
		n := st.BaseLen
		if !st.Replace && n < 0 {
			if n, err = base.StoredLen(ctx, e.id); err != nil {
				return nil, err
			}
		}
		if st.Len(n) > 0 {
			set[e.id] = true
		} else {
			delete(set, e.id)
		}
	}
	ids := make([]string, 0, len(set))
	for id := range set {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}
