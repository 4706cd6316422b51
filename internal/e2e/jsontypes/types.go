// Package jsontypes holds routes whose parameters and results are the Go
// types encoding/json treats in special ways: recursive and generic
// types, embedded structs (by value, by pointer, unexported, tagged, seen
// twice), json tag options, byte slices and arrays, raw JSON, interfaces,
// durations, times, types of other packages and types with their own
// marshalers. The tests check the JSON Schemas of the generated manifest
// against what encoding/json really writes, and the TypeScript declarations
// runtime/ws makes of them against tsc --strict.
package jsontypes

import (
	"encoding/json"
	"image"
	"net/netip"
	"strings"
	"time"
)

//go:generate go tool chatgen

// Level is a log level.
type Level string

// The levels.
const (
	Debug Level = "debug"
	Info  Level = "info"
)

// Priority is a priority, as a number.
type Priority int

// The priorities.
const (
	Low Priority = iota + 1
	High
)

// Octet is a byte of its own type: a slice of them is still base64.
type Octet uint8

// Tree is recursive, through a slice and through a pointer.
type Tree struct {
	Name     string  `json:"name"`
	Children []*Tree `json:"children"`
	Parent   *Tree   `json:"parent,omitempty"`
}

// Base is embedded by pointer.
type Base struct {
	ID   int `json:"id"`
	Note string
}

// Meta is embedded by value.
type Meta struct {
	Tags []string `json:"tags"`
}

// hidden is an unexported struct embedded by value: its exported fields
// are promoted all the same.
type hidden struct {
	Secret  string `json:"secret"`
	Visible int
	private int
}

// ptrHidden is an unexported struct embedded by pointer: encoding/json
// writes its exported fields when the pointer is not nil.
type ptrHidden struct {
	Deep string `json:"deep"`
}

// Left and Right both embed Shared, so Shared's field X is at the same
// depth twice in Diamond: encoding/json leaves it out.
type Shared struct{ X int }

// Left embeds Shared.
type Left struct {
	Shared
	L int
}

// Right embeds Shared.
type Right struct {
	Shared
	R int
}

// Diamond embeds Shared twice, through Left and Right.
type Diamond struct {
	Left
	Right
}

// ClashA has a field Same.
type ClashA struct {
	Same string
}

// ClashB has a field Same too, and one tagged "U".
type ClashB struct {
	Same string
	U    string `json:"U"`
}

// Clash embeds two fields named Same at the same depth, both untagged:
// neither is written. Its own U hides ClashB's tagged one, which is
// deeper.
type Clash struct {
	ClashA
	ClashB
	U    int
	Kept string `json:"kept"`
}

// Page is generic.
type Page[T any] struct {
	Items []T `json:"items"`
	Next  *T  `json:"next"`
}

// Item is an item of a page.
type Item struct {
	SKU string `json:"sku"`
}

// Upper writes itself as text, with a value receiver.
type Upper string

// MarshalText writes the text in upper case.
func (u Upper) MarshalText() ([]byte, error) { return []byte(strings.ToUpper(string(u))), nil }

// Lazy writes itself as text only when encoding/json can take its
// address: a value inside a value passed to json.Marshal is written as the
// struct it is.
type Lazy struct{ V string }

// MarshalText writes V.
func (l *Lazy) MarshalText() ([]byte, error) { return []byte(l.V), nil }

// Literal writes itself as a JSON number, whatever its tags say.
type Literal int

// MarshalJSON writes the number.
func (l Literal) MarshalJSON() ([]byte, error) { return json.Marshal(int(l)) }

// Everything has a field of each kind.
type Everything struct {
	*Base
	Meta
	hidden
	*ptrHidden
	Named Meta `json:"named"`

	Skip string `json:"-"`
	//lint:ignore SA5008 the key "-", which encoding/json writes for this tag, is the case under test
	Dash     string          `json:"-,"`
	Inline   Meta            `json:",inline"`
	ByInt    map[int]string  `json:"byInt"`
	ByLevel  map[Level]int   `json:"byLevel"`
	Bytes    []byte          `json:"bytes"`
	Octets   []Octet         `json:"octets"`
	Raw      json.RawMessage `json:"raw"`
	Any      any             `json:"any"`
	Iface    interface{}
	Dur      time.Duration `json:"dur"`
	When     time.Time     `json:"when"`
	Arr      [4]uint8      `json:"arr"`
	Page     Page[Item]    `json:"page"`
	Point    image.Point   `json:"point"`
	Addr     netip.Addr    `json:"addr"`
	Quoted   int64         `json:"quoted,string"`
	QuotePtr *int          `json:"quotePtr,string"`
	LitStr   Literal       `json:"litStr,string"`
	Opt      *string       `json:"opt,omitempty"`
	Zero     Item          `json:"zero,omitzero"`
	Kept     Item          `json:"kept,omitempty"`
	Level    Level         `json:"level"`
	Prio     Priority      `json:"prio"`
	Num      json.Number   `json:"num"`
	Upper    Upper         `json:"upper"`
	Lazy     Lazy          `json:"lazy"`
	LazyPtr  *Lazy         `json:"lazyPtr"`
	Ptrs     []*Item       `json:"ptrs"`
	Nested   map[string][]*Tree
	Big      uint64 `json:"big"`
	F        float64
	Diamond  Diamond `json:"diamond"`
	Clash    Clash   `json:"clash"`
	Tree     Tree    `json:"tree"`

	unexported int
}
