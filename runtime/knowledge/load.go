package knowledge

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tmc/langchaingo/textsplitter"
)

// LoadOptions configures [LoadDir]. The zero value is ready to use.
type LoadOptions struct {
	// ChunkSize is the largest chunk, in characters (runes); 0 means
	// DefaultChunkSize.
	ChunkSize int
	// ChunkOverlap is how many characters a chunk repeats of the one
	// before it, when a section is split; 0 means DefaultChunkOverlap,
	// and a negative value none.
	ChunkOverlap int
}

// The chunk sizes LoadDir uses unless LoadOptions says otherwise.
const (
	DefaultChunkSize    = 800
	DefaultChunkOverlap = 100
)

// LoadDir loads the documents of fsys, walking it from its root in
// lexical order: the Markdown files (.md, .markdown), split by
// langchaingo's MarkdownTextSplitter into chunks that each start with
// their section's heading hierarchy, and the text files (.txt), split by
// its RecursiveCharacter splitter. Other files are skipped. Each chunk's
// Source is the file's path in fsys, its Title the document's first
// heading (or the file name without extension) and its ID the source and
// the chunk's number from 1, "lore/iron.md#1": the same files and options
// give the same ids. It is an error when fsys holds no document.
func LoadDir(ctx context.Context, fsys fs.FS, opts LoadOptions) ([]Chunk, error) {
	size, overlap := opts.ChunkSize, opts.ChunkOverlap
	if size == 0 {
		size = DefaultChunkSize
	}
	switch {
	case overlap == 0:
		overlap = min(DefaultChunkOverlap, size/2)
	case overlap < 0:
		overlap = 0
	}
	if size < 0 || overlap >= size {
		return nil, fmt.Errorf("knowledge: invalid chunk size %d with overlap %d", size, overlap)
	}
	markdown := textsplitter.NewMarkdownTextSplitter(
		textsplitter.WithChunkSize(size), textsplitter.WithChunkOverlap(overlap),
		textsplitter.WithHeadingHierarchy(true), textsplitter.WithCodeBlocks(true))
	plain := textsplitter.NewRecursiveCharacter(
		textsplitter.WithChunkSize(size), textsplitter.WithChunkOverlap(overlap))

	var chunks []Chunk
	docs := 0
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		var splitter textsplitter.TextSplitter
		switch strings.ToLower(path.Ext(p)) {
		case ".md", ".markdown":
			splitter = markdown
		case ".txt":
			splitter = plain
		default:
			return nil
		}
		if d.IsDir() {
			return nil
		}
		cs, err := loadFile(fsys, p, splitter)
		if err != nil {
			return fmt.Errorf("knowledge: loading %s: %w", p, err)
		}
		docs++
		chunks = append(chunks, cs...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if docs == 0 {
		return nil, errors.New("knowledge: no document (.md, .markdown or .txt file) to load")
	}
	return chunks, nil
}

// IndexDir loads the documents of fsys with [LoadDir] and indexes them in
// a new index configured by opts (with an embedder, embedding them in one
// call).
func IndexDir(ctx context.Context, fsys fs.FS, load LoadOptions, opts ...Option) (*Index, error) {
	ix, err := New(opts...)
	if err != nil {
		return nil, err
	}
	chunks, err := LoadDir(ctx, fsys, load)
	if err != nil {
		return nil, err
	}
	if err := ix.Add(ctx, chunks...); err != nil {
		return nil, err
	}
	return ix, nil
}

// loadFile loads and splits the document at p.
func loadFile(fsys fs.FS, p string, splitter textsplitter.TextSplitter) ([]Chunk, error) {
	b, err := fs.ReadFile(fsys, p)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(b) {
		return nil, errors.New("not UTF-8 text")
	}
	texts, err := splitter.SplitText(string(b))
	if err != nil {
		return nil, err
	}
	title := strings.TrimSuffix(path.Base(p), path.Ext(p))
	var chunks []Chunk
	for _, t := range texts {
		text := strings.TrimSpace(t)
		if text == "" {
			continue
		}
		if len(chunks) == 0 {
			if h := firstHeading(text); h != "" {
				title = h
			}
		}
		chunks = append(chunks, Chunk{Source: p, Text: text})
	}
	for i := range chunks {
		chunks[i].ID = p + "#" + strconv.Itoa(i+1)
		chunks[i].Title = title
	}
	return chunks, nil
}

// firstHeading returns the text of the first Markdown heading of text, or
// "".
func firstHeading(text string) string {
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if h, ok := strings.CutPrefix(line, "#"); ok {
			return strings.TrimSpace(strings.TrimLeft(h, "#"))
		}
	}
	return ""
}
