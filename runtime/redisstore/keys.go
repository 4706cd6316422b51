package redisstore

import (
	"errors"
	"strings"
)

// The key layout (see the package documentation): every key of a
// conversation carries the conversation's id as its hash tag, so that a
// Redis Cluster keeps them, and the conversation's memories, in one slot,
// and spreads the conversations over its masters.

// tagEscaper escapes what may not appear inside a hash tag: "}" would end
// it early, and "%" is the escape character.
var (
	tagEscaper   = strings.NewReplacer("%", "%25", "}", "%7D")
	tagUnescaper = strings.NewReplacer("%25", "%", "%7D", "}")
)

// convPrefix returns the prefix of the keys of conversation id:
// "<prefix>c{<id>}:".
func (s *Store) convPrefix(id string) string {
	return s.prefix + "c{" + tagEscaper.Replace(id) + "}:"
}

// convKey returns the key of conversation id of the kind: "conv",
// "mids", "lease" or "fence".
func (s *Store) convKey(id, kind string) string {
	return s.prefix + "c{" + tagEscaper.Replace(id) + "}:" + kind
}

// convKeys returns the keys save.lua and delete.lua take, in order.
func (s *Store) convKeys(id string) []string {
	tag := tagEscaper.Replace(id)
	return []string{s.prefix + "c{" + tag + "}:conv", s.prefix + "c{" + tag + "}:mids",
		s.prefix + "c{" + tag + "}:lease", s.prefix + "c{" + tag + "}:fence"}
}

// memPrefix returns the prefix of the keys of the memories of
// conversation id: a memory's key is the prefix and the memory's id.
func (s *Store) memPrefix(conv string) string { return s.convPrefix(conv) + "mem:" }

// soloKey returns the key of the messages of memory id when it lives
// outside any conversation: "<prefix>m{<id>}:mem".
func (s *Store) soloKey(id string) string { return s.prefix + "m{" + tagEscaper.Replace(id) + "}:mem" }

// homeKey returns the key that names the conversation memory id lives in:
// "<prefix>m{<id>}:home".
func (s *Store) homeKey(id string) string { return s.prefix + "m{" + tagEscaper.Replace(id) + "}:home" }

// memoryID returns the memory id of key, a memory key of the store, and
// whether key is one.
func (s *Store) memoryID(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, s.prefix)
	if !ok {
		return "", false
	}
	if tag, ok := strings.CutPrefix(rest, "m{"); ok {
		id, ok := strings.CutSuffix(tag, "}:mem")
		if !ok || strings.Contains(id, "}") {
			return "", false
		}
		return tagUnescaper.Replace(id), true
	}
	tag, ok := strings.CutPrefix(rest, "c{")
	if !ok {
		return "", false
	}
	_, after, ok := strings.Cut(tag, "}")
	if !ok {
		return "", false
	}
	return strings.CutPrefix(after, ":mem:")
}

// errPrefixTag is the error of a prefix with a hash tag.
var errPrefixTag = errors.New(`redisstore: the prefix has a "{" or "}": the store gives each conversation a hash tag of its own, and a tag in the prefix would put every key in one slot`)
