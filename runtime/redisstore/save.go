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
// conversation from outside, in save.lua's encoding.
func appendAdopted(args []any, found []homeLookup) []any {
	countAt := len(args)
	args = append(args, 0)
	n := 0
	for _, f := range found {
		elems := f.solo
		if len(elems) == 0 || f.home != "" {
			continue
		}
		n++
		args = append(args, f.id, len(elems))
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
// (WaitReplicas when not waiting).
func (s *Store) runSave(ctx context.Context, keys []string, args []any) ([]any, int64, error) {
	if s.waitReplicas == 0 {
		res, err := saveScript.Run(ctx, s.c, keys, args...).Slice()
		return res, 0, err
	}
	var last error
	for range 3 {
		node := redis.Cmdable(s.c)
		cc, isCluster := s.c.(*redis.ClusterClient)
		if isCluster {
			// WAIT has no key: it must go to the master that ran the
			// script, on the same connection, so both go to that node.
			m, err := cc.MasterForKey(ctx, keys[0])
			if err != nil {
				return nil, 0, err
			}
			node = m
		}
		res, n, err := s.saveAndWait(ctx, node, keys, args)
		if err == nil || !isCluster {
			return res, n, err
		}
		if !redirected(err) {
			var re redis.Error
			if !errors.As(err, &re) {
				// The node may be gone (a failover): the cluster client
				// learns the new layout for the next call, as it does
				// for the calls it routes itself.
				cc.ReloadState(ctx)
			}
			return res, n, err
		}
		// The slot moved (a failover, a resharding) and the script did
		// not run: learn the new layout and try its new master.
		last = err
		cc.ReloadState(ctx)
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return nil, 0, err
		}
	}
	return nil, 0, last
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

// redirected reports whether err is Redis Cluster's answer that the slot
// is served elsewhere: the command did not run.
func redirected(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := err.Error()
	return strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK ")
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
