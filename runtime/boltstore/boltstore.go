// Package boltstore is the embedded conversation store: conversations and
// their chat memories in one bbolt file (go.etcd.io/bbolt), transactional
// and crash-safe, with no set-up. A [Store] is a chatstore.ConversationStore;
// its [Store.Memories] is the memory.IncrementalStore of the conversations'
// chat memories.
//
// A bbolt file is open in one process at a time (Open takes a file lock),
// so a Store serves the nodes of one process. Several processes serving
// the same conversations need a shared store: runtime/redisstore. Leases
// are kept in the file all the same, so that the runtime takes the same
// path with either store; since the process holding the file lock is the
// only one that can hold a lease, Open ends the leases a previous process
// left behind, and a restarted server resumes its conversations at once.
//
// # What a save writes
//
// [Store.Save] runs one read-write transaction: it checks the lease and
// the version, applies the memory writes staged in the request's
// [chatstore.Batch], deletes the memories the new state no longer lists, and
// writes the state. bbolt syncs the file when the transaction commits, so
// a save that returned is on disk, and a crash leaves the file as it was
// before the save or after it.
//
// # Group commit
//
// An fsync costs far more than the work of a save, and bbolt commits one
// write transaction at a time. So by default the writes (saves, leases,
// deletions) that arrive while a transaction commits wait for it and then
// share the next transaction: a thousand conversations saving at the same
// time pay for a few fsyncs, not a thousand. A write that arrives when
// nothing is committing starts at once, so a lone writer waits no longer
// than without it. Each save stays all or nothing and is checked against
// the state the saves before it in the same transaction leave: a save that
// fails (a version conflict, a lost lease) rolls the shared transaction
// back, the others commit without it, and it is then run alone, so it
// fails as it would have alone and fails nobody else.
// [Options.NoGroupCommit] gives every write a transaction of its own.
//
// # File format
//
// The file holds these buckets (bbolt's keyed tables):
//
//	meta     "layout" → "1" (the version of this layout); "fence" → the last fencing token (uint64, big-endian)
//	conv     conversation id → version (uint64) | expiry (Unix ns, 0 for never) | the state as JSON
//	expiry   expiry (Unix ns) | conversation id → "" (the sweeper's index)
//	mids     conversation id → the memory ids the state lists (uvarint-length-prefixed)
//	lease    conversation id → token (uint64) | expiry (Unix ns) | owner
//	mem      memory id → a bucket of the memory's messages: sequence number (uint64) → one message as JSON
//
// Integers are big-endian. The state's JSON records its own format
// version ("format": 1); a file or a state of a format this package does
// not know is refused rather than misread. A message is the JSON object
// memory.MarshalMessages writes for it, so tool calls and tool results
// survive losslessly. Keeping one key per message lets a memory change
// (memory.IncrementalStore's Apply) touch only the messages it drops and
// adds.
//
// # Time to live
//
// With [Options.TTL] set, a conversation not saved for that long expires:
// Load reports it not found at once, and a background sweeper deletes it,
// its memories and its lease from the file (every [Options.SweepInterval];
// [Store.Close] stops it). Memories that no saved conversation lists (those
// written directly, outside a request of a durable conversation) never
// expire.
package boltstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/internal/durable"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/tmc/langchaingo/llms"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Options configure a [Store]. The zero value (or nil) is a store whose
// conversations never expire.
type Options struct {
	// TTL is how long a conversation may go without a save before it
	// expires with its memories; 0 means never.
	TTL time.Duration
	// SweepInterval is how often the sweeper deletes expired conversations
	// from the file when TTL is set. The default is TTL, at most a minute.
	SweepInterval time.Duration
	// OpenTimeout is how long Open waits for the file lock another process
	// holds; the default is one second.
	OpenTimeout time.Duration
	// Logger receives the sweeper's failures; nil means slog.Default().
	Logger *slog.Logger
	// NoGroupCommit runs every write in a transaction of its own, synced
	// before the next one starts. By default, writes made while another
	// commits (the saves of different conversations at the same time)
	// share the next transaction and its fsync, each still all or
	// nothing; a lone writer's save starts at once either way.
	NoGroupCommit bool
}

// Store is a [chatstore.ConversationStore] in one bbolt file, with the chat
// memories of its conversations ([Store.Memories]). It is safe for
// concurrent use.
type Store struct {
	db      *bolt.DB
	commits *committer // nil with Options.NoGroupCommit
	ttl     time.Duration
	log     *slog.Logger
	stage   durable.Stager

	stop      chan struct{}
	sweeping  sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

var _ chatstore.ConversationStore = (*Store)(nil)

var (
	bucketMeta   = []byte("meta")
	bucketConv   = []byte("conv")
	bucketExpiry = []byte("expiry")
	bucketMids   = []byte("mids")
	bucketLease  = []byte("lease")
	bucketMem    = []byte("mem")

	keyLayout = []byte("layout")
	keyFence  = []byte("fence")
)

// layoutVersion is the version of the file's layout, in meta/layout.
const layoutVersion = "1"

// Open opens the store in the file at path, creating it (mode 0600) if
// needed. It fails when another process has the file open.
func Open(path string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.TTL < 0 || o.SweepInterval < 0 || o.OpenTimeout < 0 {
		return nil, fmt.Errorf("boltstore: negative duration in options %+v", o)
	}
	if o.OpenTimeout == 0 {
		o.OpenTimeout = time.Second
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = min(o.TTL, time.Minute)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: o.OpenTimeout})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("boltstore: %s is open in another process (a bbolt file serves one process; several need a shared store such as redisstore): %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("boltstore: opening %s: %w", path, err)
	}
	if err := db.Update(initialise); err != nil {
		db.Close()
		return nil, fmt.Errorf("boltstore: %s: %w", path, err)
	}
	s := &Store{db: db, ttl: o.TTL, log: o.Logger, stop: make(chan struct{})}
	if !o.NoGroupCommit {
		s.commits = newCommitter(db)
	}
	if o.TTL > 0 {
		s.sweeping.Go(func() { s.sweepEvery(o.SweepInterval) })
	}
	return s, nil
}

// initialise creates the buckets, checks the layout, and ends the leases
// of the process that had the file before.
func initialise(tx *bolt.Tx) error {
	meta, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return err
	}
	switch v := meta.Get(keyLayout); {
	case v == nil:
		if err := meta.Put(keyLayout, []byte(layoutVersion)); err != nil {
			return err
		}
	case string(v) != layoutVersion:
		return fmt.Errorf("file layout %q is not %q (written by another version of chatgen?)", v, layoutVersion)
	}
	if err := tx.DeleteBucket(bucketLease); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
		return err
	}
	for _, name := range [][]byte{bucketConv, bucketExpiry, bucketMids, bucketLease, bucketMem} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	return nil
}

// Close stops the sweeper and closes the file. Further calls do nothing.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.sweeping.Wait()
		if s.commits != nil {
			s.commits.close()
		}
		s.closeErr = s.db.Close()
	})
	return s.closeErr
}

// update runs fn in a read-write transaction: with group commit, one
// shared with the writes made meanwhile, so fn must be repeatable (see
// committer).
func (s *Store) update(fn func(*bolt.Tx) error) error {
	if s.commits != nil {
		return s.commits.update(fn)
	}
	return s.db.Update(fn)
}

// Path returns the path of the store's file.
func (s *Store) Path() string { return s.db.Path() }

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// expiresAt returns the expiry of a conversation saved at now, 0 for never.
func (s *Store) expiresAt(now time.Time) uint64 {
	if s.ttl <= 0 {
		return 0
	}
	return uint64(now.Add(s.ttl).UnixNano())
}

func expired(exp uint64, now time.Time) bool {
	return exp != 0 && exp <= uint64(now.UnixNano())
}

// A conv record: version, expiry, state JSON.
const convHeader = 16

func parseConv(v []byte) (version, exp uint64, state []byte, err error) {
	if len(v) < convHeader {
		return 0, 0, nil, fmt.Errorf("%w: a record of %d bytes", chatstore.ErrCorruptState, len(v))
	}
	return binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:]), v[convHeader:], nil
}

// Load implements [chatstore.ConversationStore].
func (s *Store) Load(ctx context.Context, id string) (*chatstore.ConversationState, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var st *chatstore.ConversationState
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketConv).Get([]byte(id))
		if v == nil {
			return fmt.Errorf("boltstore: conversation %q: %w", id, chatstore.ErrConversationNotFound)
		}
		version, exp, data, err := parseConv(v)
		if err != nil {
			return fmt.Errorf("boltstore: conversation %q: %w", id, err)
		}
		if expired(exp, time.Now()) {
			return fmt.Errorf("boltstore: conversation %q expired: %w", id, chatstore.ErrConversationNotFound)
		}
		if st, err = durable.DecodeState(data); err != nil {
			return fmt.Errorf("boltstore: conversation %q: %w", id, err)
		}
		st.Version = version
		return nil
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// Save implements [chatstore.ConversationStore].
func (s *Store) Save(ctx context.Context, st *chatstore.ConversationState, lease chatstore.Lease, b *chatstore.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if st == nil || st.ID == "" {
		return errors.New("boltstore: saving a conversation without an id")
	}
	next := st.Version + 1
	data, err := durable.EncodeState(st, next)
	if err != nil {
		return fmt.Errorf("boltstore: %w", err)
	}
	mids := durable.MemoryIDs(st)
	writes, err := batchWrites(b)
	if err != nil {
		return fmt.Errorf("boltstore: saving conversation %q: %w", st.ID, err)
	}
	id := []byte(st.ID)
	err = s.update(func(tx *bolt.Tx) error {
		now := time.Now()
		if err := checkLease(tx, st.ID, lease); err != nil {
			return err
		}
		convs := tx.Bucket(bucketConv)
		var stored uint64
		exists := false
		if v := convs.Get(id); v != nil {
			version, exp, _, err := parseConv(v)
			if err != nil {
				return err
			}
			if expired(exp, now) {
				if err := purge(tx, id); err != nil { // as the sweeper would have
					return err
				}
			} else {
				stored, exists = version, true
			}
		}
		switch {
		case stored == st.Version:
		case !exists:
			return fmt.Errorf("%w: conversation %q is at version %d: %w", chatstore.ErrVersionConflict, st.ID, st.Version, chatstore.ErrConversationNotFound)
		default:
			return fmt.Errorf("%w: conversation %q is at version %d, the save is from version %d", chatstore.ErrVersionConflict, st.ID, stored, st.Version)
		}
		for _, w := range writes {
			if err := w.apply(tx); err != nil {
				return err
			}
		}
		old, err := readMids(tx, id)
		if err != nil {
			return err
		}
		for _, mid := range durable.Dropped(old, mids) {
			if err := deleteMem(tx, mid); err != nil {
				return err
			}
		}
		if !slices.Equal(old, mids) { // most saves list the same memories
			if err := writeMids(tx, id, mids); err != nil {
				return err
			}
		}
		if exists {
			if err := unindexExpiry(tx, id, convs.Get(id)); err != nil {
				return err
			}
		}
		exp := s.expiresAt(now)
		rec := make([]byte, convHeader, convHeader+len(data))
		binary.BigEndian.PutUint64(rec, next)
		binary.BigEndian.PutUint64(rec[8:], exp)
		if err := convs.Put(id, append(rec, data...)); err != nil {
			return err
		}
		if exp != 0 {
			return tx.Bucket(bucketExpiry).Put(append(u64(exp), id...), nil)
		}
		return nil
	})
	if err != nil {
		return wrapErr("saving conversation", st.ID, err)
	}
	st.Version = next
	return nil
}

// wrapErr prefixes err with the package and what failed, once.
func wrapErr(what, id string, err error) error {
	return fmt.Errorf("boltstore: %s %q: %w", what, id, err)
}

// A memWrite is a memory write staged in a batch: st nil for a deletion.
type memWrite struct {
	id string
	st *durable.Staged
}

func batchWrites(b *chatstore.Batch) ([]memWrite, error) {
	if b == nil {
		return nil, nil
	}
	var writes []memWrite
	var err error
	b.All(func(id string, v []byte) {
		w := memWrite{id: id}
		if v != nil {
			st, e := durable.UnmarshalStaged(v)
			if e != nil && err == nil {
				err = fmt.Errorf("memory %q: %w", id, e)
			}
			w.st = &st
		}
		writes = append(writes, w)
	})
	return writes, err
}

func (w memWrite) apply(tx *bolt.Tx) error {
	switch {
	case w.st == nil:
		return deleteMem(tx, w.id)
	case w.st.Replace:
		return replaceMem(tx, w.id, w.st.List)
	}
	n, err := memLen(tx, w.id)
	if err != nil {
		return err
	}
	if err := w.st.Check(w.id, n); err != nil {
		return err
	}
	return editMem(tx, w.id, w.st.Drop, w.st.Head, w.st.Tail)
}

func checkLease(tx *bolt.Tx, id string, lease chatstore.Lease) error {
	if lease.Token != 0 {
		if v := tx.Bucket(bucketLease).Get([]byte(id)); v != nil {
			token, _, owner, err := parseLease(v)
			if err != nil {
				return err
			}
			if token == lease.Token && owner == lease.Owner {
				return nil
			}
		}
	}
	return fmt.Errorf("%w: %q's lease with token %d is not the current one", chatstore.ErrLeaseLost, lease.Owner, lease.Token)
}

// purge deletes the conversation id and everything that goes with it.
func purge(tx *bolt.Tx, id []byte) error {
	mids, err := readMids(tx, id)
	if err != nil {
		return err
	}
	for _, mid := range mids {
		if err := deleteMem(tx, mid); err != nil {
			return err
		}
	}
	convs := tx.Bucket(bucketConv)
	if v := convs.Get(id); v != nil {
		if err := unindexExpiry(tx, id, v); err != nil {
			return err
		}
	}
	for _, name := range [][]byte{bucketConv, bucketMids, bucketLease} {
		if err := tx.Bucket(name).Delete(id); err != nil {
			return err
		}
	}
	return nil
}

func unindexExpiry(tx *bolt.Tx, id, rec []byte) error {
	_, exp, _, err := parseConv(rec)
	if err != nil || exp == 0 {
		return err
	}
	return tx.Bucket(bucketExpiry).Delete(append(u64(exp), id...))
}

func readMids(tx *bolt.Tx, id []byte) ([]string, error) {
	v := tx.Bucket(bucketMids).Get(id)
	var mids []string
	for len(v) > 0 {
		n, k := binary.Uvarint(v)
		if k <= 0 || n > uint64(len(v)-k) {
			return nil, errors.New("corrupt memory id list")
		}
		mids = append(mids, string(v[k:k+int(n)]))
		v = v[k+int(n):]
	}
	return mids, nil
}

func writeMids(tx *bolt.Tx, id []byte, mids []string) error {
	if len(mids) == 0 {
		return tx.Bucket(bucketMids).Delete(id)
	}
	var buf []byte
	for _, m := range mids {
		buf = binary.AppendUvarint(buf, uint64(len(m)))
		buf = append(buf, m...)
	}
	return tx.Bucket(bucketMids).Put(id, buf)
}

// Delete implements [chatstore.ConversationStore].
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.update(func(tx *bolt.Tx) error { return purge(tx, []byte(id)) }); err != nil {
		return wrapErr("deleting conversation", id, err)
	}
	return nil
}

// A lease record: token, expiry, owner.
func parseLease(v []byte) (token uint64, exp time.Time, owner string, err error) {
	if len(v) < 16 {
		return 0, time.Time{}, "", errors.New("corrupt lease record")
	}
	return binary.BigEndian.Uint64(v), time.Unix(0, int64(binary.BigEndian.Uint64(v[8:]))), string(v[16:]), nil
}

// Acquire implements [chatstore.ConversationStore].
func (s *Store) Acquire(ctx context.Context, id, owner string, ttl time.Duration) (chatstore.Lease, error) {
	if err := ctx.Err(); err != nil {
		return chatstore.Lease{}, err
	}
	if ttl <= 0 || owner == "" {
		return chatstore.Lease{}, fmt.Errorf("boltstore: acquiring conversation %q: a lease needs an owner and a positive time to live (got %q, %v)", id, owner, ttl)
	}
	var l chatstore.Lease
	err := s.update(func(tx *bolt.Tx) error {
		now := time.Now()
		leases := tx.Bucket(bucketLease)
		var token uint64
		if v := leases.Get([]byte(id)); v != nil {
			t, exp, o, err := parseLease(v)
			if err != nil {
				return err
			}
			switch {
			case o == owner:
				token = t
			case exp.After(now):
				return fmt.Errorf("%w: %q holds it until %v", chatstore.ErrLeaseHeld, o, exp.Format(time.RFC3339Nano))
			}
		}
		if token == 0 {
			meta := tx.Bucket(bucketMeta)
			if v := meta.Get(keyFence); len(v) == 8 {
				token = binary.BigEndian.Uint64(v)
			}
			token++
			if err := meta.Put(keyFence, u64(token)); err != nil {
				return err
			}
		}
		l = chatstore.Lease{Owner: owner, Token: token, Expires: now.Add(ttl).Round(0)}
		rec := binary.BigEndian.AppendUint64(u64(token), uint64(l.Expires.UnixNano()))
		return leases.Put([]byte(id), append(rec, owner...))
	})
	if err != nil {
		return chatstore.Lease{}, wrapErr("acquiring conversation", id, err)
	}
	return l, nil
}

// Release implements [chatstore.ConversationStore].
func (s *Store) Release(ctx context.Context, id string, lease chatstore.Lease) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.update(func(tx *bolt.Tx) error {
		leases := tx.Bucket(bucketLease)
		v := leases.Get([]byte(id))
		if v == nil {
			return nil
		}
		token, _, owner, err := parseLease(v)
		if err != nil || token != lease.Token || owner != lease.Owner {
			return err
		}
		return leases.Delete([]byte(id))
	})
	if err != nil {
		return wrapErr("releasing conversation", id, err)
	}
	return nil
}

// sweepEvery sweeps every interval until Close.
func (s *Store) sweepEvery(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if _, err := s.Sweep(); err != nil {
				s.log.Error("boltstore: sweeping expired conversations", "path", s.Path(), "err", err)
			}
		}
	}
}

// sweepBatch is how many conversations one sweep transaction deletes at
// most, to keep write transactions short.
const sweepBatch = 1000

// Sweep deletes the expired conversations, their memories and their
// leases now, and returns how many conversations it deleted. The sweeper
// calls it; call it yourself to reclaim space at a time of your choosing.
// It also deletes the leases of conversations that do not exist and that
// expired longer than the time to live ago.
func (s *Store) Sweep() (int, error) {
	if s.ttl <= 0 {
		return 0, nil
	}
	total := 0
	for {
		n, more, err := s.sweepOnce()
		total += n
		if err != nil || !more {
			return total, err
		}
	}
}

func (s *Store) sweepOnce() (n int, more bool, err error) {
	err = s.update(func(tx *bolt.Tx) error {
		more = false // a repeated run starts again
		now := uint64(time.Now().UnixNano())
		c := tx.Bucket(bucketExpiry).Cursor()
		var ids [][]byte
		for k, _ := c.First(); len(k) >= 8 && binary.BigEndian.Uint64(k) <= now; k, _ = c.Next() {
			if len(ids) == sweepBatch {
				more = true
				break
			}
			ids = append(ids, slices.Clone(k[8:]))
		}
		for _, id := range ids {
			if err := purge(tx, id); err != nil {
				return err
			}
		}
		n = len(ids)
		if more {
			return nil
		}
		// Leases of conversations never saved (or gone) that expired a
		// time to live ago.
		cutoff := time.Now().Add(-s.ttl)
		var stale [][]byte
		convs := tx.Bucket(bucketConv)
		lc := tx.Bucket(bucketLease).Cursor()
		for k, v := lc.First(); k != nil; k, v = lc.Next() {
			if _, exp, _, err := parseLease(v); err == nil && exp.Before(cutoff) && convs.Get(k) == nil {
				stale = append(stale, slices.Clone(k))
			}
		}
		for _, k := range stale {
			if err := tx.Bucket(bucketLease).Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	return n, more, err
}

// Memories is the memory.Store of the chat memories of a [Store]'s
// conversations; [Store.Memories] returns it. (It is a value of its own
// because chatstore.ConversationStore and memory.Store both have a Delete
// method.) It is a [memory.IncrementalStore]: a change touches only the
// messages it drops and adds.
//
// A call whose context carries a [chatstore.Batch] (chatstore.WithBatch), as the
// calls made in a request of a durable conversation do, stages its write
// in the batch instead of writing, for [Store.Save] to commit with the
// conversation's state, and reads see the batch's writes first. Other
// calls write at once, one transaction each.
type Memories struct{ s *Store }

// StagesInBatch implements [chatstore.StagingStore]: the writes made in a
// request of a durable conversation are saved with its state.
func (m *Memories) StagesInBatch() {}

var _ memory.IncrementalStore = (*Memories)(nil)

// Memories returns the memory store of the store's conversations.
func (s *Store) Memories() *Memories { return &Memories{s} }

// seqStart is the sequence number of the first message of a new list:
// the middle of the range, so that lists grow both ways.
const seqStart = 1 << 63

func memBucket(tx *bolt.Tx, id string) *bolt.Bucket {
	return tx.Bucket(bucketMem).Bucket([]byte(id))
}

func memElems(tx *bolt.Tx, id string) [][]byte {
	b := memBucket(tx, id)
	if b == nil {
		return nil
	}
	var elems [][]byte
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		elems = append(elems, slices.Clone(v))
	}
	return elems
}

// memLen returns the length of the list of id from its first and last
// keys: a list's sequence numbers are consecutive (replaceMem numbers it
// from seqStart, editMem drops from the front and numbers what it adds
// next to the ends).
func memLen(tx *bolt.Tx, id string) (int, error) {
	b := memBucket(tx, id)
	if b == nil {
		return 0, nil
	}
	c := b.Cursor()
	first, _ := c.First()
	if first == nil {
		return 0, nil
	}
	last, _ := c.Last()
	if len(first) != 8 || len(last) != 8 {
		return 0, fmt.Errorf("%w: memory %q has a key of %d bytes", chatstore.ErrCorruptState, id, max(len(first), len(last)))
	}
	return int(binary.BigEndian.Uint64(last)-binary.BigEndian.Uint64(first)) + 1, nil
}

func deleteMem(tx *bolt.Tx, id string) error {
	if err := tx.Bucket(bucketMem).DeleteBucket([]byte(id)); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
		return err
	}
	return nil
}

func replaceMem(tx *bolt.Tx, id string, elems [][]byte) error {
	if err := deleteMem(tx, id); err != nil || len(elems) == 0 {
		return err
	}
	b, err := tx.Bucket(bucketMem).CreateBucket([]byte(id))
	if err != nil {
		return err
	}
	b.FillPercent = 1 // keys only grow at the ends
	for i, e := range elems {
		if err := b.Put(u64(seqStart+uint64(i)), e); err != nil {
			return err
		}
	}
	return nil
}

// editMem drops drop messages from the front of the list of id, puts head
// in front and appends tail; the caller checked that the list has at least
// drop messages.
func editMem(tx *bolt.Tx, id string, drop int, head, tail [][]byte) error {
	if drop == 0 && len(head) == 0 && len(tail) == 0 {
		return nil
	}
	b := memBucket(tx, id)
	if b == nil {
		if drop > 0 {
			return fmt.Errorf("memory: change of %q drops %d of 0 messages", id, drop)
		}
		return replaceMem(tx, id, slices.Concat(head, tail))
	}
	b.FillPercent = 1
	c := b.Cursor()
	var dropped [][]byte
	for k, _ := c.First(); k != nil && len(dropped) < drop; k, _ = c.Next() {
		dropped = append(dropped, slices.Clone(k))
	}
	if len(dropped) < drop {
		return fmt.Errorf("memory: change of %q drops %d of %d messages", id, drop, len(dropped))
	}
	for _, k := range dropped {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	first, last := uint64(seqStart), uint64(seqStart-1)
	if k, _ := c.First(); k != nil {
		first = binary.BigEndian.Uint64(k)
		k, _ = c.Last()
		last = binary.BigEndian.Uint64(k)
	}
	for i, e := range head {
		if err := b.Put(u64(first-uint64(len(head)-i)), e); err != nil {
			return err
		}
	}
	for i, e := range tail {
		if err := b.Put(u64(last+1+uint64(i)), e); err != nil {
			return err
		}
	}
	if k, _ := c.First(); k == nil {
		return deleteMem(tx, id)
	}
	return nil
}

// base reads the stored memories for the stager.
type base struct{ s *Store }

func (b base) StoredLen(ctx context.Context, id string) (int, error) {
	var n int
	err := b.s.db.View(func(tx *bolt.Tx) (err error) {
		n, err = memLen(tx, id)
		return err
	})
	return n, err
}

func (b base) StoredElems(ctx context.Context, id string) ([][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var elems [][]byte
	err := b.s.db.View(func(tx *bolt.Tx) error {
		elems = memElems(tx, id)
		return nil
	})
	return elems, err
}

// Get implements [memory.Store]. With a [chatstore.Batch] in ctx, it returns the
// list as the batch leaves it.
func (m *Memories) Get(ctx context.Context, id string) ([]llms.MessageContent, error) {
	s := m.s
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	msgs, err := s.stage.Messages(ctx, base{s}, id)
	if err != nil {
		return nil, fmt.Errorf("boltstore: reading memory %q: %w", id, err)
	}
	return msgs, nil
}

// Update implements [memory.Store]. With a [chatstore.Batch] in ctx, the write is
// staged in the batch, for [Store.Save] to commit.
func (m *Memories) Update(ctx context.Context, id string, msgs []llms.MessageContent) error {
	s := m.s
	if err := ctx.Err(); err != nil {
		return err
	}
	if id == "" {
		return errors.New("boltstore: memory id is empty")
	}
	elems, err := durable.EncodeMessages(msgs)
	if err != nil {
		return fmt.Errorf("boltstore: updating memory %q: %w", id, err)
	}
	if b := chatstore.BatchFrom(ctx); b != nil {
		s.stage.Update(b, id, elems)
		return nil
	}
	if err := s.update(func(tx *bolt.Tx) error { return replaceMem(tx, id, elems) }); err != nil {
		return fmt.Errorf("boltstore: updating memory %q: %w", id, err)
	}
	return nil
}

// Delete implements [memory.Store]. With a [chatstore.Batch] in ctx, the
// deletion is staged in the batch, for [Store.Save] to commit.
func (m *Memories) Delete(ctx context.Context, id string) error {
	s := m.s
	if err := ctx.Err(); err != nil {
		return err
	}
	if b := chatstore.BatchFrom(ctx); b != nil {
		s.stage.Delete(b, id)
		return nil
	}
	if err := s.update(func(tx *bolt.Tx) error { return deleteMem(tx, id) }); err != nil {
		return fmt.Errorf("boltstore: deleting memory %q: %w", id, err)
	}
	return nil
}

// Apply implements [memory.IncrementalStore]: it touches only the messages
// the change drops and adds. With a [chatstore.Batch] in ctx, the change is
// staged in the batch, for [Store.Save] to commit.
func (m *Memories) Apply(ctx context.Context, id string, c memory.Change) error {
	s := m.s
	head, tail, err := durable.EncodeChange(ctx, id, c)
	if err != nil {
		return fmt.Errorf("boltstore: %w", err)
	}
	if b := chatstore.BatchFrom(ctx); b != nil {
		if err := s.stage.Apply(ctx, b, base{s}, id, c.Drop, head, tail); err != nil {
			return fmt.Errorf("boltstore: %w", err)
		}
		return nil
	}
	if err := s.update(func(tx *bolt.Tx) error { return editMem(tx, id, c.Drop, head, tail) }); err != nil {
		return fmt.Errorf("boltstore: %w", err)
	}
	return nil
}

// IDs implements [memory.Store]: the ids of all memories in the file. With
// a [chatstore.Batch] in ctx, it lists them as the batch leaves them.
func (m *Memories) IDs(ctx context.Context) ([]string, error) {
	s := m.s
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var ids []string
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMem).ForEach(func(k, _ []byte) error {
			ids = append(ids, string(k))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("boltstore: listing memories: %w", err)
	}
	if b := chatstore.BatchFrom(ctx); b != nil {
		if ids, err = s.stage.IDs(ctx, b, base{s}, ids); err != nil {
			return nil, fmt.Errorf("boltstore: listing memories: %w", err)
		}
	}
	return ids, nil
}
