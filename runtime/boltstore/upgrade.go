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
	bucketConv1 = []byte("conv") // conversation id → version | expiry | the state as JSON
	bucketMids1 = []byte("mids") // conversation id → its memory ids
	bucketMem1  = []byte("mem")  // memory id → a bucket: sequence number (uint64) → one message
)

// upgrade1 rewrites a file of layout 1 in layout 2, in the transaction
// that opens it, so that a crash leaves the file as it was or upgraded:
// each memory's bucket of messages becomes one list in the data bucket;
// each conversation record moves there, with its memory ids (from the
// mids bucket) and the time of its expiry index entry; the expiry index is
// rebuilt at grain. The transaction holds the whole file's changes: a
// file of many conversations takes memory and time to upgrade, once.
func upgrade1(tx *bolt.Tx, meta *bolt.Bucket, grain time.Duration) error {
	data, err := tx.CreateBucketIfNotExists(bucketData)
	if err != nil {
		return err
	}
	if old := tx.Bucket(bucketMem1); old != nil {
		err := old.ForEachBucket(func(id []byte) error {
			var elems [][]byte
			c := old.Bucket(id).Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				elems = append(elems, v)
			}
			return replaceMem(tx, nil, string(id), elems)
		})
		if err != nil {
			return fmt.Errorf("memories: %w", err)
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
	if convs := tx.Bucket(bucketConv1); convs != nil {
		mids := tx.Bucket(bucketMids1)
		err := convs.ForEach(func(id, v []byte) error {
			if len(v) < 16 {
				// Corrupt in either layout: Load reports it, Delete
				// removes it.
				return data.Put(recKey(string(id)), slices.Clone(v))
			}
			r := convRecord{
				version: binary.BigEndian.Uint64(v),
				exp:     binary.BigEndian.Uint64(v[8:]),
				state:   v[16:],
			}
			if mids != nil {
				r.mids = mids.Get(id)
			}
			if r.exp != 0 {
				r.indexed = indexTime(r.exp, grain)
			}
			if err := data.Put(recKey(string(id)), r.bytes(nil)); err != nil {
				return err
			}
			return reindex(tx, id, 0, r.indexed)
		})
		if err != nil {
			return fmt.Errorf("conversations: %w", err)
		}
	}
	for _, name := range [][]byte{bucketConv1, bucketMids1, bucketMem1} {
		if tx.Bucket(name) != nil {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
		}
	}
	return meta.Put(keyLayout, []byte(layoutVersion))
}
