package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/chatscopes/chatgen/runtime/longterm"
)

// This file holds the long-term memory store (package runtime/longterm):
// the facts of one principal are one hash,
//
//	<prefix>facts:{<principal key>}   "rev" → the revision; "f:<id>" → the fact as JSON
//
// (the principal key is longterm.PrincipalKey, so any name makes a safe
// key, and the braces keep a principal on one cluster slot). Every write
// is one script, atomic with its cap checks, and sets the hash's expiry
// to FactsOptions.Retention: facts have their own retention, not the
// conversations' TTL.

// FactsOptions configures the long-term memory store of a [Store]; nil
// and the zero value mean the default caps and no retention.
type FactsOptions struct {
	// Limits are the caps of each principal's facts.
	Limits longterm.Limits
	// Retention, when positive, deletes a principal's facts that long
	// after the last write to them (a Redis expiry, in milliseconds); 0
	// keeps them until they are deleted.
	Retention time.Duration
}

// Facts is a [longterm.Store] in the Redis of a [Store], with its key
// prefix: each call is one round trip (Update two).
type Facts struct {
	c         redis.UniversalClient
	prefix    string
	limits    longterm.Limits
	retention time.Duration
}

var _ longterm.Store = (*Facts)(nil)

// Facts returns the long-term memory store next to s's conversations.
func (s *Store) Facts(opts *FactsOptions) (*Facts, error) {
	if opts == nil {
		opts = &FactsOptions{}
	}
	if opts.Retention < 0 {
		return nil, fmt.Errorf("redisstore: negative fact retention %v", opts.Retention)
	}
	return &Facts{c: s.c, prefix: s.prefix, limits: opts.Limits.WithDefaults(), retention: opts.Retention}, nil
}

func (f *Facts) key(principal string) string {
	return f.prefix + "facts:{" + longterm.PrincipalKey(principal) + "}"
}

func (f *Facts) retentionMS() int64 { return f.retention.Milliseconds() }

// factsPutSrc: KEYS[1] the hash; ARGV: first revision, cap, retention
// (ms), then id, JSON pairs.
const factsPutSrc = `
local n = redis.call('HLEN', KEYS[1])
local count = n
if n > 0 then count = n - 1 end
for i = 4, #ARGV, 2 do
  if redis.call('HEXISTS', KEYS[1], 'f:' .. ARGV[i]) == 1 then return redis.error_reply('LTM_EXISTS') end
end
if count + (#ARGV - 3) / 2 > tonumber(ARGV[2]) then return redis.error_reply('LTM_TOOMANY') end
for i = 4, #ARGV, 2 do redis.call('HSET', KEYS[1], 'f:' .. ARGV[i], ARGV[i + 1]) end
local rev
if n == 0 then
  rev = tonumber(ARGV[1])
  redis.call('HSET', KEYS[1], 'rev', ARGV[1])
else
  rev = redis.call('HINCRBY', KEYS[1], 'rev', 1)
end
if tonumber(ARGV[3]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return rev
`

// factsSetSrc: KEYS[1] the hash; ARGV: field, the JSON it must hold,
// the new JSON, retention (ms). It returns -1 when the field changed.
const factsSetSrc = `
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return -1 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
local rev = redis.call('HINCRBY', KEYS[1], 'rev', 1)
if tonumber(ARGV[4]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
return rev
`

// factsDeleteSrc: KEYS[1] the hash; ARGV: retention (ms), then fields.
const factsDeleteSrc = `
local removed = 0
for i = 2, #ARGV do removed = removed + redis.call('HDEL', KEYS[1], ARGV[i]) end
local rev = redis.call('HGET', KEYS[1], 'rev')
if rev == false then return 0 end
if removed == 0 then return tonumber(rev) end
if redis.call('HLEN', KEYS[1]) <= 1 then
  redis.call('DEL', KEYS[1])
  return 0
end
rev = redis.call('HINCRBY', KEYS[1], 'rev', 1)
if tonumber(ARGV[1]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return rev
`

var (
	factsPutScript    = redis.NewScript(factsPutSrc)
	factsSetScript    = redis.NewScript(factsSetSrc)
	factsDeleteScript = redis.NewScript(factsDeleteSrc)
)

// factsErr maps a script's error to the longterm errors.
func factsErr(err error) error {
	switch {
	case err == nil:
		return nil
	case strings.Contains(err.Error(), "LTM_EXISTS"):
		return longterm.ErrExists
	case strings.Contains(err.Error(), "LTM_TOOMANY"):
		return longterm.ErrTooManyFacts
	}
	return fmt.Errorf("redisstore: facts: %w", err)
}

// Put implements [longterm.Store.Put]: one script.
func (f *Facts) Put(ctx context.Context, principal string, facts ...longterm.Fact) (longterm.Revision, error) {
	if err := longterm.CheckPrincipal(principal); err != nil {
		return 0, err
	}
	stamped, err := f.limits.Stamp(time.Now(), facts)
	if err != nil {
		return 0, err
	}
	if len(stamped) == 0 {
		return f.Revision(ctx, principal)
	}
	if len(stamped) > f.limits.MaxFacts {
		return 0, longterm.ErrTooManyFacts
	}
	args := make([]any, 0, 3+2*len(stamped))
	args = append(args, uint64(longterm.FirstRevision()), f.limits.MaxFacts, f.retentionMS())
	for _, fact := range stamped {
		v, err := json.Marshal(fact)
		if err != nil {
			return 0, err
		}
		args = append(args, fact.ID, v)
	}
	rev, err := factsPutScript.Run(ctx, f.c, []string{f.key(principal)}, args...).Int64()
	if err != nil {
		return 0, factsErr(err)
	}
	return longterm.Revision(rev), nil
}

// Get implements [longterm.Store.Get].
func (f *Facts) Get(ctx context.Context, principal, id string) (longterm.Fact, error) {
	if err := longterm.CheckPrincipal(principal); err != nil {
		return longterm.Fact{}, err
	}
	v, err := f.c.HGet(ctx, f.key(principal), "f:"+id).Bytes()
	if errors.Is(err, redis.Nil) {
		return longterm.Fact{}, longterm.ErrNotFound
	}
	if err != nil {
		return longterm.Fact{}, factsErr(err)
	}
	var fact longterm.Fact
	if err := json.Unmarshal(v, &fact); err != nil {
		return longterm.Fact{}, fmt.Errorf("redisstore: a fact is corrupt: %w", err)
	}
	return fact, nil
}

// List implements [longterm.Store.List]: one HGETALL.
func (f *Facts) List(ctx context.Context, principal string) ([]longterm.Fact, longterm.Revision, error) {
	if err := longterm.CheckPrincipal(principal); err != nil {
		return nil, 0, err
	}
	all, err := f.c.HGetAll(ctx, f.key(principal)).Result()
	if err != nil {
		return nil, 0, factsErr(err)
	}
	if len(all) == 0 {
		return nil, 0, nil
	}
	rev, err := strconv.ParseUint(all["rev"], 10, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("redisstore: a principal's revision is corrupt: %w", err)
	}
	out := make([]longterm.Fact, 0, len(all)-1)
	for k, v := range all {
		if !strings.HasPrefix(k, "f:") {
			continue
		}
		var fact longterm.Fact
		if err := json.Unmarshal([]byte(v), &fact); err != nil {
			return nil, 0, fmt.Errorf("redisstore: a fact is corrupt: %w", err)
		}
		out = append(out, fact)
	}
	longterm.SortFacts(out)
	return out, longterm.Revision(rev), nil
}

// Update implements [longterm.Store.Update]: a read, then a script that
// writes only if the fact did not change meanwhile (retried if it did).
func (f *Facts) Update(ctx context.Context, principal string, fact longterm.Fact) (longterm.Revision, error) {
	if err := longterm.CheckPrincipal(principal); err != nil {
		return 0, err
	}
	if err := f.limits.CheckFact(fact); err != nil {
		return 0, err
	}
	key, field := f.key(principal), "f:"+fact.ID
	for {
		v, err := f.c.HGet(ctx, key, field).Result()
		if errors.Is(err, redis.Nil) {
			return 0, longterm.ErrNotFound
		}
		if err != nil {
			return 0, factsErr(err)
		}
		var old longterm.Fact
		if err := json.Unmarshal([]byte(v), &old); err != nil {
			return 0, fmt.Errorf("redisstore: a fact is corrupt: %w", err)
		}
		nv, err := json.Marshal(longterm.Updated(old, fact, time.Now()))
		if err != nil {
			return 0, err
		}
		rev, err := factsSetScript.Run(ctx, f.c, []string{key}, field, v, nv, f.retentionMS()).Int64()
		if err != nil {
			return 0, factsErr(err)
		}
		if rev >= 0 {
			return longterm.Revision(rev), nil
		}
	}
}

// Delete implements [longterm.Store.Delete]: one script.
func (f *Facts) Delete(ctx context.Context, principal string, ids ...string) (longterm.Revision, error) {
	if err := longterm.CheckPrincipal(principal); err != nil {
		return 0, err
	}
	args := make([]any, 0, 1+len(ids))
	args = append(args, f.retentionMS())
	for _, id := range ids {
		args = append(args, "f:"+id)
	}
	rev, err := factsDeleteScript.Run(ctx, f.c, []string{f.key(principal)}, args...).Int64()
	if err != nil {
		return 0, factsErr(err)
	}
	return longterm.Revision(rev), nil
}

// DeleteAll implements [longterm.Store.DeleteAll]: one DEL.
func (f *Facts) DeleteAll(ctx context.Context, principal string) error {
	if err := longterm.CheckPrincipal(principal); err != nil {
		return err
	}
	return factsErr(f.c.Del(ctx, f.key(principal)).Err())
}

// Revision implements [longterm.Store.Revision]: one HGET.
func (f *Facts) Revision(ctx context.Context, principal string) (longterm.Revision, error) {
	if err := longterm.CheckPrincipal(principal); err != nil {
		return 0, err
	}
	rev, err := f.c.HGet(ctx, f.key(principal), "rev").Uint64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, factsErr(err)
	}
	return longterm.Revision(rev), nil
}
