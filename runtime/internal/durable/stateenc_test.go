package durable

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// fuzzState builds a state from fuzzed parts: strings land in every string
// field, bytes in every byte field and map, n picks which optional fields
// are set, and sec/nsec/zone make the times.
func fuzzState(s string, b []byte, n uint8, sec int64, nsec int32, zone int32) *chatstore.ConversationState {
	loc := time.FixedZone("z", int(zone))
	t := time.Unix(sec, int64(nsec)).In(loc)
	parts := strings.SplitN(s, "|", 4)
	for len(parts) < 4 {
		parts = append(parts, "")
	}
	st := &chatstore.ConversationState{ID: parts[0], Version: uint64(n), Created: t, Used: t.Add(time.Duration(nsec))}
	if n&1 != 0 {
		st.Principal = parts[1]
	}
	if n&2 != 0 {
		st.ResumeTokenHash = b
	}
	if n&4 != 0 {
		st.Extra = map[string][]byte{parts[2]: b, parts[3]: nil, "": {}}
	}
	for i := range int(n>>3) % 4 {
		sc := chatstore.ScopeState{ID: parts[i], Route: parts[(i+1)%4], Wipe: i%2 == 1}
		if n&16 != 0 {
			sc.Beans = map[string][]byte{parts[(i+2)%4]: b, "b": []byte(parts[3])}
		}
		if n&32 != 0 {
			sc.Memories = []string{parts[(i+3)%4], s}
		}
		if n&64 != 0 {
			sc.Memories = []string{} // empty, not nil: omitted all the same
		}
		st.Scopes = append(st.Scopes, sc)
	}
	return st
}

// FuzzEncodeState checks that EncodeState writes what json.Marshal writes
// for the same state, and fails where it fails.
func FuzzEncodeState(f *testing.F) {
	f.Add("c1|alice|<k>|&", []byte("bean"), uint8(0xff), int64(1795000000), int32(123456789), int32(3600))
	f.Add("", []byte(nil), uint8(0), int64(0), int32(0), int32(0))
	f.Add("\xff\u2028|\"q\"|\\|\x00", []byte{0, 1, 2}, uint8(0x7e), int64(-62135596800), int32(1), int32(-5400))
	f.Add("far", []byte{}, uint8(3), int64(253402300800), int32(0), int32(0))    // year 10000
	f.Add("zone", []byte{}, uint8(3), int64(1795000000), int32(0), int32(86400)) // offset of a day
	f.Fuzz(func(t *testing.T, s string, b []byte, n uint8, sec int64, nsec int32, zone int32) {
		st := fuzzState(s, b, n, sec, nsec, zone)
		want, wantErr := marshalState(st, uint64(n)+1)
		got, err := EncodeState(st, uint64(n)+1)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("EncodeState error %v, json.Marshal error %v", err, wantErr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("EncodeState:\n%s\njson.Marshal:\n%s", got, want)
		}
	})
}

func BenchmarkEncodeState(b *testing.B) {
	st := fuzzState("c1|alice|k|m", []byte(`{"items":["sword"],"total":12.5}`), 0xff&^64, 1795000000, 123456789, 3600)
	b.Run("appendState", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := EncodeState(st, 2); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := marshalState(st, 2); err != nil {
				b.Fatal(err)
			}
		}
	})
}
