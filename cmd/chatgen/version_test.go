package main

import (
	"bytes"
	"context"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

func TestVersionFlag(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-version"}, &stdout, &stderr); code != 0 {
		t.Fatalf("chatgen -version: exit %d, stderr %q", code, stderr.String())
	}
	out := stdout.String()
	if !strings.HasPrefix(out, "chatgen ") || !strings.Contains(out, "generated code version 6") {
		t.Errorf("chatgen -version printed %q", out)
	}
}

func TestVersionString(t *testing.T) {
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, "chatgen (unknown) (generated code version 6)"},
		{"installed", &debug.BuildInfo{Main: debug.Module{Version: "v0.3.0"}}, true, "chatgen v0.3.0 (generated code version 6)"},
		{"checkout", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "43bfdf8a0123456789"}, {Key: "vcs.modified", Value: "true"},
		}}, true, "chatgen (devel) 43bfdf8a0123+dirty (generated code version 6)"},
	} {
		if got := version(tc.info, tc.ok); got != tc.want {
			t.Errorf("%s: version() = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The generated code's version and the runtime's support constant move
// together: generated files reference chatimpl.SupportPackageIsVersion<N>.
func TestGeneratedCodeVersionIsSupported(t *testing.T) {
	if generatedCodeVersion != 6 || !chatimpl.SupportPackageIsVersion6 {
		t.Fatalf("generatedCodeVersion %d has no matching chatimpl.SupportPackageIsVersion constant", generatedCodeVersion)
	}
}
