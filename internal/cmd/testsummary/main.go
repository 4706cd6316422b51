// Command testsummary runs go test -json (or reads its output) and prints
// what go test prints without -json, then a summary of what failed: the
// failing packages and tests, and the packages that failed without a
// failing test (a build failure, a TestMain that exits non-zero, a panic or
// a race report outside a test), with their last lines of output. Its last
// line is "N passed, M failed", M counting the failed tests and the
// packages that failed without one.
//
// Usage:
//
//	testsummary [go test -json ./...]
//
// With a command, testsummary runs it, reads its standard output and
// error, and exits non-zero when the command does or when anything failed.
// Without one it reads standard input.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
)

func main() {
	code, err := run(os.Args[1:], os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
	}
	os.Exit(code)
}

// run folds the output of the command args (of stdin without args) to
// out, and returns the exit code.
func run(args []string, stdin io.Reader, out io.Writer) (int, error) {
	if len(args) == 0 {
		f := newFolder(out)
		if err := f.read(stdin); err != nil {
			return 2, err
		}
		return f.finish(0), nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return 2, err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin = stdin
	cmd.Stdout = pw
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return 2, err
	}
	pw.Close() // the child holds its copy
	// An interrupt does not end this program before the command: Ctrl-C
	// reaches go test and its test binaries too, their output ends, and
	// the summary says what ran and what was cut short. A signal sent to
	// this program alone is passed on to the command.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case sig := <-sigs:
				_ = cmd.Process.Signal(sig)
			case <-done:
				return
			}
		}
	}()
	f := newFolder(out)
	readErr := f.read(pr)
	pr.Close()
	status := 0
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return 2, err
		}
		status = ee.ExitCode()
		if status <= 0 { // killed by a signal
			status = 1
		}
	}
	if readErr != nil {
		return 2, readErr
	}
	return f.finish(status), nil
}

// event is a go test -json event (go doc cmd/test2json), with the
// ImportPath of the build events.
type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	FailedBuild string
	ImportPath  string
}

// For a package that failed without a failing test, the summary shows
// its first firstLines lines of output outside tests (what TestMain
// printed, say) and its last lastLines lines of output.
const (
	firstLines = 10
	lastLines  = 30
)

// maxSkipped is how many skipped tests the summary names.
const maxSkipped = 20

// line is a line of a package's output and its number.
type line struct {
	n    int
	text string
}

// pkgState is what the folder keeps of one package.
type pkgState struct {
	tests  map[string]*strings.Builder // the output of the running tests
	order  []string                    // the tests in tests, in the order they started
	failed []string                    // the failed tests
	head   []line                      // its first lines of output outside tests
	tail   []line                      // its last lines of output
	lines  int                         // how many lines of output it had
	carry  string                      // the end of an output that was no whole line
	done   bool                        // its pass, fail or skip event came
	fail   bool
	build  string // the FailedBuild of its fail event
}

// folder folds a go test -json stream.
type folder struct {
	out     io.Writer
	pkgs    map[string]*pkgState
	order   []string            // packages in the order they started
	build   map[string][]string // build output by ImportPath
	other   []string            // the last lines that were no JSON
	passed  int
	failed  int
	skipped []string // the skipped tests, "package test"
}

func newFolder(out io.Writer) *folder {
	return &folder{out: out, pkgs: map[string]*pkgState{}, build: map[string][]string{}}
}

// read folds the stream r until its end.
func (f *folder) read(r io.Reader) error {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			f.line(line)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// line folds one line of the stream.
func (f *folder) line(line string) {
	var e event
	if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil || e.Action == "" {
		// Not an event: the go command's own errors, say.
		f.write(line)
		f.other = appendTail(f.other, line)
		return
	}
	f.event(&e)
}

func (f *folder) write(s string) {
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	_, _ = io.WriteString(f.out, s)
}

func (f *folder) pkg(name string) *pkgState {
	p := f.pkgs[name]
	if p == nil {
		p = &pkgState{tests: map[string]*strings.Builder{}}
		f.pkgs[name] = p
		f.order = append(f.order, name)
	}
	return p
}

// noise is the output go test -v adds and go test does not print.
func noise(s string) bool {
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func (f *folder) event(e *event) {
	switch e.Action {
	case "build-output":
		f.write(e.Output)
		f.build[e.ImportPath] = appendTail(f.build[e.ImportPath], e.Output)
		return
	case "build-fail":
		return
	}
	p := f.pkg(e.Package)
	switch e.Action {
	case "run":
		if e.Test != "" && p.tests[e.Test] == nil {
			p.tests[e.Test] = new(strings.Builder)
			p.order = append(p.order, e.Test)
		}
	case "output":
		p.addOutput(e.Output, e.Test == "")
		if e.Test == "" {
			// The package's own output: "ok", "FAIL", what TestMain
			// prints, a panic after the tests. go test prints no PASS.
			if strings.HasPrefix(e.Output, "FAIL\t") {
				// The package failed with tests running: one
				// panicked, say. Their output goes before its FAIL.
				f.incomplete(p)
			}
			if e.Output != "PASS\n" && !noise(e.Output) {
				f.write(e.Output)
			}
			return
		}
		if b := p.tests[e.Test]; b != nil && !noise(e.Output) {
			b.WriteString(e.Output)
		} else if b == nil && !noise(e.Output) {
			f.write(e.Output) // a test that never ran: write it now
		}
	case "pass", "skip", "fail":
		if e.Test == "" {
			p.done = true
			p.fail = e.Action == "fail"
			p.build = e.FailedBuild
			if p.fail {
				f.incomplete(p)
			}
			return
		}
		switch e.Action {
		case "pass":
			f.passed++
		case "skip":
			f.skipped = append(f.skipped, e.Package+" "+e.Test)
		case "fail":
			f.failed++
			p.failed = append(p.failed, e.Test)
			if b := p.tests[e.Test]; b != nil {
				// A subtest's output goes with its parent's, which
				// fails too, as go test prints it.
				i := strings.LastIndexByte(e.Test, '/')
				if parent := p.tests[e.Test[:max(i, 0)]]; i > 0 && parent != nil {
					parent.WriteString(b.String())
				} else {
					f.write(b.String())
				}
			}
		}
		delete(p.tests, e.Test)
		p.order = slices.DeleteFunc(p.order, func(t string) bool { return t == e.Test })
	}
}

// incomplete reports the tests of a failed package that started and never
// ended: the one that panicked or timed out, say, and its parents.
func (f *folder) incomplete(p *pkgState) {
	for _, t := range p.order {
		f.write(p.tests[t].String())
		p.failed = append(p.failed, t+" (did not finish)")
		f.failed++
	}
	clear(p.tests)
	p.order = nil
}

// addOutput keeps what the summary may show of output s; outside is
// whether it came from outside the tests.
func (p *pkgState) addOutput(s string, outside bool) {
	s = p.carry + s
	p.carry = ""
	if !strings.HasSuffix(s, "\n") {
		i := strings.LastIndexByte(s, '\n')
		p.carry = s[i+1:]
		s = s[:i+1]
	}
	for l := range strings.Lines(s) {
		if noise(l) {
			continue
		}
		l = strings.TrimRight(l, "\n")
		p.lines++
		if outside && len(p.head) < firstLines && !verdict(l) {
			p.head = append(p.head, line{p.lines, l})
		}
		p.tail = append(p.tail, line{p.lines, l})
		if len(p.tail) > lastLines {
			p.tail = slices.Delete(p.tail, 0, len(p.tail)-lastLines)
		}
	}
}

// verdict is whether l is one of go test's lines of a package's result.
func verdict(l string) bool {
	return l == "PASS" || l == "FAIL" || strings.HasPrefix(l, "ok  \t") || strings.HasPrefix(l, "FAIL\t")
}

// lastOutput writes the first lines of p's output outside tests and the
// last lines of its output to b, indented.
func (p *pkgState) lastOutput(b *strings.Builder) {
	next := 1
	if len(p.tail) > 0 {
		next = p.tail[0].n
	}
	for _, l := range p.head {
		if l.n < next {
			fmt.Fprintf(b, "      %s\n", l.text)
		}
	}
	if len(p.head) > 0 && p.head[len(p.head)-1].n < next-1 {
		b.WriteString("      ...\n")
	}
	for _, l := range p.tail {
		fmt.Fprintf(b, "      %s\n", l.text)
	}
}

// appendTail appends the lines of s to tail and keeps the last lastLines.
func appendTail(tail []string, s string) []string {
	for l := range strings.Lines(s) {
		tail = append(tail, strings.TrimRight(l, "\n"))
	}
	if len(tail) > lastLines {
		tail = slices.Delete(tail, 0, len(tail)-lastLines)
	}
	return tail
}

// finish writes the summary and returns the exit code, given the exit
// status of go test.
func (f *folder) finish(status int) int {
	var b strings.Builder
	failedPkgs := 0
	for _, name := range f.order {
		p := f.pkgs[name]
		if !p.done && len(p.order) > 0 {
			// The stream ended in the middle of the package.
			f.incomplete(p)
			p.fail = true
		}
		if !p.fail && len(p.failed) == 0 {
			continue
		}
		failedPkgs++
		fmt.Fprintf(&b, "FAIL %s\n", name)
		for _, t := range p.failed {
			fmt.Fprintf(&b, "    --- FAIL: %s\n", t)
		}
		if len(p.failed) > 0 {
			continue
		}
		f.failed++
		switch {
		case p.build != "":
			fmt.Fprintf(&b, "    the build of %s failed:\n", p.build)
			for _, l := range f.build[p.build] {
				fmt.Fprintf(&b, "      %s\n", l)
			}
		case !p.done:
			b.WriteString("    its output ended before its result; its output:\n")
			p.lastOutput(&b)
		default:
			b.WriteString("    no test failed: it failed outside its tests (TestMain, a goroutine after a test, a race report); its output:\n")
			p.lastOutput(&b)
		}
	}
	code := 0
	if failedPkgs > 0 || f.failed > 0 {
		code = 1
	}
	if status != 0 {
		code = status
		if failedPkgs == 0 {
			fmt.Fprintf(&b, "go test exited with status %d and no package failed; its last lines that were no test output:\n", status)
			for _, l := range f.other {
				fmt.Fprintf(&b, "      %s\n", l)
			}
			f.failed++
		}
	}
	f.write("\n=== Summary\n")
	if b.Len() == 0 {
		f.write(fmt.Sprintf("%d packages, none failed\n", len(f.order)))
	} else {
		f.write(b.String())
	}
	if len(f.skipped) > 0 {
		f.write(fmt.Sprintf("%d skipped (go test -v says why):\n", len(f.skipped)))
		for i, s := range f.skipped {
			if i == maxSkipped {
				f.write(fmt.Sprintf("    and %d more\n", len(f.skipped)-i))
				break
			}
			f.write("    " + s + "\n")
		}
	}
	f.write(fmt.Sprintf("%d passed, %d failed\n", f.passed, f.failed))
	return code
}
