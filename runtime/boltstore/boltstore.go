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
// The file holds these buckets (bbolt's keyed tables), in layout 2:
//
//	meta     "layout" → "2"; "fence" → the last fencing token (uint64)
//	data     conversation id + 0x00 → the conversation's record: version (uint64) | expiry (Unix ns, 0 for never)
//	           | the time of its expiry index entry (0 for none) | the memory ids the state lists | the state as JSON
//	         memory id + 0x01 → the memory's messages: their number, then each one's length and bytes
//	expiry   index time | conversation id → "" (the sweeper's index)
//	lease    conversation id → token (uint64) | expiry (Unix ns) | owner
//
// Integers are big-endian, lengths uvarints. The state's JSON records its
// own format version ("format": 1); a file or a state of a format this
// package does not know is refused rather than misread. A message is the
// JSON object memory.MarshalMessages writes for it, so tool calls and tool
// results survive losslessly. A memory id starts with its scope's id and a
// conversation's id is its first scope's, so a conversation's record and
// its first scope's memories sit side by side, usually in one page: a save
// rewrites one page for both. The expiry index moves only when the expiry,
// rounded up to a grain (an eighth of the TTL, at most a minute), does.
//
// A file of layout 1 (a bucket of messages per memory, records and memory
// ids in buckets of their own) is upgraded by Open, in the transaction
// that opens it.
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
	"bytes"
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
	grain   time.Duration // of the expiry index; see expiry
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
	bucketData   = []byte("data")
	bucketExpiry = []byte("expiry")
	bucketLease  = []byte("lease")

	keyLayout = []byte("layout")
	keyFence  = []byte("fence")
)

// pageSize is the page size of a new file (a file keeps the size it was
// created with). Concurrent saves of many conversations dirty most pages
// of the data bucket in each group transaction; pages of 16 KiB hold a
// conversation's record and lists whole, which halves the pages a save
// writes and the page buffers bbolt allocates for pages that overflow.
const pageSize = 16 << 10

// layoutVersion is the version of the file's layout, in meta/layout.
const layoutVersion = "2"

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
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout:  o.OpenTimeout,
		PageSize: pageSize,
		// Not writing the free page list on every commit saves a page
		// write and its share of the fsync on each; Open then finds the
		// free pages by walking the file (as etcd does), and the map
		// keeps allocation cheap in a fragmented file.
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
	})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("boltstore: %s is open in another process (a bbolt file serves one process; several need a shared store such as redisstore): %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("boltstore: opening %s: %w", path, err)
	}
	grain := expiryGrain(o.TTL)
	if err := db.Update(func(tx *bolt.Tx) error { return initialise(tx, grain) }); err != nil {
		db.Close()
		return nil, fmt.Errorf("boltstore: %s: %w", path, err)
	}
	s := &Store{db: db, ttl: o.TTL, grain: grain, log: o.Logger, stop: make(chan struct{})}
	if !o.NoGroupCommit {
		s.commits = newCommitter(db)
	}
	if o.TTL > 0 {
		s.sweeping.Go(func() { s.sweepEvery(o.SweepInterval) })
	}
	return s, nil
}

// initialise creates the buckets, checks the layout (upgrading a file of
// layout 1), and ends the leases of the process that had the file before.
func initialise(tx *bolt.Tx, grain time.Duration) error {
	meta, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return err
	}
	switch v := meta.Get(keyLayout); {
	case v == nil:
		if err := meta.Put(keyLayout, []byte(layoutVersion)); err != nil {
			return err
		}
	case string(v) == "1":
		if err := upgrade1(tx, meta, grain); err != nil {
			return fmt.Errorf("upgrading the file from layout 1 to %s: %w", layoutVersion, err)
		}
	case string(v) != layoutVersion:
		return fmt.Errorf("file layout %q is not %q (written by another version of chatgen?)", v, layoutVersion)
	}
	if err := tx.DeleteBucket(bucketLease); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
		return err
	}
	for _, name := range [][]byte{bucketData, bucketExpiry, bucketLease} {
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
func (s *Store) update(fn func(*bolt.Tx, *arena) error) error {
	if s.commits != nil {
		return s.commits.update(fn)
	}
	return s.db.Update(func(tx *bolt.Tx) error { return fn(tx, nil) })
}

// Path returns the path of the store's file.
func (s *Store) Path() string { return s.db.Path() }

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// expiry returns the expiry of a conversation saved at now, and the time
// of its entry in the expiry index: the expiry rounded up to the store's
// grain, so that the saves of a conversation within one grain share one
// entry and leave the index as it is. Both are 0 for never.
func (s *Store) expiry(now time.Time) (exp, indexed uint64) {
	if s.ttl <= 0 {
		return 0, 0
	}
	exp = uint64(now.Add(s.ttl).UnixNano())
	return exp, indexTime(exp, s.grain)
}

// indexTime returns the time of the expiry index entry of an expiry: the
// expiry rounded up to grain; 0 for never.
func indexTime(exp uint64, grain time.Duration) uint64 {
	g := uint64(grain)
	return (exp + g - 1) / g * g
}

// expiryGrain is the grain of the expiry index for a time to live: an
// eighth of it, at most a minute. The sweeper finds a conversation at the
// first sweep after its expiry rounded up to the grain.
func expiryGrain(ttl time.Duration) time.Duration {
	return max(min(ttl/8, time.Minute), 1)
}

func expired(exp uint64, now time.Time) bool {
	return exp != 0 && exp <= uint64(now.UnixNano())
}

// Load implements [chatstore.ConversationStore].
func (s *Store) Load(ctx context.Context, id string) (*chatstore.ConversationState, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var st *chatstore.ConversationState
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketData).Get(recKey(id))
		if v == nil {
			return fmt.Errorf("boltstore: conversation %q: %w", id, chatstore.ErrConversationNotFound)
		}
		r, err := parseConv(v)
		if err != nil {
			return fmt.Errorf("boltstore: conversation %q: %w", id, err)
		}
		if expired(r.exp, time.Now()) {
			return fmt.Errorf("boltstore: conversation %q expired: %w", id, chatstore.ErrConversationNotFound)
		}
		if st, err = durable.DecodeState(r.state); err != nil {
			return fmt.Errorf("boltstore: conversation %q: %w", id, err)
		}
		st.Version = r.version
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
	// The state is copied into the record the transaction puts: its
	// encoding is garbage after the save, and goes back to the pool.
	buf := stateBufs.Get().(*[]byte)
	data, err := durable.AppendState((*buf)[:0], st, next)
	defer func() {
		if cap(data) <= maxPooledState {
			*buf = data[:0]
			stateBufs.Put(buf)
		}
	}()
	if err != nil {
		return fmt.Errorf("boltstore: %w", err)
	}
	mids := durable.MemoryIDs(st)
	enc := encodeMids(mids)
	writes, err := batchWrites(b)
	if err != nil {
		return fmt.Errorf("boltstore: saving conversation %q: %w", st.ID, err)
	}
	id, key := []byte(st.ID), recKey(st.ID)
	err = s.update(func(tx *bolt.Tx, a *arena) error {
		now := time.Now()
		if err := checkLease(tx, st.ID, lease); err != nil {
			return err
		}
		bucket := tx.Bucket(bucketData)
		var old convRecord
		exists := false
		if v := bucket.Get(key); v != nil {
			var err error
			if old, err = parseConv(v); err != nil {
				return err
			}
			if expired(old.exp, now) {
				if err := purge(tx, id); err != nil { // as the sweeper would have
					return err
				}
				old = convRecord{}
			} else {
				exists = true
			}
		}
		switch {
		case old.version == st.Version: // 0 for a new conversation
		case !exists:
			return fmt.Errorf("%w: conversation %q is at version %d: %w", chatstore.ErrVersionConflict, st.ID, st.Version, chatstore.ErrConversationNotFound)
		default:
			return fmt.Errorf("%w: conversation %q is at version %d, the save is from version %d", chatstore.ErrVersionConflict, st.ID, old.version, st.Version)
		}
		for _, w := range writes {
			if err := w.apply(tx, a); err != nil {
				return err
			}
		}
		if !bytes.Equal(old.mids, enc) { // most saves list the same memories
			prev, err := decodeMids(old.mids)
			if err != nil {
				return err
			}
			for _, mid := range durable.Dropped(prev, mids) {
				if err := deleteMem(tx, mid); err != nil {
					return err
				}
			}
		}
		rec := convRecord{version: next, mids: enc, state: data}
		rec.exp, rec.indexed = s.expiry(now)
		if err := reindex(tx, id, old.indexed, rec.indexed); err != nil {
			return err
		}
		return bucket.Put(key, rec.bytes(a))
	})
	if err != nil {
		return wrapErr("saving conversation", st.ID, err)
	}
	st.Version = next
	return nil
}

// stateBufs pools the buffers Save encodes states in, up to
// maxPooledState bytes.
var stateBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

const maxPooledState = 64 << 10

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

func (w memWrite) apply(tx *bolt.Tx, a *arena) error {
	switch {
	case w.st == nil:
		return deleteMem(tx, w.id)
	case w.st.Replace:
		return replaceMem(tx, a, w.id, w.st.List)
	}
	v := memValue(tx, w.id)
	n, err := listLen(w.id, v)
	if err != nil {
		return err
	}
	if err := w.st.Check(w.id, n); err != nil {
		return err
	}
	return editList(tx, a, w.id, v, w.st.Drop, w.st.Head, w.st.Tail)
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

// purge deletes the conversation id and everything that goes with it. A
// record too corrupt to list its memories and index entry is deleted all
// the same, with its lease: what it listed can no longer be known, and the
// sweeper drops an index entry whose record is gone.
func purge(tx *bolt.Tx, id []byte) error {
	data, key := tx.Bucket(bucketData), recKey(string(id))
	if v := data.Get(key); v != nil {
		if r, err := parseConv(v); err == nil {
			mids, err := decodeMids(r.mids)
			if err != nil {
				return err
			}
			for _, mid := range mids {
				if err := deleteMem(tx, mid); err != nil {
					return err
				}
			}
			if err := reindex(tx, id, r.indexed, 0); err != nil {
				return err
			}
		}
	}
	if err := data.Delete(key); err != nil {
		return err
	}
	return tx.Bucket(bucketLease).Delete(id)
}

// Delete implements [chatstore.ConversationStore].
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.update(func(tx *bolt.Tx, _ *arena) error { return purge(tx, []byte(id)) }); err != nil {
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
	err := s.update(func(tx *bolt.Tx, _ *arena) error {
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
	err := s.update(func(tx *bolt.Tx, _ *arena) error {
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
	err = s.update(func(tx *bolt.Tx, _ *arena) error {
		more = false // a repeated run starts again
		t := time.Now()
		// An entry's time is its record's expiry rounded up to the
		// grain (see Store.expiry): the records expired by now have
		// entries up to a grain ahead.
		until := uint64(t.Add(s.grain).UnixNano())
		idx := tx.Bucket(bucketExpiry)
		c := idx.Cursor()
		var gone, stale [][]byte
		for k, _ := c.First(); len(k) >= 8 && binary.BigEndian.Uint64(k) <= until; k, _ = c.Next() {
			if len(gone)+len(stale) == sweepBatch {
				more = true
				break
			}
			// An entry that is not its record's (the record is gone or
			// corrupt) is dropped alone.
			id := k[8:]
			r, err := parseConv(tx.Bucket(bucketData).Get(recKey(string(id))))
			switch {
			case err != nil || r.indexed != binary.BigEndian.Uint64(k):
				stale = append(stale, slices.Clone(k))
			case expired(r.exp, t):
				gone = append(gone, slices.Clone(id))
			}
		}
		for _, k := range stale {
			if err := idx.Delete(k); err != nil {
				return err
			}
		}
		for _, id := range gone {
			if err := purge(tx, id); err != nil {
				return err
			}
		}
		n = len(gone)
		if more {
			return nil
		}
		// Leases of conversations never saved (or gone) that expired a
		// time to live ago.
		cutoff := t.Add(-s.ttl)
		var orphans [][]byte
		data := tx.Bucket(bucketData)
		lc := tx.Bucket(bucketLease).Cursor()
		for k, v := lc.First(); k != nil; k, v = lc.Next() {
			if _, exp, _, err := parseLease(v); err == nil && exp.Before(cutoff) && data.Get(recKey(string(k))) == nil {
				orphans = append(orphans, slices.Clone(k))
			}
		}
		for _, k := range orphans {
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
// method.) It is a [memory.IncrementalStore]: a change in a request is
// staged as the messages it drops and adds, never reading the list (the
// memory's [memory.Change.Len] stands for the length), and the save
// rewrites the list's one value.
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
	err := b.s.db.View(func(tx *bolt.Tx) (err error) {
		elems, err = memElems(tx, id)
		return err
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
	if err := s.update(func(tx *bolt.Tx, a *arena) error { return replaceMem(tx, a, id, elems) }); err != nil {
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
	if err := s.update(func(tx *bolt.Tx, _ *arena) error { return deleteMem(tx, id) }); err != nil {
		return fmt.Errorf("boltstore: deleting memory %q: %w", id, err)
	}
	return nil
}

// Apply implements [memory.IncrementalStore]. With a [chatstore.Batch] in
// ctx, the change is staged in the batch as the messages it drops and
// adds, for [Store.Save] to commit; else the list's value is rewritten at
// once.
func (m *Memories) Apply(ctx context.Context, id string, c memory.Change) error {
	s := m.s
	head, tail, err := durable.EncodeChange(ctx, id, c)
	if err != nil {
		return fmt.Errorf("boltstore: %w", err)
	}
	if b := chatstore.BatchFrom(ctx); b != nil {
		if err := s.stage.Apply(ctx, b, base{s}, id, c.Len, c.Drop, head, tail); err != nil {
			return fmt.Errorf("boltstore: %w", err)
		}
		return nil
	}
	if err := s.update(func(tx *bolt.Tx, a *arena) error { return editMem(tx, a, id, c.Drop, head, tail) }); err != nil {
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
		return tx.Bucket(bucketData).ForEach(func(k, _ []byte) error {
			if n := len(k) - 1; n >= 0 && k[n] == kindList {
				ids = append(ids, string(k[:n]))
			}
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
