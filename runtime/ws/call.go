package ws

import "github.com/chatscopes/chatgen/runtime/chat"

// finishedCall returns a Call that has already ended with err.
func finishedCall(err error) *chat.Call {
	c := chat.NewCall()
	c.Finish(err)
	return c
}
