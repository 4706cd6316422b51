package boltstore

import (
	"encoding/binary"
	"fmt"

	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/internal/durable"
	bolt "go.etcd.io/bbolt"
)

// The data bucket holds the conversations' records and the memories'
// lists, each under its id followed by a byte of its kind. A memory's id
// starts with the id of its scope, and a conversation's id is its first
// scope's: so the record of a conversation and the lists of the memories
// of its first scope sort side by side, and a save that changes both
// usually writes one page.
const (
	kindRecord = 0
	kindList   = 1
)

// dataKey is the key of id's value of kind in the data bucket, in a.
func dataKey(a *arena, id string, kind byte) []byte {
	return append(append(a.alloc(len(id)+1), id...), kind)
}

func recKey(id string) []byte  { return dataKey(nil, id, kindRecord) }
func listKey(id string) []byte { return dataKey(nil, id, kindList) }

// A convRecord is a conversation's value in the data bucket:
//
//	version (uint64) | expiry (Unix ns, 0 for never) | indexed (the time of its expiry index key, 0 for none)
//	| the length of mids (uvarint) | mids: the memory ids the state lists, each uvarint-length-prefixed, sorted
//	| the state as JSON
type convRecord struct {
	version, exp, indexed uint64
	mids                  []byte
	state                 []byte
}

const convHeader = 24

func parseConv(v []byte) (convRecord, error) {
	if len(v) < convHeader {
		return convRecord{}, fmt.Errorf("%w: a record of %d bytes", chatstore.ErrCorruptState, len(v))
	}
	r := convRecord{
		version: binary.BigEndian.Uint64(v),
		exp:     binary.BigEndian.Uint64(v[8:]),
		indexed: binary.BigEndian.Uint64(v[16:]),
	}
	n, k := binary.Uvarint(v[convHeader:])
	if k <= 0 || n > uint64(len(v)-convHeader-k) {
		return convRecord{}, fmt.Errorf("%w: a record of %d bytes", chatstore.ErrCorruptState, len(v))
	}
	off := convHeader + k
	r.mids, r.state = v[off:off+int(n)], v[off+int(n):]
	return r, nil
}

// bytes encodes r as a new value, in a.
func (r convRecord) bytes(a *arena) []byte {
	buf := a.alloc(convHeader + binary.MaxVarintLen64 + len(r.mids) + len(r.state))[:convHeader]
	binary.BigEndian.PutUint64(buf, r.version)
	binary.BigEndian.PutUint64(buf[8:], r.exp)
	binary.BigEndian.PutUint64(buf[16:], r.indexed)
	buf = binary.AppendUvarint(buf, uint64(len(r.mids)))
	buf = append(buf, r.mids...)
	return append(buf, r.state...)
}

// encodeMids encodes a sorted list of memory ids for a record.
func encodeMids(mids []string) []byte {
	var buf []byte
	for _, m := range mids {
		buf = binary.AppendUvarint(buf, uint64(len(m)))
		buf = append(buf, m...)
	}
	return buf
}

// decodeMids decodes a record's memory ids.
func decodeMids(v []byte) ([]string, error) {
	var mids []string
	for rest := v; len(rest) > 0; {
		mid, r, ok := durable.ReadElem(rest)
		if !ok {
			return nil, fmt.Errorf("%w: a memory id list of %d bytes", chatstore.ErrCorruptState, len(v))
		}
		mids, rest = append(mids, string(mid)), r
	}
	return mids, nil
}

// expiryKey is the key of id in the expiry index at time t.
func expiryKey(t uint64, id []byte) []byte {
	return append(binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(id)), t), id...)
}

// reindex moves id's entry in the expiry index from the time old to new
// (0: no entry), writing nothing when they are the same, which is the
// case for most saves: index times are rounded up to the store's grain.
func reindex(tx *bolt.Tx, id []byte, old, new uint64) error {
	if old == new {
		return nil
	}
	idx := tx.Bucket(bucketExpiry)
	if old != 0 {
		if err := idx.Delete(expiryKey(old, id)); err != nil {
			return err
		}
	}
	if new != 0 {
		return idx.Put(expiryKey(new, id), nil)
	}
	return nil
}
