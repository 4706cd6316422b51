package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
)

// Enchanter is the enchantment wizard, nested inside the weapon builder.
//
//chat:ai
//chat:markdown
//chat:system You are the armorer's enchanter. Find out the element (fire, frost or lightning) and
//chat:system the power (1 to 10) of the enchantment and set them with the tools. Then call bind.
//chat:system If the player wants to stop or go back without the enchantment, call cancel.
//chat:tools Runes
type Enchanter interface {
	// Chat talks with the player about the enchantment.
	//
	//chat:route enchant
	Chat(ctx context.Context, userMessage string) (ai.Result[string], error)
}

// Runes holds the enchantment being prepared. It is per-chat: it belongs
// to the enchantment conversation alone.
//
//chat:scoped per-chat durable
type Runes struct {
	enchantment Enchantment
	bench       WorkbenchProxy
}

// SetElement sets the element of the enchantment.
//
//chat:tool name=setElement
func (r *Runes) SetElement(ctx context.Context, element Element) (Enchantment, error) {
	switch element {
	case Fire, Frost, Lightning:
	default:
		return Enchantment{}, fmt.Errorf("no rune binds %q", element)
	}
	r.enchantment.Element = element
	return r.enchantment, chat.Response(ctx).Thinking(fmt.Sprintf("Carving %s runes…", element))
}

// SetPower sets the power of the enchantment.
//
//chat:tool name=setPower
//chat:param power from 1 to 10
func (r *Runes) SetPower(ctx context.Context, power int) (Enchantment, error) {
	if power < 1 || power > 10 {
		return Enchantment{}, fmt.Errorf("power must be between 1 and 10, not %d", power)
	}
	r.enchantment.Power = power
	return r.enchantment, chat.Response(ctx).Thinking(fmt.Sprintf("Charging the runes to power %d…", power))
}

// Bind binds the enchantment to the weapon on the workbench and returns to
// the weapon builder.
//
//chat:tool immediate name=bind
func (r *Runes) Bind(ctx context.Context) (string, error) {
	e := r.enchantment
	if e.Element == "" || e.Power == 0 {
		return "", errors.New("the enchantment needs an element and a power first")
	}
	// The workbench lives in the weapon builder's scope: chat-scoped beans
	// are inherited by nested scopes.
	w := r.bench.ApplyEnchantment(ctx, e)
	if err := chat.Response(ctx).Send(w); err != nil {
		return "", err
	}
	if err := handBack(ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("The %s enchantment (power %d) is bound to your %s. Anything else, or shall I finish it?", e.Element, e.Power, w.Kind), nil
}

// Cancel leaves the enchantment without binding it and goes back to the
// weapon builder.
//
//chat:tool immediate name=cancel
func (r *Runes) Cancel(ctx context.Context) (string, error) {
	if err := handBack(ctx); err != nil {
		return "", err
	}
	return "The runes fade; no enchantment this time. Back to the weapon: shall I *finish* it?", nil
}
