package aisvc

import (
	"errors"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
)

// A router built with an AI service that has no model fails at NewRouter,
// naming the service, not on the first request.
func TestNewRouterRefusesAServiceWithoutAModel(t *testing.T) {
	r, err := chat.NewRouter(nil, Register(Deps{}))
	if err == nil {
		t.Fatal("NewRouter accepted an AI service without a model")
	}
	if r != nil || !errors.Is(err, ai.ErrNoModel) || !strings.Contains(err.Error(), "aisvc.Smith") {
		t.Fatalf("NewRouter = %v, %v; want an error matching ai.ErrNoModel naming the service", r, err)
	}
}
