package durable

import (
	"encoding/base64"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/internal/jsonstr"
)

// appendState appends the JSON json.Marshal writes for the stateJSON of st
// at version, byte for byte, without reflection: a save encodes its state
// on every turn. It reports false, leaving the work to json.Marshal, for
// what json.Marshal refuses (a time it cannot write).
func appendState(dst []byte, st *chatstore.ConversationState, version uint64) ([]byte, bool) {
	dst = append(dst, `{"format":`...)
	dst = strconv.AppendInt(dst, FormatVersion, 10)
	dst = append(dst, `,"id":`...)
	dst = jsonstr.Append(dst, st.ID)
	dst = append(dst, `,"version":`...)
	dst = strconv.AppendUint(dst, version, 10)
	if st.Principal != "" {
		dst = append(dst, `,"principal":`...)
		dst = jsonstr.Append(dst, st.Principal)
	}
	var ok bool
	dst = append(dst, `,"created":`...)
	if dst, ok = appendTime(dst, st.Created); !ok {
		return dst, false
	}
	dst = append(dst, `,"used":`...)
	if dst, ok = appendTime(dst, st.Used); !ok {
		return dst, false
	}
	if len(st.Scopes) > 0 {
		dst = append(dst, `,"scopes":[`...)
		for i, sc := range st.Scopes {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"id":`...)
			dst = jsonstr.Append(dst, sc.ID)
			dst = append(dst, `,"route":`...)
			dst = jsonstr.Append(dst, sc.Route)
			if sc.Wipe {
				dst = append(dst, `,"wipe":true`...)
			}
			if len(sc.Beans) > 0 {
				dst = append(dst, `,"beans":`...)
				dst = appendBytesMap(dst, sc.Beans)
			}
			if len(sc.Memories) > 0 {
				dst = append(dst, `,"memories":[`...)
				for j, m := range sc.Memories {
					if j > 0 {
						dst = append(dst, ',')
					}
					dst = jsonstr.Append(dst, m)
				}
				dst = append(dst, ']')
			}
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if len(st.ResumeTokenHash) > 0 {
		dst = append(dst, `,"resume_token_hash":`...)
		dst = appendBytes(dst, st.ResumeTokenHash)
	}
	if len(st.Extra) > 0 {
		dst = append(dst, `,"extra":`...)
		dst = appendBytesMap(dst, st.Extra)
	}
	return append(dst, '}'), true
}

// appendTime appends t as time.Time's MarshalJSON does, and reports false
// where MarshalJSON fails: a year outside [0, 9999] or a zone offset of a
// day or more.
func appendTime(dst []byte, t time.Time) ([]byte, bool) {
	if y := t.Year(); y < 0 || y > 9999 {
		return dst, false
	}
	if _, off := t.Zone(); off <= -24*60*60 || off >= 24*60*60 {
		return dst, false
	}
	dst = append(dst, '"')
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	return append(dst, '"'), true
}

// appendBytes appends b as encoding/json writes a []byte: null for nil,
// else a string of its standard base64.
func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

// appendBytesMap appends m as encoding/json writes a map[string][]byte:
// its keys sorted.
func appendBytesMap(dst []byte, m map[string][]byte) []byte {
	dst = append(dst, '{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(dst, k)
		dst = append(dst, ':')
		dst = appendBytes(dst, m[k])
	}
	return append(dst, '}')
}
