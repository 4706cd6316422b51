package durable

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chatstore"
)

func TestStagedRoundTrip(t *testing.T) {
	for _, s := range []Staged{
		{Replace: true, List: [][]byte{[]byte(`{"a":1}`), {}}},
		{BaseLen: -1, Drop: 3, Head: [][]byte{[]byte("h")}, Tail: [][]byte{[]byte("t1"), []byte("t2")}},
		{BaseLen: 7, Drop: 7},
	} {
		got, err := UnmarshalStaged(s.Marshal())
		if err != nil {
			t.Fatalf("%+v: %v", s, err)
		}
		if got.Replace != s.Replace || got.BaseLen != s.BaseLen || got.Drop != s.Drop ||
			!equalElems(got.List, s.List) || !equalElems(got.Head, s.Head) || !equalElems(got.Tail, s.Tail) {
			t.Fatalf("round trip of %+v = %+v", s, got)
		}
	}
}

func equalElems(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// TestUnmarshalStagedCorrupt feeds every prefix and a few mutations of
// valid values: each is an error, never a panic or a misread.
func TestUnmarshalStagedCorrupt(t *testing.T) {
	valid := []Staged{
		{Replace: true, List: [][]byte{[]byte("abc"), []byte("de")}},
		{BaseLen: 4, Drop: 2, Head: [][]byte{[]byte("h")}, Tail: [][]byte{[]byte("tail")}},
	}
	for _, s := range valid {
		v := s.Marshal()
		for i := range len(v) {
			if _, err := UnmarshalStaged(v[:i]); err == nil {
				t.Errorf("prefix %q of %q decoded", v[:i], v)
			}
		}
		if _, err := UnmarshalStaged(append(v, 0)); err == nil {
			t.Errorf("%q with a trailing byte decoded", v)
		}
	}
	for _, v := range []string{"X", "E\x01\x04", "R\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"} {
		if _, err := UnmarshalStaged([]byte(v)); err == nil {
			t.Errorf("%q decoded", v)
		}
	}
	// A drop beyond the recorded stored length is corrupt.
	bad := (&Staged{BaseLen: 1, Drop: 1}).Marshal()
	bad[2] = 4 // drop 4
	if _, err := UnmarshalStaged(bad); err == nil {
		t.Errorf("an edit dropping more than its stored length decoded")
	}
}

func TestCheck(t *testing.T) {
	edit := Staged{BaseLen: -1, Drop: 2}
	if err := edit.Check("m", 2); err != nil {
		t.Fatal(err)
	}
	err := edit.Check("m", 1)
	if !errors.Is(err, ErrChanged) || !errors.Is(err, chatstore.ErrVersionConflict) || !strings.Contains(err.Error(), `"m" holds 1`) {
		t.Fatalf("Check of a too short list: %v", err)
	}
	known := Staged{BaseLen: 3, Drop: 1}
	if err := known.Check("m", 4); !errors.Is(err, ErrChanged) {
		t.Fatalf("Check of a list that grew: %v", err)
	}
}

func TestDecodeStateFormat(t *testing.T) {
	data, err := EncodeState(&chatstore.ConversationState{ID: "c"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	st, err := DecodeState(data)
	if err != nil || st.ID != "c" || st.Version != 3 {
		t.Fatalf("DecodeState = %+v, %v", st, err)
	}
	newer := bytes.Replace(data, []byte(`"format":1`), []byte(`"format":2`), 1)
	if _, err := DecodeState(newer); err == nil || !strings.Contains(err.Error(), "format 2") {
		t.Fatalf("DecodeState of format 2: %v", err)
	}
	if _, err := DecodeState(newer); errors.Is(err, chatstore.ErrCorruptState) {
		t.Fatalf("DecodeState of format 2 is corrupt state, want a format error: %v", err)
	}
	for _, poisoned := range []string{"{", "{}", "null", `{"format":0}`, `{"format":-1,"id":"c"}`} {
		if _, err := DecodeState([]byte(poisoned)); !errors.Is(err, chatstore.ErrCorruptState) {
			t.Errorf("DecodeState(%s): %v, want ErrCorruptState", poisoned, err)
		}
	}
}
