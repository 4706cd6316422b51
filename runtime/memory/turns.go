package memory

import "github.com/tmc/langchaingo/llms"

// msgCost is what a memory keeps of a message besides the message itself:
// 8 bytes.
type msgCost struct {
	cost  int32 // see window.cost
	tool  bool  // a tool result
	human bool  // a user message: the start of a turn
}

// costOf returns the msgCost of m, whose cost is c.
func costOf(m *llms.MessageContent, c int) msgCost {
	return msgCost{cost: int32(c), tool: isToolResult(*m), human: m.Role == llms.ChatMessageTypeHuman}
}

// turns is the non-system messages of a memory, by their costs: those it
// keeps (a) followed by those of the Add in progress (b), oldest first.
//
// Memories evict (and a compressing memory summarises) whole turns: a
// turn is a user message and every message up to the next user message
// (AI messages, tool calls, tool results), so what is left after an
// eviction starts with a user message. The memory can only cut the list
// at a cut point, the index of the first message it keeps:
//
//   - the index of a user message: whole turns go;
//   - before the first user message (messages a caller added before any
//     user message, which no eviction leaves behind), the index of any
//     message that is not a tool result, so that no tool result outlives
//     its call;
//   - the end of the list, only when the list holds no user message.
//
// The newest turn (from the last user message on) is never cut: limit is
// the furthest cut point.
type turns struct {
	a, b  []msgCost
	first int // the index of the first user message; len when none
	limit int // the start of the newest turn; len when there is no user message
}

// newTurns returns the turns of a followed by b. It costs the length of
// what comes before the first user message and of the newest turn.
func newTurns(a, b []msgCost) turns {
	s := turns{a: a, b: b}
	n := len(a) + len(b)
	s.first, s.limit = n, n
	for i := range n {
		if s.at(i).human {
			s.first = i
			break
		}
	}
	if s.first == n {
		return s
	}
	for i := n - 1; i >= s.first; i-- {
		if s.at(i).human {
			s.limit = i
			break
		}
	}
	return s
}

func (s turns) len() int { return len(s.a) + len(s.b) }

func (s turns) at(i int) msgCost {
	if i < len(s.a) {
		return s.a[i]
	}
	return s.b[i-len(s.a)]
}

// next returns the first cut point after i, and the cost of the messages
// from i to it; i < s.limit.
func (s turns) next(i int) (int, int) {
	c := int(s.at(i).cost)
	j := i + 1
	for ; j < s.limit; j++ {
		m := s.at(j)
		if m.human || j < s.first && !m.tool {
			break
		}
		c += int(m.cost)
	}
	return j, c
}

// fit returns the first cut point from i (a cut point) at which fixed
// plus the cost of the messages from it fits budget, going no further
// than s.limit, and that cost; rest is the cost of the messages from i.
func (s turns) fit(i, fixed, rest, budget int) (int, int) {
	for fixed+rest > budget && i < s.limit {
		j, c := s.next(i)
		i, rest = j, rest-c
	}
	return i, rest
}

// cost returns the cost of the messages from i to j.
func (s turns) cost(i, j int) int {
	c := 0
	for ; i < j; i++ {
		c += int(s.at(i).cost)
	}
	return c
}
