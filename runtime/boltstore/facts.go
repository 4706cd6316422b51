package boltstore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/chatscopes/chatgen/runtime/longterm"
)

// This file holds the long-term memory store of the file: the facts of
// principals (package runtime/longterm), in the bucket
//
//	facts    principal key (longterm.PrincipalKey) → a bucket:
//	           0x00 → revision (uint64) | last write (Unix ns)
//	           0x01 + fact id → the fact as JSON
//
// A principal's facts have their own retention (FactsOptions.Retention),
// not the conversations' TTL.

var bucketFacts = []byte("facts")

var (
	factsHead   = []byte{0x00}
	factsPrefix = byte(0x01)
)

// FactsOptions configures the long-term memory store of a [Store]; nil
// and the zero value mean the default caps and no retention.
type FactsOptions struct {
	// Limits are the caps of each principal's facts.
	Limits longterm.Limits
	// Retention, when positive, deletes a principal's facts that long
	// after the last write to them (on the principal's next access, or
	// by [Facts.Sweep]); 0 keeps them until they are deleted.
	Retention time.Duration
}

// Facts is a [longterm.Store] in the file of a [Store]: every call is one
// bbolt transaction (a read-only one for Get, List and Revision).
type Facts struct {
	db        *bolt.DB
	limits    longterm.Limits
	retention time.Duration
}

var _ longterm.Store = (*Facts)(nil)

// Facts returns the long-term memory store in s's file, creating its
// bucket when needed.
func (s *Store) Facts(opts *FactsOptions) (*Facts, error) {
	if opts == nil {
		opts = &FactsOptions{}
	}
	if opts.Retention < 0 {
		return nil, fmt.Errorf("boltstore: negative fact retention %v", opts.Retention)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketFacts)
		return err
	}); err != nil {
		return nil, fmt.Errorf("boltstore: creating the facts bucket: %w", err)
	}
	return &Facts{db: s.db, limits: opts.Limits.WithDefaults(), retention: opts.Retention}, nil
}

// principal returns principal's bucket, nil when it has none or its
// facts expired (writable: deleted).
func (f *Facts) principal(tx *bolt.Tx, principal string, now time.Time) (*bolt.Bucket, longterm.Revision, error) {
	key := []byte(longterm.PrincipalKey(principal))
	root := tx.Bucket(bucketFacts)
	if root == nil {
		return nil, 0, errors.New("boltstore: no facts bucket")
	}
	b := root.Bucket(key)
	if b == nil {
		return nil, 0, nil
	}
	head := b.Get(factsHead)
	if len(head) != 16 {
		return nil, 0, fmt.Errorf("boltstore: a principal's facts record is corrupt (%d bytes)", len(head))
	}
	rev := longterm.Revision(binary.BigEndian.Uint64(head))
	written := time.Unix(0, int64(binary.BigEndian.Uint64(head[8:])))
	if f.retention > 0 && now.Sub(written) >= f.retention {
		if tx.Writable() {
			if err := root.DeleteBucket(key); err != nil {
				return nil, 0, err
			}
		}
		return nil, 0, nil
	}
	return b, rev, nil
}

// write runs fn on principal's bucket (created when missing) in a
// read-write transaction, then stamps the new revision, unless fn
// reports no change. A principal left without facts is deleted.
func (f *Facts) write(ctx context.Context, principal string, fn func(b *bolt.Bucket, n int) (bool, error)) (longterm.Revision, error) {
	if err := longterm.CheckPrincipal(principal); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var rev longterm.Revision
	err := f.db.Update(func(tx *bolt.Tx) error {
		now := time.Now()
		b, old, err := f.principal(tx, principal, now)
		if err != nil {
			return err
		}
		created := b == nil
		if created {
			if b, err = tx.Bucket(bucketFacts).CreateBucket([]byte(longterm.PrincipalKey(principal))); err != nil {
				return err
			}
		}
		n := b.Stats().KeyN - 1
		if created {
			n = 0
		}
		changed, err := fn(b, n)
		if err != nil {
			return err
		}
		if !changed {
			rev = old
			if created {
				return tx.Bucket(bucketFacts).DeleteBucket([]byte(longterm.PrincipalKey(principal)))
			}
			return nil
		}
		if k, _ := b.Cursor().Seek([]byte{factsPrefix}); k == nil {
			rev = 0
			return tx.Bucket(bucketFacts).DeleteBucket([]byte(longterm.PrincipalKey(principal)))
		}
		rev = old.Next()
		head := binary.BigEndian.AppendUint64(nil, uint64(rev))
		return b.Put(factsHead, binary.BigEndian.AppendUint64(head, uint64(now.UnixNano())))
	})
	if err != nil {
		return 0, err
	}
	return rev, nil
}

func factKey(id string) []byte { return append([]byte{factsPrefix}, id...) }

// Put implements [longterm.Store.Put].
func (f *Facts) Put(ctx context.Context, principal string, facts ...longterm.Fact) (longterm.Revision, error) {
	stamped, err := f.limits.Stamp(time.Now(), facts)
	if err != nil {
		return 0, err
	}
	return f.write(ctx, principal, func(b *bolt.Bucket, n int) (bool, error) {
		if len(stamped) == 0 {
			return false, nil
		}
		for _, fact := range stamped {
			if b.Get(factKey(fact.ID)) != nil {
				return false, longterm.ErrExists
			}
		}
		if n+len(stamped) > f.limits.MaxFacts {
			return false, longterm.ErrTooManyFacts
		}
		for _, fact := range stamped {
			v, err := json.Marshal(fact)
			if err != nil {
				return false, err
			}
			if err := b.Put(factKey(fact.ID), v); err != nil {
				return false, err
			}
		}
		return true, nil
	})
}

// Get implements [longterm.Store.Get].
func (f *Facts) Get(ctx context.Context, principal, id string) (longterm.Fact, error) {
	if err := longterm.CheckPrincipal(principal); err != nil {
		return longterm.Fact{}, err
	}
	var out longterm.Fact
	err := f.db.View(func(tx *bolt.Tx) error {
		b, _, err := f.principal(tx, principal, time.Now())
		if err != nil {
			return err
		}
		if b == nil {
			return longterm.ErrNotFound
		}
		v := b.Get(factKey(id))
		if v == nil {
			return longterm.ErrNotFound
		}
		return json.Unmarshal(v, &out)
	})
	return out, err
}

// List implements [longterm.Store.List].
func (f *Facts) List(ctx context.Context, principal string) ([]longterm.Fact, longterm.Revision, error) {
	if err := longterm.CheckPrincipal(principal); err != nil {
		return nil, 0, err
	}
	var (
		out []longterm.Fact
		rev longterm.Revision
	)
	err := f.db.View(func(tx *bolt.Tx) error {
		b, r, err := f.principal(tx, principal, time.Now())
		if err != nil || b == nil {
			return err
		}
		rev = r
		c := b.Cursor()
		for k, v := c.Seek([]byte{factsPrefix}); k != nil; k, v = c.Next() {
			var fact longterm.Fact
			if err := json.Unmarshal(v, &fact); err != nil {
				return fmt.Errorf("boltstore: a fact is corrupt: %w", err)
			}
			out = append(out, fact)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	longterm.SortFacts(out)
	return out, rev, nil
}

// Update implements [longterm.Store.Update].
func (f *Facts) Update(ctx context.Context, principal string, fact longterm.Fact) (longterm.Revision, error) {
	if err := f.limits.CheckFact(fact); err != nil {
		return 0, err
	}
	return f.write(ctx, principal, func(b *bolt.Bucket, _ int) (bool, error) {
		v := b.Get(factKey(fact.ID))
		if v == nil {
			return false, longterm.ErrNotFound
		}
		var old longterm.Fact
		if err := json.Unmarshal(v, &old); err != nil {
			return false, err
		}
		nv, err := json.Marshal(longterm.Updated(old, fact, time.Now()))
		if err != nil {
			return false, err
		}
		return true, b.Put(factKey(fact.ID), nv)
	})
}

// Delete implements [longterm.Store.Delete].
func (f *Facts) Delete(ctx context.Context, principal string, ids ...string) (longterm.Revision, error) {
	return f.write(ctx, principal, func(b *bolt.Bucket, _ int) (bool, error) {
		changed := false
		for _, id := range ids {
			if b.Get(factKey(id)) != nil {
				changed = true
				if err := b.Delete(factKey(id)); err != nil {
					return false, err
				}
			}
		}
		return changed, nil
	})
}

// DeleteAll implements [longterm.Store.DeleteAll].
func (f *Facts) DeleteAll(ctx context.Context, principal string) error {
	if err := longterm.CheckPrincipal(principal); err != nil {
		return err
	}
	return f.db.Update(func(tx *bolt.Tx) error {
		err := tx.Bucket(bucketFacts).DeleteBucket([]byte(longterm.PrincipalKey(principal)))
		if errors.Is(err, berrors.ErrBucketNotFound) {
			return nil
		}
		return err
	})
}

// Revision implements [longterm.Store.Revision]: one read-only
// transaction.
func (f *Facts) Revision(ctx context.Context, principal string) (longterm.Revision, error) {
	if err := longterm.CheckPrincipal(principal); err != nil {
		return 0, err
	}
	var rev longterm.Revision
	err := f.db.View(func(tx *bolt.Tx) error {
		_, r, err := f.principal(tx, principal, time.Now())
		rev = r
		return err
	})
	return rev, err
}

// Sweep deletes the facts of every principal whose retention has passed
// and returns how many principals it deleted (0 without a retention).
func (f *Facts) Sweep() (int, error) {
	if f.retention <= 0 {
		return 0, nil
	}
	n := 0
	err := f.db.Update(func(tx *bolt.Tx) error {
		root := tx.Bucket(bucketFacts)
		var expired [][]byte
		now := time.Now()
		err := root.ForEachBucket(func(k []byte) error {
			head := root.Bucket(k).Get(factsHead)
			if len(head) == 16 && now.Sub(time.Unix(0, int64(binary.BigEndian.Uint64(head[8:])))) >= f.retention {
				expired = append(expired, append([]byte(nil), k...))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range expired {
			if err := root.DeleteBucket(k); err != nil {
				return err
			}
		}
		n = len(expired)
		return nil
	})
	return n, err
}
