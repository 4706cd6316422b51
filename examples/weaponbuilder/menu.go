package main

import (
	"context"
	"iter"

	"github.com/chatscopes/chatgen/runtime/chat"
)

// MainMenu is the armorer at the counter: the conversation every session
// starts in. Its tools hand the player over to nested conversations; its
// knowledge, the lore corpus, answers questions on the realm (newApp).
// Its answers stream to the page as the model writes them, in markdown.
//
//chat:ai
//chat:markdown
//chat:system You are the armorer of a fantasy video game, at the counter of your forge.
//chat:system To build a weapon call buildWeapon, to build armour call buildArmor,
//chat:system to show what the player has built call listArmory, to delete an item from the armory call
//chat:system deleteItem (the player is asked to confirm). For a question on the lore of the realm (its
//chat:system metals, runes, weapons, armour, places and legends) call search_knowledge and answer from the
//chat:system passages it returns, naming their titles. Otherwise answer in one or two sentences;
//chat:system you may use markdown.
//chat:tools Counter
type MainMenu interface {
	// Chat answers the player at the counter.
	//
	//chat:route menu default
	Chat(ctx context.Context, userMessage string) iter.Seq2[string, error]
}

// Counter holds the main menu's tools. Most are immediate: the model only
// picks one, and no second model call follows. DeleteItem waits for the
// player's confirmation, then the model tells what happened.
type Counter struct{ armory *Armory }

// NewCounter builds the counter of a conversation.
func NewCounter(armory *Armory) *Counter { return &Counter{armory: armory} }

// BuildWeapon starts building a new weapon with the player.
//
//chat:tool immediate name=buildWeapon
func (c *Counter) BuildWeapon(ctx context.Context) error {
	return handOff(ctx, RouteWeapon, conversationName("weapon"))
}

// BuildArmor starts building a new piece of armour with the player.
//
//chat:tool immediate name=buildArmor
func (c *Counter) BuildArmor(ctx context.Context) error {
	return handOff(ctx, RouteArmor, conversationName("armor"))
}

// Inventory is what the player has built. The page keeps its armory list
// from it: it comes when the player asks, and after every finished item.
//
//chat:event inventory
type Inventory struct {
	Weapons []Weapon `json:"weapons"`
	Armor   []Armor  `json:"armor"`
	// Latest names the item just saved, when a builder sends the inventory
	// on finishing one; "" when the player asked for the list.
	Latest string `json:"latest,omitempty"`
}

// inventory returns what the armory holds, with latest as the item just
// saved ("" for none).
func inventory(armory *Armory, latest string) Inventory {
	return Inventory{Weapons: armory.Weapons(), Armor: armory.ArmorPieces(), Latest: latest}
}

// ListArmory shows the weapons and armour the player has built.
//
//chat:tool immediate name=listArmory
func (c *Counter) ListArmory(ctx context.Context) (Inventory, error) {
	return inventory(c.armory, ""), nil // an inventory event: the page lists it
}

// DeleteItem deletes a weapon or a piece of armour from the armory. The
// player confirms it first: the page shows Approve and Deny buttons, the
// terminal asks y/n.
//
//chat:tool confirm name=deleteItem
//chat:param item the weapon's name, or the armour as material and piece ("steel helm")
func (c *Counter) DeleteItem(ctx context.Context, item string) (string, error) {
	name, err := c.armory.Delete(ctx, item)
	if err != nil {
		return "", err
	}
	if err := chat.Response(ctx).Send(inventory(c.armory, "")); err != nil {
		return "", err
	}
	return name + " is gone from the armory.", nil
}
