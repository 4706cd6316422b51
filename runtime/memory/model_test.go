package memory_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/memory/storetest"
	"github.com/tmc/langchaingo/llms"
)

// reference is a direct transcription of the memories' rules (langchain4j's
// add and ensureCapacity, keeping the system message first and evicting
// after a whole batch, with whole turns evicted instead of messages),
// recounting everything on every call: while over the budget, the oldest
// turn after the system message goes (a user message and what follows up
// to the next one), never the newest; messages before the first user
// message go one by one, each AI message with the tool results after it.
// With a low-water mark (low > 0), once something went, the turns that
// were wholly in the list before the batch go too while the rest is over
// low.
func reference(list []llms.MessageContent, batch []llms.MessageContent, maxCost, low int, cost func(llms.MessageContent) int) []llms.MessageContent {
	list = slices.Clone(list)
	kept := len(list) // the messages, the system message apart, from before the batch
	if kept > 0 && list[0].Role == llms.ChatMessageTypeSystem {
		kept--
	}
	for _, m := range batch {
		if m.Role == llms.ChatMessageTypeSystem {
			if len(list) > 0 && list[0].Role == llms.ChatMessageTypeSystem {
				if storetest.Equal(list[:1], []llms.MessageContent{m}) {
					continue
				}
				list = list[1:]
			}
			list = slices.Insert(list, 0, m)
			continue
		}
		list = append(list, m)
	}
	total := 0
	for _, m := range list {
		total += cost(m)
	}
	first := 0
	if len(list) > 0 && list[0].Role == llms.ChatMessageTypeSystem {
		first = 1
	}
	isHuman := func(m llms.MessageContent) bool { return m.Role == llms.ChatMessageTypeHuman }
	evicted := false
	for total > maxCost || evicted && low > 0 && total > low {
		body := list[first:]
		newest := len(body) // where the newest turn starts
		if i := slices.IndexFunc(body, isHuman); i >= 0 {
			for newest = len(body) - 1; !isHuman(body[newest]); newest-- {
			}
		}
		if newest == 0 {
			break
		}
		n := 1 // what goes: the oldest turn, or the oldest message before the first turn and its results
		if isHuman(body[0]) {
			for n < newest && !isHuman(body[n]) {
				n++
			}
		} else {
			for n < newest && body[n].Role == llms.ChatMessageTypeTool {
				n++
			}
		}
		if total <= maxCost && n > kept {
			break // block eviction stops at a turn that runs into the batch
		}
		for _, m := range body[:n] {
			total -= cost(m)
		}
		list = slices.Delete(list, first, first+n)
		kept = max(0, kept-n)
		evicted = true
	}
	return list
}

// TestAgainstReference drives the policies over every kind of store with
// seeded random batches (system messages old and new, tool exchanges,
// messages bigger than the budget) and compares memory, store and
// reference after every Add.
func TestAgainstReference(t *testing.T) {
	for _, pc := range []struct {
		name     string
		policy   memory.Policy
		max, low int
		cost     func(llms.MessageContent) int
	}{
		{"Window", memory.Window(7, nil), 7, 0, func(llms.MessageContent) int { return 1 }},
		{"WindowEvictTo", memory.Window(9, &memory.WindowOptions{EvictTo: 4}), 9, 4, func(llms.MessageContent) int { return 1 }},
		{"TokenWindow", memory.TokenWindow(40, testTokens, nil), 40, 0, testTokens},
		{"TokenWindowEvictTo", memory.TokenWindow(40, testTokens, &memory.WindowOptions{EvictTo: 22}), 40, 22, testTokens},
		// Both marks at the size and a free summary: the messages kept word
		// for word are the token window's.
		{"Compressing", contractCompressing(40), 40, 0, testTokens},
	} {
		for name, s := range stores(t) {
			t.Run(pc.name+"/"+name, func(t *testing.T) {
				r := rand.New(rand.NewPCG(7, 11))
				m := newMemory(t, pc.policy, s)
				var want []llms.MessageContent
				call := 0
				steps := 400
				if name == "file" {
					steps = 100
				}
				for step := range steps {
					var batch []llms.MessageContent
					for range 1 + r.IntN(3) {
						switch k := r.IntN(10); {
						case k == 0:
							batch = append(batch, sys(fmt.Sprint("sys", r.IntN(2))))
						case k <= 2:
							call++
							ids := []string{fmt.Sprint("c", call)}
							if r.IntN(2) == 0 {
								call++
								ids = append(ids, fmt.Sprint("c", call))
							}
							batch = append(batch, aiCalls(ids...))
							for _, id := range ids {
								batch = append(batch, result(id))
							}
						case k == 3:
							batch = append(batch, human(fmt.Sprintf("%050d", step))) // over any budget
						case k <= 6:
							batch = append(batch, human(fmt.Sprint("h", step)))
						default:
							batch = append(batch, ai(fmt.Sprint("a", step)))
						}
					}
					add(t, m, batch...)
					want = reference(want, batch, pc.max, pc.low, pc.cost)
					got, err := m.Messages(t.Context())
					if err != nil {
						t.Fatal(err)
					}
					got = withoutSummary(got)
					if !storetest.Equal(got, want) {
						t.Fatalf("step %d, after adding %s:\n got %s\nwant %s", step, summary(batch), summary(got), summary(want))
					}
					stored, err := s.Get(t.Context(), "id")
					if err != nil {
						t.Fatal(err)
					}
					if !storetest.Equal(withoutSummary(stored), want) {
						t.Fatalf("step %d: store holds %s\nwant %s", step, summary(stored), summary(want))
					}
				}
				if cp, ok := pc.policy.(*memory.CompressingPolicy); ok && cp.Stats().Compressions == 0 {
					t.Fatal("the compressing memory never summarised")
				}
				// A new memory over the same store sees the same list.
				m2 := newMemory(t, pc.policy, s)
				got, _ := m2.Messages(t.Context())
				if !storetest.Equal(withoutSummary(got), want) {
					t.Fatalf("reloaded: %s\nwant %s", summary(got), summary(want))
				}
			})
		}
	}
}
