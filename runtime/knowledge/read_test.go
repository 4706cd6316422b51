package knowledge_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/chatscopes/chatgen/runtime/knowledge"
)

// paths lists the paths of files.
func paths(files []knowledge.File) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Path)
	}
	return out
}

// TestReadFiles checks the safe reader on a folder holding every kind of
// entry: only regular files are read, and links only by path, inside the
// root.
func TestReadFiles(t *testing.T) {
	root := folder(t, func(root string) {
		write(t, filepath.Join(root, "notes.bin"), "\x00\x01")
		write(t, filepath.Join(root, "empty.txt"), "")
		if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(root, "sub", "steel.md"), "# Steel\n")
		symlink(t, "../outside/secret.md", filepath.Join(root, "escape"))
		symlink(t, "/dev/zero", filepath.Join(root, "zero"))
		symlink(t, "sub/steel.md", filepath.Join(root, "inside"))
		symlink(t, "sub", filepath.Join(root, "subdir")) // not walked
		if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	ctx := context.Background()
	var logs bytes.Buffer
	files, err := knowledge.ReadFiles(ctx, os.DirFS(root), &knowledge.ReadOptions{Logger: logTo(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := paths(files), []string{"empty.txt", "iron.md", "notes.bin", "sub/steel.md"}; !slices.Equal(got, want) {
		t.Errorf("ReadFiles read %v, want %v", got, want)
	}
	if string(files[2].Data) != "\x00\x01" || files[0].Data == nil || len(files[0].Data) != 0 {
		t.Errorf("ReadFiles: data %q, %q", files[2].Data, files[0].Data)
	}
	for _, skipped := range []string{"escape", "zero", "inside", "subdir", "pipe"} {
		if !strings.Contains(logs.String(), "path="+skipped+" ") {
			t.Errorf("ReadFiles: no warning for %s:\n%s", skipped, logs.String())
		}
	}

	logs.Reset()
	files, err = knowledge.ReadFilesPath(ctx, root, &knowledge.ReadOptions{Logger: logTo(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := paths(files), []string{"empty.txt", "inside", "iron.md", "notes.bin", "sub/steel.md"}; !slices.Equal(got, want) {
		t.Errorf("ReadFilesPath read %v, want %v", got, want)
	}
	if string(files[1].Data) != "# Steel\n" {
		t.Errorf("ReadFilesPath: the link inside holds %q", files[1].Data)
	}
	for _, skipped := range []string{"escape", "zero", "subdir", "pipe"} {
		if !strings.Contains(logs.String(), "path="+skipped+" ") {
			t.Errorf("ReadFilesPath: no warning for %s:\n%s", skipped, logs.String())
		}
	}

	// The largest limits are limits too.
	if files, err := knowledge.ReadFilesPath(ctx, root, &knowledge.ReadOptions{MaxFileBytes: math.MaxInt64, MaxTotalBytes: math.MaxInt64, Logger: logTo(new(bytes.Buffer))}); err != nil || len(files) != 5 || string(files[1].Data) != "# Steel\n" {
		t.Errorf("ReadFilesPath with limits of MaxInt64: %v, %v", paths(files), err)
	}

	// Match picks the files opened: the others are neither read nor
	// logged.
	logs.Reset()
	files, err = knowledge.ReadFilesPath(ctx, root, &knowledge.ReadOptions{
		Match:  func(p string) bool { return strings.HasSuffix(p, ".md") },
		Logger: logTo(&logs),
	})
	if err != nil || !slices.Equal(paths(files), []string{"iron.md", "sub/steel.md"}) || logs.Len() != 0 {
		t.Errorf("ReadFilesPath with Match: %v, %v, logs %q", paths(files), err, logs.String())
	}

	// Errors give no file.
	for name, read := range map[string]func(*knowledge.ReadOptions) ([]knowledge.File, error){
		"ReadFiles": func(o *knowledge.ReadOptions) ([]knowledge.File, error) {
			return knowledge.ReadFiles(ctx, os.DirFS(root), o)
		},
		"ReadFilesPath": func(o *knowledge.ReadOptions) ([]knowledge.File, error) { return knowledge.ReadFilesPath(ctx, root, o) },
	} {
		quiet := logTo(new(bytes.Buffer))
		if files, err := read(&knowledge.ReadOptions{MaxTotalBytes: 50, Logger: quiet}); !errors.Is(err, knowledge.ErrTooLarge) || files != nil {
			t.Errorf("%s over MaxTotalBytes: %v, %v", name, paths(files), err)
		}
		if files, err := read(&knowledge.ReadOptions{MaxFileBytes: 1, Logger: quiet}); !errors.Is(err, knowledge.ErrTooLarge) || files != nil {
			t.Errorf("%s over MaxFileBytes: %v, %v", name, paths(files), err)
		}
	}
	if _, err := knowledge.ReadFilesPath(ctx, filepath.Join(root, "missing"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFilesPath of a missing directory: %v", err)
	}
	if _, err := knowledge.LoadDirPath(ctx, filepath.Join(root, "missing"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadDirPath of a missing directory: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := knowledge.ReadFilesPath(cancelled, root, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("ReadFilesPath cancelled: %v", err)
	}
}

// TestReadFilesOfUnknownSize checks that a file whose size is unknown
// until read (the files of /proc say 0) is read no further than the
// limit.
func TestReadFilesOfUnknownSize(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/sys is Linux's")
	}
	want, err := os.ReadFile("/proc/sys/kernel/version")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat("/proc/sys/kernel/version")
	if err != nil || fi.Size() != 0 || len(want) < 5 {
		t.Fatalf("/proc/sys/kernel/version: size %d, holds %q (%v); the test wants a size of 0 and a text", fi.Size(), want, err)
	}
	ctx := context.Background()
	version := &knowledge.ReadOptions{Match: func(p string) bool { return p == "version" }}
	files, err := knowledge.ReadFiles(ctx, os.DirFS("/proc/sys/kernel"), version)
	if err != nil || len(files) != 1 || !bytes.Equal(files[0].Data, want) {
		t.Fatalf("read %v (%v), want version holding %q", files, err, want)
	}
	for _, o := range []knowledge.ReadOptions{{MaxFileBytes: 4}, {MaxTotalBytes: 4}} {
		o.Match = version.Match
		if files, err := knowledge.ReadFiles(ctx, os.DirFS("/proc/sys/kernel"), &o); !errors.Is(err, knowledge.ErrTooLarge) || files != nil {
			t.Errorf("%+v: %v, %v, want ErrTooLarge", o, files, err)
		}
	}
}
