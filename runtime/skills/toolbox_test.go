package skills_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/skills"
)

// New refuses gates that name no skill of the set, tools without a name
// or an Invoke, and a tool gated by two skills.
func TestNewBadGates(t *testing.T) {
	set := testSet(t)
	for _, tc := range []struct {
		name string
		opts *skills.Options
		want string
	}{
		{"unknown skill", &skills.Options{GatedNames: map[string][]string{"smelting": {"temper"}}}, `unknown skill "smelting" gates tools`},
		{"unknown skill of a tool", &skills.Options{Gated: map[string][]ai.Tool{"smelting": nil}}, `unknown skill "smelting"`},
		{"no invoke", &skills.Options{Gated: map[string][]ai.Tool{"forging": {{Name: "quench"}}}}, "no name or no Invoke"},
		{"two gates", &skills.Options{GatedNames: map[string][]string{"forging": {"temper"}, "fletching": {"temper"}}}, "gated by both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := skills.New(set, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if strings.Contains(tc.want, "unknown") && !errors.Is(err, skills.ErrUnknown) {
				t.Fatalf("error %v does not match ErrUnknown", err)
			}
		})
	}
}
