package main

import (
	"context"

	"github.com/chatscopes/chatgen/runtime/ai"
)

// MainMenu is the armorer at the counter: the conversation every session
// starts in. Its tools hand the player over to nested conversations.
//
//chat:ai
//chat:system You are the armorer of a fantasy video game, at the counter of your forge.
//chat:system To build a weapon call buildWeapon, to build armour call buildArmor,
//chat:system to show what the player has built call listArmory. Otherwise answer in one or two sentences.
//chat:tools Counter
type MainMenu interface {
	// Chat answers the player at the counter.
	//
	//chat:route menu default
	Chat(ctx context.Context, userMessage string) (ai.Result[string], error)
}

// Counter holds the main menu's tools. They are immediate: the model only
// picks one, and no second model call follows.
type Counter struct{ armory *Armory }

// NewCounter builds the counter of a conversation.
func NewCounter(armory *Armory) *Counter { return &Counter{armory: armory} }

// BuildWeapon starts building a new weapon with the player.
//
//chat:tool immediate name=buildWeapon
func (c *Counter) BuildWeapon(ctx context.Context) error {
	return handOff(ctx, "weapon", conversationName("weapon"))
}

// BuildArmor starts building a new piece of armour with the player.
//
//chat:tool immediate name=buildArmor
func (c *Counter) BuildArmor(ctx context.Context) error {
	return handOff(ctx, "armor", conversationName("armor"))
}

// Inventory is what the player has built.
//
//chat:event inventory
type Inventory struct {
	Weapons []Weapon `json:"weapons"`
	Armor   []Armor  `json:"armor"`
}

// ListArmory shows the weapons and armour the player has built.
//
//chat:tool immediate name=listArmory
func (c *Counter) ListArmory() Inventory {
	return Inventory{Weapons: c.armory.Weapons(), Armor: c.armory.ArmorPieces()}
}
