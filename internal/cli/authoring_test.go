package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// guideBlocks reads docs/authoring.md's fenced blocks tagged
// "yaml authoring:NAME", by NAME.
func guideBlocks(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "authoring.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range regexp.MustCompile("(?s)```yaml authoring:(\\w+)\\n(.*?)```").FindAllStringSubmatch(string(data), -1) {
		out[m[1]] = m[2]
	}
	for _, name := range []string{"script", "history", "probe", "scenario"} {
		if out[name] == "" {
			t.Fatalf("docs/authoring.md has no ```yaml authoring:%s block", name)
		}
	}
	return out
}

// TestAuthoringGuide follows docs/authoring.md on a copy of the newest
// frozen release's manifest, the frozen releases and the scenarios (so
// that work in progress on protocol.yaml never changes what the guide
// shows): the script and the minor alone validate and are refused with
// WITNESS_SCRIPT_UNCOVERED; with the probe step and the scenario the gate
// passes as the minor the guide shows, and gen's next step names the
// freeze. The guide's version is the minor after the newest release.
func TestAuthoringGuide(t *testing.T) {
	t.Parallel()
	b := guideBlocks(t)
	data, err := os.ReadFile(newestRelease(t))
	if err != nil {
		t.Fatal(err)
	}
	newest := strings.TrimSuffix(filepath.Base(newestRelease(t)), ".yaml")
	var major, minor int
	if _, err := fmt.Sscanf(newest, "%d.%d.", &major, &minor); err != nil {
		t.Fatalf("the newest release %q: %v", newest, err)
	}
	next := fmt.Sprintf("%d.%d.0", major, minor+1)
	if !strings.Contains(b["history"], "version: "+next+"\n") {
		t.Fatalf("docs/authoring.md adds a version other than %s, the minor after the newest release %s: update the guide (its versions) to %s", next, newest, next)
	}
	root := t.TempDir()
	for _, d := range []string{"golden/releases", "conformance/scenarios"} {
		if err := os.CopyFS(filepath.Join(root, d), os.DirFS(filepath.Join("..", "..", d))); err != nil {
			t.Fatal(err)
		}
	}
	m := string(data)
	at := strings.Index(m, "\n# ---------------------------------------------------------------------------\n# 8. Governance")
	if at < 0 {
		t.Fatal("the manifest has no governance section after its scripts")
	}
	m = m[:at] + "\n" + b["script"] + m[at:]
	m = strings.Replace(m, "\nversion: "+newest+"\n", "\nversion: "+next+"\n", 1)
	m = strings.Replace(m, "status: current", "status: released", 1)
	m = strings.TrimRight(m, "\n") + "\n" + b["history"]
	file := filepath.Join(root, "protocol.yaml")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(m)
	if code, out, errs := run(t, "validate", file); code != 0 {
		t.Fatalf("the guide's script does not validate: %d\n%s%s", code, out, errs)
	}
	check := func() (int, string) {
		t.Helper()
		code, out, errs := run(t, "check", "-witness=off", "-category", "wire", "-manifest", file, "-root", root)
		return code, out + errs
	}
	code, out := check()
	if code == 0 || !strings.Contains(out, "WITNESS_SCRIPT_UNCOVERED scripts[lock_owner]") || !strings.Contains(out, "a probe step that runs it") {
		t.Fatalf("check without a probe step and a scenario = %d; want WITNESS_SCRIPT_UNCOVERED saying what to add\n%s", code, out)
	}
	probeEnd := "          command: [HEXISTS, \"${reserve:locks}\", \"probe:${queue}\"]\n          expect: {int: 0}\n"
	if strings.Count(m, probeEnd) != 1 {
		t.Fatal("the locks probe's last step moved: update the guide and this test")
	}
	m = strings.Replace(m, probeEnd, probeEnd+b["probe"], 1)
	write(m)
	if err := os.WriteFile(filepath.Join(root, "conformance", "scenarios", "locks.yaml"), []byte(b["scenario"]), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out = check()
	for _, want := range []string{"minor PROBE_STEP_ADDED reserve[locks].probe.steps[", "minor SCRIPT_ADDED scripts[lock_owner]", newest + " → " + next, "required minor, declared minor"} {
		if !strings.Contains(out, want) {
			t.Errorf("check with the probe step and the scenario lacks %q", want)
		}
	}
	if code != 0 || strings.Contains(out, "WITNESS_SCRIPT_UNCOVERED") {
		t.Errorf("check with the probe step and the scenario = %d\n%s", code, out)
	}
	if code, out, errs := run(t, "gen", "-manifest", file, "-root", root); code != 0 || !strings.Contains(out, "wrote sdk/lua/lock_owner.lua") || !strings.Contains(out, "then freeze "+next+" with: go run ./cmd/emqgen release") {
		t.Errorf("gen on the guide's manifest = %d\n%s%s", code, out, errs)
	}
}
