package memory

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// FileStore is a durable [Store]: one JSON file per memory id in a
// directory. Writes go to a temporary file that is synced and then renamed
// over the id's file, so a reader or a crash sees the old list or the new
// one, never a torn file. Messages are encoded with [MarshalMessages], so
// tool calls and tool results survive losslessly.
//
// File names encode the id in lower-case base32 ("m-<base32>.json"), which is
// safe on every file system, including case-insensitive ones; an id too long
// for that is named by its SHA-256 ("h-<hex>.json"). Each file also records
// its id. Several FileStores (or processes) may share a directory; the last
// Update of an id wins.
//
// FileStore is not an [IncrementalStore]: every change rewrites the id's
// file, which costs O(length of the list).
type FileStore struct {
	dir string
}

// NewFileStore returns a store of the files in dir, creating dir (mode 0700)
// if needed. Files are created with mode 0600.
//
// It reclaims the temporary files a crashed writer left behind: those not
// modified for [StaleTempAge]. Younger ones may belong to a writer of
// another store sharing dir, and are left alone.
func NewFileStore(dir string) (*FileStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("memory: file store: %w", err)
	}
	if err := removeStaleTemps(dir, time.Now().Add(-StaleTempAge)); err != nil {
		return nil, fmt.Errorf("memory: file store: %w", err)
	}
	return &FileStore{dir: dir}, nil
}

// StaleTempAge is how long a FileStore's temporary file must go unmodified
// before [NewFileStore] takes it for the leftover of a crashed writer and
// removes it. A live writer renames its temporary file within milliseconds.
const StaleTempAge = time.Minute

// removeStaleTemps removes the temporary files in dir last modified before
// cutoff.
func removeStaleTemps(dir string, cutoff time.Time) error {
	temps, err := filepath.Glob(filepath.Join(dir, tempPattern))
	if err != nil {
		return err
	}
	for _, p := range temps {
		info, err := os.Lstat(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // renamed or reclaimed meanwhile
			}
			return err
		}
		if !info.Mode().IsRegular() || !info.ModTime().Before(cutoff) {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

const (
	fileVersion = 1
	fileSuffix  = ".json"
	b32Prefix   = "m-"
	hashPrefix  = "h-"
	tempPattern = ".tmp-*"
	maxNameLen  = 240 // below the 255-byte limit of common file systems
)

var fileNameEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// fileName returns the name of id's file.
func fileName(id string) string {
	name := b32Prefix + fileNameEncoding.EncodeToString([]byte(id)) + fileSuffix
	if len(name) <= maxNameLen {
		return name
	}
	sum := sha256.Sum256([]byte(id))
	return hashPrefix + hex.EncodeToString(sum[:]) + fileSuffix
}

// storedFile is the content of one file.
type storedFile struct {
	Version  int             `json:"version"`
	ID       string          `json:"id"`
	Messages json.RawMessage `json:"messages"`
}

// Get implements [Store].
func (s *FileStore) Get(ctx context.Context, id string) ([]llms.MessageContent, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := s.read(fileName(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if f.ID != id {
		return nil, fmt.Errorf("memory: file store: %s holds id %q, not %q", fileName(id), f.ID, id)
	}
	msgs, err := UnmarshalMessages(f.Messages)
	if err != nil {
		return nil, fmt.Errorf("memory: file store: %s: %w", fileName(id), err)
	}
	return msgs, nil
}

func (s *FileStore) read(name string) (*storedFile, error) {
	data, err := os.ReadFile(filepath.Join(s.dir, name))
	if err != nil {
		return nil, err // keeps fs.ErrNotExist visible to errors.Is
	}
	var f storedFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("memory: file store: %s: %w", name, err)
	}
	if f.Version != fileVersion {
		return nil, fmt.Errorf("memory: file store: %s: unsupported version %d", name, f.Version)
	}
	return &f, nil
}

// Update implements [Store].
func (s *FileStore) Update(ctx context.Context, id string, msgs []llms.MessageContent) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(msgs) == 0 {
		return s.Delete(ctx, id)
	}
	enc, err := MarshalMessages(msgs)
	if err != nil {
		return err
	}
	data, err := json.Marshal(storedFile{Version: fileVersion, ID: id, Messages: enc})
	if err != nil {
		return fmt.Errorf("memory: file store: %w", err)
	}
	if err := s.writeAtomic(fileName(id), data); err != nil {
		return fmt.Errorf("memory: file store: %w", err)
	}
	return nil
}

// writeAtomic writes data to a synced temporary file and renames it to name.
func (s *FileStore) writeAtomic(name string, data []byte) (err error) {
	tmp, err := os.CreateTemp(s.dir, tempPattern)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(s.dir, name)); err != nil {
		return err
	}
	s.syncDir()
	return nil
}

// syncDir makes a rename or removal durable where the platform allows it
// (not on Windows, where directories cannot be synced); it is best effort.
func (s *FileStore) syncDir() {
	if d, err := os.Open(s.dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// Delete implements [Store].
func (s *FileStore) Delete(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := os.Remove(filepath.Join(s.dir, fileName(id)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("memory: file store: %w", err)
	}
	if err == nil {
		s.syncDir()
	}
	return nil
}

// IDs implements [Store]. The ids are sorted. Files that are not the
// store's (including leftover temporary files) are ignored.
func (s *FileStore) IDs(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("memory: file store: %w", err)
	}
	var ids []string
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasSuffix(name, fileSuffix) {
			continue
		}
		switch {
		case strings.HasPrefix(name, b32Prefix):
			id, err := fileNameEncoding.DecodeString(strings.TrimSuffix(strings.TrimPrefix(name, b32Prefix), fileSuffix))
			if err != nil || fileName(string(id)) != name {
				continue
			}
			ids = append(ids, string(id))
		case strings.HasPrefix(name, hashPrefix):
			if !isHashName(name) {
				continue
			}
			f, err := s.read(name)
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted since ReadDir
			}
			if err != nil {
				return nil, err
			}
			if fileName(f.ID) == name {
				ids = append(ids, f.ID)
			}
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// isHashName reports whether name has the form of a hashed file name.
func isHashName(name string) bool {
	h := strings.TrimSuffix(strings.TrimPrefix(name, hashPrefix), fileSuffix)
	if len(h) != 2*sha256.Size {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}
