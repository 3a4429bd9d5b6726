package targets_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestTargetsImportNoOtherTarget draws the generator's import graph with go
// list: a target under gen/targets imports no other target and never the
// registry, and no target, nor the model, bundle or contract it is fed,
// reads YAML on its own or imports an SDK runtime. Adding a target is a
// folder and one line in All, never an edge between targets.
func TestTargetsImportNoOtherTarget(t *testing.T) {
	const module = "github.com/echomq/echomq/"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, module+"gen/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	targets := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg, deps := f[0], f[1:]
		rel := strings.TrimPrefix(pkg, module)
		isTarget := strings.HasPrefix(rel, "gen/targets/") && strings.Count(rel, "/") == 2
		if isTarget {
			targets++
		}
		for _, d := range deps {
			drel := strings.TrimPrefix(d, module)
			if isTarget && strings.HasPrefix(drel, "gen/targets") && drel != rel {
				t.Errorf("target %s imports %s", rel, drel)
			}
			if (isTarget || rel == "gen/model" || rel == "gen/bundle" || rel == "gen/target") && (strings.HasPrefix(drel, "sdk/") || strings.HasPrefix(d, "github.com/redis/")) {
				t.Errorf("%s imports the runtime package %s", rel, d)
			}
			if isTarget && (d == "gopkg.in/yaml.v3" && !strings.Contains(line, module+"gen/manifest")) {
				t.Errorf("target %s reads YAML itself", rel)
			}
		}
	}
	if targets < 5 {
		t.Fatalf("go list saw %d targets under gen/targets; want at least go, ts, lua, docs, conformance", targets)
	}
}
