// Package aisvc holds a generated AI service with tools, driven end to end
// by the tests through langchaingo's real OpenAI client against the
// scripted server of runtime/llmtest.
package aisvc

import (
	"context"
	"errors"
	"iter"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
)

//go:generate go tool chatgen

// Kind is a kind of weapon.
type Kind string

// The kinds the armory builds.
const (
	Sword Kind = "sword"
	Axe   Kind = "axe"
	Bow   Kind = "bow"
)

// Weapon is the weapon being built.
//
//chat:event weapon
type Weapon struct {
	// Name of the weapon.
	Name string `json:"name"`
	// Kind of the weapon.
	Kind Kind `json:"kind"`
	// Damage it deals, from 1 to 100.
	Damage int `json:"damage"`
}

// Workbench holds the weapon of the conversation and the tools to shape it.
type Workbench struct{ weapon Weapon }

// SetKind sets the kind of weapon.
//
//chat:tool
func (w *Workbench) SetKind(ctx context.Context, kind Kind) (Weapon, error) {
	switch kind {
	case Sword, Axe, Bow:
	default:
		return Weapon{}, errors.New("unknown kind " + string(kind))
	}
	w.weapon.Kind = kind
	_ = chat.Response(ctx).Thinking("kind set to " + string(kind))
	return w.weapon, nil
}

// SetName names the weapon.
//
//chat:tool
//chat:param name the weapon's name, at most three words
func (w *Workbench) SetName(name string) Weapon {
	w.weapon.Name = name
	return w.weapon
}

// Inspect shows the weapon as it is now.
//
//chat:tool immediate
func (w *Workbench) Inspect() Weapon { return w.weapon }

// Explode always panics.
//
//chat:tool
func (w *Workbench) Explode() string { panic("the workbench exploded") }

// Smith builds weapons with the user.
//
//chat:ai
//chat:system You are a weapon-smith. Use the tools to build the weapon.
//chat:tools Workbench
type Smith interface {
	// Build is the smith's chat route.
	//
	//chat:route smith default
	Build(ctx context.Context, userMessage string) (ai.Result[string], error)

	// Tell streams a story about the weapon.
	//
	//chat:route story
	//chat:system You tell short stories.
	Tell(ctx context.Context, userMessage string) iter.Seq2[string, error]

	// Appraise returns the weapon the model thinks the user described.
	//
	//chat:route appraise
	//chat:system Describe the weapon the user wants as JSON.
	Appraise(ctx context.Context, userMessage string) (Weapon, error)

	// Ask answers a question about weapons; user= names its text
	// parameter, for the route and the model alike.
	//
	//chat:route ask user=question
	//chat:system You answer questions about weapons.
	Ask(ctx context.Context, question string) (string, error)
}
