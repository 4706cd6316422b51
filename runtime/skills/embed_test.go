package skills_test

import (
	"embed"
	"io/fs"
	"testing"

	"github.com/chatscopes/chatgen/runtime/skills"
)

//go:embed testdata/skills
var embedded embed.FS

// Skills embedded with embed.FS load like a folder on disk, and the same.
func TestLoadEmbedded(t *testing.T) {
	sub, err := fs.Sub(embedded, "testdata/skills")
	if err != nil {
		t.Fatal(err)
	}
	fromEmbed, err := skills.Load(t.Context(), sub, nil)
	if err != nil {
		t.Fatal(err)
	}
	fromDisk, err := skills.LoadPath(t.Context(), "testdata/skills", nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b := fromEmbed.Skill("forging"), fromDisk.Skill("forging")
	if a == nil || b == nil || a.Body != b.Body || a.Description != b.Description || len(a.Resources()) != 1 || a.Resources()[0] != "refs/steels.md" {
		t.Fatalf("embedded %+v, on disk %+v", a, b)
	}
	if data, ok := a.Resource("refs/steels.md"); !ok || string(data) != "1095 for knives, 5160 for swords.\n" {
		t.Fatalf("resource %q", data)
	}
}
