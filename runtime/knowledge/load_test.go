package knowledge_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/chatscopes/chatgen/runtime/knowledge"
)

func TestLoadDir(t *testing.T) {
	long := strings.Repeat("The smiths of Varn hammer steel from dawn to dusk. ", 12)
	fsys := fstest.MapFS{
		"lore/iron.md":       {Data: []byte("# Iron\n\nIron was the first gift of the mountain.\n\n## Working iron\n\nCherry red to bend.\n")},
		"lore/varn.md":       {Data: []byte("# Varn\n\n" + long + "\n\n" + long + "\n")},
		"lore/notes.txt":     {Data: []byte("Plain notes about the forge.\n\nA second paragraph.")},
		"lore/untitled.md":   {Data: []byte("No heading here, just text.")},
		"lore/empty.md":      {Data: []byte("  \n")},
		"lore/image.png":     {Data: []byte{0x89, 'P', 'N', 'G'}},
		"lore/sub.md/x.json": {Data: []byte("{}")}, // a directory named like a document
	}
	ctx := context.Background()
	chunks, err := knowledge.LoadDir(ctx, fsys, &knowledge.LoadOptions{ChunkSize: 200, ChunkOverlap: 40})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]knowledge.Chunk{}
	var order []string
	for _, c := range chunks {
		byID[c.ID] = c
		order = append(order, c.ID)
		if len([]rune(c.Text)) > 200+len("# Varn\n") {
			t.Errorf("chunk %s has %d characters, want at most about 200", c.ID, len([]rune(c.Text)))
		}
	}
	if !slices.IsSorted(order[:2]) || order[0] != "lore/iron.md#1" {
		t.Errorf("ids %v, want files in lexical order from #1", order)
	}
	iron := byID["lore/iron.md#2"]
	if iron.Title != "Iron" || iron.Source != "lore/iron.md" || !strings.Contains(iron.Text, "Working iron") || !strings.Contains(iron.Text, "Cherry red") {
		t.Errorf("second iron chunk %+v, want its section with its heading", iron)
	}
	if c := byID["lore/untitled.md#1"]; c.Title != "untitled" {
		t.Errorf("untitled document's title %q, want the file name", c.Title)
	}
	if c := byID["lore/notes.txt#1"]; c.Title != "notes" || !strings.Contains(c.Text, "Plain notes") {
		t.Errorf("text file chunk %+v", c)
	}
	var varn int
	for _, c := range chunks {
		if c.Source == "lore/varn.md" {
			varn++
		}
		if c.Source == "lore/empty.md" || strings.HasSuffix(c.Source, ".png") || strings.HasSuffix(c.Source, ".json") {
			t.Errorf("chunk of %s", c.Source)
		}
	}
	if varn < 4 {
		t.Errorf("varn.md gave %d chunks, want it split into several", varn)
	}

	again, err := knowledge.LoadDir(ctx, fsys, &knowledge.LoadOptions{ChunkSize: 200, ChunkOverlap: 40})
	if err != nil || !slices.Equal(again, chunks) {
		t.Errorf("loading twice gives other chunks (%v)", err)
	}
	ix, err := knowledge.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Add(ctx, chunks...); err != nil {
		t.Errorf("the loaded chunks do not add: %v", err)
	}
}

func TestLoadDirErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := knowledge.LoadDir(ctx, fstest.MapFS{"a.png": {}}, nil); err == nil {
		t.Error("a directory without documents gives no error")
	}
	if _, err := knowledge.LoadDir(ctx, fstest.MapFS{"a.md": {Data: []byte{0xff, 0xfe}}}, nil); err == nil || !strings.Contains(err.Error(), "a.md") {
		t.Errorf("a document that is not UTF-8: %v", err)
	}
	for _, o := range []knowledge.LoadOptions{{ChunkSize: -1}, {ChunkSize: 100, ChunkOverlap: 100}} {
		if _, err := knowledge.LoadDir(ctx, fstest.MapFS{"a.md": {Data: []byte("x")}}, &o); err == nil {
			t.Errorf("options %+v give no error", o)
		}
	}
	if _, err := knowledge.LoadDir(ctx, os.DirFS(t.TempDir()+"/missing"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing directory: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := knowledge.LoadDir(cancelled, fstest.MapFS{"a.md": {Data: []byte("x")}}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestIndexDirErrors(t *testing.T) {
	ctx := context.Background()
	docs := fstest.MapFS{"a.md": {Data: []byte("# A\n\nIron.")}}
	if _, err := knowledge.IndexDir(ctx, docs, &knowledge.IndexDirOptions{Index: knowledge.IndexOptions{BM25: &knowledge.BM25Params{K1: -1, B: 0}}}); err == nil {
		t.Error("a bad option gives no error")
	}
	if _, err := knowledge.IndexDir(ctx, fstest.MapFS{}, nil); err == nil {
		t.Error("no documents gives no error")
	}
	e, srv := llmtestEmbedder(t)
	srv.Close()
	if _, err := knowledge.IndexDir(ctx, docs, &knowledge.IndexDirOptions{Index: knowledge.IndexOptions{Embedder: e}}); err == nil {
		t.Error("a failing embedder gives no error")
	}
}

// folder makes, in a new temporary directory, a folder "root" holding
// iron.md and the entries add makes in it, and beside it a folder
// "outside" holding secret.md; it returns the root's path.
func folder(t *testing.T, add func(root string)) string {
	t.Helper()
	dir := t.TempDir()
	root, outside := filepath.Join(dir, "root"), filepath.Join(dir, "outside")
	for _, d := range []string{root, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(root, "iron.md"), "# Iron\n\nIron was the first gift of the mountain.\n")
	write(t, filepath.Join(outside, "secret.md"), "# Secret\n\nThe vault opens with the word swordfish.\n")
	add(root)
	return root
}

// write writes content to the file at path.
func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// symlink makes link a symbolic link to target.
func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// loaders are the two ways to load a folder on disk: as an fs.FS, and by
// its path.
var loaders = map[string]func(ctx context.Context, dir string, opts *knowledge.LoadOptions) ([]knowledge.Chunk, error){
	"LoadDir(os.DirFS)": func(ctx context.Context, dir string, opts *knowledge.LoadOptions) ([]knowledge.Chunk, error) {
		return knowledge.LoadDir(ctx, os.DirFS(dir), opts)
	},
	"LoadDirPath": knowledge.LoadDirPath,
}

// docSources lists the sources of chunks, once each, in order.
func docSources(chunks []knowledge.Chunk) []string {
	var out []string
	for _, c := range chunks {
		if len(out) == 0 || out[len(out)-1] != c.Source {
			out = append(out, c.Source)
		}
	}
	return out
}

// logTo returns a logger writing to b.
func logTo(b *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, nil))
}

// TestLoadDirStaysInsideItsRoot checks that a link out of the folder is
// never read: loaded as an fs.FS every link is skipped, and by its path
// only the links that stay inside are followed.
func TestLoadDirStaysInsideItsRoot(t *testing.T) {
	root := folder(t, func(root string) {
		symlink(t, "../outside/secret.md", filepath.Join(root, "escape.md"))
		symlink(t, filepath.Join(root, "..", "outside", "secret.md"), filepath.Join(root, "absolute.md"))
		symlink(t, "../outside", filepath.Join(root, "sub"))    // a directory out of the root
		symlink(t, "../outside", filepath.Join(root, "dir.md")) // the same, named like a document
		symlink(t, "iron.md", filepath.Join(root, "inside.md"))
		symlink(t, "missing.md", filepath.Join(root, "dangling.md"))
	})
	want := map[string][]string{
		"LoadDir(os.DirFS)": {"iron.md"},
		"LoadDirPath":       {"inside.md", "iron.md"},
	}
	ctx := context.Background()
	for name, load := range loaders {
		t.Run(name, func(t *testing.T) {
			var logs bytes.Buffer
			chunks, err := load(ctx, root, &knowledge.LoadOptions{Logger: logTo(&logs)})
			if err != nil {
				t.Fatal(err)
			}
			if got := docSources(chunks); !slices.Equal(got, want[name]) {
				t.Errorf("loaded %v, want %v", got, want[name])
			}
			for _, c := range chunks {
				if strings.Contains(c.Text, "swordfish") {
					t.Errorf("chunk %s holds the secret from outside the root", c.ID)
				}
			}
			for _, skipped := range []string{"escape.md", "absolute.md", "dir.md", "dangling.md"} {
				if !strings.Contains(logs.String(), "path="+skipped) {
					t.Errorf("no warning for %s in the logs:\n%s", skipped, logs.String())
				}
			}
			ix, err := knowledge.New(nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := ix.Add(ctx, chunks...); err != nil {
				t.Fatal(err)
			}
			if hits, err := ix.Search(ctx, "vault swordfish", 3, knowledge.Lexical, 0); err != nil || len(hits) != 0 {
				t.Errorf("searching the secret finds %v (%v)", hits, err)
			}
		})
	}
	ix, err := knowledge.IndexDirPath(ctx, root, &knowledge.IndexDirOptions{Load: knowledge.LoadOptions{Logger: logTo(new(bytes.Buffer))}})
	if err != nil || ix.Len() != 2 {
		t.Fatalf("IndexDirPath: %v, %v", ix, err)
	}
	if hits, err := ix.Search(ctx, "vault swordfish", 3, knowledge.Lexical, 0); err != nil || len(hits) != 0 {
		t.Errorf("IndexDirPath: searching the secret finds %v (%v)", hits, err)
	}
}

// TestLoadDirSkipsDevZero checks that a document linked to /dev/zero is
// skipped without being read, where it used to be read without end.
func TestLoadDirSkipsDevZero(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero here")
	}
	root := folder(t, func(root string) {
		symlink(t, "/dev/zero", filepath.Join(root, "zero.md"))
	})
	for name, load := range loaders {
		t.Run(name, func(t *testing.T) {
			var logs bytes.Buffer
			chunks, err := load(context.Background(), root, &knowledge.LoadOptions{Logger: logTo(&logs)})
			if err != nil {
				t.Fatal(err)
			}
			if got := docSources(chunks); !slices.Equal(got, []string{"iron.md"}) {
				t.Errorf("loaded %v, want only iron.md", got)
			}
			if !strings.Contains(logs.String(), "path=zero.md") {
				t.Errorf("no warning for zero.md in the logs:\n%s", logs.String())
			}
		})
	}
}

// TestLoadDirSkipsFIFO checks that a FIFO named like a document is never
// opened, where opening it used to block the load for ever, past its
// context.
func TestLoadDirSkipsFIFO(t *testing.T) {
	var pipe string
	root := folder(t, func(root string) {
		pipe = filepath.Join(root, "pipe.md")
		if err := syscall.Mkfifo(pipe, 0o644); err != nil {
			t.Fatal(err)
		}
	})
	for name, load := range loaders {
		t.Run(name, func(t *testing.T) {
			var logs bytes.Buffer
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			type result struct {
				chunks []knowledge.Chunk
				err    error
			}
			done := make(chan result, 1)
			go func() {
				chunks, err := load(ctx, root, &knowledge.LoadOptions{Logger: logTo(&logs)})
				done <- result{chunks, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(time.Minute): // the fixed loader returns at once
				cancel()
				// Release the blocked open: a writer that comes and goes.
				if w, err := os.OpenFile(pipe, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					w.Close()
				}
				<-done
				t.Fatal("the load blocked on the FIFO pipe.md, and did not return when its context was cancelled")
			}
			if r.err != nil {
				t.Fatal(r.err)
			}
			if got := docSources(r.chunks); !slices.Equal(got, []string{"iron.md"}) {
				t.Errorf("loaded %v, want only iron.md", got)
			}
			if !strings.Contains(logs.String(), "path=pipe.md") {
				t.Errorf("no warning for pipe.md in the logs:\n%s", logs.String())
			}
		})
	}
}

// TestLoadDirLimits checks the per-file and total limits: more is an
// error matching ErrTooLarge, naming the file, and nothing is loaded.
func TestLoadDirLimits(t *testing.T) {
	a := "# A\n\n" + strings.Repeat("Iron. ", 165) + "Iron\n" // 1,000 bytes
	root := folder(t, func(root string) {
		write(t, filepath.Join(root, "a.md"), a)
		write(t, filepath.Join(root, "b.md"), strings.Replace(a, "# A", "# B", 1))
	})
	if len(a) != 1000 {
		t.Fatalf("a.md holds %d bytes", len(a))
	}
	iron, err := os.Stat(filepath.Join(root, "iron.md"))
	if err != nil {
		t.Fatal(err)
	}
	all := 2000 + iron.Size()
	ctx := context.Background()
	for name, load := range loaders {
		t.Run(name, func(t *testing.T) {
			for _, c := range []struct {
				opts knowledge.LoadOptions
				file string // the file named, "" for no error
			}{
				{knowledge.LoadOptions{MaxFileBytes: 999}, "a.md"},
				{knowledge.LoadOptions{MaxFileBytes: 1000}, ""},
				{knowledge.LoadOptions{MaxTotalBytes: all - 1}, "iron.md"}, // a.md, b.md, iron.md in lexical order
				{knowledge.LoadOptions{MaxTotalBytes: 1999}, "b.md"},
				{knowledge.LoadOptions{MaxTotalBytes: all}, ""},
				{knowledge.LoadOptions{MaxFileBytes: 1000, MaxTotalBytes: all}, ""},
			} {
				chunks, err := load(ctx, root, &c.opts)
				if c.file == "" {
					if err != nil || len(docSources(chunks)) != 3 {
						t.Errorf("%+v: %v, %v, want the three documents", c.opts, docSources(chunks), err)
					}
					continue
				}
				if !errors.Is(err, knowledge.ErrTooLarge) || !strings.Contains(err.Error(), c.file) || chunks != nil {
					t.Errorf("%+v: %v, %v, want no chunk and ErrTooLarge naming %s", c.opts, docSources(chunks), err, c.file)
				}
			}
			for _, o := range []knowledge.LoadOptions{{MaxFileBytes: -1}, {MaxTotalBytes: -1}} {
				if _, err := load(ctx, root, &o); err == nil {
					t.Errorf("%+v gives no error", o)
				}
			}
		})
	}

	// By default a file may hold 8 MiB: a larger one is refused by its
	// size, unread (it is sparse, and NUL bytes).
	big := filepath.Join(root, "big.md")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, knowledge.DefaultMaxFileBytes+1); err != nil {
		t.Fatal(err)
	}
	for name, load := range loaders {
		if _, err := load(ctx, root, nil); !errors.Is(err, knowledge.ErrTooLarge) || !strings.Contains(err.Error(), "big.md") {
			t.Errorf("%s: a document of 8 MiB and a byte: %v, want ErrTooLarge", name, err)
		}
	}
	if _, err := knowledge.IndexDirPath(ctx, root, nil); !errors.Is(err, knowledge.ErrTooLarge) {
		t.Errorf("IndexDirPath, a document of 8 MiB and a byte: %v, want ErrTooLarge", err)
	}
}

// slowFS serves the files of an fs.FS a KiB per read, calling onRead
// before each, and counts the reads.
type slowFS struct {
	fs.FS
	onRead func()
	reads  atomic.Int64
}

func (s *slowFS) Open(name string) (fs.File, error) {
	f, err := s.FS.Open(name)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || fi.IsDir() {
		return f, err
	}
	return &slowFile{File: f, fs: s}, nil
}

type slowFile struct {
	fs.File
	fs *slowFS
}

func (f *slowFile) Read(p []byte) (int, error) {
	f.fs.reads.Add(1)
	f.fs.onRead()
	return f.File.Read(p[:min(len(p), 1024)])
}

// TestLoadDirCancelledWhileReading checks that a load stops reading when
// its context is cancelled during a file, and loads nothing.
func TestLoadDirCancelledWhileReading(t *testing.T) {
	root := folder(t, func(root string) {
		write(t, filepath.Join(root, "long.md"), "# Long\n\n"+strings.Repeat("The smiths of Varn hammer steel. ", 2000))
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fsys := &slowFS{FS: os.DirFS(root), onRead: cancel}
	chunks, err := knowledge.LoadDir(ctx, fsys, nil)
	if !errors.Is(err, context.Canceled) || chunks != nil {
		t.Errorf("cancelled while reading: %d chunks, %v, want none and context.Canceled", len(chunks), err)
	}
	if n := fsys.reads.Load(); n > 1 {
		t.Errorf("%d reads after the context was cancelled by the first, want none", n-1)
	}
}
