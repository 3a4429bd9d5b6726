package gomod

import (
	"go/version"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// modules are the repository's Go modules, relative to its root.
var modules = []string{".", "sdk/go", "dashboard", "bench", "exporters/otel", "exporters/prometheus"}

// TestGoLineIsTheLowestThatBuilds: each module's go line is the highest go
// line of its dependencies, no higher (users on an older Go can build it)
// and no lower (go mod tidy would raise it).
func TestGoLineIsTheLowestThatBuilds(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range modules {
		t.Run(strings.ReplaceAll(m, "/", "_"), func(t *testing.T) {
			cmd := exec.Command("go", "list", "-mod=mod", "-m", "-f", "{{if .Main}}main {{end}}{{.GoVersion}}", "all")
			cmd.Dir = filepath.Join(root, m)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("go list in %s: %v", m, err)
			}
			var own, need string
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if v, ok := strings.CutPrefix(line, "main "); ok {
					own = v
					continue
				}
				if line != "" && (need == "" || version.Compare("go"+line, "go"+need) > 0) {
					need = line
				}
			}
			if own == "" {
				t.Fatalf("%s: no main module in go list's answer:\n%s", m, out)
			}
			if need != "" && own != need {
				t.Errorf("%s/go.mod says go %s; its dependencies need go %s, so the lowest go line that builds it is %s (go mod edit -go=%s && go mod tidy)", m, own, need, need, need)
			}
		})
	}
}
