package durable_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
)

// TestRacingResumes resumes one conversation twice at once with the same
// token, on bbolt and on Redis, in one router and across two: exactly one
// resume wins and its conversation keeps working; the other is refused
// (across routers it may be told ConversationBusy first, and is refused
// when it tries again).
func TestRacingResumes(t *testing.T) {
	for _, st := range realStores {
		for _, routers := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/routers=%d", st.name, routers), func(t *testing.T) {
				store := st.open(t)
				bs := chatstoretest.NewBarrier(store.ConversationStore)
				var rs []*chat.Router
				for _, node := range []string{"node-a", "node-b"}[:routers] {
					r, err := chat.NewRouter(&chat.RouterOptions{Store: bs, Node: node}, app(nil))
					if err != nil {
						t.Fatal(err)
					}
					rs = append(rs, r)
				}
				ctx := t.Context()
				c, err := rs[0].Connect(ctx, "count")
				if err != nil {
					t.Fatal(err)
				}
				if _, f := c.Handle(ctx, c.ScopeID(), chat.NewTextRequest("one"), func(chat.Event) error { return nil }); f != nil {
					t.Fatal(f)
				}
				if err := c.Detach(ctx); err != nil {
					t.Fatal(err)
				}
				bs.Arm(2)
				var wg sync.WaitGroup
				convs := make([]*chat.Conversation, 2)
				errs := make([]error, 2)
				for i := range 2 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						convs[i], errs[i] = rs[i%routers].Resume(ctx, c.ID(), c.ResumeToken())
					}()
				}
				wg.Wait()
				won := -1
				for i, err := range errs {
					if err == nil {
						if won >= 0 {
							t.Fatal("both resumes won")
						}
						won = i
					}
				}
				if won < 0 {
					t.Fatalf("no resume won: %v", errs)
				}
				lost := 1 - won
				for range 100 {
					if !errors.Is(errs[lost], chat.ErrConversationBusy) {
						break
					}
					_, errs[lost] = rs[lost%routers].Resume(ctx, c.ID(), c.ResumeToken())
				}
				if !errors.Is(errs[lost], chat.ErrResumeRefused) {
					t.Fatalf("the losing resume: %v", errs[lost])
				}
				var got []string
				if _, f := convs[won].Handle(ctx, convs[won].ScopeID(), chat.NewTextRequest("two"), func(ev chat.Event) error {
					got = append(got, ev.Text())
					return nil
				}); f != nil {
					t.Fatalf("the winner's request: %v", f)
				}
				if len(got) != 1 || got[0] != "2: two" {
					t.Fatalf("the winner's answer: %q", got)
				}
				if err := convs[won].Close(ctx); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}
