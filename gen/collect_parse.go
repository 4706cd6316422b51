package gen

import (
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// parseDirective parses one comment. It returns ok=false when the comment is
// not a //chat: directive. Otherwise it reports every problem with the
// directive to diags and returns its typed value, nil when the directive
// name is unknown. A directive not marked malformed has every required
// argument, and every argument it has is valid; one marked incomplete
// lacks a required argument.
func parseDirective(fset *token.FileSet, c *ast.Comment, diags *Diagnostics) (d directive, ok bool) {
	text := c.Text
	if i := strings.IndexAny(text, "\r\n"); i >= 0 {
		text = text[:i] // a line comment is one line; be defensive about synthesized ones
	}
	pd, ok := ast.ParseDirective(c.Slash, text)
	if !ok || pd.Tool != "chat" {
		return nil, false
	}
	spec, known := lookupSpec(pd.Name)
	if !known {
		msg := "unknown directive //chat:" + pd.Name
		if s, ok := suggest(pd.Name, directiveNames()); ok {
			msg += "; did you mean //chat:" + s + "?"
		}
		diags.errorf(fset.Position(pd.Slash), "%s", msg)
		return nil, true
	}
	return parseArgs(fset, spec, pd.Slash, pd.Args, pd.ArgsPos, diags), true
}

// parseArgs parses args, the arguments of a directive of spec written at
// slash, starting at argsPos, and reports their problems to diags.
func parseArgs(fset *token.FileSet, spec *directiveSpec, slash token.Pos, args string, argsPos token.Pos, diags *Diagnostics) directive {
	d := spec.New()
	*d.common() = directiveCommon{spec: spec, pos: slash}
	p := &directiveParser{fset: fset, diags: diags, d: d, spec: spec, pos: slash}
	sc := &argScanner{str: args, pos: argsPos}
	if spec.Text {
		p.parseText(sc)
	} else {
		p.parseArgs(sc)
	}
	for _, a := range spec.Args {
		if a.Required && !slices.Contains(p.set, a.Name) {
			d.common().incomplete = true
		}
	}
	return d
}

// standIn returns the directive a comment of a declaration's doc most
// likely means when it is not one, for the checks of the declaration: the
// directive a near miss (// chat:tool) or a misspelt name (//chat:tol)
// suggests, with its arguments parsed and their problems reported. The
// comment itself is reported elsewhere. It returns nil when there is no
// likely directive, or when it cannot annotate target.
func standIn(fset *token.FileSet, c *ast.Comment, target target, diags *Diagnostics) directive {
	text := c.Text
	if i := strings.IndexAny(text, "\r\n"); i >= 0 {
		text = text[:i]
	}
	var (
		name    string
		args    string
		argsPos token.Pos
	)
	if pd, ok := ast.ParseDirective(c.Slash, text); ok {
		if pd.Tool != "chat" {
			return nil
		}
		if _, known := lookupSpec(pd.Name); known {
			return nil
		}
		s, ok := suggest(pd.Name, directiveNames())
		if !ok {
			return nil
		}
		name, args, argsPos = s, pd.Args, pd.ArgsPos
	} else if nm, ok := nearMiss(text); ok {
		args = strings.TrimLeftFunc(text[len(nm.shown):], unicode.IsSpace)
		name, argsPos = nm.name, c.Slash+token.Pos(len(text)-len(args))
		args = strings.TrimRightFunc(args, unicode.IsSpace)
	} else {
		return nil
	}
	spec, _ := lookupSpec(name)
	if spec == nil || spec.Targets&target == 0 {
		return nil
	}
	d := parseArgs(fset, spec, c.Slash, args, argsPos, diags)
	d.common().malformed = true
	return d
}

// directiveParser holds the state of parsing one directive.
type directiveParser struct {
	fset  *token.FileSet
	diags *Diagnostics
	d     directive // the typed value being filled
	spec  *directiveSpec
	pos   token.Pos // of the directive
	args  []string  // the positional arguments so far
	set   []string  // the names of the positional arguments set
	flags []string  // the flags so far
	keys  []string  // the keys so far
}

func (p *directiveParser) errorf(pos token.Pos, format string, args ...any) {
	p.d.common().malformed = true
	p.diags.errorf(p.fset.Position(pos), format, args...)
}

// parseArgs parses the arguments of a directive that takes no free text.
func (p *directiveParser) parseArgs(sc *argScanner) {
	var toks []argToken
	for sc.skipSpace(); !sc.done(); sc.skipSpace() {
		t, err := sc.next()
		if err != nil {
			p.scanError(err)
			return
		}
		toks = append(toks, t)
	}
	args := p.spec.Args
	next := 0 // index in args of the next positional argument
	for _, t := range toks {
		switch {
		case t.isKey:
			p.keyValue(t)
		case !t.quoted && p.isFlag(t.value):
			p.flag(t)
		case next < len(args):
			p.positional(args[next], t)
			next++
		case len(args) > 0 && args[len(args)-1].Variadic:
			p.positional(args[len(args)-1], t)
		default:
			p.unexpected(t)
		}
	}
	p.missing(next)
}

// parseText parses a directive whose argument is free text after its
// positional arguments.
func (p *directiveParser) parseText(sc *argScanner) {
	spec := p.spec
	next := 0
	for ; next < len(spec.Args); next++ {
		sc.skipSpace()
		if sc.done() {
			break
		}
		t, err := sc.next()
		if err != nil {
			p.scanError(err)
			return
		}
		p.positional(spec.Args[next], t)
	}
	if p.missing(next) {
		return
	}
	sc.skipSpace()
	if len(spec.Args) == 0 && len(spec.Keys) > 0 && looksLikeKey(sc.str) {
		if p.textKey(*sc) {
			return
		}
	}
	if sc.str != "" {
		spec.SetText(p.d, sc.str)
	} else {
		switch {
		case len(spec.Args) > 0:
			p.errorf(p.pos, "%s needs TEXT after %s", p.d, spec.Args[len(spec.Args)-1].Name)
		case len(spec.Keys) > 0:
			p.errorf(p.pos, "%s needs TEXT or %s=%s", p.d, spec.Keys[0].Name, keyPlaceholder(spec.Keys[0]))
		default:
			p.errorf(p.pos, "%s needs TEXT", p.d)
		}
	}
}

// textKey handles a Text directive whose argument starts like key=value. It
// reports whether the argument was taken as a key rather than as text.
func (p *directiveParser) textKey(sc argScanner) bool {
	key := sc.str[:strings.IndexByte(sc.str, '=')]
	ks, known := p.spec.key(key)
	t, err := sc.next()
	if err != nil {
		if !known {
			return false // text that happens to look like key="...
		}
		p.scanError(err)
		return true
	}
	sc.skipSpace()
	if !known {
		// Text such as "tone=friendly, please" stays text; a lone token
		// close to a key name is most likely a misspelt key.
		if s, ok := suggest(t.key, p.spec.keyNames()); ok && sc.done() {
			p.errorf(t.pos, "unknown key %q for %s; did you mean %q?", t.key, p.d, s)
			return true
		}
		return false
	}
	if !sc.done() {
		p.errorf(t.pos, "%s takes either TEXT or %s=%s, not both", p.d, t.key, keyPlaceholder(*ks))
		return true
	}
	p.keyValue(t)
	return true
}

// looksLikeKey reports whether s starts with a key name followed by "=".
func looksLikeKey(s string) bool {
	i := strings.IndexByte(s, '=')
	if i <= 0 {
		return false
	}
	for _, r := range s[:i] {
		if !(r == '_' || r == '-' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			return false
		}
	}
	return true
}

// missing reports the first required positional argument from index next
// on, and reports whether there was one.
func (p *directiveParser) missing(next int) bool {
	for _, a := range p.spec.Args[min(next, len(p.spec.Args)):] {
		if a.Required {
			p.errorf(p.pos, "%s needs a %s", p.d, a.Name)
			return true
		}
	}
	return false
}

func (p *directiveParser) scanError(err error) {
	if se := (*scanError)(nil); errors.As(err, &se) {
		p.errorf(se.pos, "%s in %s: %s", se.msg, p.d, se.rest)
		return
	}
	p.errorf(p.pos, "%v", err)
}

func (p *directiveParser) isFlag(word string) bool {
	_, ok := p.spec.flag(word)
	return ok
}

func (p *directiveParser) flag(t argToken) {
	if slices.Contains(p.flags, t.value) {
		p.errorf(t.pos, "duplicate flag %q in %s", t.value, p.d)
		return
	}
	fs, _ := p.spec.flag(t.value)
	if p.spec.ExclusiveFlags && !fs.Independent && slices.ContainsFunc(p.flags, func(f string) bool {
		prev, _ := p.spec.flag(f)
		return !prev.Independent
	}) {
		p.errorf(t.pos, "%s takes at most one of %s", p.d, strings.Join(p.spec.exclusiveFlagNames(), ", "))
		return
	}
	p.flags = append(p.flags, t.value)
	fs.Set(p.d)
}

func (p *directiveParser) positional(a argSpec, t argToken) {
	v := t.value
	if t.isKey {
		v = t.raw // a positional argument that happens to contain "="
	}
	switch {
	case v == "":
		p.errorf(t.pos, "empty %s for %s", a.Name, p.d)
		return
	case a.Kind == argIdent && !token.IsIdentifier(v):
		p.errorf(t.pos, "invalid %s %q for %s: not a Go identifier", a.Name, v, p.d)
		return
	case a.Kind == argWord && !isWord(v):
		p.errorf(t.pos, "invalid %s %q for %s: %s", a.Name, v, p.d, wordRule)
		return
	}
	if a.Variadic && slices.Contains(p.args, v) {
		p.errorf(t.pos, "duplicate %s %q in %s", a.Name, v, p.d)
		return
	}
	p.args = append(p.args, v)
	p.set = append(p.set, a.Name)
	a.Set(p.d, arg{value: v, pos: t.pos})
}

func (p *directiveParser) keyValue(t argToken) {
	if t.key == "" {
		p.errorf(t.pos, "missing key before \"=\" in %s", p.d)
		return
	}
	ks, ok := p.spec.key(t.key)
	if !ok {
		msg := fmt.Sprintf("unknown key %q for %s", t.key, p.d)
		if s, ok := suggest(t.key, p.spec.keyNames()); ok {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		p.errorf(t.pos, "%s", msg)
		return
	}
	if slices.Contains(p.keys, t.key) {
		p.errorf(t.pos, "duplicate key %q in %s", t.key, p.d)
		return
	}
	v := t.value
	if v == "" {
		p.errorf(t.valuePos, "empty value for key %q in %s", t.key, p.d)
		return
	}
	switch ks.Kind {
	case keyIdent:
		if !token.IsIdentifier(v) {
			p.errorf(t.valuePos, "invalid value %q for key %q in %s: not a Go identifier", v, t.key, p.d)
			return
		}
	case keyWord:
		if !isWord(v) {
			p.errorf(t.valuePos, "invalid value %q for key %q in %s: %s", v, t.key, p.d, wordRule)
			return
		}
	case keyDuration:
		d, err := time.ParseDuration(v)
		switch {
		case err != nil:
			p.errorf(t.valuePos, "invalid value %q for key %q in %s: not a duration; write one such as 10s, 1m30s or 500ms", v, t.key, p.d)
			return
		case d <= 0:
			p.errorf(t.valuePos, "invalid value %q for key %q in %s: the duration must be positive", v, t.key, p.d)
			return
		}
	case keyCount:
		if n, err := strconv.Atoi(v); err != nil || n <= 0 {
			p.errorf(t.valuePos, "invalid value %q for key %q in %s: not a positive integer", v, t.key, p.d)
			return
		}
	case keyList:
		for _, e := range strings.Split(v, ",") {
			e = strings.TrimSpace(e)
			if e == "" {
				p.errorf(t.valuePos, "empty element in %s list %q in %s", t.key, v, p.d)
				return
			}
			if strings.IndexFunc(e, unicode.IsSpace) >= 0 {
				p.errorf(t.valuePos, "invalid element %q in %s list in %s: no spaces allowed", e, t.key, p.d)
				return
			}
		}
	}
	p.keys = append(p.keys, t.key)
	ks.Set(p.d, arg{value: v, pos: t.valuePos})
}

// splitList returns the elements of a comma-separated list value (keyList),
// with the spaces around each element trimmed.
func splitList(v string) []string {
	parts := strings.Split(v, ",")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
	}
	return parts
}

func (p *directiveParser) unexpected(t argToken) {
	msg := fmt.Sprintf("unexpected argument %q for %s", t.value, p.d)
	var cands []string
	if !t.quoted {
		cands = p.spec.flagNames()
		for _, k := range p.spec.Keys {
			cands = append(cands, k.Name+"=")
		}
	}
	if s, ok := suggest(t.value, cands); ok {
		if k, ok := p.spec.key(strings.TrimSuffix(s, "=")); ok && strings.HasSuffix(s, "=") {
			s += keyPlaceholder(*k)
		}
		msg += fmt.Sprintf("; did you mean %q?", s)
	} else {
		msg += "; usage: " + p.spec.Usage
	}
	p.errorf(t.pos, "%s", msg)
}

// keyPlaceholder returns the placeholder of a key's value in messages.
func keyPlaceholder(k keySpec) string {
	if k.Value != "" {
		return k.Value
	}
	return strings.ToUpper(k.Name)
}

// wordRule describes the characters of a word (argWord, keyWord).
const wordRule = "use only letters, digits, '-', '_', '.' and '/'"

// isWord reports whether s is a non-empty word of letters, digits, '-',
// '_', '.' and '/'.
func isWord(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("-_./", r) {
			return false
		}
	}
	return true
}

// argToken is one scanned directive argument.
type argToken struct {
	raw      string    // as written
	value    string    // unquoted; for key=value, the value
	pos      token.Pos // of the token
	quoted   bool      // the token is a quoted string
	isKey    bool      // the token is key=value
	key      string    // the key of key=value
	valuePos token.Pos // the position of the value of key=value
}

// scanError is a malformed argument.
type scanError struct {
	pos  token.Pos
	msg  string
	rest string // the text from the bad argument on
}

func (e *scanError) Error() string { return e.msg + ": " + e.rest }

// argScanner splits directive arguments following the convention of
// [ast.Directive.ParseArgs] (bare words, "quoted" and `raw` strings,
// separated by Unicode spaces), extended so that key="quoted value" is one
// token: ParseArgs would split key="a b" at the space. On arguments without
// "=", it yields exactly what ParseArgs yields.
type argScanner struct {
	str string
	pos token.Pos
}

func (s *argScanner) done() bool { return s.str == "" }

func (s *argScanner) take(n int) string {
	t := s.str[:n]
	s.str = s.str[n:]
	s.pos += token.Pos(n)
	return t
}

func (s *argScanner) skipSpace() {
	i := strings.IndexFunc(s.str, func(r rune) bool { return !unicode.IsSpace(r) })
	if i < 0 {
		i = len(s.str)
	}
	s.take(i)
}

// quotedAt checks the quoted string starting at offset off of s.str and
// returns its length and unquoted value.
func (s *argScanner) quotedAt(off int) (n int, value string, err error) {
	q, err := strconv.QuotedPrefix(s.str[off:])
	if err != nil {
		return 0, "", &scanError{pos: s.pos + token.Pos(off), msg: "invalid quoted string", rest: s.str[off:]}
	}
	value, _ = strconv.Unquote(q) // QuotedPrefix has validated q
	end := off + len(q)
	if end < len(s.str) {
		if r, _ := utf8.DecodeRuneInString(s.str[end:]); !unicode.IsSpace(r) {
			return 0, "", &scanError{pos: s.pos + token.Pos(off), msg: "invalid quoted string", rest: s.str[off:]}
		}
	}
	return len(q), value, nil
}

// next scans one argument. s.str must not be empty or start with a space.
func (s *argScanner) next() (argToken, error) {
	t := argToken{pos: s.pos}
	if c := s.str[0]; c == '"' || c == '`' {
		n, v, err := s.quotedAt(0)
		if err != nil {
			return t, err
		}
		t.raw, t.value, t.quoted = s.take(n), v, true
		return t, nil
	}
	i, eq := 0, -1
	for i < len(s.str) {
		r, size := utf8.DecodeRuneInString(s.str[i:])
		if unicode.IsSpace(r) {
			break
		}
		if r == '=' && eq < 0 {
			eq = i
			if i+1 < len(s.str) && (s.str[i+1] == '"' || s.str[i+1] == '`') {
				n, v, err := s.quotedAt(i + 1)
				if err != nil {
					return t, err
				}
				t.isKey, t.key, t.value, t.valuePos = true, s.str[:i], v, s.pos+token.Pos(i+1)
				t.raw = s.take(i + 1 + n)
				return t, nil
			}
		}
		i += size
	}
	t.raw = s.take(i)
	t.value = t.raw
	if eq >= 0 {
		t.isKey, t.key, t.value, t.valuePos = true, t.raw[:eq], t.raw[eq+1:], t.pos+token.Pos(eq+1)
	}
	return t, nil
}
