// Package pii is a guardrail that redacts personal data: e-mail
// addresses, phone numbers, payment card numbers (Luhn-checked), IBANs
// (mod-97 checked) and IP addresses (v4 and v6). As an input guardrail it
// keeps them from the model and the memory; as an output guardrail, from
// the user. A text without any passes; a text with some is rewritten, each
// found item replaced by a placeholder ("[EMAIL]", "[PHONE]", …).
//
// The detectors look for the forms people write and check what a form
// allows: a card number must pass the Luhn check, an IBAN its mod-97
// check, an IP address must parse; a phone number has 7 to 15 digits in
// groups, and dates, times, version numbers and numbers inside longer
// codes are left alone. It is a redactor of likely personal data, not a
// proof that none is left.
//
//	redact := pii.New(nil)
//	cfg := ai.Config{Guardrails: &guardrail.Set{
//		Input:  []guardrail.InputGuardrail{redact},
//		Output: []guardrail.OutputGuardrail{redact},
//	}}
package pii

import (
	"context"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/chatscopes/chatgen/runtime/guardrail"
)

// Kind is a kind of personal data.
type Kind uint8

// The kinds of personal data the redactor finds.
const (
	Email Kind = iota
	IBAN
	Card
	IP
	Phone
	numKinds
)

// String returns "email", "iban", "card", "ip" or "phone".
func (k Kind) String() string {
	switch k {
	case Email:
		return "email"
	case IBAN:
		return "iban"
	case Card:
		return "card"
	case IP:
		return "ip"
	case Phone:
		return "phone"
	}
	return "unknown"
}

// placeholder is the default replacement of k.
func (k Kind) placeholder() string {
	if k == IP {
		return "[IP]"
	}
	return "[" + strings.ToUpper(k.String()) + "]"
}

// Options configure a [Redactor]; nil or the zero value redacts every
// kind with the default placeholders.
type Options struct {
	// Kinds are the kinds redacted; nil means all.
	Kinds []Kind
	// Replace returns what replaces the text found of kind k; nil means
	// the placeholder "[EMAIL]", "[IBAN]", "[CARD]", "[IP]" or "[PHONE]".
	Replace func(k Kind, found string) string
}

// A Redactor finds and replaces personal data. It is an input and an
// output guardrail. It is safe for concurrent use.
type Redactor struct {
	kinds   [numKinds]bool
	replace func(Kind, string) string
}

// New returns a redactor configured by opts.
func New(opts *Options) *Redactor {
	r := &Redactor{}
	if opts != nil {
		r.replace = opts.Replace
	}
	for k := range numKinds {
		r.kinds[k] = opts == nil || opts.Kinds == nil || slices.Contains(opts.Kinds, k)
	}
	return r
}

// GuardrailName returns "pii".
func (r *Redactor) GuardrailName() string { return "pii" }

// CheckInput redacts the user message.
func (r *Redactor) CheckInput(_ context.Context, in *guardrail.Input) guardrail.Result {
	return r.result(in.Text)
}

// CheckOutput redacts the model's answer.
func (r *Redactor) CheckOutput(_ context.Context, out *guardrail.Output) guardrail.Result {
	return r.result(out.Text)
}

func (r *Redactor) result(text string) guardrail.Result {
	if red, changed := r.redact(text); changed {
		return guardrail.Rewrite(red)
	}
	return guardrail.Pass()
}

// A Match is one item of personal data found in a text.
type Match struct {
	Kind       Kind
	Start, End int // byte offsets in the text
}

// Find returns the personal data in text, in order. Items do not overlap:
// a text that is an IBAN is not a phone number too.
func (r *Redactor) Find(text string) []Match {
	var out, shaped []Match
	taken := func(s, e int) bool {
		for _, ms := range [2][]Match{out, shaped} {
			for _, m := range ms {
				if s < m.End && m.Start < e {
					return true
				}
			}
		}
		return false
	}
	for k := range numKinds {
		if !r.kinds[k] && k != IBAN {
			continue
		}
		if d := &detectors[k]; !strings.ContainsAny(text, d.need) || !dense(text, d.minDigits, d.span) {
			continue
		}
		for _, re := range detectors[k].res {
			for _, loc := range re.FindAllStringIndex(text, -1) {
				s, e, ok := detectors[k].check(text, loc[0], loc[1])
				switch {
				case ok && !taken(s, e) && r.kinds[k]:
					out = append(out, Match{Kind: k, Start: s, End: e})
				case !ok && k == IBAN && !wordAt(text, loc[0]-1):
					// Shaped like an IBAN but failing its check: a mistyped
					// IBAN, whose digits are no card or phone number.
					shaped = append(shaped, Match{Start: loc[0], End: loc[1]})
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b Match) int { return a.Start - b.Start })
	return out
}

// Redact returns text with its personal data replaced: what [Redactor.Find]
// finds, and what it finds in the result, until nothing is left.
func (r *Redactor) Redact(text string) string {
	red, _ := r.redact(text)
	return red
}

// maxRounds bounds the rounds of redact.
const maxRounds = 4

// redact replaces what Find finds, again on the result until nothing is
// left (an item that overlapped another's candidate is found once that
// one is replaced), for maxRounds rounds at most.
func (r *Redactor) redact(text string) (string, bool) {
	changed := false
	for range maxRounds {
		next, ok := r.redactOnce(text)
		if !ok {
			break
		}
		text, changed = next, true
	}
	return text, changed
}

func (r *Redactor) redactOnce(text string) (string, bool) {
	found := r.Find(text)
	if len(found) == 0 {
		return text, false
	}
	var b strings.Builder
	b.Grow(len(text))
	last := 0
	for _, m := range found {
		b.WriteString(text[last:m.Start])
		if r.replace != nil {
			b.WriteString(r.replace(m.Kind, text[m.Start:m.End]))
		} else {
			b.WriteString(m.Kind.placeholder())
		}
		last = m.End
	}
	b.WriteString(text[last:])
	return b.String(), true
}

// A detector finds candidates of one kind with res and checks each: check
// returns the item's bounds (a candidate may be trimmed) and whether it is
// one. need is a byte set one of which every item holds, and an item
// has minDigits digits or more within span bytes: a text without them is
// not searched (Go's regexp engines are linear but not fast).
type detector struct {
	need      string
	minDigits int
	span      int
	// res are searched one after the other: an alternation of an
	// unbounded pattern after another (IPv6 after IPv4) makes Go's
	// regexp quadratic on long texts.
	res   []*regexp.Regexp
	check func(text string, s, e int) (int, int, bool)
}

var detectors = [numKinds]detector{
	Email: {"@", 0, 0, res(`[A-Za-z0-9._%+-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,}`), checkEmail},
	IBAN:  {digits, 4, 42, res(`\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){11,30}\b`), checkIBAN},
	Card:  {digits, 13, 37, res(`\b[0-9](?:[ -]?[0-9]){12,18}\b`), checkCard},
	IP:    {".:", 0, 0, res(`(?:[0-9]{1,3}\.){3}[0-9]{1,3}`, `[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*`), checkIP},
	Phone: {digits, 7, 30, res(`(?:\+|\b00)[0-9](?:[ .-]?\(?[0-9]+\)?){2,7}|\(?\b[0-9]{2,5}\)?[ .-]?[0-9]{2,8}(?:[ .-][0-9]{2,5}){0,3}`), checkPhone},
}

const digits = "0123456789"

// res compiles patterns.
func res(patterns ...string) []*regexp.Regexp {
	out := make([]*regexp.Regexp, len(patterns))
	for i, p := range patterns {
		out[i] = regexp.MustCompile(p)
	}
	return out
}

// dense reports whether some span bytes of text hold n digits or more
// (true for n 0).
func dense(text string, n, span int) bool {
	if n == 0 {
		return true
	}
	in := 0 // digits in text[i-span:i]
	for i := 0; i < len(text); i++ {
		if digitAt(text, i) {
			in++
		}
		if i >= span && digitAt(text, i-span) {
			in--
		}
		if in >= n {
			return true
		}
	}
	return false
}

func checkEmail(text string, s, e int) (int, int, bool) {
	local := text[s : strings.IndexByte(text[s:], '@')+s]
	if strings.HasPrefix(local, ".") || strings.HasSuffix(local, ".") || strings.Contains(local, "..") {
		return 0, 0, false
	}
	return s, e, !wordAt(text, s-1) && !wordAt(text, e)
}

// wordAt reports whether text[i] is a letter or a digit (false out of
// range).
func wordAt(text string, i int) bool {
	if i < 0 || i >= len(text) {
		return false
	}
	c := text[i]
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func digitAt(text string, i int) bool {
	return i >= 0 && i < len(text) && text[i] >= '0' && text[i] <= '9'
}

// joined reports whether the number at text[s:e] continues past its
// bounds: a digit, or a separator and a digit, next to it (a fragment of
// a longer code).
func joined(text string, s, e int) bool {
	if wordAt(text, s-1) || wordAt(text, e) {
		return true
	}
	sep := func(i int) bool { return i >= 0 && i < len(text) && strings.IndexByte("-./:", text[i]) >= 0 }
	return sep(s-1) && digitAt(text, s-2) || sep(e) && digitAt(text, e+1)
}

func checkIBAN(text string, s, e int) (int, int, bool) {
	if wordAt(text, s-1) {
		return 0, 0, false
	}
	var buf [34]byte
	var end [34]int // end[i]: the offset in text after buf[i]
	n := 0
	for i := s; i < e && n < len(buf); i++ {
		if text[i] == ' ' {
			continue
		}
		buf[n], end[n] = text[i], i+1
		n++
	}
	// The candidate may have taken in a word that follows it ("… 3000
	// AND"): the IBAN is its longest prefix that passes the check.
	for ; n >= 15; n-- {
		if !wordAt(text, end[n-1]) && mod97(buf[:n]) == 1 {
			return s, end[n-1], true
		}
	}
	return 0, 0, false
}

// mod97 returns the IBAN check value of iban (letters and digits): its
// first four characters moved to the end, letters as 10–35, mod 97.
func mod97(iban []byte) int {
	r := 0
	add := func(c byte) {
		switch {
		case c >= '0' && c <= '9':
			r = (r*10 + int(c-'0')) % 97
		default:
			r = (r*100 + int(c-'A') + 10) % 97
		}
	}
	for _, c := range iban[4:] {
		add(c)
	}
	for _, c := range iban[:4] {
		add(c)
	}
	return r
}

func checkCard(text string, s, e int) (int, int, bool) {
	if joined(text, s, e) {
		return 0, 0, false
	}
	var digits [19]byte
	n := 0
	for i := s; i < e; i++ {
		if c := text[i]; c >= '0' && c <= '9' {
			if n == len(digits) {
				return 0, 0, false
			}
			digits[n] = c - '0'
			n++
		}
	}
	return s, e, n >= 13 && luhn(digits[:n])
}

// luhn reports whether digits pass the Luhn check.
func luhn(digits []byte) bool {
	sum := 0
	for i := range digits {
		d := int(digits[len(digits)-1-i])
		if i%2 == 1 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}

func checkIP(text string, s, e int) (int, int, bool) {
	// Trim what cannot end an address: a sentence's full stop or colon.
	for e > s && (text[e-1] == '.' || text[e-1] == ':' && (e-s < 2 || text[e-2] != ':')) {
		e--
	}
	if e-s < 2 {
		return 0, 0, false
	}
	cand := text[s:e]
	if wordAt(text, s-1) || wordAt(text, e) || s > 0 && strings.IndexByte(".:", text[s-1]) >= 0 ||
		e < len(text) && text[e] == '.' && digitAt(text, e+1) {
		return 0, 0, false
	}
	if !strings.ContainsAny(cand, "0123456789abcdefABCDEF") {
		return 0, 0, false // "::" alone is punctuation more often than an address
	}
	a, err := netip.ParseAddr(cand)
	if err != nil || a.Zone() != "" {
		return 0, 0, false
	}
	if a.Is6() && strings.Count(cand, ":") < 2 {
		return 0, 0, false
	}
	return s, e, true
}

func checkPhone(text string, s, e int) (int, int, bool) {
	// Trim what cannot end a number: separators and an unmatched "(".
	for e > s && strings.IndexByte(" .-(", text[e-1]) >= 0 {
		e--
	}
	intl := text[s] == '+' || strings.HasPrefix(text[s:], "00")
	if !intl && (joined(text, s, e) || s > 0 && text[s-1] == '+') {
		return 0, 0, false
	}
	if intl && (wordAt(text, s-1) || s > 0 && strings.IndexByte(".:-/", text[s-1]) >= 0 ||
		wordAt(text, e) || e < len(text)-1 && strings.IndexByte("-./:", text[e]) >= 0 && digitAt(text, e+1)) {
		return 0, 0, false
	}
	cand := text[s:e]
	digits, groups, open := 0, 1, 0
	for i := 0; i < len(cand); i++ {
		switch c := cand[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '(':
			open++
		case c == ')':
			open--
		default:
			if i > 0 && cand[i-1] >= '0' && cand[i-1] <= '9' {
				groups++
			}
		}
	}
	if open != 0 || digits < 7 || digits > 15 {
		return 0, 0, false
	}
	if !intl && (groups < 2 || dateLike(cand)) {
		return 0, 0, false
	}
	return s, e, true
}

// dateShape matches the dates written with numbers only.
var dateShape = regexp.MustCompile(`^(?:[0-9]{4}[-./ ][0-9]{1,2}[-./ ][0-9]{1,2}|[0-9]{1,2}[-./ ][0-9]{1,2}[-./ ][0-9]{4})$`)

func dateLike(s string) bool { return dateShape.MatchString(s) }
