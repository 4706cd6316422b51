package skills_test

import (
	"context"
	"fmt"
	"testing/fstest"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/skills"
)

// A folder of skills (an embed.FS in an application) given to a service
// as a tool source.
func Example() {
	folder := fstest.MapFS{
		"forging/SKILL.md":       {Data: []byte("---\nname: forging\ndescription: Forge a blade. Use for swords and knives.\n---\nHeat the steel to orange.\n")},
		"forging/refs/steels.md": {Data: []byte("1095 for knives.")},
	}
	set, err := skills.Load(context.Background(), folder, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	tb, err := skills.New(set, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := &ai.Config{ToolSources: []ai.ToolSource{tb}}
	for _, t := range tb.ListTools() {
		fmt.Println(t.Name)
	}
	fmt.Println(set.Skill("forging").Resources(), len(cfg.ToolSources))
	// Output:
	// load_skill
	// read_skill_resource
	// [refs/steels.md] 1
}
