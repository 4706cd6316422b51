// Command chatgen generates the chat_gen.go of Go packages annotated with
// //chat: directives. Add it to a module as a tool (go get -tool
// github.com/chatscopes/chatgen/cmd/chatgen) and run it with go generate:
//
//	//go:generate go tool chatgen
//
// With no arguments it processes the package in the current directory.
// It prints every problem as file:line:col: message, sorted, and exits 1
// without writing anything when there is an error.
//
// With -check it writes nothing and exits 1, naming the stale files, when
// any output would change: for CI and pre-commit hooks, so that a
// //chat:tool added without go generate does not go unnoticed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"

	"github.com/chatscopes/chatgen/gen"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chatgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tags := fs.String("tags", "", "comma-separated build tags to load the packages with")
	verbose := fs.Bool("v", false, "print the files written")
	showVersion := fs.Bool("version", false, "print chatgen's version and exit")
	check := fs.Bool("check", false, "write nothing; exit 1 naming the stale files when any output would change (for CI and pre-commit hooks)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: chatgen [flags] [packages]\n\n")
		fmt.Fprintf(stderr, "chatgen writes chat_gen.go for each package with //chat: directives\n")
		fmt.Fprintf(stderr, "(the package in the current directory when none is given).\n\nflags:\n")
		fs.PrintDefaults()
		fmt.Fprintf(stderr, "\n%s", gen.DirectivesHelp())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, version(debug.ReadBuildInfo()))
		return 0
	}
	cfg := gen.Config{Patterns: fs.Args()}
	if *tags != "" {
		cfg.BuildFlags = []string{"-tags=" + *tags}
	}
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(stderr, "chatgen: %v\n", err)
		return 1
	}
	res, err := gen.Generate(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "chatgen: %v\n", err)
		return 1
	}
	errs := 0
	for _, d := range res.Diagnostics {
		fmt.Fprintln(stderr, d.Format(wd))
		if d.Severity == gen.Error {
			errs++
		}
	}
	if errs > 0 {
		fmt.Fprintf(stderr, "chatgen: %d error%s\n", errs, plural(errs))
		return 1
	}
	if *check {
		stale, err := gen.StaleFiles(res.Files)
		for _, p := range stale {
			fmt.Fprintf(stderr, "chatgen: %s is stale\n", relTo(wd, p))
		}
		if err != nil {
			fmt.Fprintf(stderr, "chatgen: %v\n", err)
			return 1
		}
		if len(stale) > 0 {
			fmt.Fprintf(stderr, "chatgen: %d stale file%s: run go generate ./... and commit the result\n", len(stale), plural(len(stale)))
			return 1
		}
		return 0
	}
	changed, err := gen.WriteFiles(res.Files)
	if *verbose {
		for _, p := range changed {
			fmt.Fprintf(stdout, "chatgen: wrote %s\n", p)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "chatgen: %v\n", err)
		return 1
	}
	return 0
}

// relTo returns path relative to dir when it lies under it.
func relTo(dir, path string) string {
	if rel, err := filepath.Rel(dir, path); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return path
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
