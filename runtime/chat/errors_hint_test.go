package chat_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chat"
)

// An operation without an active chat scope says which operation it was
// and how to get a scope, and still matches ErrNotActive.
func TestNotActiveSaysHowToGetAScope(t *testing.T) {
	err := chat.Push(context.Background())
	if !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("Push outside a scope = %v, want ErrNotActive", err)
	}
	for _, want := range []string{"push", "no active chat scope", "from a route", "chat.Begin"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}
