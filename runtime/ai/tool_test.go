package ai_test

import (
	"context"
	"errors"
	"testing"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
)

// anvil is a scoped bean with tool methods.
type anvil struct {
	piece  string
	inv    bool // looked up inside an invocation
	closed int
}

func (a *anvil) Close() error { a.closed++; return nil }

func TestBeanTool(t *testing.T) {
	bean := chat.NewBean("example.com/app.anvil", nil, func(context.Context) (*anvil, error) {
		return new(anvil), nil
	})
	setPiece := ai.BeanTool(bean, func(ctx context.Context, a *anvil, args struct {
		Piece string `json:"piece"`
	}) (any, error) {
		a.piece = args.Piece
		return "set " + a.piece, nil
	})
	ctx := begin(t)
	res, err := setPiece(ctx, `{"piece":"helm"}`)
	if err != nil || res != "set helm" {
		t.Fatalf("%v, %v", res, err)
	}
	a := must[*anvil](t)(bean.Lookup(ctx))
	if a.piece != "helm" {
		t.Fatalf("the tool ran on another instance: %+v", a)
	}

	// Arguments that do not decode: an *ArgumentsError, and no call.
	for _, args := range []string{`{"piece":3}`, `not json`} {
		_, err := setPiece(ctx, args)
		var argErr *ai.ArgumentsError
		if !errors.As(err, &argErr) || argErr.Err == nil {
			t.Fatalf("%s: err %v", args, err)
		}
	}
	if a.piece != "helm" {
		t.Fatalf("called with bad arguments: %+v", a)
	}

	// Without a scope the lookup fails.
	if _, err := setPiece(context.Background(), `{"piece":"shield"}`); !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("no scope: %v", err)
	}
}

// A tool without parameters takes struct{}: BeanTool ignores whatever
// arguments the model sent.
func TestBeanToolWithoutParameters(t *testing.T) {
	bean := chat.NewBean("example.com/app.anvil", nil, func(context.Context) (*anvil, error) {
		return &anvil{piece: "helm"}, nil
	})
	finish := ai.BeanTool(bean, func(ctx context.Context, a *anvil, _ struct{}) (any, error) {
		return "finished " + a.piece, nil
	})
	ctx := begin(t)
	// The arguments are not decoded: whatever the model sent is ignored.
	for _, args := range []string{`{}`, `{"x":1}`, `not json`} {
		res, err := finish(ctx, args)
		if err != nil || res != "finished helm" {
			t.Fatalf("%s: %v, %v", args, res, err)
		}
	}
	if _, err := finish(context.Background(), `{}`); !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("no scope: %v", err)
	}
}

// An invocation-scoped bean's tool runs in an invocation: its own when the
// context has none (the bean is closed when the tool returns), the
// caller's otherwise.
func TestBeanToolInvocation(t *testing.T) {
	var made []*anvil
	bean := chat.NewBean("example.com/app.anvil", &chat.BeanOptions{Kind: chat.KindInvocation}, func(ctx context.Context) (*anvil, error) {
		_, inv := chat.InvocationID(ctx)
		a := &anvil{inv: inv}
		made = append(made, a)
		return a, nil
	})
	touch := ai.BeanTool(bean, func(ctx context.Context, a *anvil, args struct{ Piece string }) (any, error) {
		if _, ok := chat.InvocationID(ctx); !ok {
			return nil, errors.New("no invocation")
		}
		a.piece = args.Piece
		return nil, nil
	})
	touchNoArgs := ai.BeanTool(bean, func(ctx context.Context, a *anvil, _ struct{}) (any, error) {
		if _, ok := chat.InvocationID(ctx); !ok {
			return nil, errors.New("no invocation")
		}
		return a.piece, nil
	})
	ctx := context.Background()
	if _, err := touch(ctx, `{"Piece":"helm"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := touchNoArgs(ctx, `{}`); err != nil {
		t.Fatal(err)
	}
	if len(made) != 2 || made[0].closed != 1 || made[1].closed != 1 || !made[0].inv {
		t.Fatalf("own invocations: %+v", made)
	}

	ctx, end := chat.BeginInvocation(ctx)
	if _, err := touch(ctx, `{"Piece":"shield"}`); err != nil {
		t.Fatal(err)
	}
	if res, err := touchNoArgs(ctx, `{}`); err != nil || res != "shield" {
		t.Fatalf("shared invocation: %v, %v", res, err)
	}
	if len(made) != 3 || made[2].closed != 0 {
		t.Fatalf("the caller's invocation ended early: %+v", made)
	}
	end()
	if made[2].closed != 1 {
		t.Fatalf("not closed with the caller's invocation: %+v", made[2])
	}
}
