package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
)

// WeaponBuilder is the wizard that builds a weapon with the player.
//
//chat:ai
//chat:markdown
//chat:system You are the armorer, building a weapon with the player. Find out its kind, its name
//chat:system and its damage, one at a time, and set each with the tools. Offer an enchantment
//chat:system (call enchant). When the player is happy, call finish. If the player wants to stop
//chat:system or go back without the weapon, call cancel. You may use markdown.
//chat:tools Workbench
type WeaponBuilder interface {
	// Chat talks with the player about the weapon.
	//
	//chat:route weapon
	Chat(ctx context.Context, userMessage string) (ai.Result[string], error)
}

// Workbench holds the weapon being built. It is chat-scoped: the
// enchantment conversation nested inside the builder sees the same one.
//
//chat:scoped durable
type Workbench struct {
	armory *Armory
	weapon Weapon
}

// NewWorkbench builds the workbench of a weapon conversation.
func NewWorkbench(armory *Armory) *Workbench { return &Workbench{armory: armory} }

// show reports progress and shows the weapon card.
func (w *Workbench) show(ctx context.Context, thinking string) (Weapon, error) {
	if err := chat.Response(ctx).Thinking(thinking); err != nil {
		return Weapon{}, err
	}
	return w.weapon, nil // a weapon event: the page shows the card
}

// SetKind sets the kind of the weapon.
//
//chat:tool name=setKind
func (w *Workbench) SetKind(ctx context.Context, kind Kind) (Weapon, error) {
	switch kind {
	case Sword, Axe, Bow, Dagger, Staff:
	default:
		return Weapon{}, fmt.Errorf("cannot forge a %q: the kinds are sword, axe, bow, dagger and staff", kind)
	}
	w.weapon.Kind = kind
	return w.show(ctx, fmt.Sprintf("Laying out %s %s blank on the anvil…", article(string(kind)), kind))
}

// SetName names the weapon.
//
//chat:tool name=setName
//chat:param name the weapon's name, one to three words
func (w *Workbench) SetName(ctx context.Context, name string) (Weapon, error) {
	if name == "" {
		return Weapon{}, errors.New("a weapon needs a name")
	}
	w.weapon.Name = name
	return w.show(ctx, "Engraving "+name+" on the hilt…")
}

// SetDamage sets how much damage the weapon deals.
//
//chat:tool name=setDamage
//chat:param damage damage points, from 1 to 100
func (w *Workbench) SetDamage(ctx context.Context, damage int) (Weapon, error) {
	if damage < 1 || damage > 100 {
		return Weapon{}, fmt.Errorf("damage must be between 1 and 100, not %d", damage)
	}
	w.weapon.Damage = damage
	return w.show(ctx, fmt.Sprintf("Tempering the steel for %d damage…", damage))
}

// ShowWeapon shows the weapon as it is now.
//
//chat:tool immediate name=showWeapon
func (w *Workbench) ShowWeapon() Weapon { return w.weapon }

// Enchant starts enchanting the weapon.
//
//chat:tool immediate name=enchant
func (w *Workbench) Enchant(ctx context.Context) error {
	return nest(ctx, RouteEnchant, conversationName("enchant"))
}

// ApplyEnchantment binds e to the weapon (called by the enchantment
// conversation).
func (w *Workbench) ApplyEnchantment(e Enchantment) Weapon {
	w.weapon.Enchantment = &e
	return w.weapon
}

// Finish validates the weapon, saves it in the armory and goes back to the
// main menu.
//
//chat:tool immediate name=finish
func (w *Workbench) Finish(ctx context.Context) (string, error) {
	if err := w.weapon.Validate(); err != nil {
		return "", err
	}
	saved, err := w.armory.SaveWeapon(ctx, w.weapon)
	if errors.Is(err, ErrDuplicate) {
		// What the model reads: the player can rename the weapon, or
		// leave it unfinished.
		return "", fmt.Errorf("%w; ask the player for another name (then call setName), or whether to cancel", err)
	}
	if err != nil {
		return "", err
	}
	w.weapon = saved
	if err := chat.Response(ctx).Send(w.weapon); err != nil {
		return "", err
	}
	if err := chat.Response(ctx).Send(inventory(w.armory, w.weapon.Name)); err != nil {
		return "", err
	}
	if err := handBack(ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("**%s** is in your armory. What next?", w.weapon.Name), nil
}

// Cancel leaves the weapon builder without saving the weapon and goes back
// to the main menu.
//
//chat:tool immediate name=cancel
func (w *Workbench) Cancel(ctx context.Context) (string, error) {
	if err := handBack(ctx); err != nil {
		return "", err
	}
	what := "the weapon"
	if w.weapon.Kind != "" {
		what = "the " + string(w.weapon.Kind)
	}
	return fmt.Sprintf("I put %s aside, unfinished. Back at the counter: what next?", what), nil
}

// article is "an" before a vowel, else "a".
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}
