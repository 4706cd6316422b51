package redistest_test

import (
	"fmt"
	"testing"

	"github.com/chatscopes/chatgen/internal/redistest"
)

// TestStartCluster starts a cluster of three masters with a replica each,
// checks that a key goes to the master KeySlot and MasterOf name, and that
// the cluster's own CLUSTER KEYSLOT agrees with KeySlot; then kills a
// master, whose replica takes its slots over with their keys, and restarts
// it as that replica's replica.
func TestStartCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server processes")
	}
	c := redistest.StartCluster(t, 3, 1)
	ctx := t.Context()
	cc := c.Client(t)
	masters, err := c.Masters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(masters) != 3 {
		t.Fatalf("%d masters: %v", len(masters), masters)
	}
	for i := range 50 {
		key := fmt.Sprintf("k{%d}x", i)
		slot, err := cc.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if int(slot) != redistest.KeySlot(key) {
			t.Fatalf("KeySlot(%q) = %d, Redis says %d", key, redistest.KeySlot(key), slot)
		}
		if err := cc.Set(ctx, key, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		m, err := c.MasterOf(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := m.Client(t).Exists(ctx, key).Result(); err != nil || n != 1 {
			t.Fatalf("%s is not on %s, its master: %d, %v", key, m.Addr, n, err)
		}
	}
	// WAIT tells that the key reached the replica before the kill.
	key := "k{0}x"
	old, err := c.MasterOf(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := old.Client(t).Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT 1: %d, %v", n, err)
	}
	old.Kill()
	if err := c.WaitOK(ctx); err != nil {
		t.Fatal(err)
	}
	promoted, err := c.MasterOf(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if promoted == old || promoted.Master != old.Addr {
		t.Fatalf("slot of %s served by %s after %s was killed, want its replica", key, promoted.Addr, old.Addr)
	}
	if v, err := promoted.Client(t).Get(ctx, key).Result(); err != nil || v != "v" {
		t.Fatalf("%s on the promoted replica: %q, %v", key, v, err)
	}
	if err := old.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReplica(ctx, old); err != nil {
		t.Fatal(err)
	}
}
