package chat_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

// fakeMemory is the chat memory of an AI service, as the AI runtime
// attaches it to a scope.
type fakeMemory struct {
	name string
	j    *journal

	mu               sync.Mutex
	clears, deletes  int
	clearErr, delErr error
}

func (m *fakeMemory) ClearMemory(ctx context.Context) error {
	m.mu.Lock()
	m.clears++
	m.mu.Unlock()
	m.j.add("clear " + m.name)
	return m.clearErr
}

func (m *fakeMemory) DeleteMemory(ctx context.Context) error {
	m.mu.Lock()
	m.deletes++
	m.mu.Unlock()
	m.j.add("delete " + m.name)
	return m.delErr
}

func (m *fakeMemory) counts() (clears, deletes int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.clears, m.deletes
}

// memories hands out one fakeMemory per name.
type memories struct {
	j  *journal
	mu sync.Mutex
	m  map[string]*fakeMemory
}

func (ms *memories) get(name string) *fakeMemory {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.m == nil {
		ms.m = map[string]*fakeMemory{}
	}
	m := ms.m[name]
	if m == nil {
		m = &fakeMemory{name: name, j: ms.j}
		ms.m[name] = m
	}
	return m
}

func (ms *memories) all() []*fakeMemory {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	var out []*fakeMemory
	for _, m := range ms.m {
		out = append(out, m)
	}
	return out
}

// scriptEnv serves a route that runs the commands of the user message,
// separated by spaces:
//
//	attach:NAME  attach the memory NAME to the current scope
//	bean         use the current scope's per-chat closer bean
//	clear        chat.ClearMemory
//	schedule     chat.ScheduleWipe
//	abort        chat.AbortWipe
//	scheduled?   send "scheduled=BOOL"
//	count:NAME   send "NAME clears=N deletes=N"
//	push / pop   chat.PushRoute(ctx, "script") / chat.Pop
//	fail / panic fail the request at the end / panic now
func scriptEnv(t *testing.T) (*env, *memories, *journal) {
	j := &journal{}
	ms := &memories{j: j}
	bean := closerBean(j, chat.KindPerChat)
	e := newEnv(t, []chatimpl.RouteSpec{
		textRoute("script", func(ctx context.Context, msg string) (string, error) {
			rc := chat.Response(ctx)
			var fail bool
			for _, cmd := range strings.Fields(msg) {
				var err error
				name, arg, _ := strings.Cut(cmd, ":")
				switch name {
				case "attach":
					var id string
					id, err = chat.AttachMemory(ctx, arg, ms.get(arg))
					if cur, _ := chat.ID(ctx); err == nil && id != cur {
						err = fmt.Errorf("AttachMemory returned %s, current scope is %s", id, cur)
					}
				case "bean":
					_, err = bean.Lookup(ctx)
				case "clear":
					err = chat.ClearMemory(ctx)
				case "schedule":
					err = chat.ScheduleWipe(ctx)
				case "abort":
					err = chat.AbortWipe(ctx)
				case "scheduled?":
					err = rc.Message(fmt.Sprint("scheduled=", chat.WipeScheduled(ctx)))
				case "count":
					c, d := ms.get(arg).counts()
					err = rc.Message(fmt.Sprintf("%s clears=%d deletes=%d", arg, c, d))
				case "push":
					err = chat.PushRoute(ctx, "script")
				case "pop":
					err = chat.Pop(ctx)
				case "fail":
					fail = true
				case "panic":
					panic("script panic")
				default:
					err = fmt.Errorf("unknown command %q", cmd)
				}
				if err != nil {
					return "", err
				}
			}
			if fail {
				return "", errors.New("script failed")
			}
			return "", nil
		}),
	}, nil)
	return e, ms, j
}

func TestClearMemoryClearsNow(t *testing.T) {
	e, ms, j := scriptEnv(t)
	s, l := e.connect(bg, "")
	wantNoErr(t, s.Chat(bg, "attach:a attach:b count:a clear count:a count:b"))
	wantEvents(t, l.take(), "Message:a clears=0 deletes=0", "Message:a clears=1 deletes=0", "Message:b clears=1 deletes=0")
	wantEvents(t, j.take(), "clear a", "clear b")
	// Only the current scope's memory.
	wantNoErr(t, s.Chat(bg, "push attach:c clear count:a count:c pop"))
	wantEvents(t, l.take(), "Message:a clears=1 deletes=0", "Message:c clears=1 deletes=0")
	wantEvents(t, j.take(), "clear c", "delete c")
	// Attaching twice under one key keeps one registration.
	wantNoErr(t, s.Chat(bg, "attach:a attach:a clear"))
	wantEvents(t, j.take(), "clear a", "clear b")
	if c, d := ms.get("a").counts(); c != 2 || d != 0 {
		t.Fatalf("a: clears=%d deletes=%d", c, d)
	}
}

func TestScheduleWipeClearsAfterTheRequest(t *testing.T) {
	e, ms, j := scriptEnv(t)
	s, l := e.connect(bg, "")
	wantNoErr(t, s.Chat(bg, "attach:a scheduled? schedule scheduled? count:a"))
	wantEvents(t, l.take(), "Message:scheduled=false", "Message:scheduled=true", "Message:a clears=0 deletes=0")
	if c, _ := ms.get("a").counts(); c != 1 {
		t.Fatalf("clears after the request: %d, want 1", c)
	}
	wantEvents(t, j.take(), "clear a")
	// The flag was reset: the next request starts unscheduled.
	wantNoErr(t, s.Chat(bg, "scheduled?"))
	wantEvents(t, l.take(), "Message:scheduled=false")
	wantEvents(t, j.take())
	// Also when the route fails or panics.
	wantFailure(t, s.Chat(bg, "schedule fail"), "ServerError")
	wantEvents(t, j.take(), "clear a")
	wantFailure(t, s.Chat(bg, "schedule panic"), "ServerError")
	wantEvents(t, j.take(), "clear a")
	if c, d := ms.get("a").counts(); c != 3 || d != 0 {
		t.Fatalf("clears=%d deletes=%d", c, d)
	}
}

func TestScheduledWipesWalkUp(t *testing.T) {
	e, ms, j := scriptEnv(t)
	s, _ := e.connect(bg, "")
	wantNoErr(t, s.Chat(bg, "attach:top"))
	// The parent scheduled earlier, the child schedules: both cleared.
	wantNoErr(t, s.Chat(bg, "schedule push attach:mid push attach:child schedule"))
	wantEvents(t, j.take(), "clear child", "clear top")
	// Only the child: the parents are left alone.
	wantNoErr(t, s.Chat(bg, "schedule"))
	wantEvents(t, j.take(), "clear child")
	// Unwinding: pops delete the nested memory (after no clear).
	wantNoErr(t, s.Chat(bg, "pop pop"))
	wantEvents(t, j.take(), "delete child", "delete mid")
	if c, _ := ms.get("mid").counts(); c != 0 {
		t.Fatalf("mid cleared %d times", c)
	}
	// A child scheduling and popped in the same request: its memory is
	// deleted, the parent's (scheduled) cleared.
	wantNoErr(t, s.Chat(bg, "schedule push attach:x schedule pop"))
	wantEvents(t, j.take(), "delete x", "clear top")
}

func TestAbortWipe(t *testing.T) {
	e, _, j := scriptEnv(t)
	s, l := e.connect(bg, "")
	wantNoErr(t, s.Chat(bg, "attach:a schedule scheduled? abort scheduled? schedule scheduled?"))
	wantEvents(t, l.take(), "Message:scheduled=true", "Message:scheduled=false", "Message:scheduled=false")
	wantEvents(t, j.take())
	// Abort cancels the wipes of the parents too.
	wantNoErr(t, s.Chat(bg, "schedule push attach:b schedule abort"))
	wantEvents(t, j.take())
	// The next request can schedule again.
	wantNoErr(t, s.Chat(bg, "schedule scheduled?"))
	wantEvents(t, l.take(), "Message:scheduled=true")
	wantEvents(t, j.take(), "clear b")
	// Abort before any schedule blocks it too, on failure as well.
	wantFailure(t, s.Chat(bg, "abort schedule fail"), "ServerError")
	wantEvents(t, j.take())
}

func TestWipesWithoutAScope(t *testing.T) {
	for _, err := range []error{chat.ScheduleWipe(bg), chat.AbortWipe(bg)} {
		if !errors.Is(err, chat.ErrNotActive) {
			t.Fatalf("without a scope: %v", err)
		}
	}
	if _, err := chat.AttachMemory(bg, "k", &fakeMemory{}); !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("AttachMemory without a scope: %v", err)
	}
	wantNoErr(t, chat.ClearMemory(bg))
	if chat.WipeScheduled(bg) {
		t.Fatal("WipeScheduled without a scope")
	}
	// AbortWipe cancels the wipes the parents scheduled.
	ctx := mustBegin(t)
	wantNoErr(t, chat.ScheduleWipe(ctx))
	wantNoErr(t, chat.Push(ctx))
	wantNoErr(t, chat.ScheduleWipe(ctx))
	wantNoErr(t, chat.AbortWipe(ctx))
	if chat.WipeScheduled(ctx) {
		t.Fatal("scheduled after AbortWipe")
	}
	wantNoErr(t, chat.Pop(ctx))
	if chat.WipeScheduled(ctx) {
		t.Fatal("the parent's wipe survived AbortWipe")
	}
	wantNoErr(t, chat.End(ctx))
	// Outside a router scheduling works, but only a router runs wipes.
	ctx = mustBegin(t)
	j := &journal{}
	m := &fakeMemory{name: "m", j: j}
	_, err := chat.AttachMemory(ctx, "k", m)
	wantNoErr(t, err)
	wantNoErr(t, chat.ScheduleWipe(ctx))
	if !chat.WipeScheduled(ctx) {
		t.Fatal("not scheduled")
	}
	wantNoErr(t, chat.End(ctx))
	wantEvents(t, j.take(), "delete m")
	if chat.WipeScheduled(ctx) {
		t.Fatal("scheduled after End")
	}
	if _, err := chat.AttachMemory(ctx, "k2", m); !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("AttachMemory after End: %v", err)
	}
}

func TestMemoryDeletedWhenItsScopeIsPoppedAfterItsBeans(t *testing.T) {
	e, ms, j := scriptEnv(t)
	s, _ := e.connect(bg, "")
	wantNoErr(t, s.Chat(bg, "attach:top bean push bean attach:a attach:b"))
	wantEvents(t, j.take(), "new bean@0", "new bean@1")
	wantNoErr(t, s.Chat(bg, "pop"))
	// Beans first, then memory, newest first.
	wantEvents(t, j.take(), "close bean@1", "delete b", "delete a")
	if _, d := ms.get("top").counts(); d != 0 {
		t.Fatal("the parent's memory was deleted")
	}
	// Ending the conversation from a route deletes the rest.
	wantNoErr(t, s.Chat(bg, "push attach:c"))
	wantFailure(t, s.Chat(bg, "pop pop"), "SessionNotActive")
	wantEvents(t, j.take(), "delete c", "close bean@0", "delete top")
}

func TestMemoryCleanupErrorsAreLogged(t *testing.T) {
	e, ms, j := scriptEnv(t)
	s, _ := e.connect(bg, "")
	wantNoErr(t, s.Chat(bg, "attach:a push attach:b"))
	ms.get("a").clearErr = errors.New("store down")
	ms.get("b").delErr = errors.New("cannot delete")
	// Pop reports the failed delete to the route (which fails here).
	wantFailure(t, s.Chat(bg, "pop"), "ServerError")
	wantEvents(t, j.take(), "delete b")
	// A failed scheduled wipe is logged; the request completes.
	wantNoErr(t, s.Chat(bg, "schedule"))
	wantEvents(t, j.take(), "clear a")
	logs := e.log.String()
	if !strings.Contains(logs, "store down") || !strings.Contains(logs, "cannot delete") {
		t.Fatalf("log lacks the memory errors:\n%s", logs)
	}
}

func TestNoMemoryLeftAfterClientClose(t *testing.T) {
	e, ms, j := scriptEnv(t)
	for i := range 3 {
		s, _ := e.connect(bg, "")
		wantNoErr(t, s.Chat(bg, fmt.Sprintf("attach:s%d push attach:s%d.1 push attach:s%d.2", i, i, i)))
	}
	wantNoErr(t, e.client.Close())
	all := ms.all()
	if len(all) != 9 {
		t.Fatalf("%d memories", len(all))
	}
	for _, m := range all {
		if _, d := m.counts(); d != 1 {
			t.Fatalf("memory %s deleted %d times", m.name, d)
		}
	}
	if n := len(j.take()); n != 9 {
		t.Fatalf("%d journal entries, want 9 deletes", n)
	}
	if st := e.router.Stats(); st != (chat.Stats{}) {
		t.Fatalf("stats %+v", st)
	}
}
