package main

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chat"
)

// TestFinishedItemsAreSaved: what a builder shows when it finishes an item
// (its weapon or armour event), the inventory sent with it and the armory
// itself agree that the item is saved.
func TestFinishedItemsAreSaved(t *testing.T) {
	a := newOfflineApp(t)
	client := chat.NewLocalClient(a.router)
	defer client.Close()
	var (
		mu          sync.Mutex
		weapons     []Weapon
		armor       []Armor
		inventories []Inventory
	)
	ctx := context.Background()
	session, err := client.Builder().
		On("weapon", func(ev chat.Event) {
			var w Weapon
			if err := ev.Decode(&w); err != nil {
				t.Error(err)
			}
			mu.Lock()
			weapons = append(weapons, w)
			mu.Unlock()
		}).
		On("armor", func(ev chat.Event) {
			var p Armor
			if err := ev.Decode(&p); err != nil {
				t.Error(err)
			}
			mu.Lock()
			armor = append(armor, p)
			mu.Unlock()
		}).
		On("inventory", func(ev chat.Event) {
			var inv Inventory
			if err := ev.Decode(&inv); err != nil {
				t.Error(err)
			}
			mu.Lock()
			inventories = append(inventories, inv)
			mu.Unlock()
		}).
		Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"I want to build a sword", "call it Dawnbreaker", "make it deal 40 damage", "finish",
		"I need some armour", "a steel helm", "finish"} {
		if err := session.Chat(ctx, m); err != nil {
			t.Fatalf("%q: %v", m, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(weapons) == 0 || !weapons[len(weapons)-1].Saved || weapons[len(weapons)-1].Name != "Dawnbreaker" {
		t.Fatalf("the last weapon event is %+v; want Dawnbreaker saved", weapons)
	}
	if len(armor) == 0 || !armor[len(armor)-1].Saved {
		t.Fatalf("the last armour event is %+v; want it saved", armor)
	}
	if len(inventories) != 2 {
		t.Fatalf("%d inventories sent, want one per finished item: %+v", len(inventories), inventories)
	}
	for _, inv := range inventories {
		for _, w := range inv.Weapons {
			if !w.Saved {
				t.Errorf("the inventory sent with %q lists %+v as not saved", inv.Latest, w)
			}
		}
		for _, p := range inv.Armor {
			if !p.Saved {
				t.Errorf("the inventory sent with %q lists %+v as not saved", inv.Latest, p)
			}
		}
	}
	for _, w := range a.armory.Weapons() {
		if !w.Saved {
			t.Errorf("the armory holds %+v as not saved", w)
		}
	}
	for _, p := range a.armory.ArmorPieces() {
		if !p.Saved {
			t.Errorf("the armory holds %+v as not saved", p)
		}
	}
}

// TestFinishWithATakenName: finishing a weapon whose name the armory
// already holds says so and what to do — give another name, or cancel —
// and the builder goes on from there, an enchantment before it or not: a
// bare name renames the weapon, anything else gets the weapon's next
// question (never the first question again, as if the weapon were
// forgotten), and finish then saves it under its new name.
func TestFinishWithATakenName(t *testing.T) {
	a := newOfflineApp(t)
	var out strings.Builder
	lines := []string{
		"I want to build a sword", "call it Dawnbreaker", "make it deal 40 damage", "finish",
		"I want to build a sword", "call it Dawnbreaker", "make it deal 40 damage",
		"yes, enchant it", "fire", "power 7", "bind",
		"finish", // taken
		"hmm",    // neither a name nor an order
		"Frostbite",
		"finish",
		"list my armory",
	}
	if err := runTerminal(context.Background(), a.router, strings.NewReader(strings.Join(lines, "\n")+"\n"), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	showsInOrder(t, got,
		"armorer: **Dawnbreaker** is in your armory.",
		"── » Weapon builder ──", "cancel",
		"── » » Enchantment ──",
		"armorer: The fire enchantment (power 7) is bound to your sword.",
		"armorer: Not yet: the armory already holds a weapon called **Dawnbreaker**.", "another name", "*cancel*",
		"armorer: The armory already holds a **Dawnbreaker**: what shall we call this one?",
		"… Engraving Frostbite on the hilt…",
		"armorer: **Frostbite** is taking shape: a sword dealing 40 damage.",
		"┌ Frostbite  ✔ saved",
		"armorer: **Frostbite** is in your armory.",
		"• Dawnbreaker, a sword (40 damage)",
		"• Frostbite, a sword (40 damage) with fire 7",
	)
	if strings.Contains(got, "What kind of weapon shall I forge") {
		t.Fatalf("the builder asked its first question again, as if it had forgotten the weapon:\n%s", got)
	}
}
