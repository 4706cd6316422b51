// Package principal holds what the protocol endpoints (agui, a2aserver,
// mcpserver) share about the owners of their conversations.
package principal

import "github.com/chatscopes/chatgen/runtime/chat"

// Same reports whether a and b are the same principal: both anonymous,
// or of the same name.
func Same(a, b chat.Principal) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Name() == b.Name()
}
