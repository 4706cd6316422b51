package jsontypes

import (
	"context"
	"iter"
	"slices"

	"github.com/chatscopes/chatgen/runtime/ai"
)

// Report is an event type of this package.
//
//chat:event report
type Report struct {
	Level Level  `json:"level"`
	Tree  *Tree  `json:"tree,omitempty"`
	Data  []byte `json:"data"`
}

// Store hands back what it is given, as its results.
type Store struct{ last Everything }

// Put takes an Everything and returns it as a value: an Object event.
//
//chat:route put
func (s *Store) Put(everything Everything, page Page[Item], level Level, prio Priority) Everything {
	s.last = everything
	return everything
}

// PutPtr returns a pointer: an Object event too.
//
//chat:route putPtr
func (s *Store) PutPtr(everything *Everything) *Everything { return everything }

// Tree returns a tree.
//
//chat:route tree
func (s *Store) Tree(tree Tree) Tree { return tree }

// Pages returns a page of trees.
//
//chat:route pages
func (s *Store) Pages(page Page[Tree]) Page[Tree] { return page }

// Report returns a report event.
//
//chat:route report
func (s *Store) Report(report Report) *Report { return &report }

// Lines streams the user's text, in markdown.
//
//chat:route lines
//chat:markdown
func Lines(userMessage string) iter.Seq[string] { return slices.Values([]string{userMessage}) }

// Shelf is the tools of the clerk.
type Shelf struct{}

// Find finds a page of items.
//
//chat:tool
func (Shelf) Find(sku string) Page[Item] { return Page[Item]{Items: []Item{{SKU: sku}}} }

// Log writes a report.
//
//chat:tool
func (Shelf) Log(level Level) Report { return Report{Level: level} }

// Clerk answers, with the shelf's tools.
//
//chat:ai
//chat:markdown
//chat:tools Shelf
type Clerk interface {
	// Ask answers a question.
	//
	//chat:route clerk default
	Ask(ctx context.Context, userMessage string) (ai.Result[string], error)
}
