package skills_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/chatscopes/chatgen/runtime/knowledge"
	"github.com/chatscopes/chatgen/runtime/skills"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

const forging = "---\nname: forging\ndescription: Forge a blade. Use when the user wants a sword or a knife.\nlicense: MIT\nmetadata:\n  author: ana\n---\n# Forging\n\nHeat the steel to orange.\n"

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, data := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadFS(t *testing.T) {
	fsys := fstest.MapFS{
		"forging/SKILL.md":            {Data: []byte(forging)},
		"forging/refs/steels.md":      {Data: []byte("1095, 5160")},
		"forging/scripts/quench.sh":   {Data: []byte("echo oil")},
		"fletching/SKILL.md":          {Data: []byte("---\nname: fletching\ndescription: Fletch arrows.\n---\nUse goose feathers.")},
		"README.md":                   {Data: []byte("not a skill")},
		"fletching/nested/x/SKILL.md": {Data: []byte("---\nname: x\ndescription: A nested skill.\n---\n")},
	}
	set, err := skills.Load(t.Context(), fsys, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range set.Skills() {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "fletching,forging,x" {
		t.Fatalf("skills %v", names)
	}
	f := set.Skill("forging")
	if f.Description != "Forge a blade. Use when the user wants a sword or a knife." || f.Body != "# Forging\n\nHeat the steel to orange." || f.License != "MIT" || f.Metadata["author"] != "ana" {
		t.Fatalf("forging %+v", f)
	}
	if got := strings.Join(f.Resources(), ","); got != "refs/steels.md,scripts/quench.sh" {
		t.Fatalf("resources %s", got)
	}
	if got := set.Skill("fletching").Resources(); len(got) != 0 {
		t.Fatalf("fletching's resources %v: the nested skill's files are its own", got)
	}
	if set.Skill("nope") != nil {
		t.Fatal("unknown skill found")
	}
}

// Malformed front matter fails the load with ErrInvalid, naming the file
// and, when the parser tells it, the line.
func TestLoadMalformed(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"no front matter", "# Forging\n", "forging/SKILL.md:1: no front matter"},
		{"unclosed", "---\nname: forging\ndescription: x\n", "forging/SKILL.md: the front matter has no closing line"},
		{"bad yaml", "---\nname: forging\ndescription: [unclosed\n---\nbody", "front matter: did not find expected"},
		{"bad type", "---\nname: forging\ndescription: x\nmetadata: [1, 2]\n---\n", "forging/SKILL.md:4: front matter:"},
		{"no name", "---\ndescription: x\n---\n", "no name"},
		{"no description", "---\nname: forging\n---\n", "no description"},
		{"upper case", "---\nname: Forging\ndescription: x\n---\n", "only lowercase letters"},
		{"double hyphen", "---\nname: for--ging\ndescription: x\n---\n", "two hyphens"},
		{"leading hyphen", "---\nname: -forging\ndescription: x\n---\n", "starts or ends with a hyphen"},
		{"too long", "---\nname: " + strings.Repeat("a", 65) + "\ndescription: x\n---\n", "more than 64"},
		{"not the directory", "---\nname: smithing\ndescription: x\n---\n", `is not the directory's, "forging"`},
		{"long description", "---\nname: forging\ndescription: " + strings.Repeat("d", 1025) + "\n---\n", "more than 1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := skills.Load(t.Context(), fstest.MapFS{"forging/SKILL.md": {Data: []byte(tc.data)}}, nil)
			if !errors.Is(err, skills.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrInvalid with %q", err, tc.want)
			}
		})
	}
}

// A symbolic link out of the folder is skipped, and what it points to is
// never read; a link inside is followed on disk.
func TestLoadPathSymlinkOut(t *testing.T) {
	outside := t.TempDir()
	write(t, outside, map[string]string{"secret.txt": "the password", "evil/SKILL.md": "---\nname: evil\ndescription: x\n---\n"})
	root := t.TempDir()
	write(t, root, map[string]string{"forging/SKILL.md": forging, "forging/steels.md": "1095"})
	for link, target := range map[string]string{
		"forging/secret.txt": filepath.Join(outside, "secret.txt"),
		"forging/up.txt":     "../../" + filepath.Base(outside) + "/secret.txt",
		"evil":               filepath.Join(outside, "evil"),
		"forging/inside.md":  "steels.md",
	} {
		if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	var log bytes.Buffer
	set, err := skills.LoadPath(t.Context(), root, &skills.LoadOptions{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if set.Skill("evil") != nil {
		t.Fatal("a skill outside the folder was loaded")
	}
	got := strings.Join(set.Skill("forging").Resources(), ",")
	if got != "inside.md,steels.md" {
		t.Fatalf("resources %s", got)
	}
	for _, s := range set.Skills() {
		for _, r := range s.Resources() {
			if b, _ := s.Resource(r); strings.Contains(string(b), "password") {
				t.Fatalf("%s read from outside the folder", r)
			}
		}
	}
	if !strings.Contains(log.String(), "secret.txt") {
		t.Fatalf("the skipped link was not logged: %s", log.String())
	}
	// Through an fs.FS, every link is skipped.
	set, err = skills.Load(t.Context(), os.DirFS(root), &skills.LoadOptions{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(set.Skill("forging").Resources(), ","); got != "steels.md" || set.Skill("evil") != nil {
		t.Fatalf("resources through DirFS %s", got)
	}
}

// A 50 MB resource fails the load by its size, before it is read.
func TestLoad50MBResource(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{"forging/SKILL.md": forging})
	f, err := os.Create(filepath.Join(root, "forging", "huge.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(50 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = skills.LoadPath(t.Context(), root, nil)
	if !errors.Is(err, knowledge.ErrTooLarge) || !strings.Contains(err.Error(), "huge.bin") {
		t.Fatalf("error %v, want ErrTooLarge naming huge.bin", err)
	}
	// A raised limit reads it.
	set, err := skills.LoadPath(t.Context(), root, &skills.LoadOptions{MaxFileBytes: 64 << 20, MaxTotalBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := set.Skill("forging").Resource("huge.bin"); len(b) != 50<<20 {
		t.Fatalf("read %d bytes", len(b))
	}
}

func TestLoadCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := skills.Load(ctx, fstest.MapFS{"forging/SKILL.md": {Data: []byte(forging)}}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v", err)
	}
}

func TestLoadDuplicateName(t *testing.T) {
	_, err := skills.Load(t.Context(), fstest.MapFS{
		"a/forging/SKILL.md": {Data: []byte(forging)},
		"b/forging/SKILL.md": {Data: []byte(forging)},
	}, nil)
	if !errors.Is(err, skills.ErrInvalid) || !strings.Contains(err.Error(), "both called") {
		t.Fatalf("error %v", err)
	}
}
