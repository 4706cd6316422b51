package tsctest

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// errorStart matches the first line of an error in tsc's pretty output.
var errorStart = regexp.MustCompile(`^(\S+):(\d+):(\d+) - error TS\d+: `)

// ExpectErrors checks the errors tsc reported in file (whose source is
// src) against its "// want: TEXT" comments: each line with one must have
// an error whose report (related information included) contains TEXT,
// and no other line, nor any other file, may have an error.
func (r Result) ExpectErrors(t testing.TB, file, src string) {
	t.Helper()
	// The report of each error line: its message and what follows it.
	reports := map[int]string{}
	line := 0
	for _, l := range strings.Split(r.Output, "\n") {
		if m := errorStart.FindStringSubmatch(l); m != nil {
			line = 0
			if m[1] != file {
				t.Errorf("tsc reported an error in %s: %s", m[1], l)
				continue
			}
			line, _ = strconv.Atoi(m[2])
		}
		if line > 0 {
			reports[line] += l + "\n"
		}
	}
	wants := map[int]string{}
	for i, l := range strings.Split(src, "\n") {
		if _, want, ok := strings.Cut(l, "// want: "); ok {
			wants[i+1] = strings.TrimSpace(want)
		}
	}
	if len(wants) == 0 {
		t.Fatalf("%s has no // want: comments", file)
	}
	for n, want := range wants {
		rep, ok := reports[n]
		switch {
		case !ok:
			t.Errorf("%s:%d: tsc reported no error, want one mentioning %q", file, n, want)
		case !strings.Contains(rep, want):
			t.Errorf("%s:%d: the error does not mention %q:\n%s", file, n, want, rep)
		}
	}
	for n, rep := range reports {
		if _, ok := wants[n]; !ok {
			t.Errorf("%s:%d: unexpected error:\n%s", file, n, rep)
		}
	}
	if t.Failed() {
		t.Logf("tsc output:\n%s", r.Output)
	}
}

// ReadFiles reads files of the test's directory for Check, by base name.
func ReadFiles(t testing.TB, paths ...string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		m[p[strings.LastIndex(p, "/")+1:]] = string(b)
	}
	return m
}
