// Package npmtest installs the npm packages a test pins and gives it a
// directory to run node scripts in, as internal/tsctest does for the
// TypeScript compiler.
//
// The packages of a folder's package-lock.json are installed with npm ci
// once into the user's cache directory (os.UserCacheDir()/chatgen/<name>-<hash
// of the lock>). Without npm or node, or when the registry cannot be
// reached, the test skips; under CI (the CI environment variable set) it
// fails instead.
package npmtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// A Client names the pinned npm packages of a test.
type Client struct {
	// Name is the cache directory's prefix ("agui-npm").
	Name string
	// What names the packages in messages ("the AG-UI client @ag-ui/client").
	What string
	// Src is the folder holding package.json, package-lock.json and the
	// scripts.
	Src string
	// Scripts are the files of Src copied next to node_modules at every
	// run: they change without the lock changing.
	Scripts []string
}

// Dir returns a fresh directory holding the scripts, package.json and a
// link to the installed node_modules, installing the packages on first use.
func (c Client) Dir(t testing.TB) string {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		c.unavailable(t, "npm is not installed")
	}
	if _, err := exec.LookPath("node"); err != nil {
		c.unavailable(t, "node is not installed")
	}
	lock := mustRead(t, filepath.Join(c.Src, "package-lock.json"))
	sum := sha256.Sum256(append(lock, runtime.GOOS+"/"+runtime.GOARCH...))
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	parent := filepath.Join(base, "chatgen")
	dir := filepath.Join(parent, c.Name+"-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(dir, "installed")); err != nil {
		c.install(t, npm, parent, dir)
	}
	run := t.TempDir()
	if err := os.Symlink(filepath.Join(dir, "node_modules"), filepath.Join(run, "node_modules")); err != nil {
		t.Fatal(err)
	}
	for _, name := range append([]string{"package.json"}, c.Scripts...) {
		if err := os.WriteFile(filepath.Join(run, name), mustRead(t, filepath.Join(c.Src, name)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return run
}

// unavailable skips the test, or fails it under CI.
func (c Client) unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf(format+" (CI needs node, npm and the npm registry to run %s)", append(args, c.What)...)
	}
	t.Skipf(format+"; skipping the test of %s", append(args, c.What)...)
}

// install runs npm ci of the pinned packages into dir, through a
// directory of its own renamed into place: test binaries may install at
// the same time.
func (c Client) install(t testing.TB, npm, parent, dir string) {
	t.Helper()
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(parent, c.Name+"-install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for _, name := range []string{"package.json", "package-lock.json"} {
		if err := os.WriteFile(filepath.Join(tmp, name), mustRead(t, filepath.Join(c.Src, name)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline",
		"--fetch-retries=1", "--fetch-retry-mintimeout=1000", "--fetch-retry-maxtimeout=5000")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		if len(out) > 1500 {
			out = out[len(out)-1500:]
		}
		c.unavailable(t, "npm ci failed: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(tmp, "installed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "installed")); serr != nil {
			t.Fatalf("installing %s into %s: %v", c.What, dir, err)
		}
	}
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
