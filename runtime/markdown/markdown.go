// Package markdown renders the text answers of chat routes from markdown to
// HTML that is safe to insert into a page, with github.com/yuin/goldmark:
// what routes marked //chat:markdown send (the Quarkus @MarkdownToHtml).
//
// The rendering is CommonMark with GitHub's extensions (tables,
// strikethrough, task lists, bare links), made safe for text that a model
// wrote and a page inserts with innerHTML:
//
//   - raw HTML, inline or in blocks, is escaped: it shows as the text it
//     is, never as markup;
//   - a link keeps its target only when it is http, https or mailto, or
//     relative (no scheme); any other (javascript:, data:, vbscript:,
//     file:, …) or malformed target leaves the link's text without a link.
//     Kept links get rel="nofollow noopener noreferrer";
//   - an image keeps its source only when it is http, https or relative;
//     otherwise its alt text stands in its place;
//   - no attribute syntax, no heading ids: the only attributes are the
//     renderer's own (href, src, alt, title, rel, the alignment of table
//     cells, the checkboxes of task lists).
//
// Generated code calls [Message], [SendStream] and [SendStreamWithErrors]
// for routes with //chat:markdown. The package sits between package chat,
// which stays free of dependencies beyond the standard library (it carries
// the rendering in [chat.Event].HTML but never renders), and generated
// code: only applications that ask for markdown link goldmark.
package markdown

import (
	"bytes"
	"context"
	"iter"
	"net/url"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// converter is the one goldmark configuration of the package. It is never
// modified after it is built, and goldmark's Convert is safe for
// concurrent use.
var converter = goldmark.New(
	goldmark.WithExtensions(extension.GFM),
	goldmark.WithParserOptions(parser.WithASTTransformers(util.Prioritized(linkPolicy{}, 0))),
	goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(escapedHTML{}, 0))),
)

// HTML renders src, markdown, to HTML that is safe to insert into a page
// (see the package documentation for what is kept). "" renders to "".
func HTML(src string) string {
	if src == "" {
		return ""
	}
	var b bytes.Buffer
	b.Grow(len(src) + len(src)/4 + 16)
	// Convert fails only when writing to b fails, which a bytes.Buffer
	// never does.
	_ = converter.Convert([]byte(src), &b)
	return b.String()
}

// Message sends text as a Message event with its rendering as HTML in
// [chat.Event].HTML: what a //chat:markdown route's string result sends.
// "" sends nothing, as for any route.
func Message(ctx context.Context, text string) error {
	if text == "" {
		return nil
	}
	return chat.Response(ctx).SendEvent(chat.Event{Type: protocol.EventMessage, Data: text, HTML: HTML(text)})
}

// SendStream sends each chunk of seq as a Stream event, as it comes and as
// the text it is, then, when the sequence ends and it yielded any text,
// one more Stream event with no text whose [chat.Event].HTML is the whole
// streamed answer rendered: pages show the chunks as they arrive and
// replace them with the rendering once it is complete. Markdown cannot be
// rendered chunk by chunk (a "**" may open in one chunk and close in a
// later one), so the rendering waits for the end.
func SendStream(ctx context.Context, seq iter.Seq[string]) error {
	if seq == nil {
		return nil
	}
	var whole streamText
	for chunk := range seq {
		whole.add(ctx, chunk)
		if err := chat.Response(ctx).SendEvent(chat.Event{Type: protocol.EventStream, Data: chunk}); err != nil {
			return err
		}
	}
	return closeStream(ctx, whole.text(ctx))
}

// SendStreamWithErrors is [SendStream] for a sequence that yields an error
// instead of a chunk when the stream fails: that stops it and fails the
// request with StreamingFailure (a *chat.StreamError), and no rendering is
// sent: the page keeps the text streamed so far.
func SendStreamWithErrors(ctx context.Context, seq iter.Seq2[string, error]) error {
	if seq == nil {
		return nil
	}
	var whole streamText
	for chunk, err := range seq {
		if err != nil {
			return &chat.StreamError{Err: err}
		}
		whole.add(ctx, chunk)
		if err := chat.Response(ctx).SendEvent(chat.Event{Type: protocol.EventStream, Data: chunk}); err != nil {
			return err
		}
	}
	return closeStream(ctx, whole.text(ctx))
}

// streamText is the text a stream showed: what it sent since the last
// Retract event of the request (an AI service's output guardrail withdrew
// what came before).
type streamText struct {
	b        strings.Builder
	retracts int
}

// add adds chunk, after the text retracted since the last chunk is dropped.
func (s *streamText) add(ctx context.Context, chunk string) {
	s.sync(ctx)
	s.b.WriteString(chunk)
}

// text returns the text shown.
func (s *streamText) text(ctx context.Context) string {
	s.sync(ctx)
	return s.b.String()
}

func (s *streamText) sync(ctx context.Context) {
	if n := chat.Response(ctx).Retracts(); n != s.retracts {
		s.retracts = n
		s.b.Reset()
	}
}

// closeStream sends the closing Stream event of a rendered stream.
func closeStream(ctx context.Context, whole string) error {
	if strings.TrimSpace(whole) == "" {
		return nil
	}
	return chat.Response(ctx).SendEvent(chat.Event{Type: protocol.EventStream, Data: "", HTML: HTML(whole)})
}

// SafeLink reports whether a link may point to dest: an http, https or
// mailto URL, or a relative one (no scheme), with no white space, control
// character or backslash, which browsers strip or reinterpret in ways that
// can hide a scheme.
func SafeLink(dest string) bool { return safeURL(dest, "http", "https", "mailto") }

// SafeImage reports whether an image may be loaded from src: an http or
// https URL, or a relative one, under the rules of [SafeLink].
func SafeImage(src string) bool { return safeURL(src, "http", "https") }

func safeURL(s string, schemes ...string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f || c == '\\' {
			return false
		}
	}
	u, err := url.Parse(s)
	if err != nil {
		return false
	}
	if u.Scheme == "" {
		// Relative: a path, query or fragment of the page's own site, or
		// a protocol-relative //host/path, http or https like the page.
		return true
	}
	for _, ok := range schemes {
		if strings.EqualFold(u.Scheme, ok) {
			return true
		}
	}
	return false
}

// linkPolicy is the AST transformer that applies the link and image rules:
// unsafe links become their text, unsafe images their alt text, and safe
// links get rel="nofollow noopener noreferrer".
type linkPolicy struct{}

var relValue = []byte("nofollow noopener noreferrer")

func (linkPolicy) Transform(doc *ast.Document, reader text.Reader, _ parser.Context) {
	source := reader.Source()
	var links, images, autos []ast.Node
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Link:
			// Checked as the renderer writes it: with character
			// references resolved, as the browser will read them.
			if SafeLink(string(util.URLEscape(n.Destination, true))) {
				n.SetAttributeString("rel", relValue)
			} else {
				links = append(links, n)
			}
		case *ast.Image:
			if !SafeImage(string(util.URLEscape(n.Destination, true))) {
				images = append(images, n)
			}
		case *ast.AutoLink:
			url := string(util.URLEscape(n.URL(source), false))
			if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(strings.ToLower(url), "mailto:") {
				url = "mailto:" + url
			}
			if SafeLink(url) {
				n.SetAttributeString("rel", relValue)
			} else {
				autos = append(autos, n)
			}
		}
		return ast.WalkContinue, nil
	})
	// Replace after the walk, which must not see the tree change.
	for _, n := range links {
		parent := n.Parent()
		for c := n.FirstChild(); c != nil; {
			next := c.NextSibling()
			parent.InsertBefore(parent, n, c) // moves c out of the link
			c = next
		}
		parent.RemoveChild(parent, n)
	}
	for _, n := range images {
		// Not raw: the renderer resolves the references and escapes of
		// the alt text's source, as it does for any text, then escapes it.
		alt := ast.NewString(plainText(n, source))
		n.Parent().ReplaceChild(n.Parent(), n, alt)
	}
	for _, n := range autos {
		label := ast.NewString(n.(*ast.AutoLink).Label(source))
		label.SetRaw(true)
		n.Parent().ReplaceChild(n.Parent(), n, label)
	}
}

// plainText returns the text inside n, without markup.
func plainText(n ast.Node, source []byte) []byte {
	var b []byte
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			b = append(b, c.Segment.Value(source)...)
			if c.SoftLineBreak() || c.HardLineBreak() {
				b = append(b, ' ')
			}
		case *ast.String:
			b = append(b, c.Value...)
		}
		return ast.WalkContinue, nil
	})
	return b
}

// escapedHTML renders raw HTML, inline and in blocks, as escaped text:
// the reader sees what the model wrote, and no markup gets through.
type escapedHTML struct{}

func (escapedHTML) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindHTMLBlock, renderHTMLBlock)
	reg.Register(ast.KindRawHTML, renderRawHTML)
}

func renderHTMLBlock(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.HTMLBlock)
	if entering {
		_, _ = w.WriteString("<p>")
		lines := n.Lines()
		for i := range lines.Len() {
			line := lines.At(i)
			writeEscaped(w, line.Value(source))
		}
		return ast.WalkContinue, nil
	}
	if n.HasClosure() {
		writeEscaped(w, n.ClosureLine.Value(source))
	}
	_, _ = w.WriteString("</p>\n")
	return ast.WalkContinue, nil
}

func renderRawHTML(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	n := node.(*ast.RawHTML)
	for i := range n.Segments.Len() {
		seg := n.Segments.At(i)
		writeEscaped(w, seg.Value(source))
	}
	return ast.WalkSkipChildren, nil
}

// writeEscaped writes b as HTML text: &, <, > and " escaped, NUL replaced.
func writeEscaped(w util.BufWriter, b []byte) {
	html.DefaultWriter.RawWrite(w, bytes.ReplaceAll(b, []byte{0}, []byte("\uFFFD")))
}
