package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chatscopes/chatgen/runtime/boltstore"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/longterm"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/redisstore"
	"github.com/redis/go-redis/v9"
)

// The builders' beans are durable (//chat:scoped durable): a conversation
// resumed after a restart finds the weapon, the armour and the runes where
// the player left them. Their dependencies (the armory, the workbench
// proxy) are not state: the constructor gives them, and the JSON carries
// only what the player built.

// MarshalJSON saves the weapon on the workbench.
func (w *Workbench) MarshalJSON() ([]byte, error) { return json.Marshal(w.weapon) }

// UnmarshalJSON restores the weapon on the workbench.
func (w *Workbench) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &w.weapon) }

// MarshalJSON saves the armour on the anvil.
func (a *Anvil) MarshalJSON() ([]byte, error) { return json.Marshal(a.armor) }

// UnmarshalJSON restores the armour on the anvil.
func (a *Anvil) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &a.armor) }

// MarshalJSON saves the enchantment being prepared.
func (r *Runes) MarshalJSON() ([]byte, error) { return json.Marshal(r.enchantment) }

// UnmarshalJSON restores the enchantment being prepared.
func (r *Runes) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &r.enchantment) }

// conversationTTL is how long a conversation nobody comes back to is kept.
const conversationTTL = 7 * 24 * time.Hour

// factRetention is how long what the armorer knows of a player is kept
// after the player last told it something: their own retention, not the
// conversations' TTL.
const factRetention = 365 * 24 * time.Hour

// storage is where conversations and the AI services' chat memories are
// kept: one store, so that a turn's memory writes are committed with its
// state; and, beside them, what the armorer remembers of each player
// across conversations (facts). The zero storage keeps conversations in
// the process only, and facts nowhere (newApp then keeps them in the
// process).
type storage struct {
	conversations chatstore.ConversationStore
	memories      memory.Store
	facts         longterm.Store
	where         string        // for the start-up message
	leaseTTL      time.Duration // how long another server waits for a crashed one (0: the router's default)
}

// storageFlags says where conversations are kept.
type storageFlags struct {
	data        string        // the bbolt file ("": in memory)
	redisAddr   string        // a Redis address, or a cluster's comma-separated seed addresses: several servers share it (wins over data)
	redisPrefix string        // the prefix of the Redis keys
	lease       time.Duration // the lease on a conversation (0: the default)
}

// defaultDataFile is the data file `make demo` uses: in the user's cache
// directory, so that no set-up is needed and the repository stays clean.
func defaultDataFile() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "chatgen", "weaponbuilder.db")
}

// openStorage opens the store f names: Redis, or the bbolt data file
// (creating its directory), or none (in the process) when f.data is "".
// close closes it.
func openStorage(f storageFlags) (s storage, close func() error, err error) {
	s, close, err = openStore(f)
	s.leaseTTL = f.lease
	return s, close, err
}

func openStore(f storageFlags) (s storage, close func() error, err error) {
	if f.redisAddr != "" {
		// One address is a Redis server; several, the seed nodes of a
		// Redis Cluster (the universal client then speaks cluster).
		client := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: strings.Split(f.redisAddr, ",")})
		rs, err := redisstore.New(client, &redisstore.Options{Prefix: f.redisPrefix, TTL: conversationTTL})
		if err != nil {
			client.Close()
			return storage{}, nil, err
		}
		facts, err := rs.Facts(&redisstore.FactsOptions{Retention: factRetention})
		if err != nil {
			client.Close()
			return storage{}, nil, err
		}
		return storage{conversations: rs, memories: rs.Memories(), facts: facts, where: "in Redis at " + f.redisAddr + " (keys " + rs.Prefix() + "*)"}, client.Close, nil
	}
	path := f.data
	if path == "" {
		return storage{where: "in memory (they end with the process)"}, func() error { return nil }, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return storage{}, nil, fmt.Errorf("creating the data directory: %w", err)
	}
	db, err := boltstore.Open(path, &boltstore.Options{TTL: conversationTTL})
	if err != nil {
		return storage{}, nil, err
	}
	facts, err := db.Facts(&boltstore.FactsOptions{Retention: factRetention})
	if err != nil {
		db.Close()
		return storage{}, nil, err
	}
	return storage{conversations: db, memories: db.Memories(), facts: facts, where: "in " + path}, db.Close, nil
}
