package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/echomq/echomq/sdk/go/emq"
)

// ledgerOf builds a ledger from record lines, as worker processes write
// them.
func ledgerOf(t *testing.T, files ...string) *Ledger {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for i, f := range files {
		p := filepath.Join(dir, "w"+string(rune('a'+i))+".rec")
		if err := os.WriteFile(p, []byte(strings.TrimSpace(f)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	l, err := ReadLedger(paths)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestJudgeClean: a job completed at its only lease, one completed after a
// reaped lease whose late completion was refused, one buried, one retried
// and then completed — every figure as expected, nothing wrong.
func TestJudgeClean(t *testing.T) {
	l := ledgerOf(t, `
H 100
S JOB1 1
E JOB1 1 ok
C JOB1 1
S JOB2 1
E JOB2 1 ok
Z JOB2 1
S JOB4 1
E JOB4 1 err
T JOB4 1
Q completed=2 retried=1
`, `
H 101
S JOB2 2
E JOB2 2 ok
C JOB2 2
S JOB3 1
E JOB3 1 err
B JOB3 1
S JOB4 2
E JOB4 2 ok
C JOB4 2
P 1
`)
	final := map[string]emq.Set{"JOB3": emq.SetDead}
	v := Judge([]string{"JOB1", "JOB2", "JOB3", "JOB4"}, l, final, nil)
	want := Verdict{Acknowledged: 4, Finished: 4, Completed: 3, Buried: 1, CompletionAttempts: 4, StaleRefused: 1}
	if v.Acknowledged != want.Acknowledged || v.Finished != want.Finished || v.Completed != want.Completed || v.Buried != want.Buried ||
		v.CompletionAttempts != want.CompletionAttempts || v.StaleRefused != want.StaleRefused ||
		v.Lost+v.Twice+v.StaleAccepted+v.InDoubt+v.Inferred+v.DoubleLeases+v.Resurrected+v.Queued+v.Unacknowledged != 0 {
		t.Errorf("verdict %+v; want %+v", v, want)
	}
	if len(v.Problems) != 0 {
		t.Errorf("problems: %v", v.Problems)
	}
	if l.Processes != 2 || l.Clean != 1 || l.Reaped != 1 || l.Tally["retried"] != 1 {
		t.Errorf("ledger: processes %d, clean %d, reaped %d, tally %v", l.Processes, l.Clean, l.Reaped, l.Tally)
	}
	if o := l.Outcomes(); o[recCompleted] != 3 || o[recRetried] != 1 || o[recBuried] != 1 || o[recStaleDone] != 1 {
		t.Errorf("outcomes %v", o)
	}
	if got := unstarted(l, []string{"JOB1", "JOB2", "JOB3", "JOB4"}); got != 0 {
		t.Errorf("unstarted = %d, want 0", got)
	}
	if got := reruns(l, []string{"JOB1", "JOB2", "JOB3", "JOB4"}); got != 2 {
		t.Errorf("reruns = %d, want 2 (JOB2 reaped, JOB4 retried)", got)
	}
}

// TestJudgeLost: an acknowledged job that no worker finished and no set
// holds is lost; one still pending is queued, not lost.
func TestJudgeLost(t *testing.T) {
	l := ledgerOf(t, `
S JOB1 1
E JOB1 1 ok
Z JOB1 1
`)
	v := Judge([]string{"JOB1", "JOB2", "JOB3"}, l, map[string]emq.Set{"JOB3": emq.SetPending}, nil)
	if v.Lost != 2 || v.Queued != 1 || v.Finished != 0 {
		t.Fatalf("lost %d, queued %d, finished %d; want 2, 1, 0 (%v)", v.Lost, v.Queued, v.Finished, v.Problems)
	}
	if !strings.Contains(strings.Join(v.Problems, "\n"), "JOB2 lost") {
		t.Errorf("problems do not name JOB2: %v", v.Problems)
	}
}

// TestJudgeTwice: two accepted completions of one job (at two tokens, in
// two processes) are a job finished twice, and a completion plus a burial
// too.
func TestJudgeTwice(t *testing.T) {
	l := ledgerOf(t, `
S JOB1 1
E JOB1 1 ok
C JOB1 1
S JOB2 1
E JOB2 1 err
B JOB2 1
`, `
S JOB1 2
E JOB1 2 ok
C JOB1 2
S JOB2 2
E JOB2 2 ok
C JOB2 2
`)
	v := Judge([]string{"JOB1", "JOB2"}, l, nil, nil)
	if v.Twice != 2 || v.Finished != 2 || v.Lost != 0 {
		t.Fatalf("twice %d, finished %d, lost %d; want 2, 2, 0 (%v)", v.Twice, v.Finished, v.Lost, v.Problems)
	}
	// The completion at token 1 was accepted though token 2 was minted.
	if v.StaleAccepted != 1 {
		t.Errorf("stale accepted %d, want 1", v.StaleAccepted)
	}
}

// TestJudgeStaleAccepted: a completion accepted from a lease holder whose
// token is not the highest minted — whether another handler recorded the
// newer token or only the checker saw it — is detected.
func TestJudgeStaleAccepted(t *testing.T) {
	l := ledgerOf(t, `
S JOB1 1
E JOB1 1 ok
C JOB1 1
S JOB1 2
S JOB2 3
E JOB2 3 ok
C JOB2 3
`)
	v := Judge([]string{"JOB1", "JOB2"}, l, nil, map[string]int64{"JOB2": 4})
	if v.StaleAccepted != 2 {
		t.Fatalf("stale accepted %d, want 2 (%v)", v.StaleAccepted, v.Problems)
	}
	if v.Twice != 0 || v.Lost != 0 || v.Finished != 2 {
		t.Errorf("twice %d, lost %d, finished %d; want 0, 0, 2", v.Twice, v.Lost, v.Finished)
	}
}

// TestJudgeInDoubt: a completion whose outcome the worker never learned
// (killed, or the settle failed) finishes the job when the row is gone
// and nothing else did; when a later lease completed, it is only counted
// in doubt.
func TestJudgeInDoubt(t *testing.T) {
	l := ledgerOf(t, `
S JOB1 1
E JOB1 1 ok
S JOB2 1
E JOB2 1 ok
F JOB2 1
S JOB3 1
E JOB3 1 ok
`, `
S JOB3 2
E JOB3 2 ok
C JOB3 2
`)
	v := Judge([]string{"JOB1", "JOB2", "JOB3"}, l, nil, nil)
	if v.Inferred != 2 || v.InDoubt != 3 || v.Finished != 3 || v.Lost != 0 || v.Twice != 0 {
		t.Fatalf("inferred %d, in doubt %d, finished %d, lost %d, twice %d; want 2, 3, 3, 0, 0 (%v)", v.Inferred, v.InDoubt, v.Finished, v.Lost, v.Twice, v.Problems)
	}
}

// TestJudgeDoubleLease: one token started by two handlers (attempts went
// back, or a lease was delivered twice), and a job completed yet queued
// again at the end, are reported.
func TestJudgeDoubleLease(t *testing.T) {
	l := ledgerOf(t, `
S JOB1 1
E JOB1 1 ok
C JOB1 1
`, `
S JOB1 1
S JOB2 1
E JOB2 1 ok
C JOB2 1
`)
	v := Judge([]string{"JOB1", "JOB2"}, l, map[string]emq.Set{"JOB2": emq.SetPending}, nil)
	if v.DoubleLeases != 1 || v.Resurrected != 1 {
		t.Fatalf("double leases %d, resurrected %d; want 1, 1 (%v)", v.DoubleLeases, v.Resurrected, v.Problems)
	}
}

// TestLedgerMalformed: torn or unknown lines are counted, not fatal;
// settles no handler could be named for are kept apart.
func TestLedgerMalformed(t *testing.T) {
	l := ledgerOf(t, `
S JOB1
X JOB1 1
S JOB1 x
U buried 1
L
`)
	if l.Malformed != 3 || l.Other["buried"] != 1 || l.LeaseLost != 1 {
		t.Errorf("malformed %d, other %v, lease lost %d; want 3, buried 1, 1", l.Malformed, l.Other, l.LeaseLost)
	}
}
