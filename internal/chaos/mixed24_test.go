package chaos

import (
	"testing"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// TestMixedDedupQuick runs producers and worker processes built from the
// frozen 2.4.0 release beside this tree's on one queue, the new side
// pushing every job with a deduplication key, while worker processes of
// both sides are SIGKILLed and frozen and a canceller cancels pending and
// active jobs: every job completed exactly once, dead or cancelled, none
// lost (runQuick), no settle of a cancelled job accepted, and the
// deduplication hash swept empty after the drain.
func TestMixedDedupQuick(t *testing.T) {
	res := runQuick(t, "mixed24")
	for _, k := range []string{"kills_go", "kills_go240", "freezes_go", "freezes_go240", "workers_go", "workers_go240",
		"go_to_go240", "go240_to_go", "cancelled", "dedup_max"} {
		if res.Counts[k] == 0 {
			t.Errorf("count %s is 0: the scenario did not exercise what it claims (counts %v)", k, res.Counts)
		}
	}
	if res.Counts["dedup_left"] != 0 {
		t.Errorf("%d deduplication entries left after the sweep", res.Counts["dedup_left"])
	}
}

// TestJudgeCancelled: a cancelled job is finished by its cancellation; a
// settle of it accepted, or the job in a set at the end, is a violation.
func TestJudgeCancelled(t *testing.T) {
	l := NewLedger()
	l.Jobs["JOB2"] = map[int64]*Lease{1: {Ended: true, OK: true, Outcome: recCompleted}}
	l.Cancelled["JOB1"] = string(wire.StatePending)
	l.Cancelled["JOB2"] = string(wire.StateActive)
	l.Cancelled["JOB3"] = string(wire.StateScheduled)
	v := Judge([]string{"JOB1", "JOB2", "JOB3"}, l, map[string]emq.Set{"JOB3": emq.SetPending}, nil)
	if v.Cancelled != 3 || v.Finished != 3 || v.Lost != 0 || v.Twice != 1 || v.Resurrected != 1 || len(v.Problems) != 2 {
		t.Errorf("verdict %+v; want 3 cancelled and finished, one settled after it, one still pending", v)
	}
}
