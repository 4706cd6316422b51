package main

import (
	"context"
	"fmt"
	"io"
)

//go:generate go tool chatgen

// Counter counts within a conversation. One instance lives in the chat
// scope that first uses it and nested scopes inherit it.
//
//chat:scoped
type Counter struct{ n int }

// Get returns the count.
func (c *Counter) Get() int { return c.n }

// Increment adds one.
func (c *Counter) Increment() { c.n++ }

// PerChatCounter is like Counter, but every scope, nested or not, has its
// own.
//
//chat:scoped per-chat
type PerChatCounter struct{ n int }

// Get returns the count.
func (c *PerChatCounter) Get() int { return c.n }

// Increment adds one.
func (c *PerChatCounter) Increment() { c.n++ }

// InvocationCounter lives for one top-level call through its proxy.
//
//chat:scoped invocation
type InvocationCounter struct{ n int }

// Get returns the count.
func (c *InvocationCounter) Get() int { return c.n }

// Increment adds one.
func (c *InvocationCounter) Increment() { c.n++ }

// Calculator uses an InvocationCounter twice within one invocation.
//
//chat:scoped invocation
type Calculator struct {
	counter InvocationCounterProxy
}

// Add increments the invocation's counter twice and returns it: 2, because
// the nested calls share the invocation Add started.
func (c *Calculator) Add(ctx context.Context) int {
	c.counter.Increment(ctx)
	c.counter.Increment(ctx)
	return c.counter.Get(ctx)
}

// Journal is an application dependency: where Tally reports its life.
type Journal struct{ W io.Writer }

// Tally is a chat-scoped bean with a constructor taking an application
// dependency and a Close method called when its scope dies.
//
//chat:scoped
type Tally struct {
	journal *Journal
	items   []string
}

// NewTally builds the Tally of the scope active in ctx.
func NewTally(ctx context.Context, j *Journal) (*Tally, error) {
	t := &Tally{journal: j}
	fmt.Fprintf(j.W, "  (tally created)\n")
	return t, nil
}

// Add records an item.
func (t *Tally) Add(item string) { t.items = append(t.items, item) }

// Items returns the recorded items.
func (t *Tally) Items() []string { return t.items }

// Close is called when the scope that holds the Tally is destroyed.
func (t *Tally) Close() error {
	fmt.Fprintf(t.journal.W, "  (tally closed with %d items)\n", len(t.items))
	return nil
}
