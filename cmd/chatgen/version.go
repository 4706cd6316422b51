package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/chatscopes/chatgen/gen"
)

// generatedCodeVersion is the version of the generated code this chatgen
// writes: its output references chatimpl.SupportPackageIsVersion<N> with this
// N, so it compiles only against a runtime that supports it.
const generatedCodeVersion = gen.GeneratedCodeVersion

// version describes this build of chatgen: the module version it was
// built as ("v1.2.3" when installed with go install or go get -tool,
// "(devel)" from a checkout), the VCS revision when the build recorded
// one, and the generated-code version.
func version(info *debug.BuildInfo, ok bool) string {
	var b strings.Builder
	b.WriteString("chatgen ")
	if !ok {
		b.WriteString("(unknown)")
	} else {
		v := info.Main.Version
		if v == "" {
			v = "(devel)"
		}
		b.WriteString(v)
		var rev, modified string
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if rev != "" {
			if len(rev) > 12 {
				rev = rev[:12]
			}
			b.WriteString(" " + rev)
			if modified == "true" {
				b.WriteString("+dirty")
			}
		}
	}
	fmt.Fprintf(&b, " (generated code version %d)", generatedCodeVersion)
	return b.String()
}
