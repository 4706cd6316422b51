package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fold runs testsummary on the stream in and returns its output and exit
// code.
func fold(t *testing.T, in string) (string, int) {
	t.Helper()
	var out strings.Builder
	code, err := run(nil, strings.NewReader(in), &out)
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), code
}

// summary is the part of out after the "=== Summary" line.
func summary(t *testing.T, out string) string {
	t.Helper()
	_, s, ok := strings.Cut(out, "\n=== Summary\n")
	if !ok {
		t.Fatalf("no summary in:\n%s", out)
	}
	return s
}

func requireContains(t *testing.T, what, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("%s has no %q:\n%s", what, w, s)
		}
	}
}

// TestMixed folds the go test -json output of a module (testdata/mixed.json)
// with a failing subtest, a TestMain that exits 1 after passing tests, a
// test that does not build and a goroutine's panic.
func TestMixed(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "mixed.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, code := fold(t, string(in))
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	stream, _, _ := strings.Cut(out, "\n=== Summary\n")
	// The stream is go test's text without -v: the output of the failed
	// tests, not of the passed ones, and no === RUN.
	requireContains(t, "the stream", stream,
		"a_test.go:7: parent log\n    a_test.go:8: sub log\n    a_test.go:8: sub fails\n--- FAIL: TestParent/Sub",
		"FAIL\ttsx/a\t", "leaked goroutine: stack here\nFAIL\ttsx/b\t",
		`c/c_test.go:5:41: cannot use "s"`, "FAIL\ttsx/c [build failed]",
		"panic: boom\n\ngoroutine 21 [running]:\ntsx/d.TestPanics.func1.1()\n\t/src/d/d_test.go:5 +0x25\ncreated by tsx/d.TestPanics.func1 in goroutine 20\n\t/src/d/d_test.go:5 +0x1a\nFAIL\ttsx/d\t")
	for _, not := range []string{"quiet", "=== RUN", "PASS\n"} {
		if strings.Contains(stream, not) {
			t.Errorf("the stream has %q:\n%s", not, stream)
		}
	}
	s := summary(t, out)
	requireContains(t, "the summary", s,
		"FAIL tsx/a\n    --- FAIL: TestParent/Sub\n    --- FAIL: TestParent\n",
		"FAIL tsx/b\n    no test failed", "      leaked goroutine: stack here\n",
		"FAIL tsx/c\n    the build of tsx/c [tsx/c.test] failed:\n", `      c/c_test.go:5:41: cannot use "s"`,
		"FAIL tsx/d\n    --- FAIL: TestPanics (did not finish)\n    --- FAIL: TestPanics/In (did not finish)\n")
	// 3 passed: a.TestOK, a.TestParent/Good and b.TestOK; 6 failed: two
	// tests of a and two of d, and b and c, which failed without one.
	if !strings.HasSuffix(out, "\n1 skipped (go test -v says why):\n    tsx/a TestSkip\n3 passed, 6 failed\n") {
		t.Errorf("the output ends %q, want the counts", out[max(0, len(out)-60):])
	}
}

func TestAllPassed(t *testing.T) {
	in := `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:1: a log of a passing test\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Output":"PASS\n"}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.01s\n"}
{"Action":"pass","Package":"p"}
{"Action":"start","Package":"q"}
{"Action":"output","Package":"q","Output":"?   \tq\t[no test files]\n"}
{"Action":"skip","Package":"q"}
`
	out, code := fold(t, in)
	if code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	want := "ok  \tp\t0.01s\n?   \tq\t[no test files]\n\n=== Summary\n2 packages, none failed\n1 passed, 0 failed\n"
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
}

// TestCutShort folds a stream that ends in the middle of a test, as when
// go test is killed: the test is reported, with the package.
func TestCutShort(t *testing.T) {
	in := `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestHangs"}
{"Action":"output","Package":"p","Test":"TestHangs","Output":"=== RUN   TestHangs\n"}
{"Action":"output","Package":"p","Test":"TestHangs","Output":"    p_test.go:9: waiting"}
`
	out, code := fold(t, in)
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	requireContains(t, "the output", out, "    p_test.go:9: waiting\n", "FAIL p\n    --- FAIL: TestHangs (did not finish)\n")
	if !strings.HasSuffix(out, "\n0 passed, 1 failed\n") {
		t.Errorf("the output ends %q", out)
	}
}

// TestExitStatus runs commands: one whose output is no test's and fails,
// one that succeeds. The exit status is the command's, and a failure
// without a failed package shows the command's last lines.
func TestExitStatus(t *testing.T) {
	var out strings.Builder
	code, err := run([]string{"sh", "-c", "echo 'go: cannot find main module' >&2; exit 3"}, nil, &out)
	if err != nil {
		t.Fatal(err)
	}
	if code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
	requireContains(t, "the output", out.String(),
		"go test exited with status 3 and no package failed", "      go: cannot find main module\n", "0 passed, 1 failed\n")

	out.Reset()
	code, err = run([]string{"sh", "-c", `echo '{"Action":"pass","Package":"p","Test":"TestA"}'`}, nil, &out)
	if err != nil || code != 0 {
		t.Errorf("a passing command: exit code %d, %v", code, err)
	}
	if !strings.HasSuffix(out.String(), "1 passed, 0 failed\n") {
		t.Errorf("output %q", out.String())
	}
}

// TestGoTest runs go test -json on a module of its own whose tests fail in
// the ways testdata/mixed.json records, so that the fixture stays what go
// test writes.
func TestGoTest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs tests")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module tsx\n\ngo 1.26\n",
		"a/a_test.go": `package a

import "testing"

func TestOK(t *testing.T) { t.Log("quiet") }

func TestParent(t *testing.T) {
	t.Log("parent log")
	t.Run("Sub", func(t *testing.T) { t.Log("sub log"); t.Fatal("sub fails") })
	t.Run("Good", func(t *testing.T) {})
}
`,
		"b/b_test.go": `package b

import (
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if m.Run() == 0 {
		fmt.Println("leaked goroutine: stack here")
	}
	os.Exit(1)
}

func TestOK(t *testing.T) {}
`,
		"c/c_test.go": "package c\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) { var x int = \"s\"; _ = x }\n",
		"d/d_test.go": `package d

import (
	"testing"
	"time"
)

func TestPanics(t *testing.T) {
	t.Run("In", func(t *testing.T) {
		go func() { panic("boom") }()
		time.Sleep(time.Minute)
	})
}
`,
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("GOFLAGS", "")
	t.Setenv("GOWORK", "off")
	var out strings.Builder
	code, err := run([]string{"go", "-C", dir, "test", "-json", "-count=1", "./..."}, nil, &out)
	if err != nil {
		t.Fatal(err)
	}
	if code == 0 {
		t.Errorf("exit code 0")
	}
	requireContains(t, "the summary", summary(t, out.String()),
		"FAIL tsx/a\n    --- FAIL: TestParent/Sub\n    --- FAIL: TestParent\n",
		"FAIL tsx/b\n    no test failed", "      leaked goroutine: stack here\n",
		"FAIL tsx/c\n    the build of tsx/c [tsx/c.test] failed:\n",
		"FAIL tsx/d\n    --- FAIL: TestPanics (did not finish)\n    --- FAIL: TestPanics/In (did not finish)\n",
		"\n3 passed, 6 failed\n")
}

// TestLongOutsideOutput: a package that fails after its tests with a long
// message (a leak check's stacks) is summarized by the message's first
// lines and the output's last ones.
func TestLongOutsideOutput(t *testing.T) {
	var in strings.Builder
	ev := func(test, out string) {
		b, err := json.Marshal(map[string]string{"Action": "output", "Package": "p", "Test": test, "Output": out})
		if err != nil {
			t.Fatal(err)
		}
		in.Write(b)
		in.WriteString("\n")
	}
	in.WriteString(`{"Action":"start","Package":"p"}` + "\n")
	in.WriteString(`{"Action":"run","Package":"p","Test":"TestA"}` + "\n")
	ev("TestA", "--- PASS: TestA (0.00s)\n")
	in.WriteString(`{"Action":"pass","Package":"p","Test":"TestA"}` + "\n")
	ev("", "PASS\n")
	ev("", "goroutine leak: 2 goroutines\n")
	for i := range 100 {
		ev("", fmt.Sprintf("stack line %d\n", i))
	}
	ev("", "FAIL\tp\t10.0s\n")
	in.WriteString(`{"Action":"fail","Package":"p"}` + "\n")
	out, code := fold(t, in.String())
	if code != 1 {
		t.Errorf("exit code %d", code)
	}
	want := "FAIL p\n    no test failed: it failed outside its tests (TestMain, a goroutine after a test, a race report); its output:\n" +
		"      goroutine leak: 2 goroutines\n      stack line 0\n"
	requireContains(t, "the summary", summary(t, out), want, "      stack line 8\n      ...\n      stack line 71\n",
		"      stack line 99\n      FAIL\tp\t10.0s\n1 passed, 1 failed\n")
	if strings.Contains(summary(t, out), "stack line 9\n") {
		t.Errorf("the summary has more than the first lines:\n%s", out)
	}
}
