package chat

import (
	"fmt"
	"strings"

	"github.com/chatscopes/chatgen/internal/textdist"
)

// An UnknownRouteError reports a route name that the conversation's router
// does not serve, given to [Route] or [PushRoute]. The call changed
// nothing: the conversation is still on its current route. Generated code
// declares a constant per route (RouteTicket for //chat:route ticket, say);
// naming routes through them lets the compiler catch a mistyped name.
type UnknownRouteError struct {
	// Route is the name that was given.
	Route string
	// Suggestion is the known route closest to Route, or "" when none is
	// close.
	Suggestion string
}

func (e *UnknownRouteError) Error() string {
	msg := fmt.Sprintf("chat: unknown route %q", e.Route)
	if e.Suggestion != "" {
		msg += fmt.Sprintf("; did you mean %q?", e.Suggestion)
	}
	return msg
}

// knownRoute returns nil when the router serves route, and an
// *UnknownRouteError otherwise.
func (r *Router) knownRoute(route string) error {
	if _, ok := r.routes[route]; ok {
		return nil
	}
	return &UnknownRouteError{Route: route, Suggestion: closestName(route, r.Routes())}
}

// closestName returns the name of names closest to word, ignoring case:
// within an edit distance of 1 for words of up to four letters and 2 for
// longer ones, or one being a prefix of the other. It returns "" when none
// is close.
func closestName(word string, names []string) string {
	if word == "" {
		return ""
	}
	w := strings.ToLower(word)
	maxDist := 2
	if len([]rune(w)) <= 4 {
		maxDist = 1
	}
	best, bestScore := "", maxDist+2
	for _, n := range names {
		score := textdist.Distance(w, strings.ToLower(n))
		if score > maxDist {
			l := strings.ToLower(n)
			if len(w) < 2 || len(l) < 2 || !strings.HasPrefix(l, w) && !strings.HasPrefix(w, l) {
				continue
			}
			score = maxDist + 1
		}
		if score < bestScore {
			best, bestScore = n, score
		}
	}
	return best
}
