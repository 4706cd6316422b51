package knowledge

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tmc/langchaingo/textsplitter"
)

// LoadOptions configures [LoadDir]. A nil *LoadOptions and the zero value
// are ready to use.
type LoadOptions struct {
	// ChunkSize is the largest chunk, in characters (runes); 0 means
	// DefaultChunkSize.
	ChunkSize int
	// ChunkOverlap is how many characters a chunk repeats of the one
	// before it, when a section is split; 0 means DefaultChunkOverlap,
	// and a negative value none.
	ChunkOverlap int
	// MaxFileBytes is the most a document may hold; 0 means
	// DefaultMaxFileBytes (8 MiB).
	MaxFileBytes int64
	// MaxTotalBytes is the most the documents may hold together; 0
	// means DefaultMaxTotalBytes (256 MiB).
	MaxTotalBytes int64
	// Logger receives a warning for each document skipped (a link, a
	// FIFO...); nil means slog.Default().
	Logger *slog.Logger
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
//
// It reads the documents with [ReadFiles], safely: regular files only,
// their type checked before they are opened (a symbolic link, FIFO,
// device or socket named like a document is skipped, with a warning to
// opts.Logger), never outside fsys, at most opts.MaxFileBytes per file
// and opts.MaxTotalBytes in all (more is an error matching
// [ErrTooLarge]), checking ctx before each file and while reading. For
// a folder on disk, [LoadDirPath] also follows the links that stay
// inside it. On error it returns no chunk.
func LoadDir(ctx context.Context, fsys fs.FS, opts *LoadOptions) ([]Chunk, error) {
	return loadDir(ctx, fsys, nil, orZero(opts))
}

// LoadDirPath is [LoadDir] for the directory dir on disk, read with
// [ReadFilesPath]: through os.OpenRoot, so that a symbolic link is
// followed while it stays inside dir and skipped, with a warning, when it
// leaves it. Prefer it to LoadDir(ctx, os.DirFS(dir), opts), which skips
// every link.
func LoadDirPath(ctx context.Context, dir string, opts *LoadOptions) ([]Chunk, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("knowledge: loading %s: %w", dir, err)
	}
	defer root.Close()
	return loadDir(ctx, root.FS(), root, orZero(opts))
}

// loadDir is LoadDir, reading fsys under root when root is not nil.
func loadDir(ctx context.Context, fsys fs.FS, root *os.Root, opts LoadOptions) ([]Chunk, error) {
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
	splitter := func(p string) textsplitter.TextSplitter {
		switch strings.ToLower(path.Ext(p)) {
		case ".md", ".markdown":
			return markdown
		case ".txt":
			return plain
		}
		return nil
	}

	var chunks []Chunk
	docs := 0
	read := ReadOptions{
		Match:         func(p string) bool { return splitter(p) != nil },
		MaxFileBytes:  opts.MaxFileBytes,
		MaxTotalBytes: opts.MaxTotalBytes,
		Logger:        opts.Logger,
	}
	err := walkFiles(ctx, fsys, root, read, func(p string, data []byte) error {
		cs, err := splitFile(p, data, splitter(p))
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

// IndexDirOptions configures [IndexDir] and [IndexDirPath]: how the
// documents are loaded and how the index is made. A nil *IndexDirOptions
// and the zero value load with the defaults of [LoadDir] into a lexical
// index with the default BM25 parameters.
type IndexDirOptions struct {
	// Load configures the loading of the documents, as for [LoadDir].
	Load LoadOptions
	// Index configures the index, as for [New].
	Index IndexOptions
}

// IndexDir loads the documents of fsys with [LoadDir] and indexes them in
// a new index configured by opts (with an embedder, embedding them in one
// call).
func IndexDir(ctx context.Context, fsys fs.FS, opts *IndexDirOptions) (*Index, error) {
	o := orZero(opts)
	return indexChunks(ctx, func() ([]Chunk, error) { return LoadDir(ctx, fsys, &o.Load) }, &o.Index)
}

// IndexDirPath is [IndexDir] for the directory dir on disk, loaded with
// [LoadDirPath].
func IndexDirPath(ctx context.Context, dir string, opts *IndexDirOptions) (*Index, error) {
	o := orZero(opts)
	return indexChunks(ctx, func() ([]Chunk, error) { return LoadDirPath(ctx, dir, &o.Load) }, &o.Index)
}

// orZero returns *opts, or the zero options when opts is nil.
func orZero[T any](opts *T) T {
	if opts == nil {
		var zero T
		return zero
	}
	return *opts
}

// indexChunks indexes the chunks that load returns in a new index
// configured by opts.
func indexChunks(ctx context.Context, load func() ([]Chunk, error), opts *IndexOptions) (*Index, error) {
	ix, err := New(opts)
	if err != nil {
		return nil, err
	}
	chunks, err := load()
	if err != nil {
		return nil, err
	}
	if err := ix.Add(ctx, chunks...); err != nil {
		return nil, err
	}
	return ix, nil
}

// splitFile splits b, the document at p.
func splitFile(p string, b []byte, splitter textsplitter.TextSplitter) ([]Chunk, error) {
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
