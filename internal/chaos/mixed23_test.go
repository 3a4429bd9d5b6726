package chaos

import "testing"

// TestMixedPrevQuick runs producers and worker processes built from the
// frozen 2.3.0 release (its Go SDK, built from git history) beside this
// tree's on one queue, while worker processes of both sides are SIGKILLed
// and frozen: every job completed exactly once or dead, none lost
// (runQuick), late completions refused across sides, and the queue's
// settle counters count exactly the new side's completions, the new side's
// completions keep their records, and the retry policies the old side's
// completions leave are swept.
func TestMixedPrevQuick(t *testing.T) {
	res := runQuick(t, "mixed23")
	for _, k := range []string{"kills_go", "kills_go230", "freezes_go", "freezes_go230", "workers_go", "workers_go230", "reaped",
		"go_to_go230", "go230_to_go", "new_completions", "old_completions", "counted_completed", "completion_records", "policies_at_drain"} {
		if res.Counts[k] == 0 {
			t.Errorf("count %s is 0: the scenario did not exercise what it claims (counts %v)", k, res.Counts)
		}
	}
	if n := int64(len(langPairs(prevLangs))); res.Counts["stale_probes"] != n {
		t.Errorf("%d of %d cross-side stale checks passed", res.Counts["stale_probes"], n)
	}
	if res.Counts["counted_completed"] != res.Counts["new_completions"] {
		t.Errorf("the counters count %d completions; new-side workers completed %d", res.Counts["counted_completed"], res.Counts["new_completions"])
	}
}
