package redisstore_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/internal/durable"
	"github.com/chatscopes/chatgen/runtime/memory/storetest"
	"github.com/chatscopes/chatgen/runtime/redisstore"
	"github.com/redis/go-redis/v9"
	"github.com/tmc/langchaingo/llms"
)

// writeOldLayout writes conversation st at its version, with a lease of
// owner and token, and its memories, in the layout of the versions before
// the hash tag per conversation: "<prefix>conv:<id>", "<prefix>mids:<id>",
// "<prefix>lease:<id>", "<prefix>fence:<id>", "<prefix>mem:<memory>".
func writeOldLayout(t *testing.T, c redis.UniversalClient, prefix string, st *chatstore.ConversationState,
	owner string, token uint64, mems map[string][]llms.MessageContent, ttl time.Duration) {
	t.Helper()
	ctx := t.Context()
	data, err := durable.EncodeState(st, st.Version)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
		conv, mids, lease, fence := prefix+"conv:"+st.ID, prefix+"mids:"+st.ID, prefix+"lease:"+st.ID, prefix+"fence:"+st.ID
		p.HSet(ctx, conv, "v", strconv.FormatUint(st.Version, 10), "s", data)
		for _, id := range durable.MemoryIDs(st) {
			p.SAdd(ctx, mids, id)
		}
		p.HSet(ctx, lease, "o", owner, "t", strconv.FormatUint(token, 10), "e", time.Now().Add(time.Hour).UnixMilli())
		p.Set(ctx, fence, token, 0)
		keys := []string{conv, mids, lease, fence}
		for id, msgs := range mems {
			elems, err := durable.EncodeMessages(msgs)
			if err != nil {
				return err
			}
			for _, e := range elems {
				p.RPush(ctx, prefix+"mem:"+id, e)
			}
			keys = append(keys, prefix+"mem:"+id)
		}
		if ttl > 0 {
			for _, k := range keys {
				p.PExpire(ctx, k, ttl)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestMigrate(t *testing.T) {
	c := redistest.Client(t)
	p := redistest.Prefix(t, c, "chatgen-test")
	// The old layout under the same prefix as the new one.
	testMigrate(t, c, p, p)
}

// testMigrate writes two conversations and a memory no conversation lists
// in the old layout under oldPrefix, migrates them to a store of prefix
// prefix, and goes on with them.
func testMigrate(t *testing.T, c redis.UniversalClient, oldPrefix, prefix string) {
	ctx := t.Context()
	msgs := func(texts ...string) []llms.MessageContent {
		out := make([]llms.MessageContent, len(texts))
		for i, s := range texts {
			out[i] = llms.TextParts(llms.ChatMessageTypeHuman, s)
		}
		return out
	}
	withTTL := chatstoretest.State("c")
	withTTL.Version = 3
	top, nested := withTTL.Scopes[0].Memories[0], withTTL.Scopes[1].Memories[0]
	mems := map[string][]llms.MessageContent{top: msgs("top 1", "top 2"), nested: msgs("nested")}
	writeOldLayout(t, c, oldPrefix, withTTL, "node-a", 7, mems, time.Hour)
	forever := chatstoretest.State("d")
	forever.Version = 1
	writeOldLayout(t, c, oldPrefix, forever, "node-b", 2, map[string][]llms.MessageContent{forever.Scopes[0].Memories[0]: msgs("d")}, 0)
	// A memory no conversation lists.
	alone, err := durable.EncodeMessages(msgs("alone"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RPush(ctx, oldPrefix+"mem:solo", alone[0]).Err(); err != nil {
		t.Fatal(err)
	}

	s, err := redisstore.New(c, &redisstore.Options{Prefix: prefix, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	mig, err := s.MigrateFrom(ctx, oldPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if want := (redisstore.Migration{Conversations: 2, Memories: 4, Solo: 1}); mig != want {
		t.Fatalf("MigrateFrom = %+v, want %+v", mig, want)
	}
	for _, kind := range []string{"conv:", "mids:", "lease:", "fence:", "mem:"} {
		if ks := redistest.Keys(t, c, oldPrefix+kind); len(ks) > 0 {
			t.Fatalf("keys of the old layout left: %q", ks)
		}
	}

	// The conversations, their memories, leases and times to live moved.
	for _, want := range []*chatstore.ConversationState{withTTL, forever} {
		got, err := s.Load(ctx, want.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !chatstoretest.Equal(got, want) {
			t.Fatalf("Load(%q) after the migration = %+v, want %+v", want.ID, got, want)
		}
	}
	for id, want := range map[string][]llms.MessageContent{top: mems[top], nested: mems[nested],
		forever.Scopes[0].Memories[0]: msgs("d"), "solo": msgs("alone")} {
		got, err := s.Memories().Get(ctx, id)
		if err != nil || !storetest.Equal(got, want) {
			t.Fatalf("memory %q after the migration = %v, %v; want %v", id, got, err, want)
		}
	}
	if _, err := s.Acquire(ctx, "c", "node-b", time.Minute); !errors.Is(err, chatstore.ErrLeaseHeld) {
		t.Fatalf("Acquire of a conversation whose lease node-a holds = %v, want ErrLeaseHeld", err)
	}
	l, err := s.Acquire(ctx, "c", "node-a", time.Minute)
	if err != nil || l.Token != 7 {
		t.Fatalf("node-a renewing its lease: %+v, %v; want token 7", l, err)
	}
	for _, k := range redistest.Keys(t, c, prefix) {
		ttl, err := c.PTTL(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl > 0 && ttl <= 50*time.Minute {
			t.Errorf("%s expires in %v, want none or about an hour or more", k, ttl)
		}
	}

	// The conversation goes on in the new layout.
	b := chatstore.NewBatch()
	if err := s.Memories().Update(chatstore.WithBatch(ctx, b), top, msgs("top 1", "top 2", "top 3")); err != nil {
		t.Fatal(err)
	}
	st := withTTL
	if err := s.Save(ctx, st, l, b); err != nil || st.Version != 4 {
		t.Fatalf("a save after the migration: version %d, %v", st.Version, err)
	}
	if got, err := s.Memories().Get(ctx, top); err != nil || len(got) != 3 {
		t.Fatalf("memory after a save: %v, %v", got, err)
	}

	// A second run finds nothing to move.
	if mig, err := s.MigrateFrom(ctx, oldPrefix); err != nil || mig != (redisstore.Migration{}) {
		t.Fatalf("a second MigrateFrom = %+v, %v; want nothing moved", mig, err)
	}
}
