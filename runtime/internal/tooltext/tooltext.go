// Package tooltext holds what the tool sources (runtime/mcptools,
// runtime/a2atools) share to turn a remote result into the text a model
// is told: its bound.
package tooltext

import (
	"fmt"
	"unicode/utf8"
)

// Clip cuts text to max bytes at a character boundary, and says so on a
// last line; max -1 (any negative value) means no bound.
func Clip(text string, max int) string {
	if max < 0 || len(text) <= max {
		return text
	}
	n := max
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return fmt.Sprintf("%s\n[the result was cut to %d of its %d bytes]", text[:n], n, len(text))
}
