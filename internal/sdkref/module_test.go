package sdkref_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSDKModuleImportsCleanly is what an importer of the Go SDK sees: a
// scratch module outside this repository imports sdk/go/emq (through a
// replace, as it is not published here), runs go mod tidy and builds. Its
// go.sum may hold only the SDK module's own runtime dependencies — none of
// the generator's (yaml, jennifer, diff and schema libraries) — and its go
// directive is not raised above the SDK's.
func TestSDKModuleImportsCleanly(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("the go command is needed: install Go 1.25 or later")
	}
	sdk, err := filepath.Abs("../../sdk/go")
	if err != nil {
		t.Fatal(err)
	}
	sdkMod := parseMod(t, filepath.Join(sdk, "go.mod"))
	root := parseMod(t, "../../go.mod")

	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/app\n\ngo "+sdkMod.Go+"\n\nrequire "+sdkMod.Module.Path+" v0.0.0\n\nreplace "+sdkMod.Module.Path+" => "+sdk+"\n")
	write("main.go", `package main

import (
	"context"
	"fmt"

	"`+sdkMod.Module.Path+`/emq"
)

func main() {
	c, err := emq.Connect(context.Background(), emq.Options{Addr: "127.0.0.1:6379"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
}
`)
	run := func(args ...string) {
		cmd := exec.Command(goBin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("mod", "tidy")
	run("build", "./...")

	// What the SDK module itself records (its requirements and, through
	// the pruned module graph, their go.mod files) is all an importer may
	// get; the generator's own requirements must not come along.
	allowed := map[string]bool{}
	own, err := os.ReadFile(filepath.Join(sdk, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(own)), "\n") {
		allowed[strings.Fields(line)[0]] = true
	}
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(sum)), "\n") {
		path := strings.Fields(line)[0]
		seen++
		if !allowed[path] {
			t.Errorf("the importer's go.sum holds %s, which the SDK module's go.sum does not", path)
		}
	}
	if seen == 0 {
		t.Fatal("the importer's go.sum is empty: the SDK's runtime dependency (rueidis) is missing")
	}
	for _, generator := range []string{"gopkg.in/yaml.v3", "github.com/dave/jennifer", "github.com/hexops/gotextdiff"} {
		if strings.Contains(string(sum), generator+" ") {
			t.Errorf("the importer's go.sum holds the generator's %s", generator)
		}
	}
	for _, r := range root.Require {
		if allowed[r.Path] {
			continue
		}
		if strings.Contains(string(sum), r.Path+" ") {
			t.Errorf("the importer's go.sum holds the generator's dependency %s", r.Path)
		}
	}
	got := parseMod(t, filepath.Join(dir, "go.mod"))
	if got.Go != sdkMod.Go {
		t.Errorf("go mod tidy raised the importer's go directive to %s (the SDK's is %s)", got.Go, sdkMod.Go)
	}
}

// goMod is what go mod edit -json says of a go.mod file.
type goMod struct {
	Module  struct{ Path string }
	Go      string
	Require []struct{ Path string }
}

func parseMod(t *testing.T, path string) goMod {
	t.Helper()
	out, err := exec.Command("go", "mod", "edit", "-json", path).Output()
	if err != nil {
		t.Fatalf("go mod edit -json %s: %v", path, err)
	}
	var m goMod
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
