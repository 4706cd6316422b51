package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/user"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/mcpserver"
)

// mcpStdio is the -mcp value that serves MCP over standard input and
// output; any other value is the address of the streamable HTTP endpoint.
const mcpStdio = "stdio"

// mcpPath is the path of the streamable HTTP endpoint.
const mcpPath = "/mcp"

// newMCPServer returns the armorer's routes as MCP tools. Over stdio the
// player is the user who runs the program.
func newMCPServer(a *app, logger *slog.Logger) (*mcpserver.Server, error) {
	return mcpserver.New(a.router, &mcpserver.Options{
		Name:    "weaponbuilder",
		Version: "1",
		Instructions: "The armorer of a fantasy game. Talk to the menu tool (userMessage: what the player says); " +
			"it hands over to the weapon and armour builders itself and keeps the conversation across calls.",
		Logger:    logger,
		Principal: localPlayer(),
		// The workbench's tools, offered as tools of their own
		// ("weapon.setKind", …): they work on the weapon of the session's
		// weapon conversation.
		ToolBoxes: []mcpserver.ToolBox{{Route: RouteWeapon, Tools: chatMethodWeaponBuilderChat.Tools}},
	})
}

// localPlayer is the principal of a stdio session: the user running the
// program.
func localPlayer() chat.Principal {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return chat.User{ID: u.Username}
	}
	return chat.User{ID: "player"}
}

// serveMCP serves the armorer as an MCP server until ctx is done: over
// stdio when where is "stdio" (until the client closes it), else over
// streamable HTTP at http://where/mcp.
func serveMCP(ctx context.Context, a *app, where string, logger *slog.Logger) error {
	s, err := newMCPServer(a, logger)
	if err != nil {
		return err
	}
	if where == mcpStdio {
		err := s.ServeStdio(ctx)
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		return errors.Join(err, s.Close(context.Background()))
	}
	ln, err := net.Listen("tcp", where)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "weaponbuilder: MCP over streamable HTTP at http://%s%s\n", ln.Addr(), mcpPath)
	return serveMCPHTTP(ctx, s, ln)
}

// serveMCPHTTP serves s over streamable HTTP on ln until ctx is done,
// then ends its sessions.
func serveMCPHTTP(ctx context.Context, s *mcpserver.Server, ln net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle(mcpPath, s.Handler())
	return serveHandler(ctx, mux, ln, s.Close)
}
