package pii_test

import (
	"bufio"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/guardrail"
	"github.com/chatscopes/chatgen/runtime/guardrail/pii"
)

// TestCorpus runs the redactor over testdata/corpus.txt: positives of
// every kind and near misses that must be left alone.
func TestCorpus(t *testing.T) {
	f, err := os.Open("testdata/corpus.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := pii.New(nil)
	sc := bufio.NewScanner(f)
	n, line := 0, 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		in, want, ok := strings.Cut(text, "\t")
		if !ok {
			t.Fatalf("line %d: no tab", line)
		}
		n++
		if got := r.Redact(in); got != want {
			t.Errorf("line %d: Redact(%q)\n got %q\nwant %q", line, in, got, want)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 50 {
		t.Fatalf("only %d cases", n)
	}
}

func TestKindsAndReplace(t *testing.T) {
	r := pii.New(&pii.Options{Kinds: []pii.Kind{pii.Email}, Replace: func(k pii.Kind, found string) string {
		return "<" + k.String() + ":" + found[:1] + ">"
	}})
	got := r.Redact("mail bob@example.org or call +1 555 123 4567")
	if got != "mail <email:b> or call +1 555 123 4567" {
		t.Fatalf("got %q", got)
	}
	m := pii.New(nil).Find("ip 10.0.0.1, card 4111111111111111")
	if len(m) != 2 || m[0].Kind != pii.IP || m[1].Kind != pii.Card || m[0].Start != 3 || m[0].End != 11 {
		t.Fatalf("matches %+v", m)
	}
}

func TestGuardrailResults(t *testing.T) {
	r := pii.New(nil)
	ctx := context.Background()
	if res := r.CheckInput(ctx, &guardrail.Input{Text: "nothing here"}); res.Outcome != guardrail.OutcomePass {
		t.Fatalf("pass: %+v", res)
	}
	res := r.CheckOutput(ctx, &guardrail.Output{Text: "mail bob@example.org"})
	if res.Outcome != guardrail.OutcomeRewrite || res.Text != "mail [EMAIL]" {
		t.Fatalf("rewrite: %+v", res)
	}
	if guardrail.Name(r) != "pii" {
		t.Fatal(guardrail.Name(r))
	}
}

// A text without personal data passes without allocating.
func TestPassAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	r := pii.New(nil)
	in := &guardrail.Input{Text: "What is the best sword for a level 3 paladin, and how much is it?"}
	if n := testing.AllocsPerRun(100, func() { r.CheckInput(context.Background(), in) }); n != 0 {
		t.Fatalf("%.1f allocations", n)
	}
}

func BenchmarkRedactor(b *testing.B) {
	r := pii.New(nil)
	for _, bc := range []struct{ name, text string }{
		{"clean", strings.Repeat("What is the best sword for a level 3 paladin? ", 10)},
		{"personal", "mail bob@example.org, call +1 555 123 4567, card 4111111111111111, from 10.0.0.1"},
		// Long runs of candidates: linear, not quadratic.
		{"dotted-60KB", strings.Repeat("12.", 20000)},
		{"emails-35KB", strings.Repeat("a@b.cd ", 5000)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			in := &guardrail.Input{Text: bc.text}
			b.ReportAllocs()
			for b.Loop() {
				r.CheckInput(context.Background(), in)
			}
		})
	}
}

// FuzzRedact: redacting never panics, keeps the text around what it
// replaces, and a redacted text has nothing left to redact.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{"mail bob@example.org", "+1 (555) 123-4567", "4111 1111 1111 1111", "DE89 3704 0044 0532 0130 00", "::ffff:192.0.2.128", "2024-01-15", "std::vector"} {
		f.Add(s)
	}
	r := pii.New(nil)
	f.Fuzz(func(t *testing.T, text string) {
		once := r.Redact(text)
		if twice := r.Redact(once); twice != once {
			t.Fatalf("Redact(%q) = %q, and again %q", text, once, twice)
		}
		for _, m := range r.Find(text) {
			if m.Start < 0 || m.End > len(text) || m.Start >= m.End {
				t.Fatalf("match %+v of %q", m, text)
			}
		}
	})
}
