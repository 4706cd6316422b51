// Package durable holds what the conversation stores (runtime/boltstore,
// runtime/redisstore, runtime/pgstore) share: the encoding of conversation states and of
// memory messages, and the staging of memory writes in a [chatstore.Batch].
package durable

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// FormatVersion is the version of the encoding of conversation states
// written by [EncodeState]. Every encoded state records it in its "format"
// field; [DecodeState] refuses a format it does not know, so a store
// written by a later version is never misread.
const FormatVersion = 1

// The JSON form of a state, format 1. Byte strings (beans, extra state,
// the token hash) are base64, so they are kept verbatim whatever they hold.
type stateJSON struct {
	Format          int               `json:"format"`
	ID              string            `json:"id"`
	Version         uint64            `json:"version"`
	Principal       string            `json:"principal,omitempty"`
	Created         time.Time         `json:"created"`
	Used            time.Time         `json:"used"`
	Scopes          []scopeJSON       `json:"scopes,omitempty"`
	ResumeTokenHash []byte            `json:"resume_token_hash,omitempty"`
	Extra           map[string][]byte `json:"extra,omitempty"`
}

type scopeJSON struct {
	ID       string            `json:"id"`
	Route    string            `json:"route"`
	Wipe     bool              `json:"wipe,omitempty"`
	Beans    map[string][]byte `json:"beans,omitempty"`
	Memories []string          `json:"memories,omitempty"`
}

// EncodeState encodes st as JSON, with version in place of st.Version.
func EncodeState(st *chatstore.ConversationState, version uint64) ([]byte, error) {
	return AppendState(make([]byte, 0, 512), st, version)
}

// AppendState appends the encoding of EncodeState to dst.
func AppendState(dst []byte, st *chatstore.ConversationState, version uint64) ([]byte, error) {
	if data, ok := appendState(dst, st, version); ok {
		return data, nil
	}
	data, err := marshalState(st, version)
	return append(dst, data...), err
}

// marshalState is EncodeState through encoding/json: the reference
// appendState is checked against (FuzzEncodeState), and the way to the
// error json.Marshal gives for what appendState refuses.
func marshalState(st *chatstore.ConversationState, version uint64) ([]byte, error) {
	j := stateJSON{
		Format:          FormatVersion,
		ID:              st.ID,
		Version:         version,
		Principal:       st.Principal,
		Created:         st.Created,
		Used:            st.Used,
		ResumeTokenHash: st.ResumeTokenHash,
		Extra:           st.Extra,
	}
	if len(st.Scopes) > 0 {
		j.Scopes = make([]scopeJSON, len(st.Scopes))
		for i, sc := range st.Scopes {
			j.Scopes[i] = scopeJSON{ID: sc.ID, Route: sc.Route, Wipe: sc.Wipe, Beans: sc.Beans, Memories: sc.Memories}
		}
	}
	data, err := json.Marshal(&j)
	if err != nil {
		return nil, fmt.Errorf("encoding conversation %q: %w", st.ID, err)
	}
	return data, nil
}

// DecodeState decodes a state written by [EncodeState]. The result shares
// nothing with data. Data that no save writes (broken JSON, "{}", "null")
// is an error matching [chatstore.ErrCorruptState]; a state of another
// format, one that does not.
func DecodeState(data []byte) (*chatstore.ConversationState, error) {
	var j stateJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("decoding a conversation: %w: %w", chatstore.ErrCorruptState, err)
	}
	if j.Format < 1 {
		// No save writes it: "{}", "null", or a format that never was.
		return nil, fmt.Errorf("decoding conversation %q: %w: format %d", j.ID, chatstore.ErrCorruptState, j.Format)
	}
	if j.Format != FormatVersion {
		return nil, fmt.Errorf("decoding conversation %q: format %d is not %d (written by another version of chatgen?)",
			j.ID, j.Format, FormatVersion)
	}
	st := &chatstore.ConversationState{
		ID:              j.ID,
		Version:         j.Version,
		Principal:       j.Principal,
		Created:         j.Created,
		Used:            j.Used,
		ResumeTokenHash: j.ResumeTokenHash,
		Extra:           j.Extra,
	}
	if len(j.Scopes) > 0 {
		st.Scopes = make([]chatstore.ScopeState, len(j.Scopes))
		for i, sc := range j.Scopes {
			st.Scopes[i] = chatstore.ScopeState{ID: sc.ID, Route: sc.Route, Wipe: sc.Wipe, Beans: sc.Beans, Memories: sc.Memories}
		}
	}
	return st, nil
}

// MemoryIDs returns the ids of the memories st lists, sorted, each once.
func MemoryIDs(st *chatstore.ConversationState) []string {
	var ids []string
	for _, sc := range st.Scopes {
		ids = append(ids, sc.Memories...)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// Dropped returns the ids of old not in cur; both are sorted.
func Dropped(old, cur []string) []string {
	var out []string
	for _, id := range old {
		if _, found := slices.BinarySearch(cur, id); !found {
			out = append(out, id)
		}
	}
	return out
}
