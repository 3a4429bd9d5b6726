package chaos

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOldFleetBuilds builds every old side (the 2.2.1 to 2.7.0 releases'
// Go SDKs from git history, with testdata/oldfleet) and checks that each
// program runs.
func TestOldFleetBuilds(t *testing.T) {
	for _, lang := range []Lang{LangOld, LangPrev, LangPrev24, LangPrev25, LangPrev26, LangPrev27} {
		bin, err := oldFleetBinary(lang)
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin).CombinedOutput()
		if err == nil {
			t.Fatalf("%s: oldfleet without a mode exited 0; want the usage (output %s)", lang, out)
		}
		if string(out) == "" {
			t.Fatalf("%s: oldfleet without a mode printed nothing", lang)
		}
	}
}

// TestOldFleetShallowClone: in a shallow clone, which has no history to
// build the old side from, finding the release's commit fails with the
// hint to fetch the history.
func TestOldFleetShallowClone(t *testing.T) {
	top, _, err := oldReleaseCommit(".", oldRelease)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, err := exec.Command("git", "clone", "-q", "--depth", "1", "--no-checkout", "file://"+top, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("git clone --depth 1: %v\n%s", err, out)
	}
	_, _, err = oldReleaseCommit(dir, oldRelease)
	if err == nil || !strings.Contains(err.Error(), "git fetch --unshallow") {
		t.Fatalf("in a shallow clone: %v; want the hint to fetch the history", err)
	}
}
