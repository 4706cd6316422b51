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
// The newest turn (from the last user message on) is never cut. A cut
// point below the end is a user message unless it comes before the first
// one, which is how next tells the two apart without a scan.
type turns struct{ a, b []msgCost }

func (s *turns) len() int { return len(s.a) + len(s.b) }

func (s *turns) at(i int) msgCost {
	if i < len(s.a) {
		return s.a[i]
	}
	return s.b[i-len(s.a)]
}

// next returns the first cut point after i, a cut point below s.len(),
// and the cost of the messages from i to it. ok is false when the messages
// from i on are the newest turn, which is never cut.
func (s *turns) next(i int) (j, c int, ok bool) {
	m := s.at(i)
	before := !m.human // i comes before the first user message
	c = int(m.cost)
	j = i + 1
	for ; j < len(s.a); j++ {
		m := s.a[j]
		if m.human || before && !m.tool {
			return j, c, true
		}
		c += int(m.cost)
	}
	for k := j - len(s.a); k < len(s.b); k++ {
		m := s.b[k]
		if m.human || before && !m.tool {
			return len(s.a) + k, c, true
		}
		c += int(m.cost)
	}
	return s.len(), c, before
}

// fit returns the first cut point from i (a cut point) at which fixed
// plus the cost of the messages from it fits budget, or the start of the
// newest turn, and that cost; rest is the cost of the messages from i.
func (s *turns) fit(i, fixed, rest, budget int) (int, int) {
	for fixed+rest > budget && i < s.len() {
		j, c, ok := s.next(i)
		if !ok {
			break
		}
		i, rest = j, rest-c
	}
	return i, rest
}

// newest returns the start of the newest turn, or s.len() when there is no
// user message. It costs the length of the newest turn.
func (s *turns) newest() int {
	for i := len(s.b) - 1; i >= 0; i-- {
		if s.b[i].human {
			return len(s.a) + i
		}
	}
	for i := len(s.a) - 1; i >= 0; i-- {
		if s.a[i].human {
			return i
		}
	}
	return s.len()
}

// cost returns the cost of the messages from i to j.
func (s *turns) cost(i, j int) int {
	c := 0
	for ; i < j; i++ {
		c += int(s.at(i).cost)
	}
	return c
}
