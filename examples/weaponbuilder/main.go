// Command weaponbuilder is an armorer for a fantasy video game, built with
// chat scopes: a Main Menu AI route hands the player over to nested
// conversations — a weapon builder, with an enchantment conversation nested
// inside it, and an armour builder — each keeping its state in a scoped
// bean and its own chat memory, and handing back when done.
//
// It serves a web page (the JavaScript client over the websocket endpoint)
// and, with -terminal, chats in the terminal through the local client. It
// runs offline on a scripted model unless -provider (or OPENAI_API_KEY)
// chooses a real one: OpenAI, Anthropic, Gemini or Ollama. The Main Menu
// answers questions on the lore of the realm from documents shipped in the
// program (lore/*.md, indexed in memory by runtime/knowledge at start):
// the model searches them with a tool, and the page lists the passages an
// answer is drawn from. With -mcp-lore the Main Menu also offers the tools
// of a small MCP server, the lore server, which the program runs as its
// own child process (`weaponbuilder lore-server`). With -mcp the program
// is an MCP server itself instead: its routes are MCP tools, over stdio
// (-mcp stdio, for an MCP client that runs it) or streamable HTTP (-mcp
// localhost:8090, at /mcp); each MCP session is a conversation. With -a2a
// localhost:8092 it is an A2A agent instead (runtime/a2aserver): its card
// at /.well-known/agent-card.json, JSON-RPC at /; each A2A context is a
// conversation. With -agui localhost:8091 it serves AG-UI clients instead
// (runtime/agui) at /agui; each AG-UI thread is a conversation.
//
// Conversations are durable: they are kept, with the builders' state and
// the AI services' chat memories, in a bbolt data file (-data; by default
// in the user's cache directory), so that the page continues where it was
// after the server restarts. -data "" keeps them in memory only. With
// -redis they are kept in Redis instead, and several servers behind a load
// balancer serve them (see docs/durability.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/chatscopes/chatgen/runtime/ai"
)

//go:generate go tool chatgen

func main() {
	if len(os.Args) == 2 && os.Args[1] == loreCommand {
		if err := serveLore(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "weaponbuilder lore-server:", err)
			os.Exit(1)
		}
		return
	}
	addr := flag.String("addr", "localhost:8080", "address to serve the web page on")
	terminal := flag.Bool("terminal", false, "chat in the terminal instead of serving the web page")
	lore := flag.Bool("mcp-lore", false, "offer the tools of the lore MCP server (run as a child process) at the Main Menu")
	withOTel := flag.Bool("otel", false, "export OpenTelemetry traces and metrics to standard output")
	data := flag.String("data", defaultDataFile(), `the file that keeps the conversations across restarts ("": in memory only; with -terminal the default is in memory)`)
	redisAddr := flag.String("redis", "", "keep the conversations in the Redis at this address instead (several servers can share it); comma-separated addresses name the seed nodes of a Redis Cluster")
	redisPrefix := flag.String("redis-prefix", "weaponbuilder:", "the prefix of the Redis keys")
	provider := flag.String("provider", "", "the model: "+strings.Join(providers, ", ")+` (keys from OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, OLLAMA_HOST; CHATGEN_MODEL names the model; default: openai when OPENAI_API_KEY is set, else offline)`)
	aguiFlag := flag.String("agui", "", "serve the routes to AG-UI clients instead, at http://ADDR/agui (localhost:8091)")
	mcpFlag := flag.String("mcp", "", `serve the routes as MCP tools instead: "stdio" over standard input and output, or an address (localhost:8090) for streamable HTTP at /mcp`)
	a2aFlag := flag.String("a2a", "", "serve the routes as an A2A agent instead, at this address (localhost:8092): the card at /.well-known/agent-card.json, JSON-RPC at /")
	lease := flag.Duration("lease", 0, "how long a server holds a conversation between requests: another server resuming it after a crash waits that long (0: 30s)")
	flag.Parse()
	if *withOTel && *mcpFlag == mcpStdio {
		fmt.Fprintln(os.Stderr, "weaponbuilder: -otel exports to standard output, which -mcp stdio uses for MCP: choose one")
		os.Exit(2)
	}
	if (*terminal || *mcpFlag != "") && !flagSet("data") {
		// A terminal chat ends with its process, an MCP session's
		// conversations with the session: no file to lock.
		*data = ""
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	err := func() (err error) {
		if *withOTel {
			shutdown, err := setupOTel(os.Stdout)
			if err != nil {
				return err
			}
			defer func() { err = errors.Join(err, shutdown(context.Background())) }()
		}
		return run(ctx, *provider, *addr, storageFlags{data: *data, redisAddr: *redisAddr, redisPrefix: *redisPrefix, lease: *lease}, runMode{terminal: *terminal, mcp: *mcpFlag, agui: *aguiFlag, a2a: *a2aFlag}, *lore, logger)
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "weaponbuilder:", err)
		os.Exit(1)
	}
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// runMode is how the armorer talks: the web page (the zero value), the
// terminal, or MCP (mcp: "stdio" or the address of the HTTP endpoint).
type runMode struct {
	terminal bool
	mcp      string
	agui     string // the address of the AG-UI endpoint, if any
	a2a      string // the address of the A2A endpoint
}

func run(ctx context.Context, provider, addr string, data storageFlags, mode runMode, lore bool, logger *slog.Logger) (err error) {
	model, about, err := modelFor(ctx, provider, os.Getenv)
	if err != nil {
		return err
	}
	store, closeStore, err := openStorage(data)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeStore()) }()
	var menuTools []ai.ToolSource
	if lore {
		src, err := connectLore(ctx, logger)
		if err != nil {
			return err
		}
		defer src.Close()
		menuTools = append(menuTools, src)
		about += ", with the lore MCP server"
	}
	a, err := newApp(ctx, model, logger, store, menuTools...)
	if err != nil {
		return err
	}
	if mode.mcp != "" {
		// Over stdio, standard output is the MCP channel: nothing else
		// may be printed there.
		fmt.Fprintf(os.Stderr, "weaponbuilder: serving MCP, talking to %s\n", about)
		return serveMCP(ctx, a, mode.mcp, logger)
	}
	if mode.agui != "" {
		fmt.Fprintf(os.Stderr, "weaponbuilder: serving AG-UI, talking to %s, keeping conversations %s\n", about, store.where)
		return serveAGUI(ctx, a, store, mode.agui, logger)
	}
	if mode.a2a != "" {
		fmt.Fprintf(os.Stderr, "weaponbuilder: serving A2A, talking to %s, keeping conversations %s\n", about, store.where)
		return serveA2A(ctx, a, mode.a2a, store.conversations, logger)
	}
	if mode.terminal {
		fmt.Printf("weaponbuilder: talking to %s\n", about)
		return runTerminal(ctx, a.router, os.Stdin, os.Stdout)
	}
	fmt.Printf("weaponbuilder: keeping conversations %s\n", store.where)
	return serve(ctx, a, addr, about, logger)
}
