package markdown_test

import (
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/markdown"
)

func TestHTMLRendersMarkdown(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Hello **world**, *you*.", "<p>Hello <strong>world</strong>, <em>you</em>.</p>\n"},
		{"- one\n- two", "<ul>\n<li>one</li>\n<li>two</li>\n</ul>\n"},
		{"`a < b`", "<p><code>a &lt; b</code></p>\n"},
		{"~~gone~~", "<p><del>gone</del></p>\n"},
		{"[the forge](https://forge.example/a?b=1&c=2)",
			`<p><a href="https://forge.example/a?b=1&amp;c=2" rel="nofollow noopener noreferrer">the forge</a></p>` + "\n"},
		{"[mail me](mailto:smith@forge.example)",
			`<p><a href="mailto:smith@forge.example" rel="nofollow noopener noreferrer">mail me</a></p>` + "\n"},
		{"[armory](/armory#swords)", `<p><a href="/armory#swords" rel="nofollow noopener noreferrer">armory</a></p>` + "\n"},
		{"![a sword](https://img.example/sword.png)", `<p><img src="https://img.example/sword.png" alt="a sword"></p>` + "\n"},
		{"", ""},
	} {
		if got := markdown.HTML(tc.in); got != tc.want {
			t.Errorf("HTML(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// xssAttempts are markdown a model might be tricked into writing. None may
// put markup, an event handler or a dangerous URL into the page.
var xssAttempts = []string{
	"<script>alert(1)</script>",
	"<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
	"text <script>alert(1)</script> more",
	"<img src=x onerror=alert(1)>",
	"a <img src=x onerror=alert(1)> b",
	`<div onclick="alert(1)">click</div>`,
	"<div>\n<script>alert(1)</script>\n</div>",
	"<iframe src=javascript:alert(1)></iframe>",
	"<svg onload=alert(1)>",
	"<a href=\"javascript:alert(1)\">x</a>",
	"<!-- --><script>alert(1)</script>",
	"<style>body{display:none}</style>",
	"[click](javascript:alert(1))",
	"[click](JaVaScRiPt:alert(1))",
	"[click](java&#x73;cript:alert(1))",
	"[click](&#106;avascript:alert(1))",
	"[click](&#x6A;avascript&colon;alert(1))",
	"[click](javascript&#58;alert(1))",
	"[click](<java\tscript:alert(1)>)",
	"[click](<javascript :alert(1)>)",
	"[click](< javascript:alert(1)>)",
	"[click](java\\script:alert(1))",
	"[click](vbscript:msgbox(1))",
	"[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
	"[click](file:///etc/passwd)",
	"[click][ref]\n\n[ref]: javascript:alert(1)",
	`[click](https://ok.example "a\" onmouseover=\"alert(1)")`,
	`[click](https://ok.example" onmouseover="alert(1))`,
	"![x](javascript:alert(1))",
	"![x](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)",
	"![x](data:image/png;base64,iVBORw0KGgo=)",
	`![x" onerror="alert(1)](https://img.example/a.png)`,
	"![x](https://img.example/a.png\"onerror=\"alert(1))",
	"<javascript:alert(1)>",
	"<JAVASCRIPT:alert(1)>",
	"<data:text/html,<script>alert(1)</script>>",
	"<vbscript:msgbox(1)>",
	"https://ok.example/<script>alert(1)</script>",
	"www.evil.example/\"onmouseover=\"alert(1)",
	"ftp://files.example/x",
	"x@y.example\"onmouseover=alert(1)",
	"```\" onmouseover=\"alert(1)\n<script>\n```",
	"```js onload=alert(1)\ncode\n```",
	"# Title {#id onclick=alert(1)}",
	"text {onclick=alert(1)}",
	"| a |\n|---|\n| <img src=x onerror=alert(1)> |",
	"- [x] <script>alert(1)</script>",
	"> <script>alert(1)</script>",
	"**<script>**alert(1)**</script>**",
	"\x00<script>alert(1)</script>",
	"<svg><script>alert(1)</script></svg>",
	"<http://a\"onmouseover=\"alert(1)>",
	"<http://a&#34;onmouseover=&#34;alert(1)>",
	"[x][r]\n\n[r]: https://ok.example 'a\" onmouseover=\"alert(1)'",
	"[x][r]\n\n[r]: <javascript:alert(1)> \"t\"",
	"[x](<java\nscript:alert(1)>)",
	"[x](ja\u00advascript:alert(1))",
	"[x](\u200bjavascript:alert(1))",
	"[x](jav&#x09;ascript:alert(1))",
	"[x](javascript://%0aalert(1))",
	"![<img src=x onerror=alert(1)>](javascript:alert(1))",
	"![a&#60;script&#62;alert(1)&#60;/script&#62;](javascript:alert(1))",
	"[x](//evil.example/a)",
}

func TestHTMLIsSafe(t *testing.T) {
	for _, in := range xssAttempts {
		out := markdown.HTML(in)
		if err := checkSafe(out); err != nil {
			t.Errorf("HTML(%q) = %q: %v", in, out, err)
		}
	}
}

// TestHTMLShowsWhatWasEscaped: raw HTML is shown as text, not dropped, and
// an unsafe link keeps its text.
func TestHTMLShowsWhatWasEscaped(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"<script>alert(1)</script>", "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>\n"},
		{"a <img src=x onerror=alert(1)> b", "<p>a &lt;img src=x onerror=alert(1)&gt; b</p>\n"},
		{"[click here](javascript:alert(1)) now", "<p>click here now</p>\n"},
		{"[**bold** click](data:text/html,x)", "<p><strong>bold</strong> click</p>\n"},
		{"![a *red* gem](javascript:alert(1))", "<p>a red gem</p>\n"},
		{"<javascript:alert(1)>", "<p>javascript:alert(1)</p>\n"},
		// The alt text of a dropped image reads as the model meant it:
		// references and escapes resolved, as in any text.
		{"![fire &amp; ice \\*rare\\*](javascript:alert(1))", "<p>fire &amp; ice *rare*</p>\n"},
		{"![a&#60;b&#62;](data:x)", "<p>a&lt;b&gt;</p>\n"},
	} {
		if got := markdown.HTML(tc.in); got != tc.want {
			t.Errorf("HTML(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

func TestSafeLink(t *testing.T) {
	for _, tc := range []struct {
		url         string
		link, image bool
	}{
		{"https://a.example/x", true, true},
		{"HTTP://a.example", true, true},
		{"mailto:a@b.example", true, false},
		{"/path?q=1#f", true, true},
		{"#top", true, true},
		{"//cdn.example/a.png", true, true},
		{"javascript:alert(1)", false, false},
		{"data:image/png;base64,AAAA", false, false},
		{"ftp://x.example", false, false},
		{"tel:+123", false, false},
		{"java\tscript:alert(1)", false, false},
		{" https://a.example", false, false},
		{"https:\\\\evil.example", false, false},
		{"foo:bar", false, false},
		{"%zz", false, false},
	} {
		if got := markdown.SafeLink(tc.url); got != tc.link {
			t.Errorf("SafeLink(%q) = %v", tc.url, got)
		}
		if got := markdown.SafeImage(tc.url); got != tc.image {
			t.Errorf("SafeImage(%q) = %v", tc.url, got)
		}
	}
}

func FuzzHTML(f *testing.F) {
	for _, s := range xssAttempts {
		f.Add(s)
	}
	f.Add("Hello **world** [x](https://a.example) ![y](/y.png) <b>z</b>")
	f.Fuzz(func(t *testing.T, in string) {
		out := markdown.HTML(in)
		if err := checkSafe(out); err != nil {
			t.Fatalf("HTML(%q) = %q: %v", in, out, err)
		}
	})
}

// tagPattern matches one tag as goldmark writes them: lower-case names,
// attribute values in double quotes.
var tagPattern = regexp.MustCompile(`^<(/?)([a-z][a-z0-9]*)((?:\s+[a-z-]+(?:="[^"<>]*")?)*)\s*/?>`)

var attrPattern = regexp.MustCompile(`([a-z-]+)(?:="([^"]*)")?`)

// allowed lists the tags the renderer may write and their attributes.
var allowed = map[string][]string{
	"p": nil, "br": nil, "hr": nil, "h1": nil, "h2": nil, "h3": nil, "h4": nil, "h5": nil, "h6": nil,
	"strong": nil, "em": nil, "del": nil, "code": {"class"}, "pre": nil, "blockquote": nil,
	"ul": nil, "ol": {"start"}, "li": nil, "a": {"href", "rel", "title"}, "img": {"src", "alt", "title"},
	"table": nil, "thead": nil, "tbody": nil, "tr": nil, "th": {"style"}, "td": {"style"},
	"input": {"checked", "disabled", "type"},
}

// checkSafe parses out as a browser would look for markup: every "<"
// must open an allowed tag with allowed attributes only, links and images
// must have safe URLs, and attribute values must be harmless.
func checkSafe(out string) error {
	for i := 0; i < len(out); i++ {
		if out[i] != '<' {
			continue
		}
		m := tagPattern.FindStringSubmatch(out[i:])
		if m == nil {
			return fmt.Errorf("a %q at %d opens no allowed tag", "<", i)
		}
		name := m[2]
		attrs, ok := allowed[name]
		if !ok {
			return fmt.Errorf("tag <%s> is not allowed", name)
		}
		for _, a := range attrPattern.FindAllStringSubmatch(m[3], -1) {
			key, val := a[1], html.UnescapeString(a[2])
			if !contains(attrs, key) {
				return fmt.Errorf("attribute %s on <%s> is not allowed", key, name)
			}
			switch {
			case key == "href" && !markdown.SafeLink(val):
				return fmt.Errorf("unsafe href %q", val)
			case key == "src" && !markdown.SafeImage(val):
				return fmt.Errorf("unsafe src %q", val)
			case key == "style" && !regexp.MustCompile(`^text-align:(left|right|center)$`).MatchString(val):
				return fmt.Errorf("style %q", val)
			case key == "class" && !regexp.MustCompile(`^language-[^\s]*$`).MatchString(val):
				return fmt.Errorf("class %q", val)
			case key == "type" && val != "checkbox":
				return fmt.Errorf("input type %q", val)
			}
		}
		i += len(m[0]) - 1
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// TestCheckSafeCatches shows the checker of the tests above fails on what
// it must catch.
func TestCheckSafeCatches(t *testing.T) {
	for _, bad := range []string{
		"<script>alert(1)</script>",
		`<img src="x" onerror="alert(1)">`,
		`<a href="javascript:alert(1)">x</a>`,
		`<a href="java&#x73;cript:alert(1)">x</a>`,
		`<img src="data:image/png;base64,AA" alt="">`,
		`<p onclick="x">`,
		`<th style="background:url(x)">`,
		"a < b",
	} {
		if checkSafe(bad) == nil {
			t.Errorf("checkSafe(%q) passed", bad)
		}
	}
	if err := checkSafe(`<p><a href="https://a.example" rel="nofollow noopener noreferrer">x</a> &lt;b&gt;</p>`); err != nil {
		t.Errorf("a safe fragment failed: %v", err)
	}
}
