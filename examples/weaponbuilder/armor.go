package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
)

// ArmorBuilder is the wizard that builds a piece of armour.
//
//chat:ai
//chat:markdown
//chat:system You are the armorer, building a piece of armour with the player. Find out the piece
//chat:system and its material, set them with the tools, then call finishArmor. If the player wants
//chat:system to stop or go back without the armour, call cancel.
//chat:tools Anvil
type ArmorBuilder interface {
	// Chat talks with the player about the armour.
	//
	//chat:route armor
	Chat(ctx context.Context, userMessage string) (ai.Result[string], error)
}

// Piece is a piece of armour.
type Piece string

// The pieces of armour the armorer makes.
const (
	Helm        Piece = "helm"
	Breastplate Piece = "breastplate"
	Gauntlets   Piece = "gauntlets"
	Greaves     Piece = "greaves"
	Shield      Piece = "shield"
)

// Material is what armour is made of.
type Material string

// The materials of armour.
const (
	Leather Material = "leather"
	Iron    Material = "iron"
	Steel   Material = "steel"
	Mithril Material = "mithril"
)

// Anvil holds the armour being built.
//
//chat:scoped durable
type Anvil struct {
	armory *Armory
	armor  Armor
}

// NewAnvil builds the anvil of an armour conversation.
func NewAnvil(armory *Armory) *Anvil { return &Anvil{armory: armory} }

// SetPiece sets which piece of armour to make.
//
//chat:tool name=setPiece
func (a *Anvil) SetPiece(ctx context.Context, piece Piece) (Armor, error) {
	a.armor.Piece = string(piece)
	return a.armor, nil // an armour event: the page shows the card
}

// SetMaterial sets the material of the armour.
//
//chat:tool name=setMaterial
func (a *Anvil) SetMaterial(ctx context.Context, material Material) (Armor, error) {
	a.armor.Material = string(material)
	if err := chat.Response(ctx).Thinking(fmt.Sprintf("Heating the %s…", material)); err != nil {
		return Armor{}, err
	}
	return a.armor, nil
}

// FinishArmor saves the armour and goes back to the main menu.
//
//chat:tool immediate name=finishArmor
func (a *Anvil) FinishArmor(ctx context.Context) (string, error) {
	if a.armor.Piece == "" || a.armor.Material == "" {
		return "", errors.New("the armour needs a piece and a material first")
	}
	a.armor = a.armory.SaveArmor(ctx, a.armor)
	if err := chat.Response(ctx).Send(a.armor); err != nil {
		return "", err
	}
	if err := chat.Response(ctx).Send(inventory(a.armory, a.armor.Material+" "+a.armor.Piece)); err != nil {
		return "", err
	}
	if err := handBack(ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("Your **%s %s** is in your armory. What next?", a.armor.Material, a.armor.Piece), nil
}

// Cancel leaves the armour builder without saving the armour and goes back
// to the main menu.
//
//chat:tool immediate name=cancel
func (a *Anvil) Cancel(ctx context.Context) (string, error) {
	if err := handBack(ctx); err != nil {
		return "", err
	}
	return "I put the armour aside, unfinished. Back at the counter: what next?", nil
}
