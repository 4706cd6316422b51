package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed import.lua
var importSrc string

var importScript = redis.NewScript(importSrc)

// A Migration reports what [Store.MigrateFrom] moved.
type Migration struct {
	// Conversations counts the conversations moved; Existing those left
	// as they were because the store had them already (their keys in the
	// old layout are deleted all the same).
	Conversations, Existing int
	// Memories counts the memories moved with their conversations; Solo
	// those no conversation listed, moved to keys of their own.
	Memories, Solo int
}

// MigrateFrom moves the conversations and memories that an older version
// of this package wrote under oldPrefix, in its layout of one key per
// record kind ("<old>conv:<id>", "<old>mids:<id>", "<old>lease:<id>",
// "<old>fence:<id>", "<old>mem:<memory>"), into the store's layout, keeping
// versions, leases with their fencing tokens, and times to live, and
// deletes the old keys. oldPrefix may be the store's prefix, and may carry
// the hash tag that older versions asked a Redis Cluster for
// ("{chatgen}:").
//
// Nothing calls it by itself: run it (or the redismigrate command) once
// when upgrading, after stopping every node that runs the older version
// and before starting the new one: a conversation saved in the old layout
// while it runs may be missed, and one the new version does not find yet
// is reported not found. It is safe to run again after a failure: a
// conversation moved already is not written twice. A memory that several
// conversations listed, which the old layout allowed, goes with the first
// of them moved: the saves of the others fail with [ErrForeignMemory].
func (s *Store) MigrateFrom(ctx context.Context, oldPrefix string) (Migration, error) {
	var mig Migration
	convs, err := s.scanIDs(ctx, globEscape(oldPrefix)+"conv:*", oldPrefix+"conv:")
	if err != nil {
		return mig, fmt.Errorf("redisstore: migrating: listing the conversations under %q: %w", oldPrefix, describe(err))
	}
	for _, id := range convs {
		res, n, err := s.migrateConversation(ctx, oldPrefix, id)
		if err != nil {
			return mig, fmt.Errorf("redisstore: migrating conversation %q: %w", id, describe(err))
		}
		switch res {
		case moved:
			mig.Conversations++
			mig.Memories += n
		case existing:
			mig.Existing++
		}
	}
	// What is left of the memories no conversation listed.
	mems, err := s.scanIDs(ctx, globEscape(oldPrefix)+"mem:*", oldPrefix+"mem:")
	if err != nil {
		return mig, fmt.Errorf("redisstore: migrating: listing the memories under %q: %w", oldPrefix, describe(err))
	}
	for _, id := range mems {
		if err := s.migrateSolo(ctx, oldPrefix+"mem:"+id, id); err != nil {
			return mig, fmt.Errorf("redisstore: migrating memory %q: %w", id, describe(err))
		}
		mig.Solo++
	}
	return mig, nil
}

// scanIDs returns what follows prefix in the keys that match pattern, on
// every master of a cluster.
func (s *Store) scanIDs(ctx context.Context, pattern, prefix string) ([]string, error) {
	var (
		mu  sync.Mutex
		ids []string
	)
	scan := func(ctx context.Context, c redis.UniversalClient) error {
		it := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for it.Next(ctx) {
			if id, ok := strings.CutPrefix(it.Val(), prefix); ok {
				mu.Lock()
				ids = append(ids, id)
				mu.Unlock()
			}
		}
		return it.Err()
	}
	if cc, ok := s.c.(*redis.ClusterClient); ok {
		return ids, cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	}
	return ids, scan(ctx, s.c)
}

// The outcomes of migrateConversation.
const (
	moved    = iota // the conversation was moved
	existing        // the store had it already
	vanished        // it expired or was deleted since the scan
)

// migrateConversation moves conversation id and the memories it lists. It
// returns the outcome and the number of memories moved.
func (s *Store) migrateConversation(ctx context.Context, oldPrefix, id string) (int, int, error) {
	old := func(kind string) string { return oldPrefix + kind + ":" + id }
	var (
		conv, lease       *redis.MapStringStringCmd
		mids              *redis.StringSliceCmd
		fence             *redis.StringCmd
		convTTL, leaseTTL *redis.DurationCmd
		fenceTTL          *redis.DurationCmd
	)
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		conv, convTTL = p.HGetAll(ctx, old("conv")), p.PTTL(ctx, old("conv"))
		mids = p.SMembers(ctx, old("mids"))
		lease, leaseTTL = p.HGetAll(ctx, old("lease")), p.PTTL(ctx, old("lease"))
		fence, fenceTTL = p.Get(ctx, old("fence")), p.PTTL(ctx, old("fence"))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, 0, err
	}
	c := conv.Val()
	if c["s"] == "" {
		return vanished, 0, s.deleteOld(ctx, old("conv"), old("mids"), old("lease"), old("fence"))
	}
	ids := mids.Val()
	elems := make([]*redis.StringSliceCmd, len(ids))
	ttls := make([]*redis.DurationCmd, len(ids))
	if len(ids) > 0 {
		_, err = s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, m := range ids {
				elems[i], ttls[i] = p.LRange(ctx, oldPrefix+"mem:"+m, 0, -1), p.PTTL(ctx, oldPrefix+"mem:"+m)
			}
			return nil
		})
		if err != nil {
			return 0, 0, err
		}
	}
	l := lease.Val()
	args := []any{c["v"], c["s"], ms(convTTL.Val()), l["o"], l["t"], l["e"], ms(leaseTTL.Val()),
		fence.Val(), ms(fenceTTL.Val()), len(ids)}
	for i, m := range ids {
		args = append(args, m, ms(ttls[i].Val()), len(elems[i].Val()))
		for _, e := range elems[i].Val() {
			args = append(args, e)
		}
	}
	var imported int
	err = s.retry(ctx, func() (err error) {
		imported, err = importScript.Run(ctx, s.c, s.keys(id, ids), args...).Int()
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	if imported == 1 && len(ids) > 0 {
		// The memories' home pointers, as a save sets them; a memory
		// that two conversations listed (which the old layout allowed)
		// stays with the first one moved.
		_, err = s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, m := range ids {
				p.SetNX(ctx, s.homeKey(m), id, 2*s.ttl)
			}
			return nil
		})
		if err != nil {
			return 0, 0, err
		}
	}
	keys := []string{old("conv"), old("mids"), old("lease"), old("fence")}
	for _, m := range ids {
		keys = append(keys, oldPrefix+"mem:"+m)
	}
	if err := s.deleteOld(ctx, keys...); err != nil {
		return 0, 0, err
	}
	if imported == 0 {
		return existing, 0, nil
	}
	return moved, len(ids), nil
}

// deleteOld deletes keys, one DEL each (they may be in several slots).
func (s *Store) deleteOld(ctx context.Context, keys ...string) error {
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Del(ctx, k)
		}
		return nil
	})
	return err
}

// migrateSolo moves the memory at key, which no conversation lists, to
// its key outside any conversation, unless that key exists.
func (s *Store) migrateSolo(ctx context.Context, key, id string) error {
	elems, err := s.c.LRange(ctx, key, 0, -1).Result()
	if err != nil {
		return err
	}
	ttl, err := s.c.PTTL(ctx, key).Result()
	if err != nil {
		return err
	}
	if len(elems) > 0 {
		solo := s.soloKey(id)
		n, err := s.c.Exists(ctx, solo).Result()
		if err != nil {
			return err
		}
		if n == 0 {
			args := make([]any, len(elems))
			for i, e := range elems {
				args[i] = e
			}
			if err := s.c.RPush(ctx, solo, args...).Err(); err != nil {
				return err
			}
			if ttl > 0 {
				if err := s.c.PExpire(ctx, solo, ttl).Err(); err != nil {
					return err
				}
			}
		}
	}
	return s.c.Del(ctx, key).Err()
}

// ms returns a PTTL's result in milliseconds, -1 for none.
func ms(d time.Duration) int64 {
	if d <= 0 {
		return -1
	}
	return d.Milliseconds()
}
