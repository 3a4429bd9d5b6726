package cli_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/govern/compat"
	"github.com/echomq/echomq/govern/release"
)

// guideMinor is the authoring guide's minor (docs/authoring.md: the
// lock_owner script with its probe step and its scenario) applied to a
// manifest's text: the manifest and the scenario file's text.
func guideMinor(t *testing.T, m string) (string, string) {
	t.Helper()
	b := guideBlocks(t)
	next := between(b["history"], "version: ", "\n")
	at := strings.Index(m, "\n# ---------------------------------------------------------------------------\n# 8. Governance")
	if at < 0 {
		t.Fatal("the manifest has no governance section after its scripts")
	}
	m = m[:at] + "\n" + b["script"] + m[at:]
	probeEnd := "          command: [HEXISTS, \"${reserve:locks}\", \"probe:${queue}\"]\n          expect: {int: 0}\n"
	if strings.Count(m, probeEnd) != 1 {
		t.Fatal("the locks probe's last step moved: update the guide and this test")
	}
	m = strings.Replace(m, probeEnd, probeEnd+b["probe"], 1)
	m = strings.Replace(m, "\nversion: "+between(m, "\nversion: ", "\n")+"\n", "\nversion: "+next+"\n", 1)
	m = strings.Replace(m, "status: current", "status: released", 1)
	return strings.TrimRight(m, "\n") + "\n" + b["history"], b["scenario"]
}

// patched is a manifest's text with complete_claim's stale-token check
// disabled, declared as the patch after its version with its history
// entry.
func patched(t *testing.T, m string) string {
	t.Helper()
	m = inScript(t, "complete_claim", `if cur[1] ~= {{arg "token"}} then return {{refuse "token"}} end`, `if false and cur[1] ~= {{arg "token"}} then return {{refuse "token"}} end`)(m)
	cur := between(m, "\nversion: ", "\n")
	v, err := model.ParseSemver(cur)
	if err != nil {
		t.Fatal(err)
	}
	v.Patch++
	m = strings.Replace(m, "\nversion: "+cur+"\n", "\nversion: "+v.String()+"\n", 1)
	m = strings.Replace(m, "    - version: "+cur+"\n      status: current\n", "    - version: "+cur+"\n      status: released\n", 1)
	return strings.TrimRight(m, "\n") + "\n    - version: " + v.String() + "\n      status: current\n      summary: The change under review.\n"
}

// The done-when, as a user would try it: emqgen installed with go
// install (GOBIN a directory of its own), run from a subdirectory of a
// scratch git clone of the repository (no -root, no -manifest: it finds
// the clone's protocol.yaml by walking up; nothing of this checkout's
// layout is assumed), gates a patch that disables complete_claim's
// stale-token check — it fails, naming the step — and the authoring
// guide's additive minor — it passes — against the oldest frozen release
// (2.0.0, where complete_claim does not exist yet: the behaviour is on
// record in the witness of the releases since, the newest's replayed
// too). The other releases are TestCheckWitnessAgainstEveryRelease's.
func TestInstalledGatesAScratchClone(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"git", "go", "node"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH: the installed gate needs it (see docs/reviewing.md)", tool)
		}
	}
	ts, err := filepath.Abs(filepath.Join("..", "..", "sdk", "ts"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ts, "node_modules", "typescript")); err != nil {
		t.Fatal("sdk/ts has no node_modules/typescript: run (cd sdk/ts && npm ci && npm run build); ./test.sh does")
	}
	gobin := t.TempDir()
	install := exec.Command("go", "install", "./cmd/emqgen")
	install.Dir = filepath.Join("..", "..")
	install.Env = append(os.Environ(), "GOBIN="+gobin)
	started := time.Now()
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install ./cmd/emqgen: %v\n%s", err, out)
	}
	t.Logf("go install: %.1fs", time.Since(started).Seconds())
	clone := filepath.Join(t.TempDir(), "scratch")
	if out, err := exec.Command("git", "clone", "-q", filepath.Join("..", ".."), clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	// What a fresh clone needs for the TypeScript API, as the docs say
	// (npm ci && npm run build): this checkout's installed packages and
	// built declarations stand in for them.
	if err := os.Symlink(filepath.Join(ts, "node_modules"), filepath.Join(clone, "sdk", "ts", "node_modules")); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(clone, "sdk", "ts", "dist"), os.DirFS(filepath.Join(ts, "dist"))); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(clone, "protocol.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The user's caches, which this repository's other tests fill: the
	// witness's testees are cached by content, so the clone's unchanged Go
	// SDK is a lookup, as in a CI clone (its TypeScript record, keyed by
	// its directory too, is read once).
	check := func(args ...string) (int, string) {
		t.Helper()
		var out bytes.Buffer
		cmd := exec.Command(filepath.Join(gobin, "emqgen"), append([]string{"check"}, args...)...)
		cmd.Dir = filepath.Join(clone, "docs")
		cmd.Stdout, cmd.Stderr = &out, &out
		started := time.Now()
		err := cmd.Run()
		t.Logf("emqgen check %s: %.1fs", strings.Join(args, " "), time.Since(started).Seconds())
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("emqgen check: %v", err)
		}
		return code, out.String()
	}
	rs, err := release.List(clone)
	if err != nil || len(rs) == 0 {
		t.Fatalf("the clone's frozen releases: %v %v", rs, err)
	}
	// Against the oldest release the witness replays its scenarios and the
	// newest release's (the behaviour the releases since put on record):
	// one check covers both ends.
	bases := []string{filepath.Join("..", release.Dir, rs[0].Version.String()+".yaml")}
	manifest := filepath.Join(clone, "protocol.yaml")
	write := func(path, body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	write(manifest, patched(t, string(data)))
	step := regexp.MustCompile(`major WITNESS_BEHAVIOUR_CHANGED scenarios/[a-z_/-]+complete[-_]claim[a-z-]*@wire: .* at step \d+ \(complete_claim\): `)
	for _, base := range bases {
		args := []string{}
		if base != "" {
			args = append(args, "-base", base)
		}
		code, out := check(args...)
		newest := "the frozen release " + rs[len(rs)-1].Version.String() + "'s case fails"
		if code != 1 || !step.MatchString(out) || !strings.Contains(out, "complete token mismatch") || !strings.Contains(out, newest) || !strings.Contains(out, ": FAIL") {
			t.Errorf("the installed check -base %q of the complete_claim patch = %d; want a failure naming the complete_claim step\n%s", base, code, out)
		}
	}

	passed := regexp.MustCompile(`witness: (\d+)/(\d+) baseline cases pass on the new bundle[^:\n]*: ok`)
	m, scenario := guideMinor(t, string(data))
	write(manifest, m)
	write(filepath.Join(clone, "conformance", "scenarios", "locks.yaml"), scenario)
	for _, base := range bases {
		args := []string{}
		if base != "" {
			args = append(args, "-base", base)
		}
		code, out := check(args...)
		if code != 0 || !strings.Contains(out, "minor SCRIPT_ADDED scripts[lock_owner]") || !passed.MatchString(out) || strings.Contains(out, compat.WitnessBehaviourChanged) {
			t.Errorf("the installed check -base %q of the guide's minor = %d; want a pass with the witness run\n%s", base, code, out)
		}
	}
}
