package gen

import (
	"time"

	"github.com/dave/jennifer/jen"
)

// durationUnits are the time package's units, largest first.
var durationUnits = []struct {
	d    time.Duration
	name string
}{
	{time.Hour, "Hour"}, {time.Minute, "Minute"}, {time.Second, "Second"},
	{time.Millisecond, "Millisecond"}, {time.Microsecond, "Microsecond"}, {time.Nanosecond, "Nanosecond"},
}

// durationCode returns d as readable Go: time.Second, 10 * time.Second,
// 90 * time.Second, 1500 * time.Millisecond (the largest unit that
// divides d).
func durationCode(d time.Duration) *jen.Statement {
	for _, u := range durationUnits {
		if d%u.d != 0 {
			continue
		}
		if n := d / u.d; n != 1 {
			return jen.Lit(int(n)).Op("*").Qual("time", u.name)
		}
		return jen.Qual("time", u.name)
	}
	return jen.Lit(int(d))
}
