package e2e

import (
	"fmt"
	"strings"
	"time"
)

// The order route takes parameters of every JSON shape, so that the typed
// browser module (runtime/ws) has them all to declare.

// Size is the size of an order line.
type Size string

// The sizes.
const (
	Small Size = "small"
	Large Size = "large"
)

// Line is one line of an order.
type Line struct {
	// Item is what is ordered.
	Item     string `json:"item"`
	Quantity int    `json:"quantity"`
	Size     Size   `json:"size,omitempty"`
	// Price is in cents, sent as a string.
	Price int64 `json:"price,string"`
}

// Address is where an order goes.
type Address struct {
	Street string `json:"street"`
	City   string `json:"city"`
}

// Customer is who orders; Address fields are promoted.
type Customer struct {
	Name string `json:"name"`
	*Address
	Tags   []string          `json:"tags"`
	Extras map[string]string `json:"extras,omitempty"`
}

// Receipt answers an order.
//
//chat:event receipt
type Receipt struct {
	Lines    []Line    `json:"lines"`
	Total    float64   `json:"total"`
	Customer *Customer `json:"customer"`
	At       time.Time `json:"at"`
	Gift     bool      `json:"gift,omitempty"`
	Note     *string   `json:"note,omitempty"`
	Counts   map[Size]int
}

// Order places an order: lines, a customer, a delivery time and options.
//
//chat:route order
func Order(lines []Line, customer *Customer, due time.Time, gift bool, rate float64, notes map[string][]int) (*Receipt, error) {
	if len(lines) == 0 {
		return nil, fmt.Errorf("an order needs lines")
	}
	r := &Receipt{Lines: lines, Customer: customer, At: due, Gift: gift, Counts: map[Size]int{}}
	for _, l := range lines {
		r.Total += float64(l.Quantity) * float64(l.Price) / 100 * (1 + rate)
		r.Counts[l.Size] += l.Quantity
	}
	if len(notes) > 0 {
		keys := make([]string, 0, len(notes))
		for k := range notes {
			keys = append(keys, k)
		}
		note := strings.Join(keys, ",")
		r.Note = &note
	}
	return r, nil
}
