package chat_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
)

// Two resumes with the same token at once (a client that retries, two
// tabs): exactly one wins and keeps the conversation, the other is
// refused — in one router, and across two routers on one store (where
// the loser may first be told ConversationBusy, and is refused when it
// tries again).
func TestDurableRacingResumes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		routers int
	}{{"one router", 1}, {"two routers", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			store := chat.NewInMemoryConversationStore(nil)
			app := newDurableApp(store)
			bs := chatstoretest.NewBarrier(store)
			var routers []*chat.Router
			for _, node := range []string{"a", "b"}[:tc.routers] {
				r, err := chat.NewRouter(&chat.RouterOptions{Store: bs, Node: node}, app.pkg)
				wantNoErr(t, err)
				routers = append(routers, r)
			}
			c, err := routers[0].Connect(bg, "")
			wantNoErr(t, err)
			mustTurn(t, c, "build")
			wantNoErr(t, c.Detach(bg)) // the connection dropped
			id, token := c.ID(), c.ResumeToken()

			bs.Arm(2)
			var wg sync.WaitGroup
			convs := make([]*chat.Conversation, 2)
			errs := make([]error, 2)
			for i := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					convs[i], errs[i] = routers[i%len(routers)].Resume(bg, id, token)
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
			loser := routers[lost%len(routers)]
			for range 100 {
				if !errors.Is(errs[lost], chat.ErrConversationBusy) || tc.routers == 1 {
					break
				}
				// Another node holds the lease: a client tries again.
				_, errs[lost] = loser.Resume(bg, id, token)
			}
			wantFailed(t, errs[lost], chat.ErrResumeRefused)

			// The winner keeps working.
			winner := convs[won]
			if out := mustTurn(t, winner, "show"); len(out) == 0 {
				t.Fatal("no answer")
			}
			wantStats(t, routers[won%len(routers)], 1, 2)
			if tc.routers == 2 {
				wantStats(t, loser, 0, 0)
			}
			wantNoErr(t, winner.Close(bg))
		})
	}
}
