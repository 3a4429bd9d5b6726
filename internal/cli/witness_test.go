package cli_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/echomq/echomq/govern/compat"
	"github.com/echomq/echomq/govern/release"
	"github.com/echomq/echomq/govern/witness"
	"github.com/echomq/echomq/internal/cli"
)

// deadFencing is the behaviour-breaking patch: the complete
// script's stale-token comparison disabled in its body. Every declared
// contract (KEYS, ARGV, reply, refusals, transitions) stays, so the
// classifier alone calls it SCRIPT_BODY_CHANGED, a patch.
func deadFencing(t *testing.T) func(string) string {
	return replaceOnce(t, `      if att ~= {{arg "token"}} then return {{refuse "token"}} end
      if redis.call('HGET', {{key "row"}}, '{{field "state"}}') ~= '{{state "active"}}' then return {{refuse "state"}} end
      redis.call('DEL', {{key "row"}})`, `      if false and att ~= {{arg "token"}} then return {{refuse "token"}} end
      if redis.call('HGET', {{key "row"}}, '{{field "state"}}') ~= '{{state "active"}}' then return {{refuse "state"}} end
      redis.call('DEL', {{key "row"}})`)
}

// A patch release that disables the stale-token check of complete,
// declared with its history entry, passes the classifier but fails the
// gate: the witness replays the newest release's scenarios against the
// patched bundle (through
// the Go SDK generated from it, on a real redis-server) and names the
// failing step with what it expected and got.
func TestCheckWitnessCatchesDeadFencing(t *testing.T) {
	t.Parallel()
	file := branch(t, bumped(t, "patch"), deadFencing(t))
	if code, out, errs := run(t, "check", "-witness=off", "-root", "../..", "-manifest", file); code != cli.ExitOK || !strings.Contains(out, "SCRIPT_BODY_CHANGED scripts[complete].body") {
		t.Fatalf("without the witness the dead fencing check should pass as a patch (the hole the witness closes) = %d\n%s%s", code, out, errs)
	}
	code, out, errs := run(t, "check", "-root", "../..", "-manifest", file)
	if code != cli.ExitFindings {
		t.Fatalf("check of the dead fencing patch = %d; want %d (the gate fails)\n%s%s", code, cli.ExitFindings, out, errs)
	}
	for _, want := range []string{
		"patch SCRIPT_BODY_CHANGED scripts[complete].body",
		// the step of refusals.yaml that completes with a stale token, where it is written
		"golden/releases/" + frozen(t).Version.String() + ".witness/scenarios/refusals.yaml:145:7: major WITNESS_BEHAVIOUR_CHANGED scenarios/refusals/complete-token:",
		"at step 5 (complete)",
		`expected error {"class":"EMQSTALE","kind":"wire","message":"complete token mismatch"}, got result {}`,
		"required major, declared patch",
		"WITNESS_BEHAVIOUR_CHANGED scenarios/refusals/complete-token",
		": FAIL",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check of the dead fencing patch does not say %q:\n%s", want, out)
		}
	}
	// Only complete changed: the other scripts' token refusals still hold.
	for _, other := range []string{"scenarios/refusals/extend-token", "scenarios/refusals/retry-token", "scenarios/refusals/bury-token"} {
		if strings.Contains(out, other+":") {
			t.Errorf("the witness blames %s, whose script did not change:\n%s", other, out)
		}
	}

	// JSON: the findings and the witness's outcome.
	code, out, _ = run(t, "check", "-root", "../..", "-manifest", file, "-format", "json")
	var rep compat.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != cli.ExitFindings {
		t.Fatalf("check -format json = %d, %v\n%s", code, err, out)
	}
	if rep.OK || rep.Required != compat.Major || rep.Witness == nil || rep.Witness.Status != compat.WitnessRan || rep.Witness.Passed >= rep.Witness.Cases {
		t.Errorf("JSON verdict: ok %v required %s witness %+v", rep.OK, rep.Required, rep.Witness)
	}
	n := 0
	for _, f := range rep.Changes {
		if f.Rule == compat.WitnessBehaviourChanged {
			n++
			if f.Bump != compat.Major || f.Line == 0 || !strings.HasSuffix(f.File, ".yaml") || f.Anchor.File != file {
				t.Errorf("witness finding %+v", f)
			}
		}
	}
	if n == 0 || n != rep.Witness.Cases-rep.Witness.Passed {
		t.Errorf("%d witness findings for %d failing cases", n, rep.Witness.Cases-rep.Witness.Passed)
	}

	// GitHub: an error annotation in the checkout's manifest.
	_, out, _ = run(t, "check", "-root", "../..", "-manifest", file, "-format", "github")
	if !strings.Contains(out, "::error file="+file) || !strings.Contains(out, "title=WITNESS_BEHAVIOUR_CHANGED (major)") {
		t.Errorf("github annotations do not flag the witness finding:\n%s", out)
	}
}

// The committed manifest passes the gate with the witness run: every
// case of the newest release's witness passes on today's bundle.
func TestCheckWitnessPassesUnchanged(t *testing.T) {
	t.Parallel()
	code, out, errs := run(t, "check", "-root", "../..", "-manifest", "../../protocol.yaml")
	if code != cli.ExitOK || !strings.Contains(out, "baseline cases pass on the new bundle: ok") {
		t.Fatalf("check of the committed manifest = %d\n%s%s", code, out, errs)
	}
	var cases, passed int
	line := out[strings.Index(out, "witness: "):]
	if _, err := fmtSscanf(line, &passed, &cases); err != nil || cases < 10 || passed != cases {
		t.Errorf("witness ran %d/%d cases (%v): %s", passed, cases, err, out)
	}
}

// The opt-out is explicit and stated in every report format.
func TestCheckWitnessOffIsStated(t *testing.T) {
	t.Parallel()
	for _, format := range compat.Formats {
		code, out, errs := run(t, "check", "-witness=off", "-root", "../..", "-manifest", "../../protocol.yaml", "-format", format)
		if code != cli.ExitOK {
			t.Fatalf("check -witness=off -format %s = %d\n%s%s", format, code, out, errs)
		}
		want := "witness: OFF — opted out with -witness=off"
		switch format {
		case "markdown":
			want = "**Behavioural witness:** OFF — opted out with -witness=off"
		case "json":
			want = `"status": "off"`
		}
		if !strings.Contains(out, want) {
			t.Errorf("-format %s does not state the opt-out (%q):\n%s", format, want, out)
		}
	}
	if code, _, errs := run(t, "check", "-witness=maybe", "-root", "../..", "-manifest", "../../protocol.yaml"); code != cli.ExitUsage || !strings.Contains(errs, "not one of on, off") {
		t.Errorf("-witness=maybe = %d %s", code, errs)
	}
}

// No server, no pass: without redis-server on PATH, or with -addr naming
// a server that is not there, the gate fails closed and says how to run
// it or opt out.
func TestCheckWitnessFailsClosed(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	code, out, errs := run(t, "check", "-root", "../..", "-manifest", "../../protocol.yaml", "-addr", dead)
	if code != cli.ExitFindings || !strings.Contains(out, "the behavioural witness could not run") || !strings.Contains(out, "fails closed") || !strings.Contains(out, "-witness=off") || !strings.Contains(out, dead) {
		t.Errorf("check -addr of no server = %d\n%s%s", code, out, errs)
	}
	// A PATH with what the rest of check needs (go builds the testee, node
	// and python3 read the TypeScript and Python APIs) but no redis-server;
	// python3 is the interpreter itself, not a shim that needs more tools.
	bin := t.TempDir()
	for _, tool := range []string{"go", "node", "python3"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s is needed on PATH: %v", tool, err)
		}
		if tool == "python3" {
			exe, err := exec.Command(p, "-c", "import sys; print(sys.executable)").Output()
			if err != nil {
				t.Fatal(err)
			}
			p = strings.TrimSpace(string(exe))
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	code, out, errs = run(t, "check", "-root", "../..", "-manifest", "../../protocol.yaml")
	if code != cli.ExitFindings || !strings.Contains(out, "no redis-server could be started") || !strings.Contains(out, "fails closed") || !strings.Contains(out, ": FAIL") {
		t.Errorf("check without redis-server = %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat("../../protocol.yaml"); err != nil {
		t.Fatal(err)
	}
}

// fmtSscanf reads "witness: P/C" at the start of s.
func fmtSscanf(s string, passed, cases *int) (int, error) {
	return fmt.Sscanf(s, "witness: %d/%d", passed, cases)
}

// -base REF replays the conformance scenarios at that git ref against the
// manifest's bundle.
func TestCheckWitnessAtGitRef(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed for check -base REF: install git")
	}
	code, out, errs := run(t, "check", "-root", "../..", "-manifest", "../../protocol.yaml", "-base", "HEAD", "-format", "json")
	var rep compat.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("check -base HEAD -format json = %d (%v)\n%s%s", code, err, out, errs)
	}
	if rep.Witness == nil || rep.Witness.Status != compat.WitnessRan || rep.Witness.Baseline != "HEAD" || rep.Witness.Cases == 0 {
		t.Errorf("check -base HEAD: witness %+v (%s)", rep.Witness, errs)
	}
	// A baseline file that is no frozen release keeps no witness: closed.
	code, out, _ = run(t, "check", "-root", "../..", "-manifest", "../../protocol.yaml", "-base", "../../protocol.yaml")
	if code != cli.ExitFindings || !strings.Contains(out, "has no witness beside it") || !strings.Contains(out, "-witness=off") {
		t.Errorf("check -base of a plain file = %d\n%s", code, out)
	}
}

// inScript returns an edit that replaces the first occurrence of old in
// the named script's entry (from its "- name:" line to the next entry).
func inScript(t *testing.T, script, old, new string) func(string) string {
	return func(s string) string {
		t.Helper()
		start := strings.Index(s, "\n  - name: "+script+"\n")
		if start < 0 {
			t.Fatalf("no script %s in the manifest", script)
		}
		end := strings.Index(s[start+1:], "\n  - name: ")
		if end < 0 {
			end = len(s) - start - 1
		}
		entry := s[start : start+1+end]
		if !strings.Contains(entry, old) {
			t.Fatalf("the script %s does not contain %q", script, old)
		}
		return s[:start] + strings.Replace(entry, old, new, 1) + s[start+1+end:]
	}
}

// The witness covers the bundle, not the Go SDK's habits: Queue.CompleteClaim
// and Queue.ClaimMany run complete_claim_ids and claim_ids since 2.2.0, yet
// a patch that disables complete_claim's stale-token check, or claim_many's
// token mint — published scripts any client may call — fails the gate,
// because the witness replays the baseline through every script's
// generated call too (the testee's wire mode), and names the step.
func TestCheckWitnessCoversScriptsTheSDKDoesNotCall(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, script, old, new string
		want                   []string
	}{
		{"stale token of complete_claim", "complete_claim",
			`if cur[1] ~= {{arg "token"}} then return {{refuse "token"}} end`,
			`if false and cur[1] ~= {{arg "token"}} then return {{refuse "token"}} end`,
			[]string{"WITNESS_BEHAVIOUR_CHANGED scenarios/batch/complete-claim@wire", "at step 5 (complete_claim)", "complete token mismatch", "generated calls"}},
		{"token mint of claim_many", "claim_many",
			`local token = redis.call('HINCRBY', row, '{{field "token"}}', 1)`,
			`local token = tonumber(redis.call('HGET', row, '{{field "token"}}'))`,
			[]string{"WITNESS_BEHAVIOUR_CHANGED scenarios/batch/claim-many@wire", "(claim_many)", "generated calls"}},
	} {
		t.Run(c.script, func(t *testing.T) {
			file := branch(t, bumped(t, "patch"), inScript(t, c.script, c.old, c.new))
			code, out, errs := run(t, "check", "-root", "../..", "-manifest", file)
			if code != cli.ExitFindings {
				t.Fatalf("check of a patch that disables the %s = %d; want %d\n%s%s", c.name, code, cli.ExitFindings, out, errs)
			}
			for _, want := range append(c.want, "patch SCRIPT_BODY_CHANGED scripts["+c.script+"].body", "required major, declared patch") {
				if !strings.Contains(out, want) {
					t.Errorf("check of a patch that disables the %s does not say %q:\n%s", c.name, want, out)
				}
			}
		})
	}
}

// A major bump that changes nothing else gets no false behaviour change:
// the baseline's placeholders resolve for an x.0.0 (${version:lower} has
// no lower version of its major there).
func TestCheckWitnessMajorBump(t *testing.T) {
	t.Parallel()
	file := branch(t, bumped(t, "major"), func(s string) string { return s })
	code, out, errs := run(t, "check", "-root", "../..", "-manifest", file)
	if code != cli.ExitOK || strings.Contains(out, compat.WitnessBehaviourChanged) || !strings.Contains(out, "declared major") {
		t.Errorf("check of a bare major bump = %d; want a pass with no witness finding\n%s%s", code, out, errs)
	}
}

// A script added without a probe step that runs it and a conformance
// scenario that sends its op fails the gate, with or without the witness,
// saying what to add; the scripts of the frozen releases are history.
func TestCheckScriptAddedUncovered(t *testing.T) {
	t.Parallel()
	peek := replaceOnce(t, "  - name: purge\n", `  - name: peek
    summary: Whether the queue's doorbell is rung.
    keys:
      - {name: wake, type: wake}
    reply:
      type: int
      summary: the doorbell's markers (0 or 1)
    body: |
      {{guard}}
      return redis.call('LLEN', {{key "wake"}})

  - name: purge
`)
	file := branch(t, bumped(t, "minor"), peek)
	code, out, errs := run(t, "check", "-witness=off", "-root", "../..", "-manifest", file)
	if code != cli.ExitFindings {
		t.Fatalf("check of a script added uncovered = %d; want %d\n%s%s", code, cli.ExitFindings, out, errs)
	}
	for _, want := range []string{
		"invalid " + compat.WitnessScriptUncovered + " scripts[peek]",
		"a probe step that runs it (`script: peek`",
		"a conformance scenario in ../../conformance/scenarios whose steps send op peek",
		"refused at any bump",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check of a script added uncovered does not say %q:\n%s", want, out)
		}
	}
	// Against 2.0.0 every script added since is released: none is flagged.
	if code, out, errs := run(t, "check", "-witness=off", "-root", "../..", "-manifest", "../../protocol.yaml", "-base", "../../golden/releases/2.0.0.yaml"); code != cli.ExitOK || strings.Contains(out, compat.WitnessScriptUncovered) {
		t.Errorf("check against 2.0.0 = %d; want a pass with no uncovered script\n%s%s", code, out, errs)
	}
}

// A witness that cannot run says what stops it and what makes it run, for
// that cause: a release without a witness is not a missing redis-server.
func TestCheckWitnessFailsClosedNamesTheCause(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, ext := range []string{".yaml", ".api.txt", ".bundle.txt"} {
		data, err := os.ReadFile(filepath.Join("../../golden/releases", "2.0.0"+ext))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "2.0.0"+ext), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := run(t, "check", "-root", "../..", "-manifest", "../../protocol.yaml", "-base", filepath.Join(dir, "2.0.0.yaml"))
	if code != cli.ExitFindings || !strings.Contains(out, "the frozen release 2.0.0 keeps no witness") || !strings.Contains(out, "check against a frozen release that keeps a witness") || strings.Contains(out, "redis-server") {
		t.Errorf("check against a release without a witness = %d; want it to name that cause, not redis-server\n%s%s", code, out, errs)
	}
}

// Every frozen release keeps a witness (2.0.0 and 2.1.0 gained theirs
// after their release): the committed manifest passes the gate against
// each, with the witness run, and the dead-fencing patch fails it against
// each.
func TestCheckWitnessAgainstEveryRelease(t *testing.T) {
	t.Parallel()
	rs, err := release.List("../..")
	if err != nil || len(rs) < 4 {
		t.Fatalf("frozen releases: %d, %v", len(rs), err)
	}
	dead := branch(t, bumped(t, "patch"), deadFencing(t))
	// Each release's two checks run beside the others' (each check on its
	// own redis-server): one after another they took 281 s at load 5.
	for _, r := range rs {
		t.Run(r.Version.String(), func(t *testing.T) {
			t.Parallel()
			if !r.HasWitness() {
				t.Fatalf("the frozen release %s keeps no witness (%s)", r.Version, r.WitnessScenarios())
			}
			base := filepath.Join("../..", release.Dir, r.Version.String()+".yaml")
			if code, out, errs := run(t, "check", "-root", "../..", "-manifest", "../../protocol.yaml", "-base", base); code != cli.ExitOK || !strings.Contains(out, "baseline cases pass on the new bundle: ok") {
				t.Errorf("check -base %s = %d; want a pass with the witness run\n%s%s", base, code, out, errs)
			}
			if code, out, errs := run(t, "check", "-root", "../..", "-manifest", dead, "-base", base); code != cli.ExitFindings || !strings.Contains(out, compat.WitnessBehaviourChanged) {
				t.Errorf("check of the dead-fencing patch -base %s = %d; want a WITNESS_BEHAVIOUR_CHANGED failure\n%s%s", base, code, out, errs)
			}
		})
	}
}

// The witness's replays are looked up when they ran already on the same
// inputs (govern/witness's result cache): the second check of the dead
// fencing patch replays nothing and prints the same report, byte for
// byte, in every format; with EMQ_WITNESS_CACHE=off every replay runs
// again and the report is still the same. The cache here is the test's
// own, empty at first, so the first check proves the fresh replay (the
// other tests may be served by the user's cache). Not parallel: the
// environment is the process's, and the counts are.
func TestCheckWitnessResultCache(t *testing.T) {
	t.Setenv(witness.ResultCacheEnv, t.TempDir())
	file := branch(t, bumped(t, "patch"), deadFencing(t))
	check := func(format string) (out string, fresh, cached int64) {
		t.Helper()
		f0, c0 := witness.ReplayCounts()
		code, out, errs := run(t, "check", "-root", "../..", "-manifest", file, "-format", format)
		if code != cli.ExitFindings {
			t.Fatalf("check -format %s of the dead fencing patch = %d; want %d\n%s%s", format, code, cli.ExitFindings, out, errs)
		}
		f1, c1 := witness.ReplayCounts()
		return out, f1 - f0, c1 - c0
	}
	first, fresh, cached := check("text")
	if fresh == 0 || cached != 0 {
		t.Fatalf("the first check on an empty cache: %d fresh, %d cached replays", fresh, cached)
	}
	for _, want := range []string{"WITNESS_BEHAVIOUR_CHANGED scenarios/refusals/complete-token:", "at step 5 (complete)", "WITNESS_BEHAVIOUR_CHANGED scenarios/refusals/complete-token@wire:"} {
		if !strings.Contains(first, want) {
			t.Errorf("the fresh replay does not say %q:\n%s", want, first)
		}
	}
	firsts := map[string]string{"text": first}
	for _, format := range compat.Formats {
		out, f, c := check(format)
		if f != 0 || c != fresh {
			t.Errorf("check -format %s again: %d fresh, %d cached replays; want 0 and %d", format, f, c, fresh)
		}
		if want, ok := firsts[format]; ok && out != want {
			t.Errorf("check -format %s from the cache differs from the fresh check:\n%s\nfresh:\n%s", format, out, want)
		}
		firsts[format] = out
	}
	t.Setenv(witness.ResultCacheEnv, "off")
	out, f, c := check("text")
	if f != fresh || c != 0 {
		t.Errorf("check with %s=off: %d fresh, %d cached replays; want %d and 0", witness.ResultCacheEnv, f, c, fresh)
	}
	if out != first {
		t.Errorf("check with %s=off differs from the first:\n%s\nfirst:\n%s", witness.ResultCacheEnv, out, first)
	}
}
