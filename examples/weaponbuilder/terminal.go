package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// runTerminal is the terminal face of the armorer: it reads the player's
// lines from in and prints what the armorer sends to out, through the
// local client.
func runTerminal(ctx context.Context, router *chat.Router, in io.Reader, out io.Writer) error {
	client := chat.NewLocalClient(router)
	defer client.Close()
	streaming := false
	// confirm is the tool call waiting for the player's y/n, if any: the
	// Confirm event comes during a request, the answer is the next line.
	var confirm *ai.Confirmation
	endStream := func() {
		if streaming {
			fmt.Fprintln(out)
			streaming = false
		}
	}
	session, err := client.Builder().
		OnMessage(func(m string) { endStream(); fmt.Fprintf(out, "armorer: %s\n", m) }).
		OnThinking(func(m string) { endStream(); fmt.Fprintf(out, "  … %s\n", m) }).
		OnStream(func(c string) {
			if c == "" {
				return // the rendering that closes a markdown stream: for web pages
			}
			if !streaming {
				fmt.Fprint(out, "armorer: ")
				streaming = true
			}
			fmt.Fprint(out, c)
		}).
		OnError(func(m string) { endStream(); fmt.Fprintf(out, "  ! %s\n", m) }).
		On("weapon", func(ev chat.Event) {
			var w Weapon
			if ev.Decode(&w) == nil {
				endStream()
				fmt.Fprint(out, weaponCard(w))
			}
		}).
		On("armor", func(ev chat.Event) {
			var a Armor
			if ev.Decode(&a) == nil {
				endStream()
				fmt.Fprintf(out, "  [armour: %s %s%s]\n", orDash(a.Material), orDash(a.Piece), savedMark(a.Saved))
			}
		}).
		On("inventory", func(ev chat.Event) {
			var inv Inventory
			if ev.Decode(&inv) != nil {
				return
			}
			endStream()
			if inv.Latest != "" {
				fmt.Fprintf(out, "  (%s added to your armory)\n", inv.Latest)
				return
			}
			fmt.Fprint(out, inventoryText(inv))
		}).
		On("conversation", func(ev chat.Event) {
			var c Conversation
			if ev.Decode(&c) == nil {
				endStream()
				fmt.Fprintf(out, "  ── %s ──\n", strings.Repeat("» ", c.Depth)+c.Name)
				if c.Depth > 0 {
					fmt.Fprintf(out, "  (say cancel to leave the %s without finishing)\n", c.Name)
				}
			}
		}).
		On(protocol.EventSources, func(ev chat.Event) {
			var s ai.Sources
			if ev.Decode(&s) == nil {
				endStream()
				fmt.Fprint(out, sourcesText(s))
			}
		}).
		On(protocol.EventConfirm, func(ev chat.Event) {
			var c ai.Confirmation
			if ev.Decode(&c) == nil {
				endStream()
				confirm = &c
				fmt.Fprintf(out, "  ? the armorer wants to run %s %s. Allow it? [y/n]\n", c.Tool, c.Arguments)
			}
		}).
		OnDefault(func(ev chat.Event) { endStream(); fmt.Fprintf(out, "  (%s) %s\n", ev.Type, ev.Text()) }).
		Connect(ctx, "")
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "You are at the armorer's counter. Type a message; an empty line or end of input quits.")
	lines, readErr := readLines(in)
	for {
		fmt.Fprint(out, "> ")
		var line string
		select {
		case <-ctx.Done():
			// Ctrl-C while waiting for input: quit at once. The reading
			// goroutine stays blocked on in until the process exits.
			fmt.Fprintln(out)
			return nil
		case l, ok := <-lines:
			if !ok {
				fmt.Fprintln(out)
				return <-readErr
			}
			line = strings.TrimSpace(l)
		}
		if line == "" {
			return nil
		}
		var err error
		if c := confirm; c != nil {
			// The answer to the confirmation; any other line denies it and
			// is handled as a message.
			confirm = nil
			switch strings.ToLower(line) {
			case "y", "yes":
				err = session.Send(ctx, map[string]any{ai.KeyConfirm: c.ID, ai.KeyApprove: true})
			case "n", "no":
				err = session.Send(ctx, map[string]any{ai.KeyConfirm: c.ID, ai.KeyApprove: false, ai.KeyReason: "the player said no"})
			default:
				err = session.Chat(ctx, line)
			}
		} else {
			err = session.Chat(ctx, line)
		}
		if err != nil {
			endStream()
			fmt.Fprintf(out, "  ! the request failed: %v\n", err)
		}
		endStream()
	}
}

// readLines reads in line by line on its own goroutine, so that waiting for
// the player's input can be abandoned when the context ends. The line
// channel is closed at end of input, after the read error (nil at EOF) is
// put in the buffered error channel.
func readLines(in io.Reader) (<-chan string, <-chan error) {
	lines := make(chan string)
	errc := make(chan error, 1)
	go func() {
		defer close(lines)
		scanner := bufio.NewScanner(in)
		for scanner.Scan() {
			lines <- scanner.Text()
		}
		errc <- scanner.Err()
	}()
	return lines, errc
}

func weaponCard(w Weapon) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  ┌ %s%s\n", orDash(w.Name), savedMark(w.Saved))
	fmt.Fprintf(&b, "  │ kind: %s   damage: %d\n", orDash(string(w.Kind)), w.Damage)
	if w.Enchantment != nil {
		fmt.Fprintf(&b, "  │ enchantment: %s, power %d\n", w.Enchantment.Element, w.Enchantment.Power)
	}
	b.WriteString("  └\n")
	return b.String()
}

func inventoryText(inv Inventory) string {
	if len(inv.Weapons) == 0 && len(inv.Armor) == 0 {
		return "  (your armory is empty)\n"
	}
	var b strings.Builder
	for _, w := range inv.Weapons {
		fmt.Fprintf(&b, "  • %s, a %s (%d damage)", w.Name, w.Kind, w.Damage)
		if w.Enchantment != nil {
			fmt.Fprintf(&b, " with %s %d", w.Enchantment.Element, w.Enchantment.Power)
		}
		b.WriteString("\n")
	}
	for _, a := range inv.Armor {
		fmt.Fprintf(&b, "  • a %s %s\n", a.Material, a.Piece)
	}
	return b.String()
}

// sourcesText is the line of a Sources event: the passages the armorer
// was given, each with its title, file and score, best first.
func sourcesText(s ai.Sources) string {
	items := make([]string, len(s.Sources))
	for i, src := range s.Sources {
		title := src.Title
		if title == "" {
			title = src.ID
		}
		items[i] = fmt.Sprintf("%s — %s %.2f", title, orDash(src.Source), src.Score)
	}
	return "  [lore: " + strings.Join(items, "; ") + "]\n"
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func savedMark(saved bool) string {
	if saved {
		return "  ✔ saved"
	}
	return ""
}
