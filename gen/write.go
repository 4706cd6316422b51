package gen

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFiles writes the files of a run: each file whose content changed is
// written to a temporary file and renamed into place; a file with nil
// content is removed. It returns the paths it changed, in order.
func WriteFiles(files []File) ([]string, error) {
	var changed []string
	for _, f := range files {
		ok, err := writeFile(f)
		if err != nil {
			return changed, err
		}
		if ok {
			changed = append(changed, f.Path)
		}
	}
	return changed, nil
}

// StaleFiles returns the paths of the files of a run that WriteFiles would
// change (write or remove), in order, writing nothing: chatgen -check
// reports them. A file chatgen would refuse to overwrite is an error, as
// in WriteFiles.
func StaleFiles(files []File) ([]string, error) {
	var stale []string
	for _, f := range files {
		ok, err := needsWrite(f)
		if err != nil {
			return stale, err
		}
		if ok {
			stale = append(stale, f.Path)
		}
	}
	return stale, nil
}

// needsWrite reports whether f differs from what is on disk, and whether
// chatgen may change what is there.
func needsWrite(f File) (bool, error) {
	old, err := os.ReadFile(f.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return f.Content != nil, nil
	case err != nil:
		return false, err
	case f.Content == nil:
		if !isOwnOutput(f.Path, old) {
			return false, fmt.Errorf("refusing to remove %s: chatgen did not write it", f.Path)
		}
		return true, nil
	case bytes.Equal(old, f.Content):
		return false, nil
	case !isOwnOutput(f.Path, old):
		return false, fmt.Errorf("refusing to overwrite %s: chatgen did not write it", f.Path)
	}
	return true, nil
}

func writeFile(f File) (bool, error) {
	if ok, err := needsWrite(f); !ok || err != nil {
		return false, err
	}
	if f.Content == nil {
		return true, os.Remove(f.Path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.Path), ".chat_gen-*.go.tmp")
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(f.Content); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Close(); err != nil {
		return false, err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return false, err
	}
	return true, os.Rename(tmp.Name(), f.Path)
}
