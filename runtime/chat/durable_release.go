package chat

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// releaseParallelism bounds the lease releases ReleaseLeases sends to the
// store at once.
const releaseParallelism = 32

// ReleaseLeases lets go of the lease of every durable conversation this
// router still serves, without waiting for their requests and without
// saving them: what a process calls just before it exits with
// conversations it could not detach (a drain cut short, a request whose
// route ignores its context), so that other nodes resume them at once
// rather than after the lease's time to live, as after a crash.
//
// Nothing is lost that a completed turn saved. A request still running
// here afterwards can no longer save (the store refuses a save under a
// released lease, [chatstore.ErrLeaseLost]): its client sends it again on
// the node that resumes the conversation, as for a turn cut by a drain.
// The renewal of those requests' leases stops, so that nothing takes a
// lease back. The conversations stay registered here; the router should
// serve no new request afterwards.
//
// It returns the number of leases released and the errors of those the
// store could not release, joined. On a router without a store it does
// nothing.
func (r *Router) ReleaseLeases(ctx context.Context) (int, error) {
	if r.store == nil {
		return 0, nil
	}
	r.liveMu.Lock()
	convs := make([]*Conversation, 0, len(r.live))
	for _, c := range r.live {
		convs = append(convs, c)
	}
	r.liveMu.Unlock()

	var (
		mu       sync.Mutex
		errs     []error
		released int
		wg       sync.WaitGroup
	)
	sem := make(chan struct{}, releaseParallelism)
	for _, c := range convs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c.durable.stopRenewing()
			err := r.store.Release(ctx, c.id, c.durable.currentLease())
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("chat: releasing the lease of conversation %s: %w", c.id, err))
				return
			}
			released++
		})
	}
	wg.Wait()
	return released, errors.Join(errs...)
}
