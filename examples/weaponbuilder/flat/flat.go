// Package flat is the armorer built without chat scopes, as a baseline for
// the numbers in docs: one AI service with one system prompt holding every
// instruction, every tool offered on every call, and one chat memory for
// the whole session. It does what the weaponbuilder example does, the way
// one would build it with langchaingo alone.
package flat

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

//go:generate go tool chatgen

// Armorer is the whole armorer in one prompt.
//
//chat:ai
//chat:system You are the armorer of a fantasy video game, at the counter of your forge.
//chat:system You build weapons and armour with the player and show what they have built.
//chat:system To build a weapon, find out its kind, its name and its damage, one at a time, and set each
//chat:system with the tools. Offer an enchantment: find out its element (fire, frost or lightning) and its
//chat:system power (1 to 10), set them, then bind the enchantment to the weapon. When the player is happy,
//chat:system call finishWeapon. To build armour, find out the piece and its material, set them, then call
//chat:system finishArmor. If the player wants to stop building without saving, call cancel. To show what
//chat:system the player has built, call listArmory.
//chat:system Otherwise answer in one or two sentences.
//chat:tools Shop
type Armorer interface {
	// Chat answers the player.
	//
	//chat:route armorer default
	Chat(ctx context.Context, userMessage string) (string, error)
}

// Weapon is a weapon.
type Weapon struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Damage  int    `json:"damage"`
	Element string `json:"element,omitempty"`
	Power   int    `json:"power,omitempty"`
}

// Armor is a piece of armour.
type Armor struct {
	Piece    string `json:"piece"`
	Material string `json:"material"`
}

// Shop holds every tool and all the state of the session.
type Shop struct {
	weapon  Weapon
	rune    Weapon // element and power being prepared
	armor   Armor
	weapons []Weapon
	armors  []Armor
}

// SetKind sets the kind of the weapon: sword, axe, bow, dagger or staff.
//
//chat:tool name=setKind
func (s *Shop) SetKind(kind string) Weapon { s.weapon.Kind = kind; return s.weapon }

// SetName names the weapon.
//
//chat:tool name=setName
//chat:param name the weapon's name, one to three words
func (s *Shop) SetName(name string) Weapon { s.weapon.Name = name; return s.weapon }

// SetDamage sets how much damage the weapon deals, from 1 to 100.
//
//chat:tool name=setDamage
func (s *Shop) SetDamage(damage int) Weapon { s.weapon.Damage = damage; return s.weapon }

// ShowWeapon shows the weapon as it is now.
//
//chat:tool name=showWeapon
func (s *Shop) ShowWeapon() Weapon { return s.weapon }

// SetElement sets the element of the enchantment: fire, frost or lightning.
//
//chat:tool name=setElement
func (s *Shop) SetElement(element string) Weapon { s.rune.Element = element; return s.rune }

// SetPower sets the power of the enchantment, from 1 to 10.
//
//chat:tool name=setPower
func (s *Shop) SetPower(power int) Weapon { s.rune.Power = power; return s.rune }

// Bind binds the enchantment to the weapon.
//
//chat:tool name=bind
func (s *Shop) Bind() (Weapon, error) {
	if s.rune.Element == "" || s.rune.Power == 0 {
		return Weapon{}, errors.New("the enchantment needs an element and a power first")
	}
	s.weapon.Element, s.weapon.Power = s.rune.Element, s.rune.Power
	s.rune = Weapon{}
	return s.weapon, nil
}

// FinishWeapon saves the weapon.
//
//chat:tool name=finishWeapon
func (s *Shop) FinishWeapon() (string, error) {
	if s.weapon.Kind == "" || s.weapon.Name == "" || s.weapon.Damage == 0 {
		return "", errors.New("the weapon needs a kind, a name and a damage first")
	}
	s.weapons = append(s.weapons, s.weapon)
	name := s.weapon.Name
	s.weapon = Weapon{}
	return name + " is saved", nil
}

// SetPiece sets the piece of armour: helm, breastplate, gauntlets, greaves or shield.
//
//chat:tool name=setPiece
func (s *Shop) SetPiece(piece string) Armor { s.armor.Piece = piece; return s.armor }

// SetMaterial sets the material of the armour: leather, iron, steel or mithril.
//
//chat:tool name=setMaterial
func (s *Shop) SetMaterial(material string) Armor { s.armor.Material = material; return s.armor }

// FinishArmor saves the armour.
//
//chat:tool name=finishArmor
func (s *Shop) FinishArmor() (string, error) {
	if s.armor.Piece == "" || s.armor.Material == "" {
		return "", errors.New("the armour needs a piece and a material first")
	}
	s.armors = append(s.armors, s.armor)
	a := s.armor
	s.armor = Armor{}
	return fmt.Sprintf("the %s %s is saved", a.Material, a.Piece), nil
}

// Cancel abandons the weapon, enchantment or armour being built, without
// saving it.
//
//chat:tool name=cancel
func (s *Shop) Cancel() string {
	s.weapon, s.rune, s.armor = Weapon{}, Weapon{}, Armor{}
	return "abandoned"
}

// ListArmory lists what the player has built.
//
//chat:tool name=listArmory
func (s *Shop) ListArmory() string {
	var parts []string
	for _, w := range s.weapons {
		parts = append(parts, fmt.Sprintf("%s (a %s, %d damage)", w.Name, w.Kind, w.Damage))
	}
	for _, a := range s.armors {
		parts = append(parts, fmt.Sprintf("a %s %s", a.Material, a.Piece))
	}
	if len(parts) == 0 {
		return "nothing yet"
	}
	return strings.Join(parts, "; ")
}
