// Package redisstore is the conversation store for several servers: the
// conversations and their chat memories in Redis (github.com/redis/go-redis/v9),
// one Redis or a Redis Cluster, shared by every node. A [Store] is a
// [chatstore.ConversationStore]; its [Store.Memories] is the
// memory.IncrementalStore of the conversations' chat memories.
//
// # Round trips
//
// [Store.Save] is one Lua script call, so one round trip: it checks the
// lease's fencing token and the version, applies the memory writes the
// request staged in its [chatstore.Batch], deletes the memories the new state
// no longer lists, writes the state and restarts the time to live of the
// conversation's keys. A request's memory writes cost no round trip of
// their own: they are staged in the batch as edits (drop so many messages,
// add these), without reading the memory; only a change that drops
// messages the request did not add itself reads the memory's length first,
// once per memory and request. A turn is thus saved in one round trip, two
// when it evicts messages from a full memory. With [Options.WaitReplicas]
// the script and a WAIT go in one pipeline: still one round trip.
//
// Costs paid once: the first call of each script on a Redis server is one
// more (EVALSHA, then EVAL); and the first save in a process that lists a
// memory (a new scope's, or any after the conversation moved to this
// process) reads and then sets the memory's home pointer (below): two
// more, pipelined over the memories of the save. Not only once: a save
// whose request deleted a memory the conversation does not list (an
// invocation-scoped AI service's) costs one more, after it, to delete what
// that memory may hold outside the conversation; and a save that drops a
// memory the state this process last loaded or saved did not list (a
// state another process saved since) costs one more: the script, which
// must be given every key it touches, names the memories, writing
// nothing, and runs again with their lists.
//
// # Keys
//
// Every key starts with [Options.Prefix] (default "chatgen:"), followed by
// a hash tag: the conversation's id for the keys of a conversation, the
// memory's id for a memory's own keys ("}" and "%" in an id are written
// %7D and %25):
//
//	<prefix>c{<id>}:conv          hash: "v" the version, "s" the state as JSON
//	<prefix>c{<id>}:mids          set: the memory ids the state lists
//	<prefix>c{<id>}:lease         hash: "o" the owner, "t" the fencing token, "e" the expiry (ms since 1970, Redis's clock)
//	<prefix>c{<id>}:fence         the counter fencing tokens are drawn from (INCR)
//	<prefix>c{<id>}:mem:<memory>  list: the messages of a memory of the conversation, one JSON object each
//	<prefix>m{<memory>}:home      string: the id of the conversation the memory belongs to
//	<prefix>m{<memory>}:mem       list: the messages of a memory of no conversation
//
// A conversation's keys and its memories' lists share one hash slot, so a
// save is one script on a Redis Cluster too, and the conversations spread
// over the cluster's masters. A memory belongs to the conversation whose
// save first lists it or writes it (from the request's batch); its home
// pointer,
// in the memory's own slot, lets a call that has only the memory's id
// (outside a request, or in another process) find its messages. A memory
// written outside any conversation lives in its own slot until a
// conversation's save lists or writes it, which moves its messages into
// the conversation. A save that lists or writes a memory of another
// conversation fails, writing nothing, with an error matching
// [ErrForeignMemory] that names that conversation: a memory that several
// conversations write (an ai memory id the application chose for several
// conversations, say) cannot be saved atomically with each.
//
// The prefix must not hold "{" or "}": a hash tag there would put every
// key in one slot. The state's JSON records its format version
// ("format": 1); a state of a format this package does not know is refused
// rather than misread. A message is the JSON object
// memory.MarshalMessages writes for it.
//
// Data written by versions before the per-conversation hash tags
// ("<prefix>conv:<id>", "<prefix>mem:<memory>", …) is moved to this layout
// by [Store.MigrateFrom], or the redismigrate command, run once when
// upgrading.
//
// # Time to live
//
// With [Options.TTL] set, each save sets the expiry (PEXPIRE) of the
// conversation's state, its memory id set and its memories to the TTL, so
// they expire together when the conversation is idle. The lease and its
// counter live at least as long; the memories' home pointers live twice
// the TTL (a save sets them again once half of it has passed), so they
// outlive the conversation. Memories that no saved conversation lists
// (those written directly, outside a request of a durable conversation)
// keep the expiry they have, none for new ones.
//
// # Redis Cluster and replication
//
// Give [New] a *redis.ClusterClient, with its reads on the masters
// (ReadOnly, RouteByLatency and RouteRandomly off: a replica may not have
// the last save yet). Sweeps of the whole store
// ([Memories.IDs], [Store.MigrateFrom]) scan every master.
//
// Each script is given every key it touches (the Go side names the
// memories' lists a save may write or drop), checks everything before its
// first write, and never touches a key after emptying it. So while a
// resharding moves a conversation's slot to another master, a save runs
// whole where all its keys are (on the source, or, redirected by ASK, on
// the target), or Redis refuses it without running it: TRYAGAIN while its
// keys are split between the two, or while one of them exists on neither
// (a memory's first list, a new conversation's state), until the slot's
// move ends. A call that Redis refuses so (TRYAGAIN, ASK or MOVED that
// go-redis's own retries did not settle, CLUSTERDOWN, MASTERDOWN,
// READONLY, LOADING: during a resharding or a failover) is made again,
// with backoff, for up to [Options.RetryTimeout] (five seconds by default)
// within its context, then fails with an error matching
// [ErrClusterChanging]: nothing was written. With [Options.WaitReplicas],
// a save goes to the slot's master with its WAIT, past the cluster
// client's redirections: one whose keys have all moved to the target
// already (ASK) waits for the move to end. An empty conversation or memory
// id, which has no hash tag, is refused with [ErrEmptyID].
//
// Redis
// replicates asynchronously: without [Options.WaitReplicas], a save that
// returned nil is on the master, and a master that dies before its
// replicas received it takes it along: the replica that takes over serves
// the conversation at an earlier version, silently for the client whose
// turn it was. With WaitReplicas set to the number of replicas of each
// master, a save that returned nil is on every replica of its master, so
// on the one promoted when the master fails; a save the replicas did not
// acknowledge in time fails with [ErrNotReplicated], as a save whose
// connection failed: it may or may not survive, and a Load tells by the
// version. WAIT makes a save reach the replicas' memory, not their disks:
// what survives the loss of every copy is what the persistence
// (appendonly, appendfsync) kept.
package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/internal/durable"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/redis/go-redis/v9"
	"github.com/tmc/langchaingo/llms"
)

// Options configure a [Store]. The zero value (or nil) is a store with the
// prefix "chatgen:" whose conversations never expire.
type Options struct {
	// Prefix starts every key of the store; "" means "chatgen:". Stores
	// with different prefixes share a Redis database without meeting.
	Prefix string
	// TTL is how long a conversation may go without a save before it
	// expires with its memories; 0 means never. Redis counts it in
	// milliseconds.
	TTL time.Duration
	// WaitReplicas, when above 0, makes each save wait until that many
	// replicas of the Redis master that ran it acknowledge it (WAIT), for
	// up to WaitTimeout (default one second): a save that returns nil is
	// then on that many replicas as well, and one they did not acknowledge
	// in time fails with an error matching [ErrNotReplicated]. The script
	// and the WAIT go in one pipeline: still one round trip per turn.
	WaitReplicas int
	// WaitTimeout bounds the wait of WaitReplicas; 0 means one second.
	WaitTimeout time.Duration
	// RetryTimeout bounds how long a call retries, with backoff, while
	// Redis refuses it without running it because its cluster is changing
	// (a hash slot moving to another master, a failover; see
	// [ErrClusterChanging]); 0 means five seconds. The call's context
	// bounds it too. Past it the call fails with an error matching
	// ErrClusterChanging: nothing was written.
	RetryTimeout time.Duration
}

// ErrNotReplicated reports a save that the Redis master applied but fewer
// than [Options.WaitReplicas] replicas acknowledged in time: whether it
// survives the failover of that master is unknown. A Load tells whether
// the master (or its successor) has it, by the version.
var ErrNotReplicated = errors.New("redisstore: the save is not acknowledged by enough replicas")

// Store is a [chatstore.ConversationStore] in Redis, with the chat memories of
// its conversations ([Store.Memories]). It is safe for concurrent use, by
// the goroutines of one process and by the processes sharing the Redis.
type Store struct {
	c      redis.UniversalClient
	prefix string
	ttl    time.Duration
	stage  durable.Stager
	homes  confirmed
	listed listed

	waitReplicas int
	waitTimeout  time.Duration
	retryTimeout time.Duration
}

var _ chatstore.ConversationStore = (*Store)(nil)

var (
	//go:embed save.lua
	saveSrc string
	//go:embed acquire.lua
	acquireSrc string
	//go:embed release.lua
	releaseSrc string
	//go:embed delete.lua
	deleteSrc string
	//go:embed memupdate.lua
	memUpdateSrc string
	//go:embed memapply.lua
	memApplySrc string
	//go:embed unhome.lua
	unhomeSrc string
	//go:embed solo.lua
	soloSrc string
	//go:embed homecheck.lua
	homeCheckSrc string

	saveScript      = redis.NewScript(saveSrc)
	acquireScript   = redis.NewScript(acquireSrc)
	releaseScript   = redis.NewScript(releaseSrc)
	deleteScript    = redis.NewScript(deleteSrc)
	memUpdateScript = redis.NewScript(homeCheckSrc + memUpdateSrc)
	memApplyScript  = redis.NewScript(homeCheckSrc + memApplySrc)
	soloScript      = redis.NewScript(soloSrc)
)

// New returns a store in the Redis that client reaches. It makes no call
// to Redis.
func New(client redis.UniversalClient, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if client == nil {
		return nil, errors.New("redisstore: nil client")
	}
	if o.TTL < 0 || o.TTL > 0 && o.TTL < time.Millisecond {
		return nil, fmt.Errorf("redisstore: time to live %v is neither 0 nor at least a millisecond", o.TTL)
	}
	if o.Prefix == "" {
		o.Prefix = "chatgen:"
	}
	if strings.ContainsAny(o.Prefix, "{}") {
		return nil, errPrefixTag
	}
	if o.WaitReplicas < 0 || o.WaitTimeout < 0 {
		return nil, fmt.Errorf("redisstore: WaitReplicas %d and WaitTimeout %v must not be negative", o.WaitReplicas, o.WaitTimeout)
	}
	if o.WaitTimeout == 0 {
		o.WaitTimeout = time.Second
	}
	if o.RetryTimeout < 0 {
		return nil, fmt.Errorf("redisstore: RetryTimeout %v must not be negative", o.RetryTimeout)
	}
	if o.RetryTimeout == 0 {
		o.RetryTimeout = defaultRetryTimeout
	}
	s := &Store{c: client, prefix: o.Prefix, ttl: o.TTL, waitReplicas: o.WaitReplicas, waitTimeout: o.WaitTimeout,
		retryTimeout: o.RetryTimeout}
	// A save checks the length of every list a request adds to, when the
	// memory knew it: a list that is not where its conversation's state
	// is (a slot moving on a Redis Cluster) is not added to.
	s.stage.CheckAdds = true
	return s, nil
}

// Prefix returns the prefix of the store's keys.
func (s *Store) Prefix() string { return s.prefix }

// Load implements [chatstore.ConversationStore]: one round trip.
func (s *Store) Load(ctx context.Context, id string) (*chatstore.ConversationState, error) {
	if id == "" {
		return nil, fmt.Errorf("redisstore: loading a conversation: %w", ErrEmptyID)
	}
	var vals []any
	err := s.retry(ctx, func() (err error) {
		vals, err = s.c.HMGet(ctx, s.convKey(id, "conv"), "v", "s").Result()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("redisstore: loading conversation %q: %w", id, describe(err))
	}
	v, _ := vals[0].(string)
	data, ok := vals[1].(string)
	if !ok {
		return nil, fmt.Errorf("redisstore: loading conversation %q: %w", id, chatstore.ErrConversationNotFound)
	}
	st, err := durable.DecodeState([]byte(data))
	if err != nil {
		return nil, fmt.Errorf("redisstore: loading conversation %q: %w", id, err)
	}
	// The version saves check is the hash's v: one that is not the
	// state's would make every save a conflict.
	if version, err := strconv.ParseUint(v, 10, 64); err != nil || version != st.Version {
		return nil, fmt.Errorf("redisstore: loading conversation %q: %w: its version field is %q, its state's version %d", id, chatstore.ErrCorruptState, v, st.Version)
	}
	s.listed.set(id, durable.MemoryIDs(st))
	return st, nil
}

// Save implements [chatstore.ConversationStore]: one round trip (see the
// package documentation).
//
// When Redis cannot be reached, or the connection fails during the call,
// Save returns that error, and the save may or may not have happened (it
// happened whole or not at all: the script is atomic). A Load tells which,
// by the version. A save that Redis refuses without running it while its
// cluster changes is retried (see [Options.RetryTimeout]), then fails with
// an error matching [ErrClusterChanging]: it did not happen.
func (s *Store) Save(ctx context.Context, st *chatstore.ConversationState, lease chatstore.Lease, b *chatstore.Batch) error {
	if st == nil || st.ID == "" {
		return fmt.Errorf("redisstore: saving a conversation: %w", ErrEmptyID)
	}
	next := st.Version + 1
	data, err := durable.EncodeState(st, next)
	if err != nil {
		return fmt.Errorf("redisstore: %w", err)
	}
	mids := durable.MemoryIDs(st)
	var found []homeLookup
	if ids := s.unconfirmed(st.ID, mids, b); len(ids) > 0 {
		err := s.retry(ctx, func() (err error) {
			found, err = s.lookHomes(ctx, st.ID, ids, batchKinds(b))
			return err
		})
		if err != nil {
			return fmt.Errorf("redisstore: saving conversation %q: %w", st.ID, err)
		}
	}
	decl := declared(mids, b, s.listed.get(st.ID))
	var res []any
	var replicas int64
	for range maxUndeclared {
		args, err := s.saveArgs(st, lease, data, decl, len(mids), found, b)
		if err != nil {
			return fmt.Errorf("redisstore: saving conversation %q: %w", st.ID, err)
		}
		res, replicas, err = s.runSave(ctx, s.keys(st.ID, decl), args)
		if err != nil {
			return fmt.Errorf("redisstore: saving conversation %q: %w", st.ID, describe(err))
		}
		if code(res) != 4 {
			break
		}
		// The stored state lists memories this process did not know of
		// (another saved the conversation since this one loaded it): the
		// script wrote nothing, and runs again with their lists.
		for _, id := range res[1:] {
			decl = append(decl, fmt.Sprint(id))
		}
	}
	switch code(res) {
	case 0:
		var dropped []string
		for _, id := range res[1:] {
			dropped = append(dropped, fmt.Sprint(id))
		}
		s.listed.set(st.ID, mids)
		s.settleSaved(ctx, st.ID, found, mids, dropped, erased(mids, b))
		if replicas < int64(s.waitReplicas) {
			return fmt.Errorf("redisstore: saving conversation %q at version %d: %w: %d of %d replicas acknowledged it within %v",
				st.ID, next, ErrNotReplicated, replicas, s.waitReplicas, s.waitTimeout)
		}
		st.Version = next
		return nil
	case 1:
		stored := fmt.Sprint(res[1])
		if _, err := strconv.ParseUint(stored, 10, 64); err != nil {
			return fmt.Errorf("redisstore: saving conversation %q: %w: its version field is %q", st.ID, chatstore.ErrCorruptState, stored)
		}
		if stored == "0" {
			return fmt.Errorf("%w: conversation %q is at version %d: %w", chatstore.ErrVersionConflict, st.ID, st.Version, chatstore.ErrConversationNotFound)
		}
		return fmt.Errorf("%w: conversation %q is at version %s, the save is from version %d", chatstore.ErrVersionConflict, st.ID, stored, st.Version)
	case 2:
		return fmt.Errorf("redisstore: saving conversation %q: %w: %q's lease with token %d is not the current one", st.ID, chatstore.ErrLeaseLost, lease.Owner, lease.Token)
	case 3:
		return fmt.Errorf("redisstore: saving conversation %q: %w: memory %q holds %v messages", st.ID, durable.ErrChanged, res[1], res[2])
	case 4:
		return fmt.Errorf("redisstore: saving conversation %q: %w: its stored state lists memories %v anew at each try", st.ID, chatstore.ErrVersionConflict, res[1:])
	}
	return fmt.Errorf("redisstore: saving conversation %q: unexpected reply %v", st.ID, res)
}

// declared returns the memories whose lists a save of a state listing
// mids declares to Redis: mids first, then those b writes, then those
// the state last loaded or saved listed (prev), which the save may drop.
func declared(mids []string, b *chatstore.Batch, prev []string) []string {
	out := slices.Clip(mids)
	add := func(id string) {
		if _, found := slices.BinarySearch(mids, id); !found && !slices.Contains(out[len(mids):], id) {
			out = append(out, id)
		}
	}
	if b != nil {
		b.All(func(id string, _ []byte) { add(id) })
	}
	for _, id := range prev {
		add(id)
	}
	return out
}

// keys returns the keys of conversation conv, then the lists in it of
// the memories mems.
func (s *Store) keys(conv string, mems []string) []string {
	keys := make([]string, 0, 4+len(mems))
	keys = append(keys, s.convKeys(conv)...)
	p := s.memPrefix(conv)
	for _, id := range mems {
		keys = append(keys, p+id)
	}
	return keys
}

// saveArgs returns save.lua's arguments, for the memories decl, the first
// listed of which the state lists.
func (s *Store) saveArgs(st *chatstore.ConversationState, lease chatstore.Lease, data []byte, decl []string, listed int, found []homeLookup, b *chatstore.Batch) ([]any, error) {
	staged := 0
	if b != nil {
		staged = b.Len()
	}
	index := make(map[string]int, len(decl))
	for i, id := range decl {
		index[id] = i + 1
	}
	args := make([]any, 0, 11+len(decl)+6*staged)
	args = append(args,
		strconv.FormatUint(st.Version, 10), strconv.FormatUint(st.Version+1, 10),
		lease.Owner, strconv.FormatUint(lease.Token, 10),
		s.ttl.Milliseconds(), data, len(decl), listed)
	for _, id := range decl {
		args = append(args, id)
	}
	for _, f := range found {
		if _, ok := index[f.id]; !ok {
			return nil, fmt.Errorf("memory %q is not among the save's keys", f.id)
		}
	}
	args = appendAdopted(args, found, index)
	return appendWrites(args, b, index)
}

// code returns the status code a script put first in its reply.
func code(res []any) int64 {
	if len(res) == 0 {
		return -1
	}
	c, ok := res[0].(int64)
	if !ok {
		return -1
	}
	return c
}

// appendWrites appends to args the writes staged in b, in save.lua's
// encoding; index gives each memory's index among the script's.
func appendWrites(args []any, b *chatstore.Batch, index map[string]int) ([]any, error) {
	if b == nil {
		return append(args, 0), nil
	}
	countAt := len(args)
	args = append(args, 0)
	n := 0
	var err error
	b.All(func(id string, v []byte) {
		n++
		m, ok := index[id]
		if !ok {
			if err == nil {
				err = fmt.Errorf("memory %q is not among the save's keys", id)
			}
			return
		}
		if v == nil {
			args = append(args, m, "D")
			return
		}
		st, e := durable.UnmarshalStaged(v)
		if e != nil {
			if err == nil {
				err = fmt.Errorf("memory %q: %w", id, e)
			}
			return
		}
		if st.Replace {
			args = append(args, m, "R", len(st.List))
			args = appendElems(args, st.List)
			return
		}
		args = append(args, m, "E", st.BaseLen, st.Drop, len(st.Head))
		args = appendElems(args, st.Head)
		args = append(args, len(st.Tail))
		args = appendElems(args, st.Tail)
	})
	args[countAt] = n
	return args, err
}

func appendElems(args []any, elems [][]byte) []any {
	for _, e := range elems {
		args = append(args, e)
	}
	return args
}

// Delete implements [chatstore.ConversationStore]: one round trip (two
// when the conversation lists memories this process did not see it list).
// The conversation's token counter goes too, so the tokens of a
// conversation id used again start over; a stale lease still matches no
// new one, since a save compares owner and token.
func (s *Store) Delete(ctx context.Context, id string) error {
	if id == "" {
		return fmt.Errorf("redisstore: deleting a conversation: %w", ErrEmptyID)
	}
	decl := slices.Clone(s.listed.get(id))
	var res []any
	for range maxUndeclared {
		err := s.retry(ctx, func() (err error) {
			res, err = deleteScript.Run(ctx, s.c, s.keys(id, decl), anys(decl)...).Slice()
			return err
		})
		if err != nil {
			return fmt.Errorf("redisstore: deleting conversation %q: %w", id, describe(err))
		}
		if code(res) != 4 {
			break
		}
		for _, m := range res[1:] {
			decl = append(decl, fmt.Sprint(m))
		}
	}
	if code(res) != 0 {
		return fmt.Errorf("redisstore: deleting conversation %q: unexpected reply %v", id, res)
	}
	s.listed.forget(id)
	var ids []string
	for _, m := range res[1:] {
		ids = append(ids, fmt.Sprint(m))
	}
	err := s.retry(ctx, func() error { return s.settle(ctx, id, nil, nil, ids, nil) })
	if err != nil {
		return fmt.Errorf("redisstore: deleting conversation %q: clearing the home pointers of its memories: %w", id, err)
	}
	return nil
}

// anys returns strs as script arguments.
func anys(strs []string) []any {
	out := make([]any, len(strs))
	for i, s := range strs {
		out[i] = s
	}
	return out
}

// Acquire implements [chatstore.ConversationStore]: one round trip. Lease
// expiry is measured by the Redis server's clock, and the lease's Expires
// is in that clock.
func (s *Store) Acquire(ctx context.Context, id, owner string, ttl time.Duration) (chatstore.Lease, error) {
	if id == "" {
		return chatstore.Lease{}, fmt.Errorf("redisstore: acquiring a conversation: %w", ErrEmptyID)
	}
	if ttl < time.Millisecond || owner == "" {
		return chatstore.Lease{}, fmt.Errorf("redisstore: acquiring conversation %q: a lease needs an owner and a time to live of a millisecond or more (got %q, %v)", id, owner, ttl)
	}
	keys := s.convKeys(id)[2:]
	var res []any
	err := s.retry(ctx, func() (err error) {
		res, err = acquireScript.Run(ctx, s.c, keys, owner, ttl.Milliseconds(), s.ttl.Milliseconds()).Slice()
		return err
	})
	if err != nil {
		return chatstore.Lease{}, fmt.Errorf("redisstore: acquiring conversation %q: %w", id, describe(err))
	}
	if len(res) != 3 {
		return chatstore.Lease{}, fmt.Errorf("redisstore: acquiring conversation %q: unexpected reply %v", id, res)
	}
	exp, err := strconv.ParseInt(fmt.Sprint(res[2]), 10, 64)
	if err != nil {
		return chatstore.Lease{}, fmt.Errorf("redisstore: acquiring conversation %q: reply %v: %w", id, res, err)
	}
	if code(res) == 1 {
		return chatstore.Lease{}, fmt.Errorf("redisstore: acquiring conversation %q: %w: %q holds it until %v",
			id, chatstore.ErrLeaseHeld, res[1], time.UnixMilli(exp).Format(time.RFC3339Nano))
	}
	token, err := strconv.ParseUint(fmt.Sprint(res[1]), 10, 64)
	if code(res) != 0 || err != nil {
		return chatstore.Lease{}, fmt.Errorf("redisstore: acquiring conversation %q: unexpected reply %v", id, res)
	}
	return chatstore.Lease{Owner: owner, Token: token, Expires: time.UnixMilli(exp)}, nil
}

// Release implements [chatstore.ConversationStore]: one round trip.
func (s *Store) Release(ctx context.Context, id string, lease chatstore.Lease) error {
	if id == "" {
		return fmt.Errorf("redisstore: releasing a conversation: %w", ErrEmptyID)
	}
	err := s.retry(ctx, func() error {
		return releaseScript.Run(ctx, s.c, s.convKeys(id)[2:3], lease.Owner, strconv.FormatUint(lease.Token, 10)).Err()
	})
	if err != nil {
		return fmt.Errorf("redisstore: releasing conversation %q: %w", id, describe(err))
	}
	return nil
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
// calls write at once, one round trip each (two on a process's first call
// on a memory of a conversation, which finds where the memory lives).
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
	n, err := b.s.readMemory(ctx, id, "len")
	if err != nil {
		return 0, err
	}
	l, ok := n.(int64)
	if !ok {
		return 0, fmt.Errorf("memory %q: unexpected length %v", id, n)
	}
	return int(l), nil
}

func (b base) StoredElems(ctx context.Context, id string) ([][]byte, error) {
	v, err := b.s.readMemory(ctx, id, "range")
	if err != nil {
		return nil, err
	}
	strs, _ := v.([]any)
	if len(strs) == 0 {
		return nil, nil
	}
	elems := make([][]byte, len(strs))
	for i, e := range strs {
		str, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("memory %q: unexpected message %v", id, e)
		}
		elems[i] = []byte(str)
	}
	return elems, nil
}

// Get implements [memory.Store]: one round trip, none for a memory the
// batch in ctx replaced.
func (m *Memories) Get(ctx context.Context, id string) ([]llms.MessageContent, error) {
	if id == "" {
		return nil, fmt.Errorf("redisstore: reading a memory: %w", ErrEmptyID)
	}
	msgs, err := m.s.stage.Messages(ctx, base{m.s}, id)
	if err != nil {
		return nil, fmt.Errorf("redisstore: reading memory %q: %w", id, describe(err))
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
		return fmt.Errorf("redisstore: updating a memory: %w", ErrEmptyID)
	}
	elems, err := durable.EncodeMessages(msgs)
	if err != nil {
		return fmt.Errorf("redisstore: updating memory %q: %w", id, err)
	}
	if b := chatstore.BatchFrom(ctx); b != nil {
		m.s.stage.Update(b, id, elems)
		return nil
	}
	if _, err := m.s.onMemory(ctx, memUpdateScript, id, appendElems(nil, elems)...); err != nil {
		return fmt.Errorf("redisstore: updating memory %q: %w", id, describe(err))
	}
	return nil
}

// Delete implements [memory.Store]. With a [chatstore.Batch] in ctx, the
// deletion is staged in the batch, for [Store.Save] to commit.
func (m *Memories) Delete(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if id == "" {
		return fmt.Errorf("redisstore: deleting a memory: %w", ErrEmptyID)
	}
	if b := chatstore.BatchFrom(ctx); b != nil {
		m.s.stage.Delete(b, id)
		return nil
	}
	if _, err := m.s.readMemory(ctx, id, "del"); err != nil {
		return fmt.Errorf("redisstore: deleting memory %q: %w", id, describe(err))
	}
	return nil
}

// Apply implements [memory.IncrementalStore]. With a [chatstore.Batch] in ctx,
// the change is staged in the batch, for [Store.Save] to commit.
func (m *Memories) Apply(ctx context.Context, id string, c memory.Change) error {
	if id == "" {
		return fmt.Errorf("redisstore: changing a memory: %w", ErrEmptyID)
	}
	head, tail, err := durable.EncodeChange(ctx, id, c)
	if err != nil {
		return fmt.Errorf("redisstore: %w", err)
	}
	if b := chatstore.BatchFrom(ctx); b != nil {
		if err := m.s.stage.Apply(ctx, b, base{m.s}, id, c.Len, c.Drop, head, tail); err != nil {
			return fmt.Errorf("redisstore: %w", err)
		}
		return nil
	}
	args := make([]any, 0, 2+len(head)+len(tail))
	args = append(args, c.Drop, len(head))
	args = appendElems(args, head)
	args = appendElems(args, tail)
	res, err := m.s.onMemory(ctx, memApplyScript, id, args...)
	if err != nil {
		return fmt.Errorf("redisstore: changing memory %q: %w", id, describe(err))
	}
	if code(res) != 0 {
		n := "?"
		if len(res) > 1 {
			n = fmt.Sprint(res[1])
		}
		return fmt.Errorf("redisstore: memory: change of %q drops %d of %s messages", id, c.Drop, n)
	}
	return nil
}

// IDs implements [memory.Store]: the ids of all memories under the store's
// prefix, found with SCAN (on every master of a cluster), so in time
// proportional to the size of the database. With a [chatstore.Batch] in ctx, it
// lists them as the batch leaves them.
func (m *Memories) IDs(ctx context.Context) ([]string, error) {
	p := globEscape(m.s.prefix)
	patterns := []string{p + "m{*}:mem", p + "c{*}:mem:*"}
	var (
		mu   sync.Mutex
		seen = map[string]bool{}
		ids  []string
	)
	scan := func(ctx context.Context, c redis.UniversalClient) error {
		for _, pattern := range patterns {
			it := c.Scan(ctx, 0, pattern, 1000).Iterator()
			for it.Next(ctx) {
				id, ok := m.s.memoryID(it.Val())
				mu.Lock()
				if ok && !seen[id] {
					seen[id] = true
					ids = append(ids, id)
				}
				mu.Unlock()
			}
			if err := it.Err(); err != nil {
				return err
			}
		}
		return nil
	}
	err := m.s.retry(ctx, func() error {
		if cc, ok := m.s.c.(*redis.ClusterClient); ok {
			return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
		}
		return scan(ctx, m.s.c)
	})
	if err != nil {
		return nil, fmt.Errorf("redisstore: listing memories: %w", describe(err))
	}
	if b := chatstore.BatchFrom(ctx); b != nil {
		if ids, err = m.s.stage.IDs(ctx, b, base{m.s}, ids); err != nil {
			return nil, fmt.Errorf("redisstore: listing memories: %w", err)
		}
	}
	return ids, nil
}

// describe adds to err, when it is the end of a connection, that the
// connection to Redis closed: go-redis reports it as a bare EOF.
func describe(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("the connection to Redis closed: %w", err)
	}
	return err
}

// globEscape escapes the characters SCAN's MATCH pattern gives a meaning.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\', '^', '-':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
