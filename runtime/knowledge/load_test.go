package knowledge_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

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
	chunks, err := knowledge.LoadDir(ctx, fsys, knowledge.LoadOptions{ChunkSize: 200, ChunkOverlap: 40})
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

	again, err := knowledge.LoadDir(ctx, fsys, knowledge.LoadOptions{ChunkSize: 200, ChunkOverlap: 40})
	if err != nil || !slices.Equal(again, chunks) {
		t.Errorf("loading twice gives other chunks (%v)", err)
	}
	ix, err := knowledge.New()
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Add(ctx, chunks...); err != nil {
		t.Errorf("the loaded chunks do not add: %v", err)
	}
}

func TestLoadDirErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := knowledge.LoadDir(ctx, fstest.MapFS{"a.png": {}}, knowledge.LoadOptions{}); err == nil {
		t.Error("a directory without documents gives no error")
	}
	if _, err := knowledge.LoadDir(ctx, fstest.MapFS{"a.md": {Data: []byte{0xff, 0xfe}}}, knowledge.LoadOptions{}); err == nil || !strings.Contains(err.Error(), "a.md") {
		t.Errorf("a document that is not UTF-8: %v", err)
	}
	for _, o := range []knowledge.LoadOptions{{ChunkSize: -1}, {ChunkSize: 100, ChunkOverlap: 100}} {
		if _, err := knowledge.LoadDir(ctx, fstest.MapFS{"a.md": {Data: []byte("x")}}, o); err == nil {
			t.Errorf("options %+v give no error", o)
		}
	}
	if _, err := knowledge.LoadDir(ctx, os.DirFS(t.TempDir()+"/missing"), knowledge.LoadOptions{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing directory: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := knowledge.LoadDir(cancelled, fstest.MapFS{"a.md": {Data: []byte("x")}}, knowledge.LoadOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestIndexDirErrors(t *testing.T) {
	ctx := context.Background()
	docs := fstest.MapFS{"a.md": {Data: []byte("# A\n\nIron.")}}
	if _, err := knowledge.IndexDir(ctx, docs, knowledge.LoadOptions{}, knowledge.WithBM25(-1, 0)); err == nil {
		t.Error("a bad option gives no error")
	}
	if _, err := knowledge.IndexDir(ctx, fstest.MapFS{}, knowledge.LoadOptions{}); err == nil {
		t.Error("no documents gives no error")
	}
	e, srv := llmtestEmbedder(t)
	srv.Close()
	if _, err := knowledge.IndexDir(ctx, docs, knowledge.LoadOptions{}, knowledge.WithEmbedder(e)); err == nil {
		t.Error("a failing embedder gives no error")
	}
}
