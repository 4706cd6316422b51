package ws

import (
	"testing"

	"github.com/chatscopes/chatgen/internal/e2e"
	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
)

// Two websocket connections resume one conversation with the same token
// at once (two tabs, a client that retried): one wins and keeps working,
// the other is refused.
func TestRacingResumesOverTwoConnections(t *testing.T) {
	leaktest.Check(t)
	store := chatstoretest.NewBarrier(chat.NewInMemoryConversationStore(nil))
	routes := newTestRoutes()
	r, err := chat.NewRouter(&chat.RouterOptions{Store: store, Node: "a", Logger: quietLogger()}, e2e.Register(), routes.pkg())
	if err != nil {
		t.Fatal(err)
	}
	a := startServerFor(t, r, routes, nil)
	c := dialRaw(t, a.url, nil)
	hello := c.connectDurable("c1", "echo")
	c.ws.CloseNow()
	waitNoConversations(t, a.router)

	conns := []*rawConn{dialRaw(t, a.url, nil), dialRaw(t, a.url, nil)}
	store.Arm(2)
	for _, rc := range conns {
		rc.send(map[string]any{"type": "Connect", "chatId": "c", "resume": map[string]any{"conversationId": hello.ConversationID, "token": hello.ResumeToken}})
	}
	replies := []durableFrame{conns[0].readDurable(), conns[1].readDurable()}
	won := -1
	for i, f := range replies {
		switch {
		case f.Type == "Completed" && won < 0:
			won = i
		case f.Type == "Failed" && f.text() == chat.ErrResumeRefused.Reason:
		default:
			t.Fatalf("replies: %+v", replies)
		}
	}
	if won < 0 {
		t.Fatalf("no resume won: %+v", replies)
	}
	fs := conns[won].chat("c", replies[won].text(), "still here")
	if last(fs).Type != "Completed" {
		t.Fatalf("the winner's request: %v", fs)
	}
	if st := a.router.Stats(); st.Conversations != 1 {
		t.Fatalf("the server serves %+v", st)
	}
}
