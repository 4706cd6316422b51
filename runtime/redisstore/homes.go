package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/redis/go-redis/v9"
)

// A memory's messages live in the hash slot of the conversation that
// lists it, under the conversation's key prefix. The memory's home pointer
// ("<prefix>m{<id>}:home", in the memory's own slot) names that
// conversation, so that a call made with only the memory id (outside a
// request of the conversation) finds the messages. A save confirms the
// home pointers of the memories it lists or writes, and moves into the
// conversation the messages a memory held outside any conversation; the
// process remembers the pointers it confirmed, so that a turn pays for
// this only the first time (per process) it lists a memory.

// ErrForeignMemory reports a save that lists or writes a memory of another
// conversation: on a Redis Cluster the two conversations' keys are in
// different slots, which one script cannot reach. Nothing was written.
var ErrForeignMemory = errors.New("redisstore: the memory belongs to another conversation")

// maxConfirmed bounds the home pointers a store remembers; past it, it
// forgets them all and confirms them again as saves list them.
const maxConfirmed = 100_000

// confirmed remembers the home pointers a store set or found: by memory
// id, the conversation and the time until which it trusts the pointer.
type confirmed struct {
	mu sync.Mutex
	m  map[string]home
}

type home struct {
	conv  string
	until time.Time // the zero time: for as long as the process lives
	// set reports that a save of this process set the pointer (or found
	// it set) and its time to live; otherwise a read found it, and a save
	// still sets it again.
	set bool
}

// get returns the conversation memory lives in, if its pointer is
// confirmed and still trusted at now.
func (c *confirmed) get(memory string, now time.Time) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.m[memory]
	if !ok || !h.until.IsZero() && !now.Before(h.until) {
		return "", false
	}
	return h.conv, true
}

// has reports whether a save of this process set the pointer of memory to
// conv, and it is still trusted at now.
func (c *confirmed) has(conv, memory string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.m[memory]
	return ok && h.set && h.conv == conv && (h.until.IsZero() || now.Before(h.until))
}

// add confirms the pointers of memories to conv until until; set tells
// whether a save set them.
func (c *confirmed) add(conv string, memories []string, until time.Time, set bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m)+len(memories) > maxConfirmed {
		c.m = map[string]home{}
	}
	for _, id := range memories {
		if h, ok := c.m[id]; ok && !set && h.set && h.conv == conv {
			continue // what a save confirmed stays so
		}
		c.m[id] = home{conv: conv, until: until, set: set}
	}
}

// drop forgets the pointers of memories to conv.
func (c *confirmed) drop(conv string, memories []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range memories {
		if c.m[id].conv == conv {
			delete(c.m, id)
		}
	}
}

// homeLookup is what a save found of a memory whose home pointer it had
// not confirmed: the conversation the pointer names ("" for none) and the
// messages the memory holds outside any conversation.
type homeLookup struct {
	id   string
	home string
	solo []string
	// kind is the memory's write in the save's batch: 0 for none.
	kind byte
}

// unconfirmed returns the memories a save of conversation conv lists or
// writes whose home pointers are not confirmed: none, without
// allocating, once the process confirmed them all. A memory the batch
// deletes and the state does not list is not among them: the save needs
// nothing of it before it runs (see erased).
func (s *Store) unconfirmed(conv string, mids []string, b *chatstore.Batch) []string {
	now := time.Now()
	var out []string
	add := func(id string) {
		if !s.homes.has(conv, id, now) && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	for _, id := range mids {
		add(id)
	}
	if b != nil {
		b.All(func(id string, v []byte) {
			if v != nil || slices.Contains(mids, id) {
				add(id)
			}
		})
	}
	return out
}

// erased returns the memories b deletes that the state, whose memory ids
// are mids, does not list (an invocation's memory, say): the save deletes
// their lists in the conversation, and [Store.settle] what they may have
// outside it.
func erased(mids []string, b *chatstore.Batch) []string {
	var out []string
	if b != nil {
		b.All(func(id string, v []byte) {
			if v == nil && !slices.Contains(mids, id) {
				out = append(out, id)
			}
		})
	}
	return out
}

// lookHomes reads, in one pipeline, the home pointers and the messages
// outside any conversation of the memories ids, for a save of conv. A
// memory whose pointer names another conversation that exists is an
// error matching [ErrForeignMemory]: a memory belongs to one conversation.
// A pointer to a conversation deleted or expired since is stale, and
// ignored.
func (s *Store) lookHomes(ctx context.Context, conv string, ids []string, writes map[string]byte) ([]homeLookup, error) {
	homes := make([]*redis.StringCmd, len(ids))
	solos := make([]*redis.StringSliceCmd, len(ids))
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			homes[i], solos[i] = p.Get(ctx, s.homeKey(id)), p.LRange(ctx, s.soloKey(id), 0, -1)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, describe(err)
	}
	found := make([]homeLookup, len(ids))
	for i, id := range ids {
		found[i] = homeLookup{id: id, home: homes[i].Val(), solo: solos[i].Val(), kind: writes[id]}
		other := found[i].home
		if other == "" || other == conv {
			continue
		}
		n, err := s.c.Exists(ctx, s.convKey(other, "conv")).Result()
		if err != nil {
			return nil, describe(err)
		}
		if n == 1 {
			return nil, fmt.Errorf("%w: memory %q belongs to conversation %q", ErrForeignMemory, id, other)
		}
		found[i].home = ""
	}
	return found, nil
}

// settle sets the home pointers a save of conv found missing (for the
// memories it lists, and those it wrote other than by deleting them),
// deletes the messages it moved into the conversation from outside, clears
// the pointers of the memories it dropped, and deletes the messages
// outside the conversation, and the pointers to it, of the memories it
// erased. It runs after the save:
// the save is committed whatever happens here, and what fails here is
// done again by the next save (the pointers are not confirmed).
func (s *Store) settle(ctx context.Context, conv string, found []homeLookup, mids, dropped, erased []string) error {
	if len(found) == 0 && len(dropped) == 0 && len(erased) == 0 {
		return nil
	}
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, f := range found {
			if len(f.solo) > 0 || f.kind == 'D' {
				p.Del(ctx, s.soloKey(f.id))
			}
			if !slices.Contains(mids, f.id) && f.kind == 'D' || f.home == conv && s.ttl == 0 {
				continue
			}
			// Set, or with a time to live set again: the pointer must
			// outlive the conversation, which this save prolonged.
			p.Set(ctx, s.homeKey(f.id), conv, 2*s.ttl)
		}
		for _, id := range dropped {
			p.Eval(ctx, unhomeSrc, []string{s.homeKey(id)}, conv)
		}
		for _, id := range erased {
			p.Del(ctx, s.soloKey(id))
			p.Eval(ctx, unhomeSrc, []string{s.homeKey(id)}, conv)
		}
		return nil
	})
	if err != nil {
		return describe(err)
	}
	confirmedIDs := make([]string, 0, len(found))
	for _, f := range found {
		if slices.Contains(mids, f.id) {
			confirmedIDs = append(confirmedIDs, f.id)
		}
	}
	s.homes.drop(conv, dropped)
	s.homes.add(conv, confirmedIDs, s.trustUntil(), true)
	return nil
}

// settleSaved settles the home pointers after a save of conv (see
// [Store.settle]). The save is committed: the pointers are settled even
// when ctx ends now, for a reader that has only a memory's id finds the
// memory's list through its pointer; a failure to settle them is not the
// save's, and the next save settles them. Until then this process knows
// where the lists are.
func (s *Store) settleSaved(ctx context.Context, conv string, found []homeLookup, mids, dropped, erased []string) {
	if len(found) == 0 && len(dropped) == 0 && len(erased) == 0 {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.retryTimeout)
	defer cancel()
	if s.retry(sctx, func() error { return s.settle(sctx, conv, found, mids, dropped, erased) }) == nil {
		return
	}
	var ids []string
	for _, f := range found {
		if slices.Contains(mids, f.id) {
			ids = append(ids, f.id)
		}
	}
	s.homes.add(conv, ids, s.trustUntil(), false)
}

// trustUntil returns until when the store trusts a home pointer it
// confirms now: the zero time (for ever) without a time to live. A
// pointer lives twice the time to live and a save sets it again once half
// of it has passed: it outlives the conversation's keys.
func (s *Store) trustUntil() time.Time {
	if s.ttl == 0 {
		return time.Time{}
	}
	return time.Now().Add(s.ttl / 2)
}

// Each call on a memory outside a request's batch, and each read a
// request makes of the stored messages, goes to the memory's list in its
// conversation when this process knows the conversation; else to its list
// outside any conversation by a script that checks the home pointer
// first, and returns the conversation instead ({2, id}) when there is
// one; then to the list in that conversation. So a memory of no
// conversation costs one round trip per call, and a memory of a
// conversation one more the first time a process calls on it.

// onMemory runs script (memupdate.lua or memapply.lua) with args on the
// list of memory id, as above, and returns its reply.
func (s *Store) onMemory(ctx context.Context, script *redis.Script, id string, args ...any) ([]any, error) {
	run := func(keys ...string) (res []any, err error) {
		err = s.retry(ctx, func() (err error) {
			res, err = script.Run(ctx, s.c, keys, args...).Slice()
			return err
		})
		return res, err
	}
	if conv, ok := s.homes.get(id, time.Now()); ok {
		return run(s.memPrefix(conv) + id)
	}
	res, err := run(s.soloKey(id), s.homeKey(id))
	if err != nil || code(res) != 2 || len(res) < 2 {
		return res, err
	}
	conv := fmt.Sprint(res[1])
	s.homes.add(conv, []string{id}, s.trustUntil(), false)
	return run(s.memPrefix(conv) + id)
}

// readMemory reads (op "range": the list; "len": its length) or deletes
// (op "del") the list of memory id, as above, and returns the result.
func (s *Store) readMemory(ctx context.Context, id, op string) (out any, err error) {
	err = s.retry(ctx, func() (err error) {
		out, err = s.readMemoryOnce(ctx, id, op)
		return err
	})
	return out, err
}

func (s *Store) readMemoryOnce(ctx context.Context, id, op string) (any, error) {
	conv, ok := s.homes.get(id, time.Now())
	if !ok {
		res, err := soloScript.Run(ctx, s.c, []string{s.soloKey(id), s.homeKey(id)}, op).Slice()
		if err != nil {
			return nil, err
		}
		if code(res) != 2 {
			if len(res) < 2 {
				return nil, nil
			}
			return res[1], nil
		}
		conv = fmt.Sprint(res[1])
		s.homes.add(conv, []string{id}, s.trustUntil(), false)
	}
	key := s.memPrefix(conv) + id
	switch op {
	case "range":
		elems, err := s.c.LRange(ctx, key, 0, -1).Result()
		out := make([]any, len(elems))
		for i, e := range elems {
			out[i] = e
		}
		return out, err
	case "len":
		return s.c.LLen(ctx, key).Result()
	}
	return nil, s.c.Del(ctx, key).Err()
}
