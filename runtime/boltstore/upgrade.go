package boltstore

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The buckets of layout 1 that layout 2 no longer has.
var (
	bucketMids1 = []byte("mids") // conversation id → its memory ids
	bucketMem1  = []byte("mem")  // memory id → a bucket: sequence number (uint64) → one message
)

// upgrade1 rewrites a file of layout 1 in layout 2, in the transaction
// that opens it, so that a crash leaves the file as it was or upgraded:
// each memory's bucket of messages becomes one value of the memlist
// bucket; each conversation record takes in its memory ids (from the mids
// bucket) and the time of its expiry index entry; the expiry index is
// rebuilt at grain. The transaction holds the whole file's changes: a
// file of many conversations takes memory and time to upgrade once.
func upgrade1(tx *bolt.Tx, meta *bolt.Bucket, grain time.Duration) error {
	if _, err := tx.CreateBucketIfNotExists(bucketMem); err != nil {
		return err
	}
	if old := tx.Bucket(bucketMem1); old != nil {
		err := old.ForEachBucket(func(id []byte) error {
			var elems [][]byte
			c := old.Bucket(id).Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				elems = append(elems, v)
			}
			return replaceMem(tx, string(id), elems)
		})
		if err != nil {
			return fmt.Errorf("memories: %w", err)
		}
		if err := tx.DeleteBucket(bucketMem1); err != nil {
			return err
		}
	}
	if tx.Bucket(bucketExpiry) != nil {
		if err := tx.DeleteBucket(bucketExpiry); err != nil {
			return err
		}
	}
	if _, err := tx.CreateBucket(bucketExpiry); err != nil {
		return err
	}
	convs, err := tx.CreateBucketIfNotExists(bucketConv)
	if err != nil {
		return err
	}
	mids := tx.Bucket(bucketMids1)
	type upgraded struct {
		id  []byte
		rec convRecord
	}
	var recs []upgraded
	err = convs.ForEach(func(id, v []byte) error {
		if len(v) < 16 {
			return nil // corrupt in either layout: Load reports it, Delete removes it
		}
		r := convRecord{
			version: binary.BigEndian.Uint64(v),
			exp:     binary.BigEndian.Uint64(v[8:]),
			state:   slices.Clone(v[16:]),
		}
		if mids != nil {
			r.mids = slices.Clone(mids.Get(id))
		}
		if r.exp != 0 {
			r.indexed = indexTime(r.exp, grain)
		}
		recs = append(recs, upgraded{slices.Clone(id), r})
		return nil
	})
	if err != nil {
		return err
	}
	for _, u := range recs {
		if err := convs.Put(u.id, u.rec.bytes()); err != nil {
			return err
		}
		if err := reindex(tx, u.id, 0, u.rec.indexed); err != nil {
			return err
		}
	}
	if mids != nil {
		if err := tx.DeleteBucket(bucketMids1); err != nil {
			return err
		}
	}
	return meta.Put(keyLayout, []byte(layoutVersion))
}
