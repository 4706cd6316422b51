// Package longterm is the storage side of long-term memory: the facts an
// assistant keeps about one principal (an authenticated user) across all
// of that principal's conversations, and the [Store] SPI that keeps them.
//
// A chat scope's memory ends with the scope; a principal's facts do not.
// They are kept apart per principal: every method of a Store takes the
// principal's name, and nothing a Store returns for one principal ever
// holds a fact of another. Package runtime/longterm/recall uses a Store
// to recall facts before model calls and to extract new ones after
// committed turns (ai.Config.LongTerm).
//
// The stores of the project implement the SPI next to their conversation
// stores: [MemStore] here (facts last as long as the process),
// runtime/boltstore, runtime/redisstore and runtime/pgstore. Package
// runtime/longterm/longtermtest is the conformance suite every Store
// passes; a Mem0-style service can implement Store to plug in.
//
// # Caps
//
// A Store bounds what one principal may keep ([Limits]): a fact's text is
// at most MaxFactBytes ([DefaultMaxFactBytes], 4 KiB) and a principal has
// at most MaxFacts facts ([DefaultMaxFacts], 10,000). A Put past either
// fails with an error matching [ErrTooLarge] or [ErrTooManyFacts] and
// stores nothing.
//
// # Principal names
//
// A principal is named by any valid UTF-8 string, of any length: slashes,
// colons, spaces and non-Latin scripts included. The stores key their
// records by a SHA-256 of the name ([PrincipalKey]), so names never clash
// with each other or with a store's key syntax.
package longterm

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// Errors of the stores, matchable with errors.Is.
var (
	// ErrNotFound: the principal has no fact of that id.
	ErrNotFound = errors.New("longterm: no such fact")
	// ErrExists: Put was given a fact whose id the principal already has.
	ErrExists = errors.New("longterm: a fact of that id exists")
	// ErrTooLarge: a fact's text is longer than the store's MaxFactBytes.
	ErrTooLarge = errors.New("longterm: fact too large")
	// ErrTooManyFacts: the principal would have more facts than the
	// store's MaxFacts.
	ErrTooManyFacts = errors.New("longterm: too many facts for one principal")
	// ErrInvalid: a fact without an id or a text, an id or a principal
	// name that is not valid UTF-8, or an id longer than [MaxIDBytes].
	ErrInvalid = errors.New("longterm: invalid fact")
)

// Defaults of [Limits].
const (
	// DefaultMaxFactBytes is the longest text of a fact when
	// Limits.MaxFactBytes is 0.
	DefaultMaxFactBytes = 4 << 10
	// DefaultMaxFacts is the most facts of one principal when
	// Limits.MaxFacts is 0.
	DefaultMaxFacts = 10_000
	// MaxIDBytes is the longest id of a fact.
	MaxIDBytes = 128
)

// Fact is one thing remembered about a principal.
type Fact struct {
	// ID identifies the fact among the principal's facts (at most
	// [MaxIDBytes]); [NewID] makes one.
	ID string `json:"id"`
	// Text is the fact, in words ("The user's name is Ana.").
	Text string `json:"text"`
	// Created and Updated are when the fact was first stored and last
	// changed. The stores keep what they are given (UTC, to the
	// microsecond); a zero Created or Updated is set by Put or Update to
	// the time of the write.
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// Source is the conversation the fact was learnt in ("" when not
	// known), for audit and export.
	Source string `json:"source,omitempty"`
}

// Revision identifies the state of one principal's facts: every write
// that changes them gives a new one, and a principal with no facts has
// revision 0. Within one lifetime of a principal's facts (from the first
// Put after none to the next DeleteAll or expiry) revisions count up by
// one per write, so a reader that knows revision r and made the write that
// returned r+1 knows that nobody else wrote in between; a new lifetime
// starts from a random base ([FirstRevision]), so a revision seen before a
// DeleteAll is not seen again.
type Revision uint64

// FirstRevision returns the revision of the first write of a lifetime of
// a principal's facts: a random number from 2⁵¹ to 2⁵², far from every
// other lifetime's with high probability, and exact as a float64 (Redis
// scripts count in doubles) for 2⁵¹ writes.
func FirstRevision() Revision {
	var b [8]byte
	_, _ = rand.Read(b[:])
	var n uint64
	for _, c := range b {
		n = n<<8 | uint64(c)
	}
	return Revision(n>>13 | 1<<51)
}

// Next returns the revision after r: [FirstRevision] when r is 0.
func (r Revision) Next() Revision {
	if r == 0 {
		return FirstRevision()
	}
	return r + 1
}

// Store keeps the facts of principals. Implementations are safe for
// concurrent use, from several processes when the store is shared, and
// each method is atomic: a write that fails changes nothing.
//
// Every method takes the principal's name; the facts of one principal are
// never visible through another's. Writes return the principal's new
// [Revision]; [Store.Revision] reads it in one round trip, so that a
// cache of a principal's facts can be checked cheaply.
type Store interface {
	// Put adds facts to principal's. Each needs an ID that the principal
	// does not have yet (else ErrExists) and a Text within the store's
	// caps (else ErrTooLarge); a zero Created or Updated is set to now.
	// If the principal would have more than MaxFacts facts, Put fails
	// with ErrTooManyFacts. Put adds all the facts or none.
	Put(ctx context.Context, principal string, facts ...Fact) (Revision, error)
	// Get returns the principal's fact id, or ErrNotFound.
	Get(ctx context.Context, principal, id string) (Fact, error)
	// List returns all of principal's facts, oldest first (by Created,
	// then id), and the revision they are at. A principal without facts
	// has none and revision 0.
	List(ctx context.Context, principal string) ([]Fact, Revision, error)
	// Update replaces the Text and Source of the principal's fact f.ID
	// (ErrNotFound when there is none), keeps its Created and sets its
	// Updated (to f.Updated, or now when zero).
	Update(ctx context.Context, principal string, f Fact) (Revision, error)
	// Delete deletes the principal's facts ids; unknown ids are ignored.
	Delete(ctx context.Context, principal string, ids ...string) (Revision, error)
	// DeleteAll deletes every fact of principal and everything the store
	// keeps about the principal (the right to be forgotten); afterwards
	// List returns nothing and revision 0.
	DeleteAll(ctx context.Context, principal string) error
	// Revision returns principal's current revision (0 when it has no
	// facts), in one round trip.
	Revision(ctx context.Context, principal string) (Revision, error)
}

// Limits are the caps of a store (fields of each store's options). The
// zero value means the defaults.
type Limits struct {
	// MaxFactBytes is the longest Text of a fact, in bytes; 0 means
	// [DefaultMaxFactBytes].
	MaxFactBytes int
	// MaxFacts is the most facts one principal may have; 0 means
	// [DefaultMaxFacts].
	MaxFacts int
}

// WithDefaults returns l with its zero fields set to the defaults.
func (l Limits) WithDefaults() Limits {
	if l.MaxFactBytes <= 0 {
		l.MaxFactBytes = DefaultMaxFactBytes
	}
	if l.MaxFacts <= 0 {
		l.MaxFacts = DefaultMaxFacts
	}
	return l
}

// CheckPrincipal returns an error matching [ErrInvalid] for a principal
// name that is empty or not valid UTF-8.
func CheckPrincipal(principal string) error {
	if principal == "" || !utf8.ValidString(principal) {
		return fmt.Errorf("%w: the principal name %q is empty or not valid UTF-8", ErrInvalid, principal)
	}
	return nil
}

// CheckFact returns why f cannot be stored under l (which has its
// defaults): an error matching [ErrInvalid] or [ErrTooLarge], or nil.
func (l Limits) CheckFact(f Fact) error {
	switch {
	case f.ID == "" || len(f.ID) > MaxIDBytes || !utf8.ValidString(f.ID):
		return fmt.Errorf("%w: the id %q is empty, longer than %d bytes or not valid UTF-8", ErrInvalid, f.ID, MaxIDBytes)
	case len(f.Text) > l.MaxFactBytes:
		return fmt.Errorf("%w: %d bytes, the cap is %d", ErrTooLarge, len(f.Text), l.MaxFactBytes)
	case strings.TrimSpace(f.Text) == "" || !utf8.ValidString(f.Text) || !utf8.ValidString(f.Source):
		return fmt.Errorf("%w: fact %q has no text, or its text or source is not valid UTF-8", ErrInvalid, f.ID)
	}
	return nil
}

// Stamp returns the facts to store for a Put at now: their Created and
// Updated set when zero, every time in UTC to the microsecond (what every
// store keeps). It fails as [Limits.CheckFact] does, or with ErrInvalid
// for an id given twice.
func (l Limits) Stamp(now time.Time, facts []Fact) ([]Fact, error) {
	out := make([]Fact, len(facts))
	seen := make(map[string]bool, len(facts))
	for i, f := range facts {
		if err := l.CheckFact(f); err != nil {
			return nil, err
		}
		if seen[f.ID] {
			return nil, fmt.Errorf("%w: the id %q is given twice", ErrInvalid, f.ID)
		}
		seen[f.ID] = true
		if f.Created.IsZero() {
			f.Created = now
		}
		if f.Updated.IsZero() {
			f.Updated = now
		}
		f.Created, f.Updated = Time(f.Created), Time(f.Updated)
		out[i] = f
	}
	return out, nil
}

// Time returns t as the stores keep it: UTC, to the microsecond, without
// a monotonic reading.
func Time(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond).Round(0) }

// PrincipalKey returns the key the stores file principal's facts under:
// the hex SHA-256 of the name, so any name (slashes, braces, megabytes)
// makes a key of 64 safe characters.
func PrincipalKey(principal string) string {
	sum := sha256.Sum256([]byte(principal))
	return hex.EncodeToString(sum[:])
}

// NewID returns a new random fact id (32 hex digits).
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// SortFacts sorts facts as List returns them: by Created, then by id.
func SortFacts(facts []Fact) {
	sortFacts(facts)
}

// Export is what [WriteExport] writes: a principal's facts as JSON.
type Export struct {
	Principal string    `json:"principal"`
	Revision  Revision  `json:"revision"`
	Exported  time.Time `json:"exported"`
	Facts     []Fact    `json:"facts"`
}

// WriteExport writes all of principal's facts in s to w, as one JSON
// document ([Export]): what a user asking for their data is given.
func WriteExport(ctx context.Context, s Store, principal string, w io.Writer) error {
	facts, rev, err := s.List(ctx, principal)
	if err != nil {
		return fmt.Errorf("longterm: exporting: %w", err)
	}
	if facts == nil {
		facts = []Fact{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(Export{Principal: principal, Revision: rev, Exported: Time(time.Now()), Facts: facts}); err != nil {
		return fmt.Errorf("longterm: exporting: %w", err)
	}
	return nil
}
