package ai

import (
	"slices"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/memory"
)

// DefaultPromptCacheTTL is the prompt cache's lifetime when
// [Config.PromptCacheTTL] is 0: five minutes, the lifetime of
// Anthropic's ephemeral cache_control, which each read of a cached prefix
// starts again.
const DefaultPromptCacheTTL = 5 * time.Minute

// markOdds is the least estimated chance that the next request of a
// memory comes within the cache's lifetime for a turn to write its newest
// prefix to the cache: where a write pays in expectation. A write costs
// 1.25× the input price, 0.25× more than sending the prefix uncached, and
// saves 0.9× when the next request reads it (at 0.1×): it pays when that
// happens with a chance over 0.25 / (0.25 + 0.9) ≈ 0.22.
const markOdds = (anthropicWrite - 1) / ((anthropicWrite - 1) + (1 - anthropicRead))

// anthropicWrite and anthropicRead are the prices of a 5-minute cache
// write and of a cache read, relative to the input price.
const (
	anthropicWrite = 1.25
	anthropicRead  = 0.1
)

// maxGapCount is how many gaps of a memory id the odds are counted over
// before the counts are halved.
const maxGapCount = 64

// maxCacheGaps bounds the memory ids whose gaps a Service remembers; past
// it, the entries of the ids idle longest go first.
const maxCacheGaps = 1 << 16

// cacheGaps is what a Service knows of the time between the turns of each
// memory id, to place prompt-cache breakpoints only where they pay (see
// markCache): a write of the newest prefix at 1.25× the input price pays
// only when the next request comes before the cache expires. It is kept
// for the clients that take breakpoints (Anthropic's), in the process only:
// a memory id this process has not seen a turn of is marked as if its
// turns came within the cache's lifetime.
type cacheGaps struct {
	mu sync.Mutex
	m  map[string]gapStat
}

// gapStat is the record of one memory id.
type gapStat struct {
	last       time.Time // when the id's last turn ended
	gaps, warm int32     // gaps observed between turns, and those within the TTL
	marked     bool      // the last turn placed breakpoints
}

// cacheView is what a turn knows of its memory's prompt cache when it
// starts.
type cacheView struct {
	// known: a turn of the id ended in this process before; warm: within
	// the TTL; marked: that turn placed breakpoints (its prefix may be
	// cached).
	known, warm, marked bool
	// odds is the estimated chance that the next request comes within the
	// TTL: the share of the gaps observed (this one included) within it,
	// with one of each assumed (Laplace's rule): ½ before any.
	odds float64
}

// view returns what a turn of id starting at now knows of its cache.
func (g *cacheGaps) view(id string, now time.Time, ttl time.Duration) cacheView {
	g.mu.Lock()
	st, ok := g.m[id]
	g.mu.Unlock()
	if !ok {
		return cacheView{odds: 0.5}
	}
	v := cacheView{known: true, warm: now.Sub(st.last) <= ttl, marked: st.marked}
	warm := st.warm
	if v.warm {
		warm++
	}
	v.odds = float64(warm+1) / float64(st.gaps+1+2)
	return v
}

// record notes that a turn of id, which started knowing v, ended at now
// and placed breakpoints or not.
func (g *cacheGaps) record(id string, now time.Time, v cacheView, marked bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	st, ok := g.m[id]
	if !ok && len(g.m) >= maxCacheGaps {
		g.shrink()
	}
	if v.known && ok {
		if st.gaps >= maxGapCount {
			// Halve the counts: the newer gaps weigh more, and a
			// conversation whose pace changes is followed.
			st.gaps, st.warm = st.gaps/2, st.warm/2
		}
		st.gaps++
		if v.warm {
			st.warm++
		}
	}
	st.last, st.marked = now, marked
	if g.m == nil {
		g.m = make(map[string]gapStat)
	}
	g.m[id] = st
}

// shrink drops the older half of the entries: those of the ids idle
// longest. g.mu is held.
func (g *cacheGaps) shrink() {
	times := make([]time.Time, 0, len(g.m))
	for _, st := range g.m {
		times = append(times, st.last)
	}
	slices.SortFunc(times, time.Time.Compare)
	cut := times[len(times)/2]
	for id, st := range g.m {
		if !st.last.After(cut) {
			delete(g.m, id)
		}
	}
}

// forget drops the record of id: its memory was deleted or left the
// process.
func (g *cacheGaps) forget(id string) {
	g.mu.Lock()
	delete(g.m, id)
	g.mu.Unlock()
}

// len returns the number of ids recorded.
func (g *cacheGaps) len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.m)
}

// limit returns the mark limit (see markCache) of a turn that knows v and
// whose memory tells st: kept and keeps are the limits, in the prompt, of
// st.Kept and st.Keeps (-1: every message). A breakpoint on the
// previous request's prefix (Kept) pays when that request wrote it and
// the cache is still warm, or when its TTL is not known: it is read at
// 0.1× the input price. One on the prefix the memory keeps for the next
// request (Keeps) is written at 1.25× for that request to read: it pays
// when the gaps so far say the next request will likely come within the
// TTL (markOdds), or when the memory's summary reads the prompt within
// the turn (st.Summarizes). Anything else writes at 1.25× what nothing
// reads: no breakpoint.
func (v cacheView) limit(st *memory.Stability, kept, keeps int) int {
	limit := 0
	if !v.known || v.warm && v.marked {
		limit = kept
	}
	if st.Summarizes || v.odds >= markOdds {
		if keeps < 0 {
			return -1
		}
		limit = max(limit, keeps)
	}
	return limit
}

// callMarkLimit returns the mark limit of the model call of msgs (see
// markCache): the turn's, but on the turn's first call, whose last
// message is the user message with the per-request context slot, not past
// it. That message is sent once as it is (the memory keeps the user's own
// message, which the next request sends instead), so a breakpoint on it
// writes at 1.25× a prefix no request reads; the previous user message,
// which the next request has too, takes the newest mark. A tool loop's
// later calls send it again, and are marked as the turn is.
func (t *turn) callMarkLimit(msgs []llms.MessageContent) int {
	limit := t.markLimit
	if s := t.slot - 1; s >= 0 && len(msgs) == s+1 && (limit < 0 || limit > s) {
		return s
	}
	return limit
}
