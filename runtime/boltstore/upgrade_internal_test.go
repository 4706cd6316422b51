package boltstore

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/internal/durable"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/tmc/langchaingo/llms"
	bolt "go.etcd.io/bbolt"
)

// writeLayout1 writes a file in layout 1, as chatgen before layout 2 wrote
// it: conversations saved at version, expiring at their exp (0 for never);
// memories as buckets of messages; the memory ids of each conversation in
// mids; an exact expiry index; leases; the last fencing token.
func writeLayout1(t *testing.T, path string, convs map[string]uint64, mems map[string][]llms.MessageContent) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		b := map[string]*bolt.Bucket{}
		for _, name := range []string{"meta", "conv", "expiry", "mids", "lease", "mem"} {
			if b[name], err = tx.CreateBucket([]byte(name)); err != nil {
				return err
			}
		}
		b["meta"].Put([]byte("layout"), []byte("1"))
		b["meta"].Put([]byte("fence"), u64(7))
		for id, exp := range convs {
			st := chatstoretest.State(id)
			data, err := durable.EncodeState(st, 3)
			if err != nil {
				return err
			}
			rec := binary.BigEndian.AppendUint64(u64(3), exp)
			b["conv"].Put([]byte(id), append(rec, data...))
			b["mids"].Put([]byte(id), encodeMids(durable.MemoryIDs(st)))
			if exp != 0 {
				b["expiry"].Put(expiryKey(exp, []byte(id)), nil)
			}
			b["lease"].Put([]byte(id), append(binary.BigEndian.AppendUint64(u64(5), exp), "node"...))
		}
		for id, msgs := range mems {
			elems, err := durable.EncodeMessages(msgs)
			if err != nil {
				return err
			}
			m, err := b["mem"].CreateBucket([]byte(id))
			if err != nil {
				return err
			}
			for i, e := range elems {
				m.Put(u64(1<<63+uint64(i)), e)
			}
		}
		b["conv"].Put([]byte("corrupt"), []byte("short"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestUpgradeFromLayout1 opens a file of layout 1: the conversations,
// their memories and the loose memories read back as written, an expired
// conversation is reported gone and swept with its memory, fencing tokens
// keep growing, a corrupt record stays reported corrupt, the old buckets
// are gone, and the upgraded store saves and reopens as any other.
func TestUpgradeFromLayout1(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "chat.db")
	live, dead := "c-live", "c-dead"
	liveMem := chatstoretest.State(live).Scopes[1].Memories[0]
	deadMem := chatstoretest.State(dead).Scopes[1].Memories[0]
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeHuman, "Make it longer."),
		llms.TextParts(llms.ChatMessageTypeAI, "It is 90 cm now."),
		llms.TextParts(llms.ChatMessageTypeHuman, "And sharper."),
	}
	writeLayout1(t, path,
		map[string]uint64{live: uint64(time.Now().Add(time.Hour).UnixNano()), dead: uint64(time.Now().Add(-time.Second).UnixNano())},
		map[string][]llms.MessageContent{liveMem: msgs, deadMem: msgs[:1], "loose": msgs[1:]})

	s, err := Open(path, &Options{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keyLayout); string(v) != layoutVersion {
			t.Errorf("layout after the upgrade: %q", v)
		}
		for _, name := range [][]byte{bucketConv1, bucketMids1, bucketMem1} {
			if tx.Bucket(name) != nil {
				t.Errorf("bucket %s of layout 1 is still there", name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Load(ctx, live)
	if err != nil {
		t.Fatal(err)
	}
	want := chatstoretest.State(live)
	want.Version = 3
	if !reflect.DeepEqual(st, want) {
		t.Errorf("Load after the upgrade:\n got %+v\nwant %+v", st, want)
	}
	mems := s.Memories()
	for id, want := range map[string][]llms.MessageContent{liveMem: msgs, "loose": msgs[1:]} {
		if got, err := mems.Get(ctx, id); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("memory %q after the upgrade: %v, %v; want %v", id, got, err, want)
		}
	}
	if _, err := s.Load(ctx, dead); !errors.Is(err, chatstore.ErrConversationNotFound) {
		t.Errorf("Load of the expired conversation: %v", err)
	}
	if _, err := s.Load(ctx, "corrupt"); !errors.Is(err, chatstore.ErrCorruptState) {
		t.Errorf("Load of the corrupt record: %v", err)
	}
	if n, err := s.Sweep(); err != nil || n != 1 {
		t.Errorf("Sweep = %d, %v; want the expired conversation", n, err)
	}
	if got, err := mems.Get(ctx, deadMem); err != nil || len(got) != 0 {
		t.Errorf("the expired conversation's memory after Sweep: %v, %v", got, err)
	}

	l, err := s.Acquire(ctx, live, "node", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if l.Token != 8 {
		t.Errorf("first fencing token after the upgrade: %d, want 8", l.Token)
	}
	mw, err := memory.Window(4, nil).New(ctx, mems, liveMem)
	if err != nil {
		t.Fatal(err)
	}
	b := chatstore.NewBatch()
	turn := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeAI, "Sharper it is."), llms.TextParts(llms.ChatMessageTypeHuman, "Thanks.")}
	if err := mw.Add(chatstore.WithBatch(ctx, b), turn...); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, st, l, b); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(path, &Options{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if st, err := s.Load(ctx, live); err != nil || st.Version != 4 {
		t.Fatalf("Load after reopening: %+v, %v", st, err)
	}
	wantMsgs := append(msgs[2:], turn...) // the window evicts the oldest turn, whole
	if got, err := s.Memories().Get(ctx, liveMem); err != nil || !reflect.DeepEqual(got, wantMsgs) {
		t.Errorf("memory after a save and reopening: %v, %v; want %v", got, err, wantMsgs)
	}
}
