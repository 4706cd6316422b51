package gen

// The types TestJSONWalker gives both to the walker (type-checking this
// file alone) and to encoding/json (compiled into the test). This file
// uses only the standard library, so that it type-checks by itself.

//lint:file-ignore SA5008 the tags are odd on purpose: encoding/json's handling of them is what the walker must match
//lint:file-ignore U1000 unexported fields are there for encoding/json to skip

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

type jcBasic struct {
	B       bool
	I       int
	U8      uint8
	P       uintptr
	F       float64
	S       string
	hidden  int
	Skipped int `json:"-"`
	Dash    int `json:"-,"`
	Renamed int `json:"renamed"`
	Invalid int `json:"back\\slash"`
	Punct   int `json:"a-b.c"`
	Empty   int `json:",omitempty"`
	Unicode int `json:"é"`
}

type jcZeroer struct{ N int }

func (z jcZeroer) IsZero() bool { return z.N == 7 }

type jcOmit struct {
	Ptr      *int           `json:",omitempty"`
	Slice    []int          `json:",omitempty"`
	Map      map[string]int `json:",omitempty"`
	Struct   jcZeroer       `json:",omitempty"`
	Array0   [0]int         `json:",omitempty"`
	Array2   [2]int         `json:",omitempty"`
	Iface    any            `json:",omitempty"`
	ZPtr     *int           `json:",omitzero"`
	ZSlice   []int          `json:",omitzero"`
	ZStruct  jcZeroer       `json:",omitzero"`
	Both     string         `json:"both,omitempty,omitzero"`
	Nullable *int
	NilSlice []int
	NilMap   map[string]int
}

type jcQuoted struct {
	I     int            `json:",string"`
	IP    *int           `json:",string"`
	B     bool           `json:",string"`
	S     string         `json:",string"`
	F     float64        `json:",string"`
	OmitP *int           `json:",string,omitempty"`
	Text  jcText         `json:",string"`
	JSON  jcJSONInt      `json:",string"`
	Slice []int          `json:",string"`
	Inner jcZeroer       `json:",string"`
	Map   map[string]int `json:",string"`
}

// JCEmbedA and JCEmbedB both have X: embedded side by side they hide it.
type JCEmbedA struct{ X, Y int }

type JCEmbedB struct {
	X int
	Z int `json:"z"`
}

type jcEmbedConflict struct {
	JCEmbedA
	JCEmbedB
}

// A field at a shallower depth wins over promoted ones.
type jcEmbedShallow struct {
	JCEmbedA
	X string
}

type JCTaggedN struct {
	N int `json:"N"`
}

type JCUntaggedN struct{ N string }

// At the same depth the tagged field wins.
type jcEmbedTagged struct {
	JCUntaggedN
	JCTaggedN
}

type JCWrapA struct{ JCEmbedA }

type JCWrapB struct{ JCEmbedA }

// JCEmbedA embedded twice at the same depth: its fields annihilate.
type jcEmbedTwice struct {
	JCWrapA
	JCWrapB
	W int
}

type jcEmbedPtr struct {
	*JCEmbedA
	K int
}

type jcinner struct{ Promoted int }

type jcname string

type JCName string

type jcEmbedUnexported struct {
	jcinner
	jcname
	JCName
}

type jcinnerPtr struct{ Through int }

type jcEmbedUnexportedPtr struct {
	*jcinnerPtr
	Own int
}

type jcEmbedTaggedStruct struct {
	JCEmbedA `json:"inner"`
	*JCName
}

type JCCycle struct {
	*JCCycle
	N int
}

type jcNode struct {
	Name string
	Next *jcNode  `json:",omitempty"`
	Kids []jcNode `json:"kids"`
	Tags map[string]*jcNode
}

// jcJSON has its own JSON form: any JSON.
type jcJSON struct{ hidden int }

func (jcJSON) MarshalJSON() ([]byte, error)  { return []byte(`[1,"two",{"three":3}]`), nil }
func (*jcJSON) UnmarshalJSON(b []byte) error { return nil }

type jcJSONInt int

func (jcJSONInt) MarshalJSON() ([]byte, error)  { return []byte(`{"n":1}`), nil }
func (*jcJSONInt) UnmarshalJSON(b []byte) error { return nil }

// jcText is written as a string.
type jcText struct{ A, B int }

func (t jcText) MarshalText() ([]byte, error) { return fmt.Appendf(nil, "%d-%d", t.A, t.B), nil }
func (t *jcText) UnmarshalText(b []byte) error {
	fmt.Sscanf(string(b), "%d-%d", &t.A, &t.B) // any text will do
	return nil
}

// jcPtrText has MarshalText on its pointer only: a string when
// addressable, an object otherwise.
type jcPtrText struct{ A int }

func (t *jcPtrText) MarshalText() ([]byte, error) { return fmt.Appendf(nil, "%d", t.A), nil }
func (t *jcPtrText) UnmarshalText(b []byte) error {
	fmt.Sscanf(string(b), "%d", &t.A) // any text will do
	return nil
}

// jcByteText is a byte with a text form: a slice of them is an array.
type jcByteText byte

func (b jcByteText) MarshalText() ([]byte, error) { return []byte{'a' + byte(b)}, nil }
func (b *jcByteText) UnmarshalText(t []byte) error {
	*b = jcByteText(len(t)) // any text will do
	return nil
}

type jcByte byte

type jcWellKnown struct {
	T    time.Time
	TP   *time.Time
	D    time.Duration
	N    json.Number
	Raw  json.RawMessage
	Opt  *time.Time `json:",omitempty"`
	Text *jcText
}

type jcCollections struct {
	Bytes      []byte
	NamedBytes []jcByte
	ByteText   []jcByteText
	Array      [4]byte
	Ints       []int
	StrMap     map[string]int
	IntMap     map[int]string
	TextMap    map[jcText]int
	Nested     [][]string
	PtrText    []jcPtrText
	PtrTextMap map[string]jcPtrText
}

type jcIfaces struct {
	Any    any
	Err    error
	String fmt.Stringer
}

type jcStringer struct{ S string }

func (s jcStringer) String() string { return s.S }

type jcFunc struct {
	F func()
}

type jcChan struct {
	C chan int
}

type jcComplex struct {
	C complex128
}

type jcBadKey struct {
	M map[bool]int
}

type jcPtrTextKey struct {
	M map[jcPtrText]int
}

type jcColor string

const (
	jcRed  jcColor = "red"
	jcBlue jcColor = "blue"
)

type jcGeneric[T any] struct {
	V    T
	List []T
}

// jsonWalkerCases are the values TestJSONWalker marshals and unmarshals:
// typ is the Go type, as the walker sees it; value points to a value of
// that type (nil values and zero values included).
var jsonWalkerCases = []struct {
	typ   string
	value any
}{
	{"jcBasic", &jcBasic{B: true, I: -1, U8: 2, P: 3, F: 1.5, S: "s", hidden: 1, Skipped: 1, Dash: 1, Renamed: 1, Invalid: 1, Punct: 1, Empty: 1, Unicode: 1}},
	{"jcBasic", &jcBasic{}},
	{"jcOmit", &jcOmit{}},
	{"jcOmit", &jcOmit{Ptr: new(int), Slice: []int{}, Map: map[string]int{}, Struct: jcZeroer{7}, Iface: 0, ZPtr: new(int), ZSlice: []int{}, ZStruct: jcZeroer{1}, Both: "x", Nullable: new(int), NilSlice: []int{1}, NilMap: map[string]int{"a": 1}}},
	{"jcOmit", &jcOmit{Slice: []int{1}, Map: map[string]int{"a": 1}, Struct: jcZeroer{1}, ZStruct: jcZeroer{7}}},
	{"jcQuoted", &jcQuoted{}},
	{"jcQuoted", &jcQuoted{I: 1, IP: new(int), B: true, S: `"q"`, F: 2.5, OmitP: new(int), Text: jcText{1, 2}, JSON: 3, Slice: []int{1}, Inner: jcZeroer{1}, Map: map[string]int{"a": 1}}},
	{"jcEmbedConflict", &jcEmbedConflict{JCEmbedA{1, 2}, JCEmbedB{3, 4}}},
	{"jcEmbedShallow", &jcEmbedShallow{JCEmbedA{1, 2}, "x"}},
	{"jcEmbedTagged", &jcEmbedTagged{JCUntaggedN{"u"}, JCTaggedN{1}}},
	{"jcEmbedTwice", &jcEmbedTwice{JCWrapA{JCEmbedA{1, 2}}, JCWrapB{JCEmbedA{3, 4}}, 5}},
	{"jcEmbedPtr", &jcEmbedPtr{K: 1}},
	{"jcEmbedPtr", &jcEmbedPtr{JCEmbedA: &JCEmbedA{1, 2}, K: 1}},
	{"jcEmbedUnexported", &jcEmbedUnexported{jcinner{1}, "n", "N"}},
	{"jcEmbedUnexportedPtr", &jcEmbedUnexportedPtr{Own: 1}},
	{"jcEmbedUnexportedPtr", &jcEmbedUnexportedPtr{&jcinnerPtr{2}, 1}},
	{"jcEmbedTaggedStruct", &jcEmbedTaggedStruct{JCEmbedA{1, 2}, nil}},
	{"jcEmbedTaggedStruct", &jcEmbedTaggedStruct{JCEmbedA{1, 2}, new(JCName)}},
	{"JCCycle", &JCCycle{&JCCycle{nil, 2}, 1}},
	{"jcNode", &jcNode{Name: "a", Next: &jcNode{Name: "b"}, Kids: []jcNode{{Name: "c"}}, Tags: map[string]*jcNode{"t": {Name: "d"}, "nil": nil}}},
	{"jcJSON", &jcJSON{}},
	{"*jcJSON", new(*jcJSON)},
	{"jcText", &jcText{1, 2}},
	{"*jcText", new(*jcText)},
	{"jcPtrText", &jcPtrText{1}},
	{"*jcPtrText", func() **jcPtrText { p := &jcPtrText{2}; return &p }()},
	{"[]jcPtrText", &[]jcPtrText{{1}}},
	{"map[string]jcPtrText", &map[string]jcPtrText{"a": {1}}},
	{"jcWellKnown", &jcWellKnown{T: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), D: time.Second, N: "12.5", Raw: json.RawMessage(`{"any":[1]}`), Text: &jcText{1, 2}}},
	{"jcWellKnown", &jcWellKnown{N: "1", Raw: json.RawMessage(`null`)}},
	{"jcCollections", &jcCollections{Bytes: []byte("hi"), NamedBytes: []jcByte{1, 2}, ByteText: []jcByteText{1, 2}, Array: [4]byte{1, 2, 3, 4}, Ints: []int{1}, StrMap: map[string]int{"a": 1}, IntMap: map[int]string{-1: "a"}, TextMap: map[jcText]int{{1, 2}: 3}, Nested: [][]string{{"a"}, nil}, PtrText: []jcPtrText{{1}}, PtrTextMap: map[string]jcPtrText{"a": {1}}}},
	{"jcCollections", &jcCollections{}},
	{"jcIfaces", &jcIfaces{Any: map[string]any{"a": []any{1.0}}, Err: errors.New("e"), String: jcStringer{"s"}}},
	{"jcIfaces", &jcIfaces{}},
	{"jcFunc", &jcFunc{}},
	{"jcChan", &jcChan{}},
	{"jcComplex", &jcComplex{}},
	{"jcBadKey", &jcBadKey{}},
	{"jcPtrTextKey", &jcPtrTextKey{M: map[jcPtrText]int{{1}: 2}}},
	{"jcColor", func() *jcColor { c := jcRed; return &c }()},
	{"jcGeneric[jcColor]", &jcGeneric[jcColor]{V: jcBlue, List: []jcColor{jcRed}}},
	{"[]byte", &[]byte{1}},
	{"[2]jcText", &[2]jcText{{1, 2}, {3, 4}}},
	{"map[int8]uint", &map[int8]uint{-1: 1}},
	{"*int", new(*int)},
	{"any", new(any)},
	{"error", new(error)},
	{"func()", new(func())},
	{"complex64", new(complex64)},
	{"map[float64]int", &map[float64]int{1: 1}},
	{"string", func() *string { s := strings.Repeat("x", 3); return &s }()},
}
