package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/redis/go-redis/v9"
)

// batchKinds returns the memories b writes, with the kind of their write
// ('R', 'E' or 'D').
func batchKinds(b *chatstore.Batch) map[string]byte {
	if b == nil || b.Len() == 0 {
		return nil
	}
	kinds := make(map[string]byte, b.Len())
	b.All(func(id string, v []byte) {
		switch {
		case v == nil:
			kinds[id] = 'D'
		case len(v) > 0:
			kinds[id] = v[0] // durable.Staged's encoding starts with its kind
		default:
			kinds[id] = '?'
		}
	})
	return kinds
}

// appendAdopted appends to args the memories a save moves into its
// conversation from outside, in save.lua's encoding; index gives each
// memory's index among the script's.
func appendAdopted(args []any, found []homeLookup, index map[string]int) []any {
	countAt := len(args)
	args = append(args, 0)
	n := 0
	for _, f := range found {
		elems := f.solo
		if len(elems) == 0 || f.home != "" {
			continue
		}
		n++
		args = append(args, index[f.id], len(elems))
		for _, e := range elems {
			args = append(args, e)
		}
	}
	args[countAt] = n
	return args
}

// runSave runs save.lua, and, with [Options.WaitReplicas], WAIT after it
// in the same pipeline on the master that runs it. It returns the
// script's reply and the number of replicas that acknowledged the save
// (WaitReplicas when not waiting). A script Redis refused without running
// it while the cluster changes is run again ([Store.retry]).
func (s *Store) runSave(ctx context.Context, keys []string, args []any) (res []any, replicas int64, err error) {
	err = s.retry(ctx, func() (err error) {
		if s.waitReplicas == 0 {
			res, err = saveScript.Run(ctx, s.c, keys, args...).Slice()
			return err
		}
		res, replicas, err = s.saveWaiting(ctx, keys, args)
		return err
	})
	return res, replicas, err
}

// saveWaiting runs save.lua and WAIT in one pipeline on the master of the
// keys' slot.
func (s *Store) saveWaiting(ctx context.Context, keys []string, args []any) ([]any, int64, error) {
	cc, isCluster := s.c.(*redis.ClusterClient)
	if !isCluster {
		return s.saveAndWait(ctx, s.c, keys, args)
	}
	// WAIT has no key: it must go to the master that ran the script, on
	// the same connection, so both go to that node, past the cluster
	// client's redirections. A MOVED answer, the slot served elsewhere
	// now, makes the retry learn the new layout; an ASK answer, the slot
	// being moved and the keys gone already, makes it wait until the move
	// ends.
	m, err := cc.MasterForKey(ctx, keys[0])
	if err != nil {
		return nil, 0, err
	}
	res, n, err := s.saveAndWait(ctx, m, keys, args)
	var re redis.Error
	if err != nil && !errors.As(err, &re) {
		// The node may be gone (a failover): the cluster client learns
		// the new layout for the next call, as it does for the calls it
		// routes itself.
		cc.ReloadState(ctx)
	}
	return res, n, err
}

// saveAndWait sends save.lua and WAIT in one pipeline to node.
func (s *Store) saveAndWait(ctx context.Context, node redis.Cmdable, keys []string, args []any) ([]any, int64, error) {
	run := func(script func(p redis.Pipeliner) *redis.Cmd) ([]any, int64, error) {
		var res *redis.Cmd
		var wait *redis.Cmd
		_, err := node.Pipelined(ctx, func(p redis.Pipeliner) error {
			res = script(p)
			wait = p.Do(ctx, "WAIT", s.waitReplicas, s.waitTimeout.Milliseconds())
			return nil
		})
		if res == nil {
			return nil, 0, err
		}
		if err := res.Err(); err != nil {
			return nil, 0, err
		}
		out, err := res.Slice()
		if err != nil {
			return nil, 0, err
		}
		n, err := wait.Int64()
		if err != nil {
			return out, 0, fmt.Errorf("%w: WAIT: %w", ErrNotReplicated, err)
		}
		return out, n, nil
	}
	res, n, err := run(func(p redis.Pipeliner) *redis.Cmd { return p.EvalSha(ctx, saveScript.Hash(), keys, args...) })
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		return run(func(p redis.Pipeliner) *redis.Cmd { return p.Eval(ctx, saveSrc, keys, args...) })
	}
	return res, n, err
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
