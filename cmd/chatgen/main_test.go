package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/internal/testmod"
)

// module writes a temporary module holding one package with src as a.go,
// resolving chatgen to this repository, and makes it the working directory.
func module(t *testing.T, src string) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := testmod.Write(dir, root, "example.com/m"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, kv := range testmod.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Chdir(dir)
	return dir
}

func TestHelpListsDirectives(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-h"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"usage: chatgen", "//chat:scoped", "//chat:route", "//chat:catch"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, stderr.String())
		}
	}
}

func TestErrorsWriteNothing(t *testing.T) {
	dir := module(t, "package m\n\n//chat:scope\ntype A struct{}\n\n//chat:scoped per-chat invocation\ntype B struct{}\n")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), nil, &stdout, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr.String())
	}
	want := "a.go:3:1: unknown directive //chat:scope; did you mean //chat:scoped?\n" +
		"a.go:6:24: //chat:scoped takes at most one of chat, per-chat, invocation\n" +
		"chatgen: 2 errors\n"
	if stderr.String() != want {
		t.Fatalf("stderr:\n%s\nwant:\n%s", stderr.String(), want)
	}
	if _, err := os.Stat(filepath.Join(dir, "chat_gen.go")); !os.IsNotExist(err) {
		t.Fatalf("chat_gen.go written despite errors (stat: %v)", err)
	}
}

// TestAllMistakesInOneRun: a near miss of //chat:tool does not hide the
// typo of the //chat:param under it: one run reports both.
func TestAllMistakesInOneRun(t *testing.T) {
	dir := module(t, `package m

import "context"

// Tickets opens tickets.
type Tickets struct{}

// Open opens a ticket.
//
// chat:tool
//chat:param nmber the ticket number
func (t *Tickets) Open(ctx context.Context, number int) (string, error) { return "", nil }
`)
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), nil, &stdout, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr.String())
	}
	for _, want := range []string{
		`a.go:10:1: "// chat:tool" is not a directive (no space allowed after //); did you mean //chat:tool?` + "\n",
		"a.go:11:14: //chat:param nmber: Open has no parameter nmber; did you mean number?\n",
		"chatgen: 2 errors",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "chat_gen.go")); !os.IsNotExist(err) {
		t.Fatalf("chat_gen.go written despite errors (stat: %v)", err)
	}
}

func TestWritesOnceThenNothing(t *testing.T) {
	dir := module(t, "package m\n\n//chat:scoped\ntype A struct{ n int }\n\nfunc (a *A) N() int { return a.n }\n")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-v"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	out := filepath.Join(dir, "chat_gen.go")
	if !strings.Contains(stdout.String(), "wrote "+out) {
		t.Fatalf("stdout %q, want the file written", stdout.String())
	}
	stdout.Reset()
	if code := run(context.Background(), []string{"-v"}, &stdout, &stderr); code != 0 || stdout.Len() != 0 {
		t.Fatalf("second run: exit %d, stdout %q; want no change", code, stdout.String())
	}
}

// deskSrc is a support desk whose AI service is offered the tools of
// Tickets; extra is appended (another tool, say).
func deskSrc(extra string) string {
	return `package m

import "context"

// Desk answers support questions.
//
//chat:ai
type Desk interface {
	//chat:tools Tickets
	Answer(ctx context.Context, msg string) (string, error)
}

// Tickets opens and closes tickets.
type Tickets struct{}

// Open opens a ticket.
//
//chat:tool
func (t *Tickets) Open(ctx context.Context, title string) (string, error) { return title, nil }
` + extra
}

// TestCheckNamesStaleFilesAndWritesNothing: -check exits 1 naming each
// file that go generate would change (a missing one, one that misses a
// new //chat:tool, one to remove), and writes nothing; 0 when all are
// current.
func TestCheckNamesStaleFilesAndWritesNothing(t *testing.T) {
	dir := module(t, deskSrc(""))
	out := filepath.Join(dir, "chat_gen.go")
	check := func(wantCode int, wantStderr string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"-check"}, &stdout, &stderr); code != wantCode || stderr.String() != wantStderr {
			t.Fatalf("chatgen -check: exit %d, stderr:\n%s\nwant exit %d, stderr:\n%s", code, stderr.String(), wantCode, wantStderr)
		}
	}
	const stale = "chatgen: chat_gen.go is stale\nchatgen: 1 stale file: run go generate ./... and commit the result\n"

	// Never generated.
	check(1, stale)
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("-check wrote chat_gen.go (stat: %v)", err)
	}

	// Generated: current.
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), nil, &stdout, &stderr); code != 0 {
		t.Fatalf("chatgen: exit %d; stderr:\n%s", code, stderr.String())
	}
	generated, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	check(0, "")

	// A new tool without go generate: the model would never be offered it.
	tool := "\n// Close closes a ticket.\n//\n//chat:tool\nfunc (t *Tickets) Close(ctx context.Context, id int) error { return nil }\n"
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte(deskSrc(tool)), 0o644); err != nil {
		t.Fatal(err)
	}
	check(1, stale)
	if now, err := os.ReadFile(out); err != nil || !bytes.Equal(now, generated) {
		t.Fatalf("-check changed chat_gen.go (err %v)", err)
	}

	// No directives left: the output would be removed.
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte("package m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check(1, stale)
	if _, err := os.Stat(out); err != nil {
		t.Fatalf("-check removed chat_gen.go: %v", err)
	}
	// go generate removes it, although the stale file no longer compiles.
	if code := run(context.Background(), nil, &stdout, &stderr); code != 0 {
		t.Fatalf("chatgen: exit %d; stderr:\n%s", code, stderr.String())
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("chatgen kept the output of a package without directives (stat: %v)", err)
	}
	check(0, "")

	// Errors are reported as without -check, and nothing is written.
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte("package m\n\n//chat:scope\ntype A struct{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check(1, "a.go:3:1: unknown directive //chat:scope; did you mean //chat:scoped?\nchatgen: 1 error\n")
}
