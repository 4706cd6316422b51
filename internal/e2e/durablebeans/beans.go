// Package durablebeans holds durable beans with a Close and no constructor
// that takes dependencies, whose generated registration the end-to-end
// tests drive across two routers over one store: Close runs once, on the
// node where the conversation ends, even when that node never used the
// beans after the resume.
package durablebeans

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

//go:generate go tool chatgen

// Ticket is a durable bean without a constructor. Its Close and DetachBean
// append a line to the file its Journal names (saved with it), so that a
// test sees which ran, where and how often.
//
//chat:scoped durable
type Ticket struct {
	ID      string
	Journal string
}

// Close is called once, where the ticket's scope ends.
func (t *Ticket) Close() error { return record(t.Journal, "close ticket "+t.ID) }

// DetachBean is called when the ticket's scope leaves the process without
// ending.
func (t *Ticket) DetachBean(context.Context) error {
	return record(t.Journal, "detach ticket "+t.ID)
}

// Hold is a durable per-chat bean whose constructor takes no
// dependencies, and whose Close has no result.
//
//chat:scoped per-chat durable
type Hold struct {
	Item    string
	Journal string
}

// NewHold builds an empty hold.
func NewHold() *Hold { return &Hold{} }

// Close is called once, where the hold's scope ends.
func (h *Hold) Close() { _ = record(h.Journal, "close hold "+h.Item) }

// Open takes "open ID ITEM JOURNAL": it opens the ticket ID holding ITEM,
// journaling to the file JOURNAL. "status" reads them back.
//
//chat:route tickets default
func Open(ctx context.Context, msg string) (string, error) {
	t, err := TicketFrom(ctx)
	if err != nil {
		return "", err
	}
	h, err := HoldFrom(ctx)
	if err != nil {
		return "", err
	}
	if msg == "status" {
		return fmt.Sprintf("ticket %s holds %s", t.ID, h.Item), nil
	}
	f := strings.SplitN(msg, " ", 4)
	if len(f) != 4 || f[0] != "open" {
		return "", errors.New("want open ID ITEM JOURNAL, or status")
	}
	t.ID, h.Item = f[1], f[2]
	t.Journal, h.Journal = f[3], f[3]
	return "opened " + t.ID, nil
}

// record appends line to the file at path.
func record(path, line string) error {
	if path == "" {
		return errors.New("no journal")
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, line); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
