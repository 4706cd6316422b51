// Package e2e holds annotated routes whose generated code the end-to-end
// tests drive through the local client: the Main Menu pattern, nested
// conversations, every result mapping and the failure paths.
package e2e

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/chatscopes/chatgen/runtime/chat"
)

//go:generate go tool chatgen

// Menu is the top-level conversation.
type Menu struct{ turns int }

// Chat is the default route: "build" hands the conversation to the builder
// and lets it answer the same message; anything else is echoed.
//
//chat:route menu default
func (m *Menu) Chat(ctx context.Context, msg string) (string, error) {
	m.turns++
	if strings.HasPrefix(msg, "build") {
		if err := chat.PushRoute(ctx, RouteBuilder); err != nil {
			return "", err
		}
		if err := chat.Response(ctx).Thinking("opening the builder"); err != nil {
			return "", err
		}
		return "", chat.Execute(ctx)
	}
	return fmt.Sprintf("menu %d: %s", m.turns, msg), nil
}

// Weapon is what the builder builds.
//
//chat:event weapon
type Weapon struct {
	Name   string `json:"name"`
	Damage int    `json:"damage"`
}

// Builder is a nested conversation keeping its state in a chat-scoped bean.
//
//chat:scoped
type Builder struct {
	weapon Weapon
}

// Build sets the weapon's name from the user's text; "done" pops back to
// the menu.
//
//chat:route builder
func (b *Builder) Build(ctx context.Context, message string, damage int) (*Weapon, error) {
	if message == "done" {
		if err := chat.Response(ctx).Message("saved " + b.weapon.Name); err != nil {
			return nil, err
		}
		return nil, chat.Pop(ctx)
	}
	b.weapon.Name = strings.TrimSpace(strings.TrimPrefix(message, "build"))
	b.weapon.Damage += damage
	w := b.weapon
	return &w, nil
}

// Echo returns the user's text.
//
//chat:route echo
func Echo(userMessage string) string { return userMessage }

// Count returns the request's count parameter doubled, as an object.
//
//chat:route count
func Count(count int, label string) map[string]any {
	return map[string]any{"label": label, "double": count * 2}
}

// Stream streams the words of the user's text.
//
//chat:route stream
func Stream(msg string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for _, w := range strings.Fields(msg) {
			if w == "fail" {
				yield("", errors.New("the stream broke"))
				return
			}
			if !yield(w, nil) {
				return
			}
		}
	}
}

// Panic panics.
//
//chat:route panic
func Panic(msg string) string { panic("route panicked: " + msg) }

// ErrOutOfStock is handled by the shop's own handler.
var ErrOutOfStock = errors.New("out of stock")

// StockError wraps the stock problems of the shop.
type StockError struct{ Item string }

func (e *StockError) Error() string { return e.Item + ": " + ErrOutOfStock.Error() }

// Unwrap returns ErrOutOfStock.
func (e *StockError) Unwrap() error { return ErrOutOfStock }

// Shop fails with a StockError for "sword" and a plain error for "axe".
//
//chat:route shop
func Shop(ctx context.Context, msg string) (string, error) {
	switch msg {
	case "sword":
		return "", &StockError{Item: msg}
	case "axe":
		return "", errors.New("internal: database down")
	}
	return "bought " + msg, nil
}

// OnStock apologises for missing stock in the shop.
//
//chat:catch route=shop
func OnStock(ctx context.Context, err *StockError) error {
	return chat.Response(ctx).Error("sorry, no " + err.Item)
}

// Admin is only for admins.
//
//chat:route admin roles=admin
func Admin() string { return "welcome, admin" }

// Bye ends the conversation.
//
//chat:route bye
func Bye(ctx context.Context) error { return chat.End(ctx) }
