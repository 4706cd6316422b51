// Package testmod writes the go.mod and go.sum of a throw-away module that
// uses chatgen from a checkout, for tests that run the generator or the go
// command on code of their own without reaching the network.
package testmod

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// rootModule is the module line chatgen's go.mod starts with.
const rootModule = "module github.com/chatscopes/chatgen\n"

// Write writes dir/go.mod, declaring module path, and dir/go.sum, for a
// module that requires chatgen, replaced by the checkout at root.
//
// The module requires what chatgen's go.mod requires, indirect
// requirements included, so its module graph is pruned as chatgen's is:
// with [Env]'s GOPROXY=off, go needs only the go.mod files a build of
// chatgen put in the module cache. (Requiring chatgen alone makes go read
// the go.mod of every module of the unpruned graph, which the cache of a
// fresh machine does not hold.)
func Write(dir, root, path string) error {
	rootMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return fmt.Errorf("testmod: %w", err)
	}
	rest, ok := strings.CutPrefix(string(rootMod), rootModule)
	if !ok {
		return fmt.Errorf("testmod: %s does not start with %q", filepath.Join(root, "go.mod"), strings.TrimSpace(rootModule))
	}
	gomod := "module " + path + "\n" + rest +
		fmt.Sprintf("\nrequire github.com/chatscopes/chatgen v0.0.0\n\nreplace github.com/chatscopes/chatgen => %s\n", root)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		return fmt.Errorf("testmod: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return fmt.Errorf("testmod: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		return fmt.Errorf("testmod: %w", err)
	}
	return nil
}

// Env is the environment the go command needs in such a module: module
// files updated as needed, no proxy, no workspace.
func Env() []string {
	return []string{"GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off"}
}
