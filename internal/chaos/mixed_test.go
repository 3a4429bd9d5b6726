package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
)

// TestMixedQuick runs producers and worker processes built from the frozen
// 2.2.1 release (its Go SDK, built from git history) beside this tree's on
// one queue, while worker processes of both sides are SIGKILLed and
// frozen: every job completed exactly once or dead, none lost (runQuick),
// and the new side reads every job right (Get, its failure history and
// time of death; no orphan record left after the drain). It fails, with
// the hint, on a clone without the release's history.
func TestMixedQuick(t *testing.T) {
	res := runQuick(t, "mixed")
	for _, k := range []string{"kills_go", "kills_go221", "freezes_go", "freezes_go221", "workers_go", "workers_go221", "reaped",
		"go_to_go221", "go221_to_go", "read_dead_jobs", "old_burials", "died_at_unknown", "read_completed"} {
		if res.Counts[k] == 0 {
			t.Errorf("count %s is 0: the scenario did not exercise what it claims (counts %v)", k, res.Counts)
		}
	}
	if n := int64(len(langPairs(mixedLangs))); res.Counts["stale_probes"] != n {
		t.Errorf("%d of %d cross-side stale checks passed", res.Counts["stale_probes"], n)
	}
	if n := int64(len(mixedRecordCases)); res.Counts["record_probes"] != n {
		t.Errorf("%d of %d mixed-record checks passed", res.Counts["record_probes"], n)
	}
	if res.Counts["read_jobs"] != res.Acknowledged {
		t.Errorf("the new side read %d jobs of %d acknowledged", res.Counts["read_jobs"], res.Acknowledged)
	}
	if newSideRecords {
		// A recording new side leaves records behind the old side's
		// completions, which its maintenance must sweep; and it dates
		// the deaths it causes.
		for _, k := range []string{"new_burials", "died_at_set", "records_read", "new_side_records"} {
			if res.Counts[k] == 0 {
				t.Errorf("count %s is 0 with a recording new side (counts %v)", k, res.Counts)
			}
		}
		if res.Counts["orphans_planted"] != orphansPlanted || res.Counts["orphans_swept"] < orphansPlanted {
			t.Errorf("%d orphaned records planted, %d swept; want %d planted and all swept", res.Counts["orphans_planted"], res.Counts["orphans_swept"], orphansPlanted)
		}
	}
}

// TestMixedJudge feeds the new side's reader judge reads that are right
// and reads that are wrong: each wrong one is reported.
func TestMixedJudge(t *testing.T) {
	now := time.Now()
	at := now.Add(-time.Second)
	newJudge := func(recording bool) *mixedJudge {
		return &mixedJudge{recording: recording, from: now.Add(-time.Hour), to: now.Add(time.Hour), always: func(id string) bool { return id == "always" }, counts: map[string]int64{}}
	}
	fa := func(att int64, class emq.FailureClass, worker string) emq.FailedAttempt {
		return emq.FailedAttempt{Attempt: att, At: at, Class: class, Worker: worker, Message: "boom"}
	}
	dead := func(attempts int64, died time.Time, hist ...emq.FailedAttempt) emq.JobInfo {
		return emq.JobInfo{State: emq.StateDead, Attempts: attempts, Failures: hist, DiedAt: died}
	}
	oldBuried := map[int64]settler{1: {lang: LangOld, pid: "7", failed: true, outcome: recRetried}, 2: {lang: LangOld, pid: "7", failed: true, outcome: recBuried}}
	newRetriedOldBuried := map[int64]settler{1: {lang: LangGo, pid: "5", failed: true, outcome: recRetried}, 2: {lang: LangOld, pid: "7", failed: true, outcome: recBuried}}
	newBuried := map[int64]settler{1: {lang: LangOld, pid: "7", failed: true, outcome: recRetried}, 2: {lang: LangGo, pid: "5", failed: true, outcome: recBuried}}
	cases := []struct {
		name      string
		recording bool
		info      emq.JobInfo
		ok        bool
		leases    map[int64]settler
		want      string // a word of the problem; "" for none
	}{
		{"old buried, nothing recorded", false, dead(2, time.Time{}), true, oldBuried, ""},
		{"old buried, dated", false, dead(2, at), true, oldBuried, "never guessed"},
		{"new retried, old buried", true, dead(2, time.Time{}, fa(1, emq.FailureClassError, "h:5")), true, newRetriedOldBuried, ""},
		{"new retried, old buried, dated", true, dead(2, at, fa(1, emq.FailureClassError, "h:5")), true, newRetriedOldBuried, "never guessed"},
		{"new buried", true, dead(2, at, fa(2, emq.FailureClassError, "h:5")), true, newBuried, ""},
		{"new buried, not dated", true, dead(2, time.Time{}, fa(2, emq.FailureClassError, "h:5")), true, newBuried, "dead since"},
		{"new buried, not recorded", true, dead(2, time.Time{}), true, newBuried, "not recorded"},
		{"new buried by another worker", true, dead(2, at, fa(2, emq.FailureClassError, "h:6")), true, newBuried, "pid 5"},
		{"a record of an old attempt", false, dead(2, time.Time{}, fa(1, emq.FailureClassError, "h:7")), true, oldBuried, "records nothing"},
		{"a lost lease its holder settled", false, dead(2, time.Time{}, fa(1, emq.FailureClassLeaseLost, "")), true, oldBuried, "lost lease"},
		{"a lost lease", false, dead(2, time.Time{}, fa(1, emq.FailureClassLeaseLost, "")), true, map[int64]settler{2: oldBuried[2]}, ""},
		{"an unknown word", false, dead(2, time.Time{}, fa(1, "melted", "")), true, map[int64]settler{2: oldBuried[2]}, "melted"},
		{"descending", false, dead(3, time.Time{}, fa(2, emq.FailureClassLeaseLost, ""), fa(1, emq.FailureClassLeaseLost, "")), true, nil, "ascending"},
		{"completed, history read", false, emq.JobInfo{Failures: []emq.FailedAttempt{fa(1, emq.FailureClassError, "h:5")}}, false, nil, "must read as nothing"},
		{"completed", false, emq.JobInfo{}, false, nil, ""},
		{"still pending", false, emq.JobInfo{State: emq.StatePending, Attempts: 1}, true, nil, "after the drain"},
	}
	for _, c := range cases {
		j := newJudge(c.recording)
		j.job("job", c.info, c.ok, c.info.Failures, c.leases)
		got := strings.Join(j.problems, "\n")
		switch {
		case c.want == "" && got != "":
			t.Errorf("%s: problems %q; want none", c.name, got)
		case c.want != "" && !strings.Contains(got, c.want):
			t.Errorf("%s: problems %q; want one saying %q", c.name, got, c.want)
		}
	}
	// Get and Failures disagreeing is a problem.
	j := newJudge(false)
	j.job("job", dead(2, time.Time{}), true, []emq.FailedAttempt{fa(1, emq.FailureClassLeaseLost, "")}, map[int64]settler{2: oldBuried[2]})
	if len(j.problems) == 0 {
		t.Error("Get and Failures disagreed, and the judge said nothing")
	}
	// An always-failing job completed is a problem.
	j = newJudge(false)
	j.job("always", emq.JobInfo{}, false, nil, nil)
	if len(j.problems) == 0 {
		t.Error("an always-failing job was completed, and the judge said nothing")
	}
	// A new side that records while newSideRecords says it does not fails
	// the run with the hint.
	j = newJudge(false)
	j.job("job", dead(2, at, fa(2, emq.FailureClassError, "h:5")), true, []emq.FailedAttempt{fa(2, emq.FailureClassError, "h:5")}, newBuried)
	j.finish()
	if !strings.Contains(strings.Join(j.problems, "\n"), "newSideRecords") {
		t.Errorf("a recording new side with newSideRecords false: problems %q; want the hint to set it", j.problems)
	}
}
