package knowledge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
)

// The limits of [ReadFiles] (and so of [LoadDir]) unless its options say
// otherwise.
const (
	// DefaultMaxFileBytes is the most a file may hold: 8 MiB.
	DefaultMaxFileBytes int64 = 8 << 20
	// DefaultMaxTotalBytes is the most all the files read may hold
	// together: 256 MiB.
	DefaultMaxTotalBytes int64 = 256 << 20
)

// ErrTooLarge is returned by [ReadFiles] and [LoadDir] when a file, or all
// the files together, hold more bytes than their limit
// (MaxFileBytes, MaxTotalBytes).
var ErrTooLarge = errors.New("knowledge: too large to read")

// File is a file read by [ReadFiles].
type File struct {
	// Path is the file's slash-separated path from the root, as
	// fs.WalkDir gives it ("lore/iron.md").
	Path string
	// Data is what the file holds.
	Data []byte
}

// ReadOptions configures [ReadFiles]. A nil *ReadOptions and the zero
// value read every regular file within the default limits.
type ReadOptions struct {
	// Match reports whether to read the file at path (slash-separated,
	// from the root); nil reads every file. Only files it accepts are
	// opened, counted against the limits and, when skipped, logged.
	Match func(path string) bool
	// MaxFileBytes is the most a file may hold; 0 means
	// DefaultMaxFileBytes.
	MaxFileBytes int64
	// MaxTotalBytes is the most the files read may hold together; 0
	// means DefaultMaxTotalBytes.
	MaxTotalBytes int64
	// Logger receives a warning for each file skipped; nil means
	// slog.Default().
	Logger *slog.Logger
}

// ReadFiles reads the files of fsys, walking it from its root in lexical
// order, safely: it is the loader for folders given by users (the
// knowledge of [LoadDir], an agent's skills), and reads
//
//   - regular files only: an entry's type is checked, from the directory
//     listing, before the file is opened, and again on the opened file.
//     A symbolic link, named pipe (FIFO), device, socket or other
//     irregular file is skipped without being opened, so a FIFO never
//     blocks the walk and a link to /dev/zero is never read;
//   - never outside the root: an fs.FS cannot tell whether a link stays
//     inside it (os.DirFS follows one anywhere), so every symbolic link
//     is skipped. For a folder on disk, [ReadFilesPath] follows the links
//     that stay inside it;
//   - within limits: a file holding more than MaxFileBytes, or files
//     holding more than MaxTotalBytes together, make it fail with an
//     error matching [ErrTooLarge], which names the file. A file is
//     refused by its size before it is read, and read no further than
//     the limit if it grows or its size is unknown (0, as in /proc);
//   - until ctx is done: it checks ctx before each file and between the
//     reads of a file, and fails with ctx's error.
//
// Each file skipped is logged at the Warn level, with its path and why.
// ReadFiles returns all the files matched or, on error, none; an error
// walking fsys (such as a missing root, matching fs.ErrNotExist) is an
// error.
func ReadFiles(ctx context.Context, fsys fs.FS, opts *ReadOptions) ([]File, error) {
	var files []File
	err := walkFiles(ctx, fsys, nil, orZero(opts), func(p string, data []byte) error {
		files = append(files, File{Path: p, Data: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}

// ReadFilesPath is [ReadFiles] for the directory dir on disk, opened with
// os.OpenRoot so that nothing outside it is read: a symbolic link that
// stays inside dir is followed to a regular file (read under the link's
// own path; a link to a directory is not walked), and one that leaves
// dir, or leads nowhere, is skipped and logged. A file that is replaced
// by a link or a FIFO while it is read cannot take it outside dir or block
// it either.
func ReadFilesPath(ctx context.Context, dir string, opts *ReadOptions) ([]File, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("knowledge: reading %s: %w", dir, err)
	}
	defer root.Close()
	var files []File
	err = walkFiles(ctx, root.FS(), root, orZero(opts), func(p string, data []byte) error {
		files = append(files, File{Path: p, Data: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}

// walkFiles reads the files of fsys as ReadFiles says, calling fn with
// each file read, in order; root, when not nil, is the os.Root whose FS
// fsys is, which lets links inside it be followed.
func walkFiles(ctx context.Context, fsys fs.FS, root *os.Root, opts ReadOptions, fn func(p string, data []byte) error) error {
	r := reader{fsys: fsys, root: root, opts: opts, log: opts.Logger}
	switch {
	case opts.MaxFileBytes < 0:
		return fmt.Errorf("knowledge: MaxFileBytes %d is negative", opts.MaxFileBytes)
	case opts.MaxTotalBytes < 0:
		return fmt.Errorf("knowledge: MaxTotalBytes %d is negative", opts.MaxTotalBytes)
	}
	if r.opts.MaxFileBytes == 0 {
		r.opts.MaxFileBytes = DefaultMaxFileBytes
	}
	if r.opts.MaxTotalBytes == 0 {
		r.opts.MaxTotalBytes = DefaultMaxTotalBytes
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	return fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() || opts.Match != nil && !opts.Match(p) {
			return nil
		}
		data, err := r.read(ctx, p, d)
		switch {
		case errors.Is(err, ErrTooLarge):
			return err // it names p
		case err != nil:
			return fmt.Errorf("knowledge: reading %s: %w", p, err)
		}
		if data == nil {
			return nil // skipped
		}
		return fn(p, data)
	})
}

// reader reads the files of one walk.
type reader struct {
	fsys  fs.FS
	root  *os.Root // nil: fsys is any fs.FS, whose links are skipped
	opts  ReadOptions
	log   *slog.Logger
	total int64 // bytes read so far
}

// read returns what the file at p, listed as d, holds, or nil if it is
// skipped.
func (r *reader) read(ctx context.Context, p string, d fs.DirEntry) ([]byte, error) {
	f, err := r.open(p, d.Type())
	if err != nil || f == nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		r.skip(p, fi.Mode().Type(), "it is not a regular file")
		return nil, nil
	}
	maxFile, left := r.opts.MaxFileBytes, r.opts.MaxTotalBytes-r.total
	if fi.Size() > maxFile {
		return nil, fmt.Errorf("%w: %s holds %d bytes, more than MaxFileBytes (%d)", ErrTooLarge, p, fi.Size(), maxFile)
	}
	if fi.Size() > left {
		return nil, fmt.Errorf("%w: with %s the files hold more than MaxTotalBytes (%d)", ErrTooLarge, p, r.opts.MaxTotalBytes)
	}
	limit := min(maxFile, left)
	if limit < math.MaxInt64 {
		limit++ // a byte more tells a file over the limit
	}
	data, err := io.ReadAll(io.LimitReader(ctxReader{ctx, f}, limit))
	if err != nil {
		return nil, err
	}
	switch n := int64(len(data)); {
	case n > maxFile:
		return nil, fmt.Errorf("%w: %s holds more than MaxFileBytes (%d)", ErrTooLarge, p, maxFile)
	case n > left:
		return nil, fmt.Errorf("%w: with %s the files hold more than MaxTotalBytes (%d)", ErrTooLarge, p, r.opts.MaxTotalBytes)
	}
	r.total += int64(len(data))
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// open opens the file at p, whose type in its directory's listing is typ,
// if it is one to read: a regular file or, under a root, a link inside it
// to a regular file. It returns nil for a file skipped.
func (r *reader) open(p string, typ fs.FileMode) (fs.File, error) {
	if r.root == nil {
		switch typ {
		case 0:
			return r.fsys.Open(p)
		case fs.ModeSymlink:
			r.skip(p, typ, "it is a symbolic link, which an fs.FS cannot keep inside its root (read a folder on disk with ReadFilesPath or LoadDirPath to follow the links inside it)")
		default:
			r.skip(p, typ, "it is not a regular file")
		}
		return nil, nil
	}
	name := filepath.FromSlash(p)
	switch typ {
	case 0:
	case fs.ModeSymlink:
		fi, err := r.root.Stat(name)
		if err != nil {
			r.skip(p, typ, "it is a link out of the folder or to nothing", "error", err)
			return nil, nil
		}
		if !fi.Mode().IsRegular() {
			r.skip(p, typ, "it is a link to something other than a regular file", "target", fi.Mode().Type().String())
			return nil, nil
		}
	default:
		r.skip(p, typ, "it is not a regular file")
		return nil, nil
	}
	// O_NONBLOCK: should the file have become a FIFO since it was
	// listed, opening it does not wait for a writer.
	f, err := r.root.OpenFile(name, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// skip logs that the file at p, of type typ, is skipped and why.
func (r *reader) skip(p string, typ fs.FileMode, why string, args ...any) {
	r.log.Warn("knowledge: skipping a file: "+why, append([]any{"path", p, "type", typ.String()}, args...)...)
}

// ctxReader is a reader that fails with its context's error once the
// context is done, checked before each read.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
