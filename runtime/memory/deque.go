package memory

// compactMin is the smallest dead prefix of a deque worth reclaiming.
const compactMin = 16

// deque is a queue that drops from the front in O(1): its live items are
// items[head:]. Dropping moves head; the dead prefix is reclaimed (by
// copying the live items down, in compact) once it is at least as long as
// the live part, so each dropped item pays O(1) for its share of the copy.
// Dead slots are always zero, so dropped items can be collected.
//
// The window memory keeps the costs of its messages (and, over a store
// other than an [InMemoryStore], the messages) in deques; an InMemoryStore
// keeps each list in one.
type deque[T any] struct {
	items []T
	head  int
}

func (d *deque[T]) len() int { return len(d.items) - d.head }

// live returns the live items, not copied.
func (d *deque[T]) live() []T { return d.items[d.head:] }

// drop removes the n items that follow the first keep ones, which move up
// to take their place. It does not compact.
func (d *deque[T]) drop(keep, n int) {
	if n == 0 {
		return
	}
	copy(d.items[d.head+n:d.head+n+keep], d.items[d.head:d.head+keep])
	clear(d.items[d.head : d.head+n])
	d.head += n
}

// prepend makes room for n items in front of the live ones and returns
// those n (zero) slots. It uses the dead prefix when it is long enough (it
// always is when n items were just dropped); otherwise it reallocates, with
// room for extra more items at the end.
func (d *deque[T]) prepend(n, extra int) []T {
	if n <= d.head {
		d.head -= n
		return d.items[d.head : d.head+n]
	}
	items := make([]T, n, n+d.len()+extra)
	d.items, d.head = append(items, d.live()...), 0
	return d.items[:n]
}

// compact reclaims the dead prefix when it is long enough.
func (d *deque[T]) compact() {
	if live := d.len(); d.head >= compactMin && d.head >= live {
		copy(d.items, d.items[d.head:])
		clear(d.items[live:])
		d.items, d.head = d.items[:live], 0
	}
}
