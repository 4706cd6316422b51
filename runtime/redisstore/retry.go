package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrClusterChanging reports a call that Redis refused without running it
// while the store retried it, for [Options.RetryTimeout] or until the
// context ended: a Redis Cluster moving the hash slot of the call's keys
// to another master (TRYAGAIN, ASK), a failover under way (CLUSTERDOWN,
// MASTERDOWN, READONLY, or MOVED redirections go-redis's own retries did
// not settle), or a server still loading its data after a restart
// (LOADING). Nothing was written: the call may be made again.
var ErrClusterChanging = errors.New("redisstore: Redis refused the call while its cluster changes (a hash slot moving, a failover); nothing was written")

// ErrEmptyID reports a call with an empty conversation or memory id: the
// store refuses it before any call to Redis.
var ErrEmptyID = errors.New("redisstore: the id is empty")

// defaultRetryTimeout is [Options.RetryTimeout]'s default.
const defaultRetryTimeout = 5 * time.Second

// refused reports whether err is Redis's answer that it did not run the
// command, because the cluster is changing or the server is loading: a
// command may be sent again after it, whatever it writes.
func refused(err error) bool {
	if errors.Is(err, ErrNotReplicated) {
		return false // the script ran, and WAIT failed after it
	}
	if redis.IsTryAgainError(err) || redis.IsClusterDownError(err) || redis.IsMasterDownError(err) ||
		redis.IsLoadingError(err) || redis.IsReadOnlyError(err) {
		return true
	}
	if _, ok := redis.IsMovedError(err); ok {
		return true
	}
	_, ok := redis.IsAskError(err)
	return ok
}

// relayout reports whether err tells that the slots moved between nodes
// (as opposed to a slot in the middle of its move, TRYAGAIN or ASK): the
// cluster client should learn the layout again.
func relayout(err error) bool {
	_, moved := redis.IsMovedError(err)
	return moved || redis.IsClusterDownError(err) || redis.IsMasterDownError(err) || redis.IsReadOnlyError(err)
}

// retry runs call, and again, with backoff, while Redis refuses it without
// running it ([refused]), for up to the store's retry timeout or until ctx
// ends; the error is then the last refusal, wrapped to match
// [ErrClusterChanging] (and ctx's error when ctx ended). Other errors,
// which do not tell whether the call ran, are returned as they are.
//
// go-redis's ClusterClient follows MOVED and ASK redirections and retries
// TRYAGAIN and CLUSTERDOWN itself, a few times (ClusterOptions.MaxRedirects)
// within some milliseconds; a slot whose keys are moving answers a script
// over several of its keys TRYAGAIN for as long as the move takes (only
// some of the keys are on either node), and a failover takes seconds.
func (s *Store) retry(ctx context.Context, call func() error) error {
	start := time.Now()
	wait := 5 * time.Millisecond
	for {
		err := call()
		if err == nil || !refused(err) {
			return err
		}
		if cc, ok := s.c.(*redis.ClusterClient); ok && relayout(err) {
			cc.ReloadState(ctx)
		}
		d := wait/2 + rand.N(wait/2+1)
		if time.Since(start)+d > s.retryTimeout {
			return fmt.Errorf("%w (%v of retries): %w", ErrClusterChanging, time.Since(start).Round(time.Millisecond), err)
		}
		if e := sleepCtx(ctx, d); e != nil {
			return fmt.Errorf("%w: %w: %w", ErrClusterChanging, err, e)
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// listed remembers, by conversation, the memory ids of the state this
// process last loaded or saved of it: the memories a save may drop, whose
// lists it declares to Redis among the script's keys. A save of a
// conversation whose stored state lists others (saved by another process
// since) learns them from the script and runs it again.
type listed struct {
	mu sync.Mutex
	m  map[string][]string
}

func (l *listed) get(conv string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[conv]
}

// set remembers ids, which the caller does not modify afterwards.
func (l *listed) set(conv string, ids []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil || len(l.m) >= maxConfirmed {
		l.m = map[string][]string{}
	}
	l.m[conv] = ids
}

func (l *listed) forget(conv string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, conv)
}

// maxUndeclared bounds the runs of a script that answers that the
// conversation lists memories whose keys it was not given: each run
// gives it the ones it named.
const maxUndeclared = 3
