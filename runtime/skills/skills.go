// Package skills gives AI services skills in the Agent Skills format: a
// folder of skills, each a directory holding a SKILL.md — YAML front
// matter with a name and a description, then a markdown body of
// instructions — and optional resource files.
//
// A [Toolbox] made from a [Set] is an [ai.ToolSource]: the skills' names
// and descriptions are in the description of its load_skill tool, part of
// the cache-stable tools block; load_skill returns a skill's body and
// lists its resources, read_skill_resource returns one. A loaded skill
// stays loaded for its chat scope's life, in a durable chat-scoped bean.
// Tools gated by a skill are declared from the start and refused until
// the skill is loaded, so loading one never changes the tools block.
//
// Skills are read with [knowledge.ReadFiles] (or [knowledge.ReadFilesPath]
// for a folder on disk): regular files only, never outside the folder,
// within size limits, cancellable.
package skills

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/chatscopes/chatgen/runtime/knowledge"
)

// The limits of a skill, as the Agent Skills specification sets them, and
// the default limits of [Load].
const (
	// MaxName is the most bytes a skill's name may hold.
	MaxName = 64
	// MaxDescription is the most bytes a skill's description may hold.
	MaxDescription = 1024
	// MaxCompatibility is the most bytes the compatibility field may hold.
	MaxCompatibility = 500
	// DefaultMaxFileBytes is the most a file of a skill (its SKILL.md or a
	// resource) may hold unless [LoadOptions] say otherwise: 1 MiB.
	DefaultMaxFileBytes int64 = 1 << 20
	// DefaultMaxTotalBytes is the most a folder of skills may hold
	// together unless [LoadOptions] say otherwise: 32 MiB.
	DefaultMaxTotalBytes int64 = 32 << 20
)

// FileName is the name of a skill's instructions file.
const FileName = "SKILL.md"

// ErrInvalid is matched (errors.Is) by the error of [Load] for a skill
// whose SKILL.md is malformed: no front matter, YAML that does not parse,
// a name or description missing or invalid. The error names the file and,
// when the YAML parser tells it, the line ("lore/SKILL.md:3: ...").
var ErrInvalid = errors.New("skills: invalid skill")

// A Skill is one skill of a [Set].
type Skill struct {
	// Name is the skill's name: 1 to 64 lowercase letters, digits and
	// hyphens, neither first nor last nor two in a row, the same as its
	// directory's name.
	Name string
	// Description says what the skill does and when to use it.
	Description string
	// License, Compatibility, Metadata and AllowedTools are the optional
	// fields of the front matter, as written.
	License       string
	Compatibility string
	Metadata      map[string]string
	AllowedTools  string
	// Body is the markdown after the front matter: the instructions.
	Body string
	// Dir is the skill's directory, slash-separated from the folder's root.
	Dir string

	resources map[string][]byte // by path from Dir
}

// Resources returns the paths of the skill's resource files, from its
// directory, in lexical order.
func (s *Skill) Resources() []string {
	out := make([]string, 0, len(s.resources))
	for p := range s.resources {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Resource returns the resource file at p, a slash-separated path from
// the skill's directory; false when there is none.
func (s *Skill) Resource(p string) ([]byte, bool) {
	b, ok := s.resources[p]
	return b, ok
}

// A Set is the skills of a folder, by name. It is read-only once loaded and
// safe for concurrent use.
type Set struct {
	skills []*Skill // by name
}

// Skills returns the set's skills, by name.
func (s *Set) Skills() []*Skill { return slices.Clone(s.skills) }

// Skill returns the skill called name, or nil.
func (s *Set) Skill(name string) *Skill {
	i, ok := slices.BinarySearchFunc(s.skills, name, func(k *Skill, n string) int { return strings.Compare(k.Name, n) })
	if !ok {
		return nil
	}
	return s.skills[i]
}

// LoadOptions configure [Load] and [LoadPath]; nil and the zero value read
// within the default limits.
type LoadOptions struct {
	// MaxFileBytes is the most a file may hold; 0 means
	// DefaultMaxFileBytes. A larger file fails the load with an error
	// matching knowledge.ErrTooLarge, naming it; it is not read.
	MaxFileBytes int64
	// MaxTotalBytes is the most the files may hold together; 0 means
	// DefaultMaxTotalBytes.
	MaxTotalBytes int64
	// Logger receives a warning for each file skipped (a symbolic link,
	// one leaving the folder, an irregular file); nil means slog.Default().
	Logger *slog.Logger
}

func (o *LoadOptions) read() *knowledge.ReadOptions {
	r := &knowledge.ReadOptions{MaxFileBytes: DefaultMaxFileBytes, MaxTotalBytes: DefaultMaxTotalBytes}
	if o != nil {
		if o.MaxFileBytes != 0 {
			r.MaxFileBytes = o.MaxFileBytes
		}
		if o.MaxTotalBytes != 0 {
			r.MaxTotalBytes = o.MaxTotalBytes
		}
		r.Logger = o.Logger
	}
	return r
}

// Load reads the skills of fsys (an embed.FS works): every directory
// holding a SKILL.md is a skill, and the other files under it, outside any
// deeper skill, are its resources. It reads through knowledge.ReadFiles,
// so symbolic links are skipped and sizes bounded; a malformed SKILL.md
// fails it with an error matching [ErrInvalid].
func Load(ctx context.Context, fsys fs.FS, opts *LoadOptions) (*Set, error) {
	files, err := knowledge.ReadFiles(ctx, fsys, opts.read())
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	return build(files)
}

// LoadPath is [Load] for the folder dir on disk, read with
// knowledge.ReadFilesPath: nothing outside dir is read, a link that stays
// inside it is followed.
func LoadPath(ctx context.Context, dir string, opts *LoadOptions) (*Set, error) {
	files, err := knowledge.ReadFilesPath(ctx, dir, opts.read())
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	return build(files)
}

func build(files []knowledge.File) (*Set, error) {
	dirs := map[string]*Skill{}
	for _, f := range files {
		if path.Base(f.Path) != FileName {
			continue
		}
		s, err := parse(f.Path, f.Data)
		if err != nil {
			return nil, err
		}
		dirs[s.Dir] = s
	}
	set := &Set{}
	for _, s := range dirs {
		set.skills = append(set.skills, s)
	}
	slices.SortFunc(set.skills, func(a, b *Skill) int { return strings.Compare(a.Name, b.Name) })
	for i := 1; i < len(set.skills); i++ {
		if set.skills[i].Name == set.skills[i-1].Name {
			return nil, fmt.Errorf("%w: %s/%s and %s/%s are both called %q", ErrInvalid, set.skills[i-1].Dir, FileName, set.skills[i].Dir, FileName, set.skills[i].Name)
		}
	}
	for _, f := range files {
		if path.Base(f.Path) == FileName && dirs[path.Dir(f.Path)] != nil {
			continue
		}
		// The resource belongs to the deepest skill directory above it.
		for d := path.Dir(f.Path); ; d = path.Dir(d) {
			if s := dirs[d]; s != nil {
				rel := strings.TrimPrefix(f.Path, d+"/")
				if d == "." {
					rel = f.Path
				}
				s.resources[rel] = f.Data
				break
			}
			if d == "." {
				break
			}
		}
	}
	return set, nil
}

type frontMatter struct {
	Name          string            `yaml:"name"`
	Description   string            `yaml:"description"`
	License       string            `yaml:"license"`
	Compatibility string            `yaml:"compatibility"`
	Metadata      map[string]string `yaml:"metadata"`
	AllowedTools  string            `yaml:"allowed-tools"`
}

var yamlLine = regexp.MustCompile(`^yaml: (?:unmarshal errors:\n\s*)?line (\d+): `)

// parse parses the SKILL.md at p.
func parse(p string, data []byte) (*Skill, error) {
	bad := func(line int, format string, a ...any) error {
		where := p
		if line > 0 {
			where += ":" + strconv.Itoa(line)
		}
		return fmt.Errorf("%w: %s: %s", ErrInvalid, where, fmt.Sprintf(format, a...))
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		return nil, bad(1, "no front matter: the file must start with a line \"---\"")
	}
	var yml, body string
	if strings.HasPrefix(rest, "---\n") || rest == "---" {
		yml, body = "", strings.TrimPrefix(strings.TrimPrefix(rest, "---"), "\n")
	} else if i := strings.Index(rest, "\n---\n"); i >= 0 {
		yml, body = rest[:i+1], rest[i+5:]
	} else if strings.HasSuffix(rest, "\n---") {
		yml, body = rest[:len(rest)-3], ""
	} else {
		return nil, bad(0, "the front matter has no closing line \"---\"")
	}
	var fm frontMatter
	if err := yaml.Unmarshal([]byte(yml), &fm); err != nil {
		msg := err.Error()
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			n, _ := strconv.Atoi(m[1])
			return nil, bad(n+1, "front matter: %s", msg[len(m[0]):])
		}
		return nil, bad(0, "front matter: %s", strings.TrimPrefix(msg, "yaml: "))
	}
	dir := path.Dir(p)
	s := &Skill{
		Name: fm.Name, Description: strings.TrimSpace(fm.Description),
		License: fm.License, Compatibility: fm.Compatibility, Metadata: fm.Metadata, AllowedTools: fm.AllowedTools,
		Body: strings.TrimSpace(body), Dir: dir, resources: map[string][]byte{},
	}
	if err := checkName(s.Name); err != nil {
		return nil, bad(0, "%v", err)
	}
	if base := path.Base(dir); dir != "." && base != s.Name {
		return nil, bad(0, "the name %q is not the directory's, %q", s.Name, base)
	}
	switch {
	case s.Description == "":
		return nil, bad(0, "no description")
	case len(s.Description) > MaxDescription:
		return nil, bad(0, "the description is %d bytes long, more than %d", len(s.Description), MaxDescription)
	case len(s.Compatibility) > MaxCompatibility:
		return nil, bad(0, "compatibility is %d bytes long, more than %d", len(s.Compatibility), MaxCompatibility)
	}
	return s, nil
}

// checkName checks a skill's name as the Agent Skills specification says.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("no name")
	case len(name) > MaxName:
		return fmt.Errorf("the name is %d bytes long, more than %d", len(name), MaxName)
	case name[0] == '-' || name[len(name)-1] == '-':
		return fmt.Errorf("the name %q starts or ends with a hyphen", name)
	case strings.Contains(name, "--"):
		return fmt.Errorf("the name %q has two hyphens in a row", name)
	}
	for _, r := range name {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return fmt.Errorf("the name %q has %q: only lowercase letters, digits and hyphens are allowed", name, r)
		}
	}
	return nil
}
