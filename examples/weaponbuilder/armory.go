package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/chatscopes/chatgen/runtime/chat"
)

// Kind is a kind of weapon.
type Kind string

// The kinds of weapon the armorer builds.
const (
	Sword  Kind = "sword"
	Axe    Kind = "axe"
	Bow    Kind = "bow"
	Dagger Kind = "dagger"
	Staff  Kind = "staff"
)

// Element is the element of an enchantment.
type Element string

// The elements an enchantment can carry.
const (
	Fire      Element = "fire"
	Frost     Element = "frost"
	Lightning Element = "lightning"
)

// Enchantment is magic bound to a weapon.
type Enchantment struct {
	// Element of the enchantment.
	Element Element `json:"element"`
	// Power from 1 to 10.
	Power int `json:"power"`
}

// Weapon is the weapon being built: the web page shows it as a card.
//
//chat:event weapon
type Weapon struct {
	Name        string       `json:"name"`
	Kind        Kind         `json:"kind"`
	Damage      int          `json:"damage"`
	Enchantment *Enchantment `json:"enchantment,omitempty"`
	Saved       bool         `json:"saved"`
}

// Validate reports what is missing before the weapon can be saved.
func (w Weapon) Validate() error {
	var missing []string
	if w.Kind == "" {
		missing = append(missing, "a kind")
	}
	if w.Name == "" {
		missing = append(missing, "a name")
	}
	if w.Damage < 1 || w.Damage > 100 {
		missing = append(missing, "a damage between 1 and 100")
	}
	if len(missing) > 0 {
		return fmt.Errorf("the weapon still needs %s", strings.Join(missing, ", "))
	}
	return nil
}

// Armor is a piece of armour.
//
//chat:event armor
type Armor struct {
	Piece    string `json:"piece"`
	Material string `json:"material"`
	Saved    bool   `json:"saved"`
}

// Conversation tells the page which conversation the user is in.
//
//chat:event conversation
type Conversation struct {
	Name  string `json:"name"`
	Depth int    `json:"depth"`
}

// Armory stores what the player has built: the application dependency the
// builders save into.
type Armory struct {
	mu      sync.Mutex
	weapons []Weapon
	armor   []Armor
}

// ErrDuplicate is returned when a weapon of the same name is already saved.
var ErrDuplicate = errors.New("the armory already holds a weapon of that name")

// SaveWeapon stores w and returns it as the armory holds it: saved. The
// armory is what says an item is saved; the builders show what it returns.
func (a *Armory) SaveWeapon(_ context.Context, w Weapon) (Weapon, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if slices.ContainsFunc(a.weapons, func(x Weapon) bool { return strings.EqualFold(x.Name, w.Name) }) {
		return Weapon{}, fmt.Errorf("%w: %q", ErrDuplicate, w.Name)
	}
	w.Saved = true
	a.weapons = append(a.weapons, w)
	return w, nil
}

// SaveArmor stores p and returns it as the armory holds it: saved.
func (a *Armory) SaveArmor(_ context.Context, p Armor) Armor {
	a.mu.Lock()
	defer a.mu.Unlock()
	p.Saved = true
	a.armor = append(a.armor, p)
	return p
}

// ErrNoSuchItem is returned when the armory holds no item of the name.
var ErrNoSuchItem = errors.New("the armory holds no item of that name")

// Delete removes the weapon named name, or the armour described as
// "material piece" ("steel helm"), and returns the name of what it
// removed.
func (a *Armory) Delete(_ context.Context, name string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	name = strings.TrimSpace(name)
	if i := slices.IndexFunc(a.weapons, func(w Weapon) bool { return strings.EqualFold(w.Name, name) }); i >= 0 {
		w := a.weapons[i]
		a.weapons = slices.Delete(a.weapons, i, i+1)
		return w.Name, nil
	}
	if i := slices.IndexFunc(a.armor, func(p Armor) bool {
		return strings.EqualFold(p.Material+" "+p.Piece, name) || strings.EqualFold(p.Piece, name)
	}); i >= 0 {
		p := a.armor[i]
		a.armor = slices.Delete(a.armor, i, i+1)
		return p.Material + " " + p.Piece, nil
	}
	return "", fmt.Errorf("%w: %q", ErrNoSuchItem, name)
}

// Weapons returns the saved weapons.
func (a *Armory) Weapons() []Weapon {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.weapons)
}

// ArmorPieces returns the saved armour.
func (a *Armory) ArmorPieces() []Armor {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.armor)
}

// announce tells the client which conversation it is in now.
func announce(ctx context.Context, name string) error {
	depth, err := chat.Depth(ctx)
	if err != nil {
		return err
	}
	return chat.Response(ctx).Send(Conversation{Name: name, Depth: depth})
}

// handOff is the Main Menu pattern: forget the current conversation's
// chat memory, push a nested conversation on route and let it answer the
// message that led there, in the same request.
func handOff(ctx context.Context, route, name string) error {
	if err := chat.ClearMemory(ctx); err != nil {
		return err
	}
	return nest(ctx, route, name)
}

// nest pushes a nested conversation on route and lets it answer the
// message that led there, in the same request, keeping the current
// conversation's chat memory: the weapon builder, back from the
// enchantment, still knows the weapon it was building.
func nest(ctx context.Context, route, name string) error {
	if err := chat.PushRoute(ctx, route); err != nil {
		return err
	}
	if err := announce(ctx, name); err != nil {
		return err
	}
	return chat.Execute(ctx)
}

// handBack pops the nested conversation and tells the client where it is.
func handBack(ctx context.Context) error {
	if err := chat.Pop(ctx); err != nil {
		return err
	}
	route, err := chat.CurrentRoute(ctx)
	if err != nil {
		return err
	}
	return announce(ctx, conversationName(route))
}

// conversationName is the name the page shows for a route's conversation.
func conversationName(route string) string {
	switch route {
	case RouteWeapon:
		return "Weapon builder"
	case RouteEnchant:
		return "Enchantment"
	case RouteArmor:
		return "Armour builder"
	}
	return "Main menu"
}
