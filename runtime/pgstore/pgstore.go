// Package pgstore is the conversation store in PostgreSQL
// (github.com/jackc/pgx/v5): the conversations and their chat memories in
// tables, shared by every node that reaches the database. A [Store] is a
// [chatstore.ConversationStore]; its [Store.Memories] is the
// memory.IncrementalStore of the conversations' chat memories.
//
// # Choosing it
//
// Pick pgstore when the service already keeps its durable data in
// PostgreSQL (backups, replication and point-in-time recovery come with
// it), runtime/redisstore when Redis is there and a turn must cost one
// round trip, and runtime/boltstore for one process with no server.
//
// # Migrations
//
// The tables and functions are created by versioned migrations, applied
// explicitly and never when a store starts: call [Migrate], or run
//
//	go run github.com/chatscopes/chatgen/runtime/pgstore/cmd/pgmigrate -database "$DATABASE_URL"
//
// when deploying. [New] checks the schema's version and fails with an
// error matching [ErrSchemaNotReady] when it is missing or older than
// [SchemaVersion]. The objects live in the first schema of the
// connections' search_path ("?search_path=myapp" in the URL), which
// Migrate creates when it does not exist; give each store its own schema
// to keep stores apart.
//
// # What a save writes
//
// [Store.Save] sends one pipeline (a pgx.Batch) that PostgreSQL runs as one
// implicit transaction: it checks the lease's fencing token and the
// version, locking the conversation's rows; applies the memory writes the
// request staged in its [chatstore.Batch]; deletes the memories the new state no
// longer lists; and writes the state. A failed check aborts the whole
// transaction, so a turn is saved whole or not at all, and a save that
// returned is committed (durable as the server's synchronous_commit
// says). A turn costs one round trip, two when it evicts messages from a
// full memory (the request then reads the memory's length once).
// (A connection's first use of each statement costs one more: pgx
// prepares it.)
//
// # Tables
//
//	chatgen_conversations   id, version, state (JSON, bytea), memory_ids (bytea[]), expires_at
//	chatgen_leases          id, owner, token, expires_at
//	chatgen_messages        memory_id, seq, message (one JSON object, bytea)
//	chatgen_fence           the sequence fencing tokens are drawn from
//	chatgen_schema_migrations  the migrations applied
//
// The ids are bytea, so that any Go string is one. The state's JSON
// records its format version ("format": 1); a state of a later format is
// refused rather than misread. A row no save could have written (a state
// that does not decode or records no format, such as {} or null; a
// version below 1 or other than the state's) is refused with an error
// matching [chatstore.ErrCorruptState], which the router does not retry.
// Times (expiry of conversations and leases) are the database server's.
//
// # Restarts and failovers
//
// A restart or a failover of the server ends the session of every
// connection the pool holds, and each connection learns it only when it
// sends its next request (SQLSTATE 57P01, admin_shutdown, or a closed
// connection). Every operation of a [Store] and its [Memories] is then
// sent again on another connection, at once while the pool may hold more
// dead ones, then backing off (10 ms doubling up to a second) while no
// connection can be made, for up to [Options.RetryTimeout] (10 seconds by
// default) and no longer than its context. A request is sent again only
// when that is safe: reads, and writes that do the same the second time
// (Acquire renews the lease it granted, Release, Delete) always; a save
// always too, since its version check refuses a second commit, and when
// the connection failed after the server had committed it (the answer
// lost), the next attempt finds the state it wrote at its version, and
// Save returns nil; [Memories.Apply] outside a request only when the
// server certainly did not run it (nothing was sent, or the session had
// ended before it answered). Errors that are not the connection's — a
// wrong password, a refused check, a cancelled context — are never
// retried. [Migrate] and [Version] retry the same way for
// [DefaultRetryTimeout].
//
// # Time to live
//
// With [Options.TTL] set, a conversation not saved for that long expires:
// Load reports it not found at once, a save finds it gone, and a
// background sweeper deletes it, its memories and its expired lease
// (every [Options.SweepInterval]; [Store.Close] stops it; several nodes
// sweeping at once skip each other's rows). Memories that no saved
// conversation lists (those written directly, outside a request of a
// durable conversation) never expire.
package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/internal/durable"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tmc/langchaingo/llms"
)

// Options configure a [Store]. The zero value (or nil) is a store whose
// conversations never expire.
type Options struct {
	// TTL is how long a conversation may go without a save before it
	// expires with its memories; 0 means never.
	TTL time.Duration
	// SweepInterval is how often the sweeper deletes expired
	// conversations when TTL is set. The default is TTL, at most a minute.
	SweepInterval time.Duration
	// RetryTimeout is how long an operation whose connection failed (a
	// restart or a failover of the server ends the sessions of every
	// pooled connection) is tried again on new connections, from its first
	// failure; 0 means [DefaultRetryTimeout], a negative value never. See
	// "Restarts and failovers" in the package documentation.
	RetryTimeout time.Duration
	// Logger receives the sweeper's failures and the retries; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Store is a [chatstore.ConversationStore] in PostgreSQL, with the chat memories
// of its conversations ([Store.Memories]). It is safe for concurrent use,
// by the goroutines of one process and by the processes sharing the
// database.
type Store struct {
	pool  *pgxpool.Pool
	ttl   time.Duration
	log   *slog.Logger
	stage durable.Stager
	retry retrier

	stop      chan struct{}
	sweeping  sync.WaitGroup
	closeOnce sync.Once
}

var _ chatstore.ConversationStore = (*Store)(nil)

// New returns a store in the database pool reaches, after checking that
// its schema is at [SchemaVersion]; it fails with an error matching
// [ErrSchemaNotReady] when the schema is missing or older. New does not
// migrate. The pool stays the caller's: [Store.Close] does not close it.
func New(ctx context.Context, pool *pgxpool.Pool, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if pool == nil {
		return nil, errors.New("pgstore: nil pool")
	}
	if o.TTL < 0 || o.SweepInterval < 0 || o.TTL > 0 && o.TTL < time.Microsecond {
		return nil, fmt.Errorf("pgstore: durations in options %+v are neither 0 nor at least a microsecond", o)
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = min(o.TTL, time.Minute)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.RetryTimeout == 0 {
		o.RetryTimeout = DefaultRetryTimeout
	}
	r := retrier{pool: pool, timeout: o.RetryTimeout, log: o.Logger}
	v, err := r.version(ctx)
	if err != nil {
		return nil, err
	}
	switch {
	case v == 0:
		return nil, fmt.Errorf("%w: no chatgen tables in the database (schema version 0, want %d)", ErrSchemaNotReady, SchemaVersion)
	case v < SchemaVersion:
		return nil, fmt.Errorf("%w: schema version %d, want %d", ErrSchemaNotReady, v, SchemaVersion)
	case v > SchemaVersion:
		return nil, fmt.Errorf("pgstore: the database's schema version %d is newer than this chatgen's %d (written by a later version of chatgen?)", v, SchemaVersion)
	}
	s := &Store{pool: pool, ttl: o.TTL, log: o.Logger, retry: r, stop: make(chan struct{})}
	if o.TTL > 0 {
		s.sweeping.Go(func() { s.sweepEvery(o.SweepInterval) })
	}
	return s, nil
}

// Close stops the sweeper. It does not close the pool. Further calls do
// nothing.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.sweeping.Wait()
	})
	return nil
}

// Load implements [chatstore.ConversationStore]: one round trip. A row
// no save could have written (a state that does not decode or records no
// format, such as {} or null; a version below 1, or other than the
// state's) is an error matching [chatstore.ErrCorruptState].
func (s *Store) Load(ctx context.Context, id string) (*chatstore.ConversationState, error) {
	var version int64
	var data []byte
	err := s.retry.do(ctx, "load", true, func() error {
		return s.pool.QueryRow(ctx, `SELECT version, state FROM chatgen_conversations
			WHERE id = $1 AND (expires_at IS NULL OR expires_at > now())`, []byte(id)).Scan(&version, &data)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("pgstore: loading conversation %q: %w", id, chatstore.ErrConversationNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("pgstore: loading conversation %q: %w", id, err)
	}
	st, err := decodeState(version, data)
	if err != nil {
		return nil, fmt.Errorf("pgstore: loading conversation %q: %w", id, err)
	}
	return st, nil
}

// decodeState decodes the state a row holds at version, and refuses as
// corrupt ([chatstore.ErrCorruptState]) a row no save could have written.
// A state of a later format is refused with durable's error, not as
// corrupt: a later chatgen reads it.
func decodeState(version int64, data []byte) (*chatstore.ConversationState, error) {
	st, err := durable.DecodeState(data)
	if err != nil {
		if errors.Is(err, chatstore.ErrCorruptState) {
			return nil, err
		}
		var f struct {
			Format int `json:"format"`
		}
		if json.Unmarshal(data, &f) != nil || f.Format <= 0 { // {}, null, or a format of 0
			return nil, fmt.Errorf("%w: its state records no format (%d bytes: %.40q)", chatstore.ErrCorruptState, len(data), data)
		}
		return nil, err
	}
	if version < 1 || uint64(version) != st.Version {
		return nil, fmt.Errorf("%w: its version column is %d, its state's version %d", chatstore.ErrCorruptState, version, st.Version)
	}
	return st, nil
}

// Save implements [chatstore.ConversationStore]: one round trip (see the
// package documentation).
//
// When its connection fails (a restart or a failover of the server), Save
// sends the save again on another connection, for up to
// [Options.RetryTimeout]: the version check makes a second commit
// impossible, and when the first attempt did commit before its connection
// failed, Save finds its state at the new version and returns nil. When
// no attempt gets an answer in that time, Save returns the last error,
// and the save may or may not have been committed (whole or not at all).
// A Load tells which, by the version.
func (s *Store) Save(ctx context.Context, st *chatstore.ConversationState, lease chatstore.Lease, b *chatstore.Batch) error {
	if st == nil || st.ID == "" {
		return errors.New("pgstore: saving a conversation without an id")
	}
	next := st.Version + 1
	data, err := durable.EncodeState(st, next)
	if err != nil {
		return fmt.Errorf("pgstore: %w", err)
	}
	mids := [][]byte{}
	for _, m := range durable.MemoryIDs(st) {
		mids = append(mids, []byte(m))
	}
	sid := []byte(st.ID)
	// A batch is sent once (pgx keeps in it what it learnt of the
	// connection): each attempt gets one of its own.
	queue := func() (*pgx.Batch, error) {
		q := &pgx.Batch{}
		q.Queue("SELECT chatgen_save_begin($1, $2, $3, $4)", sid, int64(st.Version), []byte(lease.Owner), int64(lease.Token))
		if err := queueWrites(q, b); err != nil {
			return nil, err
		}
		q.Queue("SELECT chatgen_save_end($1, $2, $3, $4, $5)", sid, int64(next), data, mids, s.ttl.Microseconds())
		return q, nil
	}
	q, err := queue()
	if err != nil {
		return fmt.Errorf("pgstore: saving conversation %q: %w", st.ID, err)
	}
	lost := false // an attempt failed after it was sent: it may have committed
	err = s.retry.do(ctx, "save", true, func() error {
		if q == nil {
			q, _ = queue() // it queued once without an error
		}
		br := s.pool.SendBatch(ctx, q)
		q = nil
		_, err := br.Exec()
		err = firstAnswer(err)
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if classify(err) == unknown {
			lost = true
		}
		return err
	})
	if err != nil && lost && isCode(err, "CG001", "CG002") {
		// An attempt whose connection failed may have committed; then
		// the next found the version it wrote (or, later, the lease
		// taken over). The save is this one when the stored state is
		// the one it wrote, at its version.
		ok, cerr := s.holds(ctx, sid, next, data)
		if cerr != nil {
			return fmt.Errorf("pgstore: saving conversation %q: a connection failed during the save, and reading whether it committed failed too: %w", st.ID, cerr)
		}
		if ok {
			s.log.InfoContext(ctx, "pgstore: a save had committed before its connection failed",
				"conversation", st.ID, "version", next, "err", err)
			err = nil
		}
	}
	if err != nil {
		return s.saveErr(st, lease, err)
	}
	st.Version = next
	return nil
}

// holds reports whether conversation id is at version with the state
// data.
func (s *Store) holds(ctx context.Context, id []byte, version uint64, data []byte) (bool, error) {
	var same bool
	err := s.retry.do(ctx, "save's check", true, func() error {
		return s.pool.QueryRow(ctx, "SELECT version = $2 AND state = $3 FROM chatgen_conversations WHERE id = $1",
			id, int64(version), data).Scan(&same)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return same, err
}

// isCode reports whether err is a PostgreSQL error of one of the codes.
func isCode(err error, codes ...string) bool {
	pgErr, ok := errors.AsType[*pgconn.PgError](err)
	return ok && slices.Contains(codes, pgErr.Code)
}

// saveErr turns the error of a save into the contract's errors.
func (s *Store) saveErr(st *chatstore.ConversationState, lease chatstore.Lease, err error) error {
	pgErr, ok := errors.AsType[*pgconn.PgError](err)
	if !ok {
		return fmt.Errorf("pgstore: saving conversation %q: %w", st.ID, err)
	}
	switch pgErr.Code {
	case "CG001":
		return fmt.Errorf("pgstore: saving conversation %q: %w: %q's lease with token %d is not the current one", st.ID, chatstore.ErrLeaseLost, lease.Owner, lease.Token)
	case "CG002":
		stored, perr := strconv.ParseInt(pgErr.Detail, 10, 64)
		switch {
		case perr != nil || stored < 0:
			return fmt.Errorf("pgstore: saving conversation %q: %w: its version column is %s", st.ID, chatstore.ErrCorruptState, pgErr.Detail)
		case stored == 0:
			return fmt.Errorf("%w: conversation %q is at version %d: %w", chatstore.ErrVersionConflict, st.ID, st.Version, chatstore.ErrConversationNotFound)
		}
		return fmt.Errorf("%w: conversation %q is at version %d, the save is from version %d", chatstore.ErrVersionConflict, st.ID, stored, st.Version)
	case "CG003":
		return fmt.Errorf("pgstore: saving conversation %q: %w: a memory holds %s messages", st.ID, durable.ErrChanged, pgErr.Detail)
	}
	return fmt.Errorf("pgstore: saving conversation %q: %w", st.ID, err)
}

// queueWrites queues the memory writes staged in b.
func queueWrites(q *pgx.Batch, b *chatstore.Batch) error {
	if b == nil {
		return nil
	}
	var err error
	b.All(func(id string, v []byte) {
		if v == nil {
			q.Queue("DELETE FROM chatgen_messages WHERE memory_id = $1", []byte(id))
			return
		}
		st, e := durable.UnmarshalStaged(v)
		switch {
		case e != nil:
			if err == nil {
				err = fmt.Errorf("memory %q: %w", id, e)
			}
		case st.Replace:
			q.Queue("SELECT chatgen_mem_replace($1, $2)", []byte(id), elems(st.List))
		default:
			q.Queue("SELECT chatgen_mem_edit($1, $2, $3, $4, $5)", []byte(id), st.BaseLen, st.Drop, elems(st.Head), elems(st.Tail))
		}
	})
	return err
}

// elems returns e, or an empty list for nil (a NULL array has no length).
func elems(e [][]byte) [][]byte {
	if e == nil {
		return [][]byte{}
	}
	return e
}

// Delete implements [chatstore.ConversationStore]: one round trip. It deletes
// the conversation, its memories and its lease.
func (s *Store) Delete(ctx context.Context, id string) error {
	err := s.retry.do(ctx, "delete", true, func() error {
		_, err := s.pool.Exec(ctx, "SELECT chatgen_delete($1)", []byte(id))
		return err
	})
	if err != nil {
		return fmt.Errorf("pgstore: deleting conversation %q: %w", id, err)
	}
	return nil
}

// Acquire implements [chatstore.ConversationStore]: one round trip. Lease
// expiry is measured by the database server's clock, and the lease's
// Expires is in that clock.
func (s *Store) Acquire(ctx context.Context, id, owner string, ttl time.Duration) (chatstore.Lease, error) {
	if ttl < time.Microsecond || owner == "" {
		return chatstore.Lease{}, fmt.Errorf("pgstore: acquiring conversation %q: a lease needs an owner and a time to live of a microsecond or more (got %q, %v)", id, owner, ttl)
	}
	var (
		granted bool
		token   int64
		holder  []byte
		exp     time.Time
	)
	// Sent again, an acquire that was granted renews the lease it granted.
	err := s.retry.do(ctx, "acquire", true, func() error {
		return s.pool.QueryRow(ctx, "SELECT o_granted, o_token, o_holder, o_expires FROM chatgen_acquire($1, $2, $3)",
			[]byte(id), []byte(owner), ttl.Microseconds()).Scan(&granted, &token, &holder, &exp)
	})
	if err != nil {
		return chatstore.Lease{}, fmt.Errorf("pgstore: acquiring conversation %q: %w", id, err)
	}
	if !granted {
		return chatstore.Lease{}, fmt.Errorf("pgstore: acquiring conversation %q: %w: %q holds it until %v",
			id, chatstore.ErrLeaseHeld, holder, exp.Format(time.RFC3339Nano))
	}
	return chatstore.Lease{Owner: owner, Token: uint64(token), Expires: exp}, nil
}

// Release implements [chatstore.ConversationStore]: one round trip.
func (s *Store) Release(ctx context.Context, id string, lease chatstore.Lease) error {
	err := s.retry.do(ctx, "release", true, func() error {
		_, err := s.pool.Exec(ctx, "DELETE FROM chatgen_leases WHERE id = $1 AND owner = $2 AND token = $3",
			[]byte(id), []byte(lease.Owner), int64(lease.Token))
		return err
	})
	if err != nil {
		return fmt.Errorf("pgstore: releasing conversation %q: %w", id, err)
	}
	return nil
}

// sweepEvery sweeps every interval until Close.
func (s *Store) sweepEvery(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.stop
		cancel()
	}()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("pgstore: sweeping expired conversations", "err", err)
			}
		}
	}
}

// sweepBatch is how many conversations one sweep transaction deletes at
// most, to keep transactions short.
const sweepBatch = 1000

// Sweep deletes the expired conversations, their memories and their
// expired leases now, and returns how many conversations it deleted. The
// sweeper calls it; call it yourself to reclaim space at a time of your
// choosing. It also deletes the leases of conversations that do not exist
// and that expired longer than the time to live ago.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	if s.ttl <= 0 {
		return 0, nil
	}
	total := 0
	for {
		var n int
		err := s.retry.do(ctx, "sweep", true, func() error {
			return s.pool.QueryRow(ctx, "SELECT chatgen_sweep($1, $2)", sweepBatch, s.ttl.Microseconds()).Scan(&n)
		})
		total += n
		if err != nil {
			return total, fmt.Errorf("pgstore: sweeping: %w", err)
		}
		if n < sweepBatch {
			return total, nil
		}
	}
}

// Memories is the memory.Store of the chat memories of a [Store]'s
// conversations; [Store.Memories] returns it. (It is a value of its own
// because chatstore.ConversationStore and memory.Store both have a Delete
// method.) It is a [memory.IncrementalStore]: a change sends only the
// messages it adds.
//
// A call whose context carries a [chatstore.Batch] ([chatstore.WithBatch]), as the
// calls made in a request of a durable conversation do, stages its write
// in the batch instead of writing, for [Store.Save] to commit with the
// conversation's state, and reads see the batch's writes first. Other
// calls write at once, one transaction each.
type Memories struct{ s *Store }

// StagesInBatch implements [chatstore.StagingStore]: the writes made in a
// request of a durable conversation are saved with its state.
func (m *Memories) StagesInBatch() {}

var (
	_ memory.IncrementalStore = (*Memories)(nil)
	_ chatstore.StagingStore  = (*Memories)(nil)
)

// Memories returns the memory store of the store's conversations.
func (s *Store) Memories() *Memories { return &Memories{s} }

// base reads the stored memories for the stager.
type base struct{ s *Store }

func (b base) StoredLen(ctx context.Context, id string) (int, error) {
	var n int
	err := b.s.retry.do(ctx, "memory length", true, func() error {
		return b.s.pool.QueryRow(ctx, "SELECT count(*) FROM chatgen_messages WHERE memory_id = $1", []byte(id)).Scan(&n)
	})
	return n, err
}

func (b base) StoredElems(ctx context.Context, id string) ([][]byte, error) {
	var elems [][]byte
	err := b.s.retry.do(ctx, "memory read", true, func() error {
		rows, err := b.s.pool.Query(ctx, "SELECT message FROM chatgen_messages WHERE memory_id = $1 ORDER BY seq", []byte(id))
		if err != nil {
			return err
		}
		elems, err = pgx.CollectRows(rows, pgx.RowTo[[]byte])
		return err
	})
	return elems, err
}

// Get implements [memory.Store]: one round trip, none for a memory the
// batch in ctx replaced.
func (m *Memories) Get(ctx context.Context, id string) ([]llms.MessageContent, error) {
	msgs, err := m.s.stage.Messages(ctx, base{m.s}, id)
	if err != nil {
		return nil, fmt.Errorf("pgstore: reading memory %q: %w", id, err)
	}
	return msgs, nil
}

// Update implements [memory.Store]. With a [chatstore.Batch] in ctx, the write is
// staged in the batch, for [Store.Save] to commit.
func (m *Memories) Update(ctx context.Context, id string, msgs []llms.MessageContent) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if id == "" {
		return errors.New("pgstore: memory id is empty")
	}
	list, err := durable.EncodeMessages(msgs)
	if err != nil {
		return fmt.Errorf("pgstore: updating memory %q: %w", id, err)
	}
	if b := chatstore.BatchFrom(ctx); b != nil {
		m.s.stage.Update(b, id, list)
		return nil
	}
	err = m.s.retry.do(ctx, "memory update", true, func() error {
		_, err := m.s.pool.Exec(ctx, "SELECT chatgen_mem_replace($1, $2)", []byte(id), elems(list))
		return err
	})
	if err != nil {
		return fmt.Errorf("pgstore: updating memory %q: %w", id, err)
	}
	return nil
}

// Delete implements [memory.Store]. With a [chatstore.Batch] in ctx, the
// deletion is staged in the batch, for [Store.Save] to commit.
func (m *Memories) Delete(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if b := chatstore.BatchFrom(ctx); b != nil {
		m.s.stage.Delete(b, id)
		return nil
	}
	err := m.s.retry.do(ctx, "memory delete", true, func() error {
		_, err := m.s.pool.Exec(ctx, "DELETE FROM chatgen_messages WHERE memory_id = $1", []byte(id))
		return err
	})
	if err != nil {
		return fmt.Errorf("pgstore: deleting memory %q: %w", id, err)
	}
	return nil
}

// Apply implements [memory.IncrementalStore]. With a [chatstore.Batch] in ctx,
// the change is staged in the batch, for [Store.Save] to commit.
func (m *Memories) Apply(ctx context.Context, id string, c memory.Change) error {
	head, tail, err := durable.EncodeChange(ctx, id, c)
	if err != nil {
		return fmt.Errorf("pgstore: %w", err)
	}
	if b := chatstore.BatchFrom(ctx); b != nil {
		if err := m.s.stage.Apply(ctx, b, base{m.s}, id, c.Len, c.Drop, head, tail); err != nil {
			return fmt.Errorf("pgstore: %w", err)
		}
		return nil
	}
	// Sent again, an edit that committed would apply twice: it is sent
	// again only when it certainly did not run.
	err = m.s.retry.do(ctx, "memory change", false, func() error {
		var q pgx.Batch
		q.Queue("SELECT chatgen_mem_edit($1, $2, $3, $4, $5)", []byte(id), -1, c.Drop, elems(head), elems(tail))
		br := m.s.pool.SendBatch(ctx, &q)
		_, err := br.Exec()
		err = firstAnswer(err)
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "CG003" {
		return fmt.Errorf("pgstore: memory: change of %q drops %d of %s messages", id, c.Drop, pgErr.Detail)
	}
	if err != nil {
		return fmt.Errorf("pgstore: changing memory %q: %w", id, err)
	}
	return nil
}

// IDs implements [memory.Store]: the ids of all memories in the database.
// With a [chatstore.Batch] in ctx, it lists them as the batch leaves them.
func (m *Memories) IDs(ctx context.Context) ([]string, error) {
	var ids []string
	err := m.s.retry.do(ctx, "memory list", true, func() error {
		rows, err := m.s.pool.Query(ctx, "SELECT DISTINCT memory_id FROM chatgen_messages ORDER BY memory_id")
		if err != nil {
			return err
		}
		ids, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
			var id []byte
			err := r.Scan(&id)
			return string(id), err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: listing memories: %w", err)
	}
	if b := chatstore.BatchFrom(ctx); b != nil {
		if ids, err = m.s.stage.IDs(ctx, b, base{m.s}, ids); err != nil {
			return nil, fmt.Errorf("pgstore: listing memories: %w", err)
		}
	}
	return ids, nil
}
