package ws

import (
	"net/http"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chat"
)

// An authenticator that takes the user's name from raw bytes (a header)
// may yield a name that is not valid UTF-8: the Connect is refused with
// Forbidden, durable or not, and nothing is kept; a valid name connects.
func TestPrincipalNameNotUTF8Refused(t *testing.T) {
	auth := func(r *http.Request) (chat.Principal, error) {
		return chat.User{ID: r.Header.Get("X-User")}, nil
	}
	nodes := &durableNodes{store: chat.NewInMemoryConversationStore(nil)}
	a := nodes.start(t, "a", &ServerOptions{Authenticator: auth})
	c := dialRaw(t, a.url, http.Header{"X-User": {"ann\xff"}})
	c.send(map[string]any{"type": "Connect", "chatId": "c1"})
	if f := c.read(); f.Type != "Failed" || f.text() != "Forbidden" || f.ScopeID != "" {
		t.Fatalf("Connect as %q: %+v, want Failed Forbidden", "ann\xff", f)
	}
	if ids, _ := nodes.store.ConversationIDs(t.Context()); len(ids) != 0 {
		t.Fatalf("conversations kept: %q", ids)
	}
	ok := dialRaw(t, a.url, http.Header{"X-User": {"Zoë"}})
	if hello := ok.connectDurable("c2", ""); hello.ConversationID == "" {
		t.Fatalf("Connect as Zoë: %+v", hello)
	}
}
