package chat_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

var bg = context.Background()

// --- route switching ---

func TestRouteSwitchingOverTurns(t *testing.T) {
	e := newEnv(t, []chatimpl.RouteSpec{
		asDefault(textRoute("top", func(ctx context.Context, msg string) (string, error) {
			if msg == "go" {
				if err := chat.PushRoute(ctx, "sub"); err != nil {
					return "", err
				}
			}
			return "top:" + msg + where(ctx), nil
		})),
		textRoute("sub", func(ctx context.Context, msg string) (string, error) {
			switch msg {
			case "detour": // change the nested scope's own route
				if err := chat.Route(ctx, "sub2"); err != nil {
					return "", err
				}
			case "back":
				if err := chat.Pop(ctx); err != nil {
					return "", err
				}
			}
			return "sub:" + msg + where(ctx), nil
		}),
		textRoute("sub2", func(ctx context.Context, msg string) (string, error) {
			if msg == "back" {
				if err := chat.Pop(ctx); err != nil {
					return "", err
				}
			}
			return "sub2:" + msg + where(ctx), nil
		}),
	}, nil)
	s, l := e.connect(bg, "")
	id0 := s.ScopeID()
	if id0 == "" {
		t.Fatal("no scope id after connect")
	}

	turn := func(msg, want, wantScope string) {
		t.Helper()
		wantNoErr(t, s.Chat(bg, msg))
		wantEvents(t, l.take(), "Message:"+want)
		if wantScope != "" && s.ScopeID() != wantScope {
			t.Fatalf("after %q: scope %s, want %s", msg, s.ScopeID(), wantScope)
		}
	}
	turn("hello", "top:hello@0/top", id0)
	turn("go", "top:go@1/sub", "")
	id1 := s.ScopeID()
	if id1 == id0 || id1 == "" {
		t.Fatalf("after PushRoute the session's scope is %q (top %q)", id1, id0)
	}
	turn("x", "sub:x@1/sub", id1)
	turn("detour", "sub:detour@1/sub2", id1)
	turn("y", "sub2:y@1/sub2", id1)
	turn("back", "sub2:back@0/top", id0) // the parent's own route, not sub2
	turn("z", "top:z@0/top", id0)
	// The scope can be entered again: a fresh child.
	turn("go", "top:go@1/sub", "")
	if id := s.ScopeID(); id == id1 || id == id0 {
		t.Fatalf("second child reuses id %s", id)
	}
	turn("back", "sub:back@0/top", id0)
	if st := e.router.Stats(); st.Conversations != 1 || st.Scopes != 1 {
		t.Fatalf("stats %+v, want 1 conversation with 1 scope", st)
	}
}

func TestPushKeepsTheRoute(t *testing.T) {
	e := newEnv(t, []chatimpl.RouteSpec{
		textRoute("r", func(ctx context.Context, msg string) (string, error) {
			switch msg {
			case "push":
				if err := chat.Push(ctx); err != nil {
					return "", err
				}
			case "pop":
				if err := chat.Pop(ctx); err != nil {
					return "", err
				}
			}
			return msg + where(ctx), nil
		}),
	}, nil)
	s, l := e.connect(bg, "r")
	id0 := s.ScopeID()
	wantNoErr(t, s.Chat(bg, "push"))
	wantNoErr(t, s.Chat(bg, "push"))
	wantNoErr(t, s.Chat(bg, "x"))
	id2 := s.ScopeID()
	wantNoErr(t, s.Chat(bg, "pop"))
	wantNoErr(t, s.Chat(bg, "pop"))
	wantEvents(t, l.take(), "Message:push@1/r", "Message:push@2/r", "Message:x@2/r", "Message:pop@1/r", "Message:pop@0/r")
	if s.ScopeID() != id0 || id2 == id0 {
		t.Fatalf("scope ids: top %s, nested %s, now %s", id0, id2, s.ScopeID())
	}
}

// --- Execute: the Main Menu pattern ---

func TestExecuteMainMenu(t *testing.T) {
	e := newEnv(t, []chatimpl.RouteSpec{
		asDefault(textRoute("menu", func(ctx context.Context, msg string) (string, error) {
			if err := chat.Response(ctx).Thinking("menu sees " + msg); err != nil {
				return "", err
			}
			if err := chat.PushRoute(ctx, "builder"); err != nil {
				return "", err
			}
			if err := chat.Execute(ctx); err != nil {
				return "", err
			}
			return "menu after" + where(ctx), nil
		})),
		{
			Name: "builder",
			Handle: func(ctx context.Context) error {
				req := chat.Request(ctx)
				var damage int
				if err := req.Decode("damage", &damage); err != nil {
					return err
				}
				return chat.SendValue(ctx, fmt.Sprintf("builder %q damage=%d%s", req.UserMessage(), damage, where(ctx)))
			},
		},
	}, nil)
	s, l := e.connect(bg, "")
	id0 := s.ScopeID()
	wantNoErr(t, s.Send(bg, map[string]any{"userMessage": "make a sword", "damage": 7}))
	wantEvents(t, l.take(),
		"Thinking:menu sees make a sword",
		`Message:builder "make a sword" damage=7@1/builder`,
		"Message:menu after@1/builder")
	id1 := s.ScopeID()
	if id1 == id0 {
		t.Fatal("Completed did not carry the pushed scope's id")
	}
	// The next request goes to the builder directly.
	wantNoErr(t, s.Chat(bg, "sharper"))
	wantEvents(t, l.take(), `Message:builder "sharper" damage=0@1/builder`)
	if s.ScopeID() != id1 {
		t.Fatal("scope changed")
	}
}

func TestExecuteUnknownRoute(t *testing.T) {
	var after atomic.Int32
	e := newEnv(t, []chatimpl.RouteSpec{
		asDefault(textRoute("menu", func(ctx context.Context, msg string) (string, error) {
			var err error
			switch msg {
			case "named":
				err = chat.ExecuteRoute(ctx, "nope")
			case "current":
				// PushRoute refuses the unknown route: Execute runs
				// the current one, which is this.
				var unknown *chat.UnknownRouteError
				if err := chat.PushRoute(ctx, "nope"); !errors.As(err, &unknown) {
					return "", fmt.Errorf("PushRoute: %v", err)
				}
				return "pushed nowhere", nil
			case "check":
				err = chat.ExecuteRoute(ctx, "nope")
				if !errors.Is(err, chat.ErrRouteNotFound) {
					return "", fmt.Errorf("ExecuteRoute: %v", err)
				}
				return "checked", nil
			}
			after.Add(1)
			return "unreachable", err
		})),
	}, nil)
	s, l := e.connect(bg, "")
	id0 := s.ScopeID()
	wantFailure(t, s.Chat(bg, "named"), "RouteNotFound")
	wantEvents(t, l.take())
	if s.ScopeID() != id0 {
		t.Fatal("scope changed")
	}
	wantNoErr(t, s.Chat(bg, "check"))
	wantEvents(t, l.take(), "Message:checked")
	// The cause, kept on the server, names the closest known route.
	_, err := e.router.Connect(bg, "mneu")
	var unknown *chat.UnknownRouteError
	if !errors.Is(err, chat.ErrRouteNotFound) || !errors.As(err, &unknown) || unknown.Route != "mneu" || unknown.Suggestion != "menu" {
		t.Fatalf("Connect to a mistyped route: %v", err)
	}
	wantNoErr(t, s.Chat(bg, "current"))
	wantEvents(t, l.take(), "Message:pushed nowhere")
	if s.ScopeID() != id0 {
		t.Fatal("a refused PushRoute changed the scope")
	}
	wantNoErr(t, s.Chat(bg, "again"))
	wantEvents(t, l.take(), "Message:unreachable")
	if after.Load() != 2 {
		t.Fatalf("route ran %d times past Execute, want 2", after.Load())
	}
}

func TestExecuteOutsideARequest(t *testing.T) {
	if err := chat.Execute(bg); !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("Execute without a scope: %v", err)
	}
	ctx, err := chat.Begin(bg, nil)
	wantNoErr(t, err)
	defer func() { _ = chat.End(ctx) }()
	wantNoErr(t, chat.Route(ctx, "x"))
	if err := chat.Execute(ctx); !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("Execute outside a request: %v", err)
	}
	if err := chat.ExecuteRoute(ctx, "x"); !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("ExecuteRoute outside a request: %v", err)
	}
}

// --- default route and router construction ---

func TestDefaultRoute(t *testing.T) {
	named := func(name string) chatimpl.RouteSpec {
		return textRoute(name, func(ctx context.Context, msg string) (string, error) { return name + ":" + msg, nil })
	}
	t.Run("explicit", func(t *testing.T) {
		e := newEnv(t, []chatimpl.RouteSpec{named("a"), asDefault(named("b")), named("c")}, nil)
		if e.router.DefaultRoute() != "b" {
			t.Fatalf("DefaultRoute %q", e.router.DefaultRoute())
		}
		if got := strings.Join(e.router.Routes(), ","); got != "a,b,c" {
			t.Fatalf("Routes %s", got)
		}
		s, l := e.connect(bg, "")
		wantNoErr(t, s.Chat(bg, "hi"))
		s2, l2 := e.connect(bg, "c")
		wantNoErr(t, s2.Chat(bg, "hi"))
		wantEvents(t, l.take(), "Message:b:hi")
		wantEvents(t, l2.take(), "Message:c:hi")
	})
	t.Run("lone", func(t *testing.T) {
		e := newEnv(t, []chatimpl.RouteSpec{named("only")}, nil)
		if e.router.DefaultRoute() != "only" {
			t.Fatalf("DefaultRoute %q", e.router.DefaultRoute())
		}
		s, l := e.connect(bg, "")
		wantNoErr(t, s.Chat(bg, "hi"))
		wantEvents(t, l.take(), "Message:only:hi")
	})
	t.Run("none", func(t *testing.T) {
		e := newEnv(t, []chatimpl.RouteSpec{named("a"), named("b")}, nil)
		if e.router.DefaultRoute() != "" {
			t.Fatalf("DefaultRoute %q", e.router.DefaultRoute())
		}
		s, err := e.client.Builder().Connect(bg, "")
		if !errors.Is(err, chat.ErrRouteNotFound) || s != nil {
			t.Fatalf("connect with no default: %v, %v", s, err)
		}
		wantFailure(t, err, "RouteNotFound")
		if _, err := e.router.Connect(bg, ""); !errors.Is(err, chat.ErrRouteNotFound) {
			t.Fatalf("Router.Connect with no default: %v", err)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		e := newEnv(t, []chatimpl.RouteSpec{named("a")}, nil)
		_, err := e.client.Builder().Connect(bg, "zzz")
		if !errors.Is(err, chat.ErrRouteNotFound) || errors.Is(err, chat.ErrServerError) {
			t.Fatalf("connect to an unknown route: %v", err)
		}
		if st := e.router.Stats(); st != (chat.Stats{}) {
			t.Fatalf("a failed connect left %+v", st)
		}
	})
}

func TestNewRouterErrors(t *testing.T) {
	ok := func(context.Context) error { return nil }
	pkg := func(path string, routes ...chatimpl.RouteSpec) *chatimpl.Package {
		p := chatimpl.NewPackage(path)
		for _, r := range routes {
			p.AddRoute(r)
		}
		return p
	}
	cases := []struct {
		name string
		pkgs []*chatimpl.Package
		want string
	}{
		{"two defaults", []*chatimpl.Package{pkg("p",
			chatimpl.RouteSpec{Name: "a", Default: true, Handle: ok},
			chatimpl.RouteSpec{Name: "b", Default: true, Handle: ok})}, `routes "a" and "b" are both the default route`},
		{"two defaults in two packages", []*chatimpl.Package{
			pkg("p", chatimpl.RouteSpec{Name: "a", Default: true, Handle: ok}),
			pkg("q", chatimpl.RouteSpec{Name: "b", Default: true, Handle: ok})}, `both the default route`},
		{"duplicate in one package", []*chatimpl.Package{pkg("p",
			chatimpl.RouteSpec{Name: "a", Handle: ok},
			chatimpl.RouteSpec{Name: "a", Handle: ok})}, `route "a" is registered twice (again by p)`},
		{"duplicate in two packages", []*chatimpl.Package{
			pkg("p", chatimpl.RouteSpec{Name: "a", Handle: ok}),
			pkg("q", chatimpl.RouteSpec{Name: "a", Handle: ok})}, `route "a" is registered twice (again by q)`},
		{"no name", []*chatimpl.Package{pkg("p", chatimpl.RouteSpec{Handle: ok})}, "no name or no Handle"},
		{"no handle", []*chatimpl.Package{pkg("p", chatimpl.RouteSpec{Name: "a"})}, "no name or no Handle"},
		{"nil package", []*chatimpl.Package{nil}, "a nil *Package"},
	}
	p := pkg("p", chatimpl.RouteSpec{Name: "a", Handle: ok})
	p.AddCatch(chatimpl.CatchSpec{Route: "ghost", Type: "*E", Handle: func(context.Context, error) (bool, error) { return false, nil }})
	cases = append(cases, struct {
		name string
		pkgs []*chatimpl.Package
		want string
	}{"catch for an unknown route", []*chatimpl.Package{p}, `names the unknown route "ghost"`})
	p2 := pkg("p", chatimpl.RouteSpec{Name: "a", Handle: ok})
	p2.AddCatch(chatimpl.CatchSpec{Type: "*E"})
	cases = append(cases, struct {
		name string
		pkgs []*chatimpl.Package
		want string
	}{"catch without Handle", []*chatimpl.Package{p2}, "(*E) of p has no Handle"})

	// A provider for a descriptor that is not a *chat.Bean would never be
	// used: the router refuses it.
	p3 := pkg("p", chatimpl.RouteSpec{Name: "a", Handle: ok})
	chatimpl.Provide[int](p3, fakeBean{}, func(context.Context) (int, error) { return 1, nil })
	cases = append(cases, struct {
		name string
		pkgs []*chatimpl.Package
		want string
	}{"provider of a foreign bean", []*chatimpl.Package{p3}, "provides chat_test.fakeBean, which is not a *chat.Bean"})

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := chat.NewRouter(nil, tc.pkgs...)
			if err == nil || r != nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewRouter: %v, %v; want an error containing %q", r, err, tc.want)
			}
		})
	}
	// Two packages with distinct routes and one default are fine.
	r, err := chat.NewRouter(nil,
		pkg("p", chatimpl.RouteSpec{Name: "a", Handle: ok}),
		pkg("q", chatimpl.RouteSpec{Name: "b", Default: true, Handle: ok}))
	if err != nil || r.DefaultRoute() != "b" {
		t.Fatalf("NewRouter: %v, default %q", err, r.DefaultRoute())
	}
}

// --- return values as events ---

type weapon struct {
	Name   string `json:"name"`
	Damage int    `json:"damage"`
}

type progress struct {
	Pct int `json:"pct"`
}

func (progress) ChatEventType() string { return "Progress" }

// valueTyped has a value-receiver ChatEventType: calling it through a nil
// *valueTyped panics, so a nil must be caught before.
type valueTyped struct{ N int }

func (valueTyped) ChatEventType() string { return "ValueTyped" }

func chunks(parts ...string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, p := range parts {
			if !yield(p) {
				return
			}
		}
	}
}

func failingChunks(err error, parts ...string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for _, p := range parts {
			if !yield(p, nil) {
				return
			}
		}
		yield("", err)
	}
}

// returnRoutes registers one route per kind of result, as chatgen
// generates them for methods of those result types.
func returnRoutes() []chatimpl.RouteSpec {
	return []chatimpl.RouteSpec{
		textRoute("text", func(ctx context.Context, msg string) (string, error) { return "echo " + msg, nil }),
		textRoute("empty", func(ctx context.Context, msg string) (string, error) { return "", nil }),
		{Name: "struct", Handle: func(ctx context.Context) error {
			req := chat.Request(ctx)
			res := weapon{Name: req.UserMessage(), Damage: 7}
			return chat.SendValue(ctx, res)
		}},
		{Name: "pointer", Handle: func(ctx context.Context) error {
			req := chat.Request(ctx)
			res := &weapon{Name: req.UserMessage(), Damage: 9}
			return chat.SendValue(ctx, res)
		}},
		{Name: "typed", Handle: func(ctx context.Context) error {
			return chat.SendValue(ctx, progress{Pct: 50})
		}},
		{Name: "nilpointer", Handle: func(ctx context.Context) error {
			var res *weapon
			return chat.SendValue(ctx, res)
		}},
		{Name: "niltyped", Handle: func(ctx context.Context) error {
			var res *valueTyped
			return chat.SendValue(ctx, res)
		}},
		{Name: "nilslice", Handle: func(ctx context.Context) error {
			var res []weapon
			return chat.SendValue(ctx, res)
		}},
		{Name: "nil", Handle: func(ctx context.Context) error {
			return chat.SendValue[any](ctx, nil)
		}},
		{Name: "seq", Handle: func(ctx context.Context) error {
			return chat.Response(ctx).Stream(chunks("a", "b", "c"))
		}},
		{Name: "seq2", Handle: func(ctx context.Context) error {
			return chat.Response(ctx).StreamWithErrors(func(yield func(string, error) bool) {
				_ = yield("x", nil) && yield("y", nil)
			})
		}},
		{Name: "seq2fail", Handle: func(ctx context.Context) error {
			return chat.Response(ctx).StreamWithErrors(failingChunks(errors.New("model went away"), "a", "b"))
		}},
		textRoute("error", func(ctx context.Context, msg string) (string, error) {
			return "ignored", errors.New("secret sauce: " + msg)
		}),
	}
}

func TestReturnValuesBecomeEvents(t *testing.T) {
	e := newEnv(t, returnRoutes(), nil)
	cases := []struct {
		route string
		want  []string
	}{
		{"text", []string{"Message:echo hi"}},
		{"empty", nil},
		{"struct", []string{`Object:{"name":"hi","damage":7}`}},
		{"pointer", []string{`Object:{"name":"hi","damage":9}`}},
		{"typed", []string{`Progress:{"pct":50}`}},
		{"nilpointer", nil},
		{"niltyped", nil},
		{"nilslice", nil},
		{"nil", nil},
		{"seq", []string{"Stream:a", "Stream:b", "Stream:c"}},
		{"seq2", []string{"Stream:x", "Stream:y"}},
	}
	for _, tc := range cases {
		t.Run(tc.route, func(t *testing.T) {
			s, l := e.connect(bg, tc.route)
			id := s.ScopeID()
			wantNoErr(t, s.Chat(bg, "hi"))
			wantEvents(t, l.take(), tc.want...)
			if s.ScopeID() != id {
				t.Fatal("scope changed")
			}
		})
	}
}

func TestObjectsDecodeOnTheClient(t *testing.T) {
	e := newEnv(t, returnRoutes(), nil)
	var objs []weapon
	var progs []progress
	var other []string
	b := e.client.Builder().
		OnObject(func(ev chat.Event) {
			var w weapon
			if err := ev.Decode(&w); err != nil {
				t.Errorf("decode: %v", err)
			}
			objs = append(objs, w)
		}).
		On("Progress", func(ev chat.Event) {
			var p progress
			if err := ev.Decode(&p); err != nil {
				t.Errorf("decode: %v", err)
			}
			progs = append(progs, p)
		}).
		OnDefault(func(ev chat.Event) { other = append(other, ev.Type) })
	for _, route := range []string{"struct", "pointer", "typed"} {
		s, err := b.Connect(bg, route)
		wantNoErr(t, err)
		wantNoErr(t, s.Chat(bg, route))
	}
	if len(objs) != 2 || objs[0] != (weapon{"struct", 7}) || objs[1] != (weapon{"pointer", 9}) {
		t.Fatalf("objects %+v", objs)
	}
	if len(progs) != 1 || progs[0].Pct != 50 || other != nil {
		t.Fatalf("progress events %+v, others %v", progs, other)
	}
}

func TestStreamFailureAfterChunks(t *testing.T) {
	e := newEnv(t, returnRoutes(), nil)
	s, l := e.connect(bg, "seq2fail")
	id := s.ScopeID()
	err := s.Chat(bg, "hi")
	wantFailure(t, err, "StreamingFailure")
	wantEvents(t, l.take(), "Stream:a", "Stream:b")
	if strings.Contains(err.Error(), "model went away") {
		t.Fatalf("client error %q leaks the cause", err)
	}
	rec := e.log.failureRecord(t)
	if rec["scope"] != id || rec["reason"] != "StreamingFailure" || !strings.Contains(rec["err"].(string), "model went away") {
		t.Fatalf("log record %v", rec)
	}
	// The conversation survives.
	wantFailure(t, s.Chat(bg, "again"), "StreamingFailure")
	wantEvents(t, l.take(), "Stream:a", "Stream:b")
}

func TestRouteErrorIsServerErrorAndLogged(t *testing.T) {
	e := newEnv(t, returnRoutes(), nil)
	s, l := e.connect(bg, "error")
	id := s.ScopeID()
	err := s.Chat(bg, "xyzzy")
	f := wantFailure(t, err, "ServerError")
	if !errors.Is(err, chat.ErrServerError) || f.Err != nil {
		t.Fatalf("failure %#v", f)
	}
	if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "xyzzy") {
		t.Fatalf("client error %q carries internal text", err)
	}
	wantEvents(t, l.take())
	rec := e.log.failureRecord(t)
	if rec["scope"] != id || rec["route"] != "error" || rec["reason"] != "ServerError" || rec["err"] != "secret sauce: xyzzy" {
		t.Fatalf("log record %v", rec)
	}
	if !strings.Contains(e.log.String(), id) {
		t.Fatal("log lacks the scope id")
	}
	if s.ScopeID() != id {
		t.Fatal("scope changed")
	}
}

// --- error handlers ---

type innerErr struct{ code int }

func (e *innerErr) Error() string { return fmt.Sprintf("inner %d", e.code) }
func (e *innerErr) Code() int     { return e.code }

type outerErr struct{ err error }

func (e *outerErr) Error() string { return "outer: " + e.err.Error() }
func (e *outerErr) Unwrap() error { return e.err }

// codedOuter is a wrapper that itself has a code.
type codedOuter struct{ err error }

func (e *codedOuter) Error() string { return "coded outer: " + e.err.Error() }
func (e *codedOuter) Unwrap() error { return e.err }
func (e *codedOuter) Code() int     { return 99 }

type coder interface {
	error
	Code() int
}

// failing returns a route failing with the error its message names.
func failing(name string) chatimpl.RouteSpec {
	return textRoute(name, func(ctx context.Context, msg string) (string, error) {
		switch msg {
		case "inner":
			return "", &innerErr{1}
		case "outer":
			return "", &outerErr{&innerErr{2}}
		case "wrapped":
			return "", fmt.Errorf("context: %w", &innerErr{3})
		case "joined":
			return "", errors.Join(errors.New("first"), &innerErr{4})
		case "coded":
			return "", &codedOuter{&innerErr{5}}
		case "plain":
			return "", errors.New("plain")
		case "panic":
			panic("route blew up")
		}
		return "fine " + msg, nil
	})
}

// reply returns a handler answering with a Message naming it.
func reply[E error](name string) func(ctx context.Context, e E) error {
	return func(ctx context.Context, e E) error {
		return chat.Response(ctx).Message(name + " handled " + e.Error())
	}
}

func TestCatchRouteSpecificBeforeGlobal(t *testing.T) {
	e := newEnv(t, []chatimpl.RouteSpec{failing("a"), failing("b")}, []chatimpl.CatchSpec{
		catchFor("", "*outerErr", false, reply[*outerErr]("global-outer")),
		catchFor("", "*innerErr", false, reply[*innerErr]("global-inner")),
		catchFor("a", "*innerErr", false, reply[*innerErr]("a-inner")),
	})
	sa, la := e.connect(bg, "a")
	sb, lb := e.connect(bg, "b")
	wantNoErr(t, sa.Chat(bg, "inner"))
	wantEvents(t, la.take(), "Message:a-inner handled inner 1")
	wantNoErr(t, sb.Chat(bg, "inner"))
	wantEvents(t, lb.take(), "Message:global-inner handled inner 1")
	// A route-specific handler of a deeper link beats a global handler of
	// the outermost one.
	wantNoErr(t, sa.Chat(bg, "outer"))
	wantEvents(t, la.take(), "Message:a-inner handled inner 2")
	wantNoErr(t, sb.Chat(bg, "outer"))
	wantEvents(t, lb.take(), "Message:global-outer handled outer: inner 2")
}

func TestCatchGlobalWhenNoRouteSpecificMatches(t *testing.T) {
	e := newEnv(t, []chatimpl.RouteSpec{failing("a")}, []chatimpl.CatchSpec{
		catchFor("a", "*outerErr", false, reply[*outerErr]("a-outer")),
		catchFor("", "*innerErr", false, reply[*innerErr]("global-inner")),
	})
	s, l := e.connect(bg, "a")
	wantNoErr(t, s.Chat(bg, "inner"))
	wantEvents(t, l.take(), "Message:global-inner handled inner 1")
	wantNoErr(t, s.Chat(bg, "outer"))
	wantEvents(t, l.take(), "Message:a-outer handled outer: inner 2")
	// Nothing matches a plain error: ServerError.
	wantFailure(t, s.Chat(bg, "plain"), "ServerError")
	wantEvents(t, l.take())
}

func TestCatchNearestLinkFirst(t *testing.T) {
	for _, route := range []string{"", "a"} { // global handlers, then route-specific ones
		t.Run("route="+route, func(t *testing.T) {
			e := newEnv(t, []chatimpl.RouteSpec{failing("a")}, []chatimpl.CatchSpec{
				catchFor(route, "*innerErr", false, reply[*innerErr]("inner")), // registered first
				catchFor(route, "*outerErr", false, reply[*outerErr]("outer")),
			})
			s, l := e.connect(bg, "a")
			wantNoErr(t, s.Chat(bg, "outer"))
			wantEvents(t, l.take(), "Message:outer handled outer: inner 2")
			wantNoErr(t, s.Chat(bg, "inner"))
			wantEvents(t, l.take(), "Message:inner handled inner 1")
			// Wrappers without a handler are looked through, fmt's and
			// errors.Join's alike.
			wantNoErr(t, s.Chat(bg, "wrapped"))
			wantEvents(t, l.take(), "Message:inner handled inner 3")
			wantNoErr(t, s.Chat(bg, "joined"))
			wantEvents(t, l.take(), "Message:inner handled inner 4")
		})
	}
}

func TestCatchConcreteBeforeInterface(t *testing.T) {
	e := newEnv(t, []chatimpl.RouteSpec{failing("a")}, []chatimpl.CatchSpec{
		catchFor("", "coder", true, reply[coder]("coder")), // registered first
		catchFor("", "*innerErr", false, reply[*innerErr]("concrete")),
	})
	s, l := e.connect(bg, "a")
	// Both match the same link: the concrete type wins.
	wantNoErr(t, s.Chat(bg, "inner"))
	wantEvents(t, l.take(), "Message:concrete handled inner 1")
	// The interface matches a nearer link: nearest first wins over
	// concrete first.
	wantNoErr(t, s.Chat(bg, "coded"))
	wantEvents(t, l.take(), "Message:coder handled coded outer: inner 5")
	// An outer link nobody handles is looked through.
	wantNoErr(t, s.Chat(bg, "outer"))
	wantEvents(t, l.take(), "Message:concrete handled inner 2")
}

func TestCatchHandlerOutcomes(t *testing.T) {
	e := newEnv(t, []chatimpl.RouteSpec{failing("a"), failing("b"), failing("c")}, []chatimpl.CatchSpec{
		catchFor("a", "*innerErr", false, func(ctx context.Context, e *innerErr) error {
			_ = chat.Response(ctx).Message("trying")
			return errors.New("handler secret")
		}),
		catchFor("b", "*innerErr", false, func(ctx context.Context, e *innerErr) error {
			panic("handler blew up")
		}),
		catchFor("c", "*innerErr", false, reply[*innerErr]("c")),
	})
	sa, la := e.connect(bg, "a")
	err := sa.Chat(bg, "inner")
	wantFailure(t, err, "ServerError")
	wantEvents(t, la.take(), "Message:trying")
	if strings.Contains(err.Error(), "secret") {
		t.Fatalf("client error %q", err)
	}
	rec := e.log.failureRecord(t)
	if msg := rec["err"].(string); !strings.Contains(msg, "handler secret") || !strings.Contains(msg, "inner 1") || rec["scope"] != sa.ScopeID() {
		t.Fatalf("log record %v", rec)
	}
	// The conversation keeps working.
	wantNoErr(t, sa.Chat(bg, "ok"))
	wantEvents(t, la.take(), "Message:fine ok")

	sb, lb := e.connect(bg, "b")
	wantFailure(t, sb.Chat(bg, "inner"), "ServerError")
	wantEvents(t, lb.take())
	if !strings.Contains(e.log.String(), "handler blew up") {
		t.Fatalf("log lacks the handler's panic:\n%s", e.log)
	}
	wantNoErr(t, sb.Chat(bg, "ok"))
	wantEvents(t, lb.take(), "Message:fine ok")

	sc, lc := e.connect(bg, "c")
	id := sc.ScopeID()
	wantNoErr(t, sc.Chat(bg, "inner"))
	wantEvents(t, lc.take(), "Message:c handled inner 1")
	if sc.ScopeID() != id {
		t.Fatal("a handled error changed the scope")
	}
	wantNoErr(t, sc.Chat(bg, "ok"))
	wantEvents(t, lc.take(), "Message:fine ok")
}

// The error of an executed route is offered to that route's handlers;
// an error the executing route makes itself is its own.
func TestCatchAttributesErrorsToTheRouteTheyCameFrom(t *testing.T) {
	e := newEnv(t, []chatimpl.RouteSpec{
		asDefault(textRoute("menu", func(ctx context.Context, msg string) (string, error) {
			err := chat.ExecuteRoute(ctx, "builder")
			switch msg {
			case "pass":
				return "", err
			case "wrap":
				return "", fmt.Errorf("menu: %w", err)
			case "own": // swallow the builder's error, fail on its own
				return "", &innerErr{100}
			}
			return "", nil
		})),
		textRoute("builder", func(ctx context.Context, msg string) (string, error) {
			return "", &innerErr{7}
		}),
	}, []chatimpl.CatchSpec{
		catchFor("builder", "*innerErr", false, reply[*innerErr]("builder")),
		catchFor("menu", "*innerErr", false, reply[*innerErr]("menu")),
	})
	s, l := e.connect(bg, "")
	wantNoErr(t, s.Chat(bg, "pass"))
	wantEvents(t, l.take(), "Message:builder handled inner 7")
	wantNoErr(t, s.Chat(bg, "wrap"))
	wantEvents(t, l.take(), "Message:builder handled inner 7")
	wantNoErr(t, s.Chat(bg, "own"))
	wantEvents(t, l.take(), "Message:menu handled inner 100")
}

// --- panics ---

func TestPanickingRouteFailsOnlyThatRequest(t *testing.T) {
	j := &journal{}
	bean := closerBean(j, chat.KindChat)
	e := newEnv(t, []chatimpl.RouteSpec{
		textRoute("r", func(ctx context.Context, msg string) (string, error) {
			c, err := bean.Lookup(ctx)
			if err != nil {
				return "", err
			}
			c.n++
			if msg == "panic" {
				_ = chat.Response(ctx).Message(fmt.Sprint("before panic n=", c.n))
				panic("boom")
			}
			if msg == "nilmap" {
				var m map[string]int
				//lint:ignore SA5000 the assignment to a nil map is the point: it panics with a runtime error.
				m["x"] = 1
			}
			return fmt.Sprint("n=", c.n), nil
		}),
	}, nil)
	s, l := e.connect(bg, "r")
	id := s.ScopeID()
	wantNoErr(t, s.Chat(bg, "a"))
	wantFailure(t, s.Chat(bg, "panic"), "ServerError")
	wantFailure(t, s.Chat(bg, "nilmap"), "ServerError")
	wantNoErr(t, s.Chat(bg, "b"))
	wantEvents(t, l.take(), "Message:n=1", "Message:before panic n=2", "Message:n=4")
	if s.ScopeID() != id {
		t.Fatal("scope changed")
	}
	if got := j.take(); len(got) != 1 || got[0] != "new bean@0" {
		t.Fatalf("bean lifecycle %v: the bean must survive the panics", got)
	}
	logs := e.log.String()
	if !strings.Contains(logs, "panic: boom") || !strings.Contains(logs, "assignment to entry in nil map") {
		t.Fatalf("log lacks the panics:\n%s", logs)
	}
}

// --- roles ---

func TestRoles(t *testing.T) {
	e := newEnv(t, []chatimpl.RouteSpec{
		{Name: "admin", Roles: []string{"admin", "root"}, Handle: func(ctx context.Context) error {
			return chat.SendValue(ctx, "hello "+chat.PrincipalFrom(ctx).Name())
		}},
		asDefault(textRoute("open", func(ctx context.Context, msg string) (string, error) {
			return "", chat.ExecuteRoute(ctx, "admin")
		})),
	}, nil)
	s, l := e.connect(bg, "admin")
	if s.ScopeID() == "" {
		t.Fatal("no scope")
	}
	wantFailure(t, s.Chat(bg, "hi"), "Forbidden")
	user := chat.WithPrincipal(bg, chat.User{ID: "bob", Roles: []string{"user"}})
	s2, l2 := e.connect(user, "admin")
	wantFailure(t, s2.Chat(bg, "hi"), "Forbidden")
	admin := chat.WithPrincipal(bg, chat.User{ID: "u", Roles: []string{"admin"}})
	s3, l3 := e.connect(admin, "admin")
	wantNoErr(t, s3.Chat(bg, "hi"))
	root := chat.WithPrincipal(bg, chat.User{ID: "r", Roles: []string{"x", "root"}})
	s4, l4 := e.connect(root, "admin")
	wantNoErr(t, s4.Chat(bg, "hi"))
	wantEvents(t, l.take())
	wantEvents(t, l2.take())
	wantEvents(t, l3.take(), "Message:hello u")
	wantEvents(t, l4.take(), "Message:hello r")
	// Executing a forbidden route is forbidden too.
	s5, l5 := e.connect(bg, "open")
	wantFailure(t, s5.Chat(bg, "hi"), "Forbidden")
	s6, l6 := e.connect(admin, "open")
	wantNoErr(t, s6.Chat(bg, "hi"))
	wantEvents(t, l5.take())
	wantEvents(t, l6.take(), "Message:hello u")
	// Permits answers what a request would: forbidden is false, as is an
	// unknown route.
	for _, c := range []struct {
		p     chat.Principal
		route string
		want  bool
	}{
		{nil, "admin", false},
		{chat.User{ID: "bob", Roles: []string{"user"}}, "admin", false},
		{chat.User{ID: "u", Roles: []string{"admin"}}, "admin", true},
		{chat.User{ID: "r", Roles: []string{"x", "root"}}, "admin", true},
		{nil, "open", true},
		{chat.User{ID: "u", Roles: []string{"admin"}}, "nope", false},
	} {
		if got := e.router.Permits(c.p, c.route); got != c.want {
			t.Errorf("Permits(%v, %q) = %v, want %v", c.p, c.route, got, c.want)
		}
	}
}

// Failures of routes that could not run are not offered to error
// handlers: a catch-all handler must not turn Forbidden into Completed.
func TestRouterFailuresBypassErrorHandlers(t *testing.T) {
	var caught atomic.Int32
	// A hook sends the second request of the "lost" route to a route that
	// does not exist (chat.Route refuses one).
	var lostRequests atomic.Int32
	lose := func(next chat.RouteHandler) chat.RouteHandler {
		return func(ctx context.Context, route string, req *chat.RouteRequest) error {
			if route == "lost" && lostRequests.Add(1) > 1 {
				route = "nowhere"
			}
			return next(ctx, route, req)
		}
	}
	e := hookedEnv(t, []chat.RouteHook{lose}, []chatimpl.RouteSpec{
		{Name: "admin", Roles: []string{"admin"}, Handle: func(ctx context.Context) error {
			return chat.SendValue(ctx, "secret")
		}},
		textRoute("lost", func(ctx context.Context, msg string) (string, error) {
			return "lost", nil
		}),
	}, []chatimpl.CatchSpec{
		catchFor("", "error", true, func(ctx context.Context, e error) error {
			caught.Add(1)
			return nil
		}),
	})
	s, l := e.connect(bg, "admin")
	wantFailure(t, s.Chat(bg, "hi"), "Forbidden")
	s2, l2 := e.connect(bg, "lost")
	wantNoErr(t, s2.Chat(bg, "hi"))
	wantFailure(t, s2.Chat(bg, "hi"), "RouteNotFound")
	wantEvents(t, l.take())
	wantEvents(t, l2.take(), "Message:lost")
	if caught.Load() != 0 {
		t.Fatalf("the catch-all handler saw %d router failures", caught.Load())
	}
}

// --- destroyed and foreign scopes ---

func TestRouteEndingTheConversation(t *testing.T) {
	j := &journal{}
	bean := closerBean(j, chat.KindPerChat)
	e := newEnv(t, []chatimpl.RouteSpec{
		textRoute("r", func(ctx context.Context, msg string) (string, error) {
			if _, err := bean.Lookup(ctx); err != nil {
				return "", err
			}
			if msg == "bye" {
				if err := chat.Push(ctx); err != nil { // End ends nested scopes too
					return "", err
				}
				if _, err := bean.Lookup(ctx); err != nil {
					return "", err
				}
				_ = chat.Response(ctx).Message("goodbye")
				return "", chat.End(ctx)
			}
			return "ok", nil
		}),
	}, nil)
	s, l := e.connect(bg, "r")
	id := s.ScopeID()
	wantNoErr(t, s.Chat(bg, "hi"))
	wantFailure(t, s.Chat(bg, "bye"), "SessionNotActive")
	wantEvents(t, l.take(), "Message:ok", "Message:goodbye")
	wantEvents(t, j.take(), "new bean@0", "new bean@1", "close bean@1", "close bean@0")
	if s.ScopeID() != id {
		t.Fatalf("scope id %q after the end, want the last known %q", s.ScopeID(), id)
	}
	wantFailure(t, s.Chat(bg, "hi"), "SessionNotActive")
	wantEvents(t, l.take())
	if st := e.router.Stats(); st.Scopes != 0 || st.Conversations != 1 {
		t.Fatalf("stats %+v", st)
	}
	wantNoErr(t, s.Close())
	if st := e.router.Stats(); st != (chat.Stats{}) {
		t.Fatalf("stats after close %+v", st)
	}
}

func sinkInto(l *evlog) func(chat.Event) error {
	return func(ev chat.Event) error { l.add(ev); return nil }
}

func TestHandleForeignOrUnknownScope(t *testing.T) {
	var ran atomic.Int32
	e := newEnv(t, []chatimpl.RouteSpec{
		textRoute("r", func(ctx context.Context, msg string) (string, error) { ran.Add(1); return "ran", nil }),
	}, nil)
	c1, err := e.router.Connect(bg, "r")
	wantNoErr(t, err)
	c2, err := e.router.Connect(bg, "r")
	wantNoErr(t, err)
	defer func() { _ = c1.Close(bg); _ = c2.Close(bg) }()
	l := &evlog{}
	for _, id := range []string{c2.ScopeID(), "", "no-such-scope"} {
		after, f := c1.Handle(bg, id, chat.NewTextRequest("hi"), sinkInto(l))
		if f == nil || f.Reason != "SessionNotActive" || after != c1.ScopeID() {
			t.Fatalf("Handle with scope %q: %q, %v", id, after, f)
		}
	}
	if ran.Load() != 0 || len(l.take()) != 0 {
		t.Fatal("a route ran for a foreign scope")
	}
	after, f := c1.Handle(bg, c1.ScopeID(), chat.NewTextRequest("hi"), sinkInto(l))
	if f != nil || after != c1.ScopeID() {
		t.Fatalf("Handle: %q, %v", after, f)
	}
	wantEvents(t, l.take(), "Message:ran")
	// A closed conversation serves nothing.
	id := c1.ScopeID()
	wantNoErr(t, c1.Close(bg))
	wantNoErr(t, c1.Close(bg))
	if c1.ScopeID() != "" {
		t.Fatal("closed conversation has a scope")
	}
	if after, f := c1.Handle(bg, id, chat.NewTextRequest("hi"), sinkInto(l)); f == nil || f.Reason != "SessionNotActive" || after != "" {
		t.Fatalf("Handle after Close: %q, %v", after, f)
	}
}

func TestHandleParentScopePopsNestedScopes(t *testing.T) {
	j := &journal{}
	bean := closerBean(j, chat.KindPerChat)
	var observed []string
	obs := func(ctx context.Context, ev chat.ScopeEvent) {
		observed = append(observed, fmt.Sprintf("%s@%d", ev.Kind, ev.Depth))
	}
	e := newObservedEnv(t, obs, []chatimpl.RouteSpec{
		textRoute("top", func(ctx context.Context, msg string) (string, error) {
			if _, err := bean.Lookup(ctx); err != nil {
				return "", err
			}
			if msg == "go" {
				if err := chat.PushRoute(ctx, "sub"); err != nil {
					return "", err
				}
				return "", chat.Execute(ctx)
			}
			return "top:" + msg + where(ctx), nil
		}),
		textRoute("sub", func(ctx context.Context, msg string) (string, error) {
			if _, err := bean.Lookup(ctx); err != nil {
				return "", err
			}
			if msg == "go" || msg == "deeper" {
				if err := chat.Push(ctx); err != nil {
					return "", err
				}
				if _, err := bean.Lookup(ctx); err != nil {
					return "", err
				}
			}
			return "sub:" + msg + where(ctx), nil
		}),
	}, nil)
	c, err := e.router.Connect(bg, "top")
	wantNoErr(t, err)
	defer func() { _ = c.Close(bg) }()
	top := c.ScopeID()
	l := &evlog{}
	handle := func(scope, msg string) string {
		t.Helper()
		after, f := c.Handle(bg, scope, chat.NewTextRequest(msg), sinkInto(l))
		if f != nil {
			t.Fatalf("Handle(%q): %v", msg, f)
		}
		if after != c.ScopeID() {
			t.Fatalf("Handle returned %q, current scope is %q", after, c.ScopeID())
		}
		return after
	}
	depth2 := handle(top, "go")
	wantEvents(t, l.take(), "Message:sub:go@2/sub")
	wantEvents(t, j.take(), "new bean@0", "new bean@1", "new bean@2")
	if st := e.router.Stats(); st.Scopes != 3 {
		t.Fatalf("stats %+v", st)
	}
	if handle(depth2, "x") != depth2 {
		t.Fatal("scope moved")
	}
	wantEvents(t, l.take(), "Message:sub:x@2/sub")
	observed = nil
	// The client says it is in the top scope: the two above it go.
	if after := handle(top, "back"); after != top {
		t.Fatalf("after %q, want top %q", after, top)
	}
	wantEvents(t, j.take(), "close bean@2", "close bean@1")
	wantEvents(t, l.take(), "Message:top:back@0/top")
	wantEvents(t, observed, "Deactivated@2", "Ended@2", "Activated@1", "Deactivated@1", "Ended@1", "Activated@0")
	if st := e.router.Stats(); st.Scopes != 1 {
		t.Fatalf("stats %+v", st)
	}
	// The popped scope is gone for good.
	if _, f := c.Handle(bg, depth2, chat.NewTextRequest("x"), sinkInto(l)); f == nil || f.Reason != "SessionNotActive" {
		t.Fatalf("Handle on a popped scope: %v", f)
	}
}

// A route executing itself fails its request instead of overflowing the
// stack (which no recover can catch).
func TestExecuteRecursionIsBounded(t *testing.T) {
	var runs atomic.Int32
	e := newEnv(t, []chatimpl.RouteSpec{
		textRoute("loop", func(ctx context.Context, msg string) (string, error) {
			runs.Add(1)
			if msg == "loop" {
				return "", chat.Execute(ctx) // the current route is this one
			}
			return "ok", nil
		}),
	}, nil)
	s, l := e.connect(bg, "")
	wantFailure(t, s.Chat(bg, "loop"), "ServerError")
	if n := runs.Load(); n != 64 {
		t.Fatalf("the route ran %d times, want 64", n)
	}
	rec := e.log.failureRecord(t)
	if !strings.Contains(rec["err"].(string), "nest more than 64 deep") || rec["route"] != "loop" {
		t.Fatalf("log record %v", rec)
	}
	wantNoErr(t, s.Chat(bg, "fine"))
	wantEvents(t, l.take(), "Message:ok")
}

// A transport's Handle gets events as Events (text in Data), and a nil
// request is an empty one.
func TestHandleWithAFuncSinkAndANilRequest(t *testing.T) {
	e := newEnv(t, []chatimpl.RouteSpec{{Name: "r", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		if err := chat.Response(ctx).Thinking("t"); err != nil {
			return err
		}
		return chat.SendValue(ctx, fmt.Sprintf("has text: %v, keys: %d", chat.Request(ctx).HasUserMessage(), len(req.Keys())))
	}}}, nil)
	c, err := e.router.Connect(bg, "")
	wantNoErr(t, err)
	defer func() { _ = c.Close(bg) }()
	var evs []chat.Event
	if _, f := c.Handle(bg, c.ScopeID(), nil, func(ev chat.Event) error { evs = append(evs, ev); return nil }); f != nil {
		t.Fatal(f)
	}
	want := []chat.Event{{Type: protocol.EventThinking, Data: "t"}, {Type: protocol.EventMessage, Data: "has text: false, keys: 0"}}
	if len(evs) != len(want) {
		t.Fatalf("events %+v, want %+v", evs, want)
	}
	for i, ev := range evs {
		if ev.Type != want[i].Type || ev.Data != want[i].Data {
			t.Fatalf("event %d: %+v, want %+v", i, ev, want[i])
		}
	}
}

// A mistyped route name fails at the call of PushRoute or Route, naming
// the route and the closest known one, and the conversation stays where it
// was: the next request runs the current route.
func TestSwitchToUnknownRoute(t *testing.T) {
	e := newEnv(t, []chatimpl.RouteSpec{
		asDefault(textRoute("menu", func(ctx context.Context, msg string) (string, error) {
			var err error
			switch msg {
			case "push":
				err = chat.PushRoute(ctx, "tikcet")
			case "switch":
				err = chat.Route(ctx, "Ticket")
			case "far":
				err = chat.Route(ctx, "zzzzzz")
			case "ticket":
				return "to ticket", chat.Route(ctx, "ticket")
			}
			var unknown *chat.UnknownRouteError
			if !errors.As(err, &unknown) {
				return "", fmt.Errorf("want an *UnknownRouteError, got %v", err)
			}
			route, cerr := chat.CurrentRoute(ctx)
			if cerr != nil {
				return "", cerr
			}
			return fmt.Sprintf("%s|%s|%s|%v", unknown.Route, unknown.Suggestion, route, err), nil
		})),
		textRoute("ticket", func(ctx context.Context, msg string) (string, error) {
			return "ticket " + msg, nil
		}),
	}, nil)
	s, l := e.connect(bg, "")
	id0 := s.ScopeID()
	wantNoErr(t, s.Chat(bg, "push"))
	wantEvents(t, l.take(), `Message:tikcet|ticket|menu|chat: unknown route "tikcet"; did you mean "ticket"?`)
	if s.ScopeID() != id0 {
		t.Fatal("a refused PushRoute started a scope")
	}
	wantNoErr(t, s.Chat(bg, "switch"))
	wantEvents(t, l.take(), `Message:Ticket|ticket|menu|chat: unknown route "Ticket"; did you mean "ticket"?`)
	wantNoErr(t, s.Chat(bg, "far"))
	wantEvents(t, l.take(), `Message:zzzzzz||menu|chat: unknown route "zzzzzz"`)
	// Known routes still switch.
	wantNoErr(t, s.Chat(bg, "ticket"))
	wantEvents(t, l.take(), "Message:to ticket")
	wantNoErr(t, s.Chat(bg, "42"))
	wantEvents(t, l.take(), "Message:ticket 42")
}

// fakeBean is a chatimpl.Bean that is not a *chat.Bean.
type fakeBean struct{}

func (fakeBean) Lookup(context.Context) (int, error) { return 0, nil }
