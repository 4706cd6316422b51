package durable_test

import (
	"context"
	"testing"
)

// TestRoundTripsPerTurn counts the round trips a durable turn makes to
// Redis, to a Redis Cluster of three masters and to PostgreSQL: a turn of
// the "count" route (a durable bean), and turns of the "ask" route (an AI
// turn whose window memory of 20 messages is in the store) before the
// window is full and after, when each turn evicts two messages (from the
// tenth turn on). The first turn of a session (it creates the
// conversation) and the first that evicts are left out. Goals: Redis one
// round trip per turn, evicting or not (the window memory knows its
// length, memory.Change.Len, so nothing is read before the save),
// PostgreSQL at most two (a pooled connection may prepare its statements
// on first use).
func TestRoundTripsPerTurn(t *testing.T) {
	tests := []struct {
		name string
		open func(testing.TB) backend
		// the most round trips per turn allowed: without eviction, with
		want, wantEvicting float64
	}{
		{"redis", openRedis, 1, 1},
		{"redis-cluster", openRedisCluster, 1, 1},
		{"postgres", openPostgres, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "redis-cluster" && testing.Short() {
				t.Skip("starts a Redis Cluster")
			}
			store := tt.open(t)
			_, client, _ := newClient(t, store)
			ctx := context.Background()
			// perTurn runs n turns of s and returns their round trips per turn.
			perTurn := func(chat func(context.Context, string) error, n int) float64 {
				t.Helper()
				start := store.trips.N()
				for range n {
					if err := chat(ctx, "Weather in Paris?"); err != nil {
						t.Fatal(err)
					}
				}
				return float64(store.trips.N()-start) / float64(n)
			}
			count, err := client.Builder().OnMessage(func(string) {}).Connect(ctx, "count")
			if err != nil {
				t.Fatal(err)
			}
			defer count.Close()
			perTurn(count.Chat, 1) // the first turn
			bean := perTurn(count.Chat, 10)

			ask, err := client.Builder().OnMessage(func(string) {}).Connect(ctx, "ask")
			if err != nil {
				t.Fatal(err)
			}
			defer ask.Close()
			perTurn(ask.Chat, 1)
			filling := perTurn(ask.Chat, 8) // turns 2 to 9: the window fills
			// The first turn that evicts also prepares PostgreSQL's
			// statements for it (a round trip more, once per connection).
			perTurn(ask.Chat, 1)
			evicting := perTurn(ask.Chat, 10)
			t.Logf("round trips per turn: durable bean %.2f, AI turn %.2f (%.2f when its memory evicts)", bean, filling, evicting)
			if bean > tt.want || filling > tt.want {
				t.Errorf("round trips per turn without eviction: durable bean %.2f, AI turn %.2f; want at most %v", bean, filling, tt.want)
			}
			if evicting > tt.wantEvicting {
				t.Errorf("round trips per AI turn whose memory evicts: %.2f, want at most %v", evicting, tt.wantEvicting)
			}
		})
	}
}
