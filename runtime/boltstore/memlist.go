package boltstore

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/internal/durable"
	bolt "go.etcd.io/bbolt"
)

// A memory's list is one value of the data bucket, in durable's list
// encoding (durable.AppendList): the number of messages, then each
// message's length and bytes. A save rewrites the value of each memory the
// turn changed: one key, usually in the page of the conversation's record
// (see dataKey), where a bucket per memory cost pages of its own and a
// page of the parent for its new root.

// memValue returns the stored value of memory id, nil if there is none.
// It is valid for the transaction's life only.
func memValue(tx *bolt.Tx, id string) []byte {
	return tx.Bucket(bucketData).Get(listKey(id))
}

// listLen reads the number of messages of a list value.
func listLen(id string, v []byte) (int, error) {
	if v == nil {
		return 0, nil
	}
	n, _, ok := durable.ReadCount(v)
	if !ok {
		return 0, corruptList(id, v)
	}
	return n, nil
}

func corruptList(id string, v []byte) error {
	return fmt.Errorf("%w: memory %q: a list of %d bytes", chatstore.ErrCorruptState, id, len(v))
}

// memElems returns the messages of memory id, copied out of the file.
func memElems(tx *bolt.Tx, id string) ([][]byte, error) {
	v := memValue(tx, id)
	if v == nil {
		return nil, nil
	}
	elems, rest, ok := durable.ReadList(slices.Clone(v))
	if !ok || len(rest) != 0 {
		return nil, corruptList(id, v)
	}
	return elems, nil
}

// memLen returns the number of messages of memory id.
func memLen(tx *bolt.Tx, id string) (int, error) {
	return listLen(id, memValue(tx, id))
}

func deleteMem(tx *bolt.Tx, id string) error {
	return tx.Bucket(bucketData).Delete(listKey(id))
}

func replaceMem(tx *bolt.Tx, a *arena, id string, elems [][]byte) error {
	if len(elems) == 0 {
		return deleteMem(tx, id)
	}
	buf := durable.AppendList(a.alloc(durable.ListSize(elems)), elems)
	return tx.Bucket(bucketData).Put(dataKey(a, id, kindList), buf)
}

// editMem drops drop messages from the front of the list of id, puts head
// in front and appends tail. What stays is copied as it is stored, in one
// piece.
func editMem(tx *bolt.Tx, a *arena, id string, drop int, head, tail [][]byte) error {
	return editList(tx, a, id, memValue(tx, id), drop, head, tail)
}

// editList is editMem given the list's stored value v.
func editList(tx *bolt.Tx, a *arena, id string, v []byte, drop int, head, tail [][]byte) error {
	if drop == 0 && len(head) == 0 && len(tail) == 0 {
		return nil
	}
	var n int
	var kept []byte // the messages that stay, as they are stored
	if v != nil {
		var ok bool
		if n, kept, ok = durable.ReadCount(v); !ok {
			return corruptList(id, v)
		}
	}
	if drop > n {
		return fmt.Errorf("memory: change of %q drops %d of %d messages", id, drop, n)
	}
	left := n - drop + len(head) + len(tail)
	if left == 0 {
		return deleteMem(tx, id)
	}
	kept, ok := durable.SkipElems(kept, drop)
	if !ok {
		return corruptList(id, v)
	}
	buf := a.alloc(durable.ListSize(head) + len(kept) + durable.ListSize(tail))
	buf = binary.AppendUvarint(buf, uint64(left))
	buf = durable.AppendElems(buf, head)
	buf = append(buf, kept...)
	buf = durable.AppendElems(buf, tail)
	return tx.Bucket(bucketData).Put(dataKey(a, id, kindList), buf)
}
