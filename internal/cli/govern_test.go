package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/govern/compat"
	"github.com/echomq/echomq/govern/release"
	"github.com/echomq/echomq/internal/cli"
	"github.com/echomq/echomq/internal/golden"
)

// frozen is the newest frozen release: the baseline check uses by default.
func frozen(t *testing.T) release.Release {
	t.Helper()
	r, err := release.Newest("../..")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// bumped returns the baseline's version bumped: "patch", "minor", "major",
// or "same".
func bumped(t *testing.T, how string) string {
	v := frozen(t).Version
	switch how {
	case "patch":
		v.Patch++
	case "minor":
		v.Minor, v.Patch = v.Minor+1, 0
	case "major":
		v = model.Semver{Major: v.Major + 1}
	case "down":
		v = model.Semver{Major: v.Major - 1, Minor: 9}
	}
	return v.String()
}

// branch writes a copy of the newest frozen release as a pull request
// would change it: edit applied, version set and its history entry
// recorded.
func branch(t *testing.T, version string, edit func(string) string) string {
	t.Helper()
	data, err := os.ReadFile(frozen(t).Manifest)
	if err != nil {
		t.Fatal(err)
	}
	s := edit(string(data))
	cur := between(s, "\nversion: ", "\n")
	if version != cur {
		s = strings.Replace(s, "\nversion: "+cur+"\n", "\nversion: "+version+"\n", 1)
		s = strings.Replace(s, "    - version: "+cur+"\n      status: current\n", "    - version: "+cur+"\n      status: released\n", 1)
		s = strings.TrimRight(s, "\n") + "\n    - version: " + version + "\n      status: current\n      summary: The change under review.\n"
	}
	file := filepath.Join(t.TempDir(), "protocol.yaml")
	if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// onMain writes a copy of the committed manifest as a pull request on
// today's main would change it: edit applied, version and history kept.
// While the manifest is ahead of the newest frozen release, the witness
// can build today's hand-written SDK only on a manifest that has what
// main's has (the SDK calls what main's manifest generates), so a check
// that runs the witness branches here rather than from the release.
// findingsOf returns the rules and paths of a JSON check report, sorted.
func findingsOf(t *testing.T, out string) string {
	t.Helper()
	var rep compat.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("check -format json: %v\n%s", err, out)
	}
	var fs []string
	for _, f := range rep.Changes {
		fs = append(fs, f.Rule+" "+f.Path)
	}
	sort.Strings(fs)
	return fmt.Sprint(fs)
}

func onMain(t *testing.T, edit func(string) string) string {
	t.Helper()
	data, err := os.ReadFile("../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "protocol.yaml")
	if err := os.WriteFile(file, []byte(edit(string(data))), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func between(s, a, b string) string {
	_, rest, _ := strings.Cut(s, a)
	v, _, _ := strings.Cut(rest, b)
	return v
}

func replaceOnce(t *testing.T, old, new string) func(string) string {
	return func(s string) string {
		if strings.Count(s, old) != 1 {
			t.Fatalf("%q does not occur exactly once in the manifest", old)
		}
		return strings.Replace(s, old, new, 1)
	}
}

// The reviewer's three cases from the governance issue, through the real
// command against the committed frozen releases.
func TestReviewerScenarios(t *testing.T) {
	t.Parallel()
	addKeyType := replaceOnce(t, "    - {name: row, class: job, redis: hash, summary: The job row.}\n",
		"    - {name: row, class: job, redis: hash, summary: The job row.}\n    - {name: audit, class: queue, redis: stream, summary: An audit trail of the queue.}\n")
	renameAttempts := replaceOnce(t, "    - name: attempts\n", "    - name: tries\n")
	check := func(file string) (int, string) {
		code, out, errs := run(t, "check", "-witness=off", "-root", "../..", "-manifest", file)
		return code, out + errs
	}

	patch, minor, major, same := bumped(t, "patch"), bumped(t, "minor"), bumped(t, "major"), bumped(t, "same")
	if code, out := check(branch(t, minor, addKeyType)); code != cli.ExitOK || !strings.Contains(out, "KEY_TYPE_ADDED keys.types[audit]") {
		t.Errorf("a key type added at %s: exit %d; want a pass naming it:\n%s", minor, code, out)
	}
	code, out := check(branch(t, patch, addKeyType))
	if code != cli.ExitFindings || !strings.Contains(out, "require a minor bump") || !strings.Contains(out, "KEY_TYPE_ADDED keys.types[audit]") || !strings.Contains(out, "set version to "+minor) {
		t.Errorf("a key type added at %s: exit %d; want a failure naming the key type and what to do:\n%s", patch, code, out)
	}
	for _, v := range []string{same, patch, minor} {
		code, out := check(branch(t, v, renameAttempts))
		if code != cli.ExitFindings || !strings.Contains(out, `ROW_FIELD_SAME_NAME row.fields[tries]: row field "attempts" renamed to "tries"`) || !strings.Contains(out, "set version to "+major) {
			t.Errorf("attempts renamed at %s: exit %d; want a failure asking for %s:\n%s", v, code, out, major)
		}
	}
	if code, out := check(branch(t, major, renameAttempts)); code != cli.ExitOK {
		t.Errorf("attempts renamed at %s: exit %d; want a pass:\n%s", major, code, out)
	}

	// The version never goes down, and a changed version needs its history entry.
	if code, out := check(branch(t, bumped(t, "down"), func(s string) string { return s })); code != cli.ExitFindings || !strings.Contains(out, "went down") {
		t.Errorf("version lowered: exit %d:\n%s", code, out)
	}
	data, _ := os.ReadFile(frozen(t).Manifest)
	noHistory := filepath.Join(t.TempDir(), "protocol.yaml")
	os.WriteFile(noHistory, []byte(strings.Replace(string(data), "\nversion: "+same+"\n", "\nversion: "+patch+"\n", 1)), 0o644)
	if code, out := check(noHistory); code != cli.ExitFindings || !strings.Contains(out, "no entry for "+patch) {
		t.Errorf("version changed without history: exit %d:\n%s", code, out)
	}
	// Prose may land without a release; a body change (wire) may not.
	prose := replaceOnce(t, "    summary: An archive entry; platform scope.\n", "    summary: An archived entry, platform-wide.\n")
	if code, out := check(branch(t, same, prose)); code != cli.ExitOK || !strings.Contains(out, "DOCS_CHANGED") {
		t.Errorf("prose at an unchanged version: exit %d; want a pass:\n%s", code, out)
	}
	body := replaceOnce(t, "      if redis.call('EXISTS', {{key \"row\"}}) == 1 then\n        return 0\n      end\n      redis.call('HSET', {{key \"row\"}}, '{{field \"state\"}}', '{{state \"pending\"}}', '{{field \"token\"}}', '{{initial \"token\"}}', '{{field \"payload\"}}', {{arg \"payload\"}})\n      redis.call('ZADD', {{key \"pending\"}}, 0, {{arg \"id\"}})\n      return 1\n",
		"      if redis.call('EXISTS', {{key \"row\"}}) ~= 0 then\n        return 0\n      end\n      redis.call('HSET', {{key \"row\"}}, '{{field \"state\"}}', '{{state \"pending\"}}', '{{field \"token\"}}', '{{initial \"token\"}}', '{{field \"payload\"}}', {{arg \"payload\"}})\n      redis.call('ZADD', {{key \"pending\"}}, 0, {{arg \"id\"}})\n      return 1\n")
	if code, out := check(branch(t, same, body)); code != cli.ExitFindings || !strings.Contains(out, "SCRIPT_BODY_CHANGED") {
		t.Errorf("a script body changed at an unchanged version: exit %d; want a failure:\n%s", code, out)
	}
	if code, out := check(branch(t, patch, body)); code != cli.ExitOK {
		t.Errorf("a script body changed at %s: exit %d; want a pass:\n%s", patch, code, out)
	}
	// A probe-less reserve member is refused at any bump, also by validation.
	noProbe := replaceOnce(t, "  - member: \"migration:<queue>\"\n", "  - member: stats\n    redis: hash\n    summary: Counters.\n  - member: \"migration:<queue>\"\n")
	if code, out := check(branch(t, major, noProbe)); code != cli.ExitFindings || !strings.Contains(out, "invalid RESERVE_MEMBER_ADDED_WITHOUT_PROBE") || !strings.Contains(out, "does not validate") {
		t.Errorf("a reserve member without a probe at %s: exit %d; want a failure:\n%s", major, code, out)
	}
}

// check -base takes a git ref: the manifest at that commit is the baseline.
func TestCheckBaseGitRef(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed for check -base REF: install git")
	}
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	data, err := os.ReadFile(frozen(t).Manifest)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "protocol.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	git("init", "-q")
	git("add", "protocol.yaml")
	git("commit", "-qm", "base")
	git("tag", "v2")
	changed := branch(t, bumped(t, "patch"), replaceOnce(t, "    - {name: row, class: job, redis: hash, summary: The job row.}\n",
		"    - {name: row, class: job, redis: hash, summary: The job row.}\n    - {name: audit, class: queue, redis: stream, summary: An audit trail of the queue.}\n"))
	b, _ := os.ReadFile(changed)
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "check", "-witness=off", "-base", "v2", "-manifest", file, "-format", "json")
	var rep compat.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("check -format json printed no JSON (%v):\n%s%s", err, out, errs)
	}
	if code != cli.ExitFindings || rep.OK || rep.From != bumped(t, "same") || rep.To != bumped(t, "patch") || rep.Required != compat.Minor || rep.Declared != compat.Patch {
		t.Errorf("check -base v2 = %d, %+v", code, rep)
	}
	if len(rep.Changes) == 0 || rep.Changes[0].File != file || rep.Changes[0].Line == 0 {
		t.Errorf("findings do not locate the change in the new file: %+v", rep.Changes)
	}
	if code, _, errs := run(t, "check", "-witness=off", "-base", "no-such-ref", "-manifest", file); code != cli.ExitUsage || !strings.Contains(errs, "neither a file nor a git ref") {
		t.Errorf("an unknown ref = %d:\n%s", code, errs)
	}
}

// Golden outputs of every report format, on a change that fails the gate
// with findings on both sides (golden/reports/*.golden).
func TestDiffFormatsGolden(t *testing.T) {
	t.Chdir("../..")
	for _, format := range compat.Formats {
		code, out, errs := run(t, "diff", "-format", format, "golden/releases/2.0.0.yaml", "internal/cli/testdata/review/2.1.0.yaml")
		if code != cli.ExitOK {
			t.Fatalf("diff -format %s = %d\n%s", format, code, errs)
		}
		path := "golden/reports/diff_" + format + ".golden"
		golden.Check(t, path, path, []byte(out), "go test ./internal/cli -run TestDiffFormatsGolden -update")
	}
	if code, _, errs := run(t, "diff", "-format", "yaml", "a", "b"); code != cli.ExitUsage || !strings.Contains(errs, "not one of") {
		t.Errorf("unknown format = %d %s", code, errs)
	}
}

func TestJSONReportFields(t *testing.T) {
	t.Parallel()
	code, out, _ := run(t, "diff", "-format", "json", "../../golden/releases/2.0.0.yaml", "testdata/review/2.1.0.yaml")
	if code != cli.ExitOK {
		t.Fatal(code)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"from", "to", "new_valid", "new_errors", "category", "required", "declared", "ok", "changes"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("JSON report has no %q", k)
		}
	}
	for _, c := range raw["changes"].([]any) {
		for _, k := range []string{"rule", "bump", "category", "path", "message", "file", "line", "column", "anchor", "judged"} {
			if _, ok := c.(map[string]any)[k]; !ok {
				t.Errorf("change has no %q: %v", k, c)
			}
		}
	}
}

// release refuses to overwrite a different frozen release.
func TestReleaseCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data, _ := os.ReadFile(frozen(t).Manifest)
	file := filepath.Join(dir, "protocol.yaml")
	os.WriteFile(file, data, 0o644)
	if code, _, errs := run(t, "release", "-root", dir, "-manifest", file); code != cli.ExitUsage || !strings.Contains(errs, "no scenario files") {
		t.Fatalf("release without conformance scenarios for its witness = %d\n%s", code, errs)
	}
	scenarios, _ := filepath.Glob("../../conformance/scenarios/*.yaml")
	os.MkdirAll(filepath.Join(dir, "conformance", "scenarios"), 0o755)
	for _, f := range scenarios {
		b, _ := os.ReadFile(f)
		os.WriteFile(filepath.Join(dir, "conformance", "scenarios", filepath.Base(f)), b, 0o644)
	}
	if code, out, errs := run(t, "release", "-root", dir, "-manifest", file); code != cli.ExitOK || !strings.Contains(out, "froze") || !strings.Contains(out, ".witness/scenarios/lifecycle.yaml") {
		t.Fatalf("release = %d\n%s%s", code, out, errs)
	}
	if code, out, _ := run(t, "release", "-root", dir, "-manifest", file); code != cli.ExitOK || !strings.Contains(out, "already frozen") {
		t.Errorf("release again = %d\n%s", code, out)
	}
	os.WriteFile(file, []byte(strings.Replace(string(data), "An archive entry; platform scope.", "Archived.", 1)), 0o644)
	if code, _, errs := run(t, "release", "-root", dir, "-manifest", file); code != cli.ExitFindings || !strings.Contains(errs, "never rewritten") {
		t.Errorf("release over a frozen version = %d\n%s", code, errs)
	}
	// A next version that fails the gate against the frozen one is not frozen.
	bad := branch(t, bumped(t, "minor"), replaceOnce(t, "    - name: attempts\n", "    - name: tries\n"))
	b, _ := os.ReadFile(bad)
	os.WriteFile(file, b, 0o644)
	if code, _, errs := run(t, "release", "-root", dir, "-manifest", file); code != cli.ExitFindings || !strings.Contains(errs, "nothing was frozen") {
		t.Errorf("release of a failing minor = %d\n%s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "golden/releases", bumped(t, "minor")+".yaml")); err == nil {
		t.Error("a failing release was frozen")
	}
}

// A breaking pull request checked against a real git ref: every GitHub
// annotation names the file of the checkout and a line inside it —
// deletions and generated-API findings included, although the baseline
// has no file in the checkout.
func TestGitHubAnnotationsLandInCheckout(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed for check -base REF: install git")
	}
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	data, err := os.ReadFile(frozen(t).Manifest)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "protocol.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "main")
	git("add", "protocol.yaml")
	git("commit", "-qm", "base")
	// Break it: a kind and a lock name go; the version claims a patch.
	edits := []func(string) string{
		replaceOnce(t, "  - name: ARC\n    summary: An archive entry; platform scope.\n", ""),
		replaceOnce(t, "      - {name: \"probe:<queue>\", summary: the lock a probe takes and releases on its scratch queue}\n", ""),
	}
	changed := branch(t, bumped(t, "patch"), func(s string) string {
		for _, e := range edits {
			s = e(s)
		}
		return s
	})
	b, _ := os.ReadFile(changed)
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(string(b), "\n") + 1
	code, out, errs := run(t, "check", "-witness=off", "-base", "main", "-manifest", file, "-format", "github")
	if code != cli.ExitFindings {
		t.Fatalf("check -base main of a breaking change = %d\n%s%s", code, out, errs)
	}
	var annotations, deletions, api int
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(l, "::error title=") || strings.HasPrefix(l, "::notice title=") {
			continue // the verdict
		}
		annotations++
		props, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(l, "::error "), "::notice "), "::")
		var f string
		var line int
		for _, p := range strings.Split(props, ",") {
			if v, ok := strings.CutPrefix(p, "file="); ok {
				f = v
			}
			if v, ok := strings.CutPrefix(p, "line="); ok {
				fmt.Sscan(v, &line)
			}
		}
		if f != file || line < 1 || line > lines {
			t.Errorf("annotation does not land in the checkout's %s (%d lines): %s", file, lines, l)
		}
		if strings.Contains(l, "_NO_DELETE") {
			deletions++
		}
		if strings.Contains(l, "GO_API_") {
			api++
		}
	}
	if annotations == 0 || deletions < 2 || api < 2 {
		t.Errorf("want annotations of deletions and generated-API findings; got %d (%d deletions, %d API):\n%s", annotations, deletions, api, out)
	}
}

// A report over a new manifest that does not validate says so, in every
// format, and never passes.
func TestReportOverInvalidNew(t *testing.T) {
	t.Parallel()
	bad := branch(t, bumped(t, "major"), replaceOnce(t, "  - member: \"migration:<queue>\"\n", "  - member: stats\n    redis: hash\n    summary: Counters.\n  - member: \"migration:<queue>\"\n"))
	code, out, errs := run(t, "diff", "-format", "json", frozen(t).Manifest, bad)
	if code != cli.ExitOK {
		t.Fatalf("diff = %d\n%s", code, errs)
	}
	var rep compat.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.OK || rep.NewValid || len(rep.NewErrors) == 0 {
		t.Errorf("diff -format json over an invalid NEW: ok %v, new_valid %v, new_errors %q", rep.OK, rep.NewValid, rep.NewErrors)
	}
	for _, format := range compat.Formats {
		_, out, _ := run(t, "diff", "-format", format, frozen(t).Manifest, bad)
		if !strings.Contains(out, "does not validate") {
			t.Errorf("diff -format %s over an invalid NEW does not say so:\n%s", format, out)
		}
	}
}

// -category wire judges what Lua and raw-Redis consumers see: a change
// only the generated Go API sees is reported but not counted.
func TestCheckCategory(t *testing.T) {
	t.Parallel()
	goName := branch(t, bumped(t, "same"), replaceOnce(t, "  - word: EMQKIND\n    name: kind\n", "  - word: EMQKIND\n    name: kindness\n"))
	if code, out, errs := run(t, "check", "-witness=off", "-root", "../..", "-manifest", goName); code != cli.ExitFindings || !strings.Contains(out, "CLASS_SAME_NAME") {
		t.Errorf("a Go name changed, category wire+api: exit %d; want a failure:\n%s%s", code, out, errs)
	}
	code, out, errs := run(t, "check", "-witness=off", "-root", "../..", "-manifest", goName, "-category", "wire")
	if code != cli.ExitOK || !strings.Contains(out, "[not judged: category wire]") || !strings.Contains(out, "outside category wire") {
		t.Errorf("a Go name changed, category wire: exit %d; want a pass that still lists it:\n%s%s", code, out, errs)
	}
	if code, _, errs := run(t, "check", "-witness=off", "-root", "../..", "-manifest", goName, "-category", "lua"); code != cli.ExitUsage || !strings.Contains(errs, "not one of") {
		t.Errorf("-category lua = %d %s", code, errs)
	}
}

// A waiver in ROOT/govern/waivers.yaml acknowledges a finding of its
// version: it is shown with its reason in every format and no longer
// counts; it cannot waive an invalid finding.
func TestCheckWaivers(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	rel := filepath.Join(root, "golden", "releases")
	os.MkdirAll(rel, 0o755)
	for _, ext := range []string{".yaml", ".api.txt", ".bundle.txt"} {
		src := strings.TrimSuffix(frozen(t).Manifest, ".yaml") + ext
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if ext == ".api.txt" {
			// The scratch root has the generated Go layer only, not the
			// hand-written SDK: the baseline's record keeps what the
			// generator writes (package emq/wire), so the hand-written
			// API does not read as deleted.
			var keep []string
			for _, l := range strings.SplitAfter(string(data), "\n") {
				if strings.HasPrefix(l, "#") || strings.HasPrefix(l, "pkg github.com/echomq/echomq/sdk/go/emq/wire, ") {
					keep = append(keep, l)
				}
			}
			data = []byte(strings.Join(keep, ""))
		}
		os.WriteFile(filepath.Join(rel, filepath.Base(src)), data, 0o644)
	}
	minor := bumped(t, "minor")
	drop := branch(t, minor, replaceOnce(t, "      - {name: \"probe:<queue>\", summary: the lock a probe takes and releases on its scratch queue}\n", ""))
	if code, out, _ := run(t, "check", "-witness=off", "-root", root, "-manifest", drop); code != cli.ExitFindings {
		t.Fatalf("a lock name deleted at a minor, no waiver: exit %d\n%s", code, out)
	}
	os.MkdirAll(filepath.Join(root, "govern"), 0o755)
	waivers := "waivers:\n" +
		"  - {rule: RESERVE_MEMBER_FIELD_NO_DELETE, path: \"reserve[locks].fields[probe:<queue>]\", version: " + minor + ", reason: no released probe ever took this lock}\n" +
		"  - {rule: GO_API_NO_DELETE, path: \"go: emq/wire, func LockProbe\", version: " + minor + ", reason: LockProbe was internal to the probe runner}\n"
	os.WriteFile(filepath.Join(root, "govern", "waivers.yaml"), []byte(waivers), 0o644)
	for _, format := range compat.Formats {
		code, out, errs := run(t, "check", "-witness=off", "-root", root, "-manifest", drop, "-format", format)
		if code != cli.ExitOK || !strings.Contains(out, "no released probe ever took this lock") {
			t.Errorf("waived, -format %s: exit %d; want a pass naming the waiver's reason:\n%s%s", format, code, out, errs)
		}
	}
	// A waiver cannot admit an invalid change.
	noProbe := branch(t, bumped(t, "major"), replaceOnce(t, "  - word: EMQKIND\n", "  - word: EMQBUSY\n    name: busy\n    summary: Busy.\n  - word: EMQKIND\n"))
	os.WriteFile(filepath.Join(root, "govern", "waivers.yaml"), []byte("waivers:\n  - {rule: CLASS_ADDED_WITHOUT_PROBE, path: \"classes[EMQBUSY]\", version: "+bumped(t, "major")+", reason: later}\n"), 0o644)
	if code, out, _ := run(t, "check", "-witness=off", "-root", root, "-manifest", noProbe); code != cli.ExitFindings || !strings.Contains(out, "WAIVER_NOT_FOR_INVALID") {
		t.Errorf("waiving an invalid finding: exit %d\n%s", code, out)
	}
	os.WriteFile(filepath.Join(root, "govern", "waivers.yaml"), []byte("waivers:\n  - {rule: NO_SUCH_RULE, path: x, version: 1.0.0, reason: r}\n"), 0o644)
	if code, _, errs := run(t, "check", "-witness=off", "-root", root, "-manifest", drop); code != cli.ExitUsage || !strings.Contains(errs, "waivers.yaml:2") {
		t.Errorf("a waiver of an unknown rule = %d\n%s", code, errs)
	}
}

// Reordering a collection whose order means nothing — a script's
// transitions, its reply values, the states, a script's refusals — needs
// no version change: check of main's manifest so reordered passes at the
// same version with exactly the findings of main's manifest itself.
func TestReorderRequiresNothing(t *testing.T) {
	t.Parallel()
	const extendToken = "      - {id: token, class: EMQSTALE, message: extend token mismatch, when: the row is gone or its attempts differ from the token}\n"
	const extendState = "      - {id: state, class: EMQSTALE, message: extend job not active, when: the row is not active}\n"
	swap := func(a, b string) func(string) string {
		return replaceOnce(t, a+b, b+a)
	}
	// reap's transitions: the text before them tells reap from reap_ids.
	const reapReply = "      summary: how many expired leases moved (to pending, or to dead when attempts reached max_attempts > 0)\n    transitions:\n"
	baseCode, out, errs := run(t, "check", "-root", "../..", "-manifest", "../../protocol.yaml", "-format", "json")
	base := findingsOf(t, out)
	if baseCode != cli.ExitOK {
		t.Fatalf("check of main's manifest = %d\n%s%s", baseCode, out, errs)
	}
	for name, edit := range map[string]func(string) string{
		"transitions":  replaceOnce(t, reapReply+"      - {from: active, to: pending}\n      - {from: active, to: dead}\n", reapReply+"      - {from: active, to: dead}\n      - {from: active, to: pending}\n"),
		"reply values": swap("        - {value: 1, name: released}\n", "        - {value: 0, name: not_owner, summary: the lock is free or held by another owner}\n"),
		"states":       swap("    - {name: pending, set: pending, summary: Waiting to be claimed.}\n", "    - {name: active, set: active, summary: Leased to one worker until its deadline.}\n"),
		// extend's refusals (extend_policy repeats them before its own
		// EMQPOLICY, so the transitions that follow extend's tell them
		// apart).
		"refusals": replaceOnce(t, extendToken+extendState+"    transitions:\n", extendState+extendToken+"    transitions:\n"),
	} {
		// The reordered manifest's findings are exactly main's own.
		code, out, errs := run(t, "check", "-root", "../..", "-manifest", onMain(t, edit), "-format", "json")
		if code != baseCode || findingsOf(t, out) != base {
			t.Errorf("%s reordered: exit %d, findings %s; want main's own, exit %d, findings %s\n%s", name, code, findingsOf(t, out), baseCode, base, errs)
		}
	}
}
