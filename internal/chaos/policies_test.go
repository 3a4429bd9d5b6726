package chaos

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestPoliciesQuick runs this tree's Go worker processes on one queue while
// a controller pauses, resumes and caps it in cycles and worker processes
// are SIGKILLed and frozen: no lease claimed while paused, no claim leaving
// more leases held than the cap, every job finished exactly once, none
// lost (runQuick); each cap was reached, and the tripwire was laid and
// lifted.
func TestPoliciesQuick(t *testing.T) {
	res := runQuick(t, "policies")
	_, pc := policiesPlan(Config{Long: os.Getenv(longEnv) == "1"})
	want := []string{"kills", "freezes", "policy_cycles", "claims_under_policy", "checks_policy", "checks_classic", "resumed_go", "reaped"}
	for _, cp := range pc.caps {
		want = append(want, "saturated_cap_"+itoa(cp))
	}
	for _, k := range want {
		if res.Counts[k] == 0 {
			t.Errorf("count %s is 0: the scenario did not exercise what it claims (counts %v)", k, res.Counts)
		}
	}
	for _, k := range []string{"paused_claims", "cap_breaches"} {
		if res.Counts[k] != 0 {
			t.Errorf("count %s is %d; want 0", k, res.Counts[k])
		}
	}
}

// TestMixed26PolicyQuick runs worker processes built from the frozen 2.6.1
// release beside this tree's while a controller lays and lifts the queue's
// tripwire: the old side leases and settles nothing under a policy, its
// claims fail WRONGTYPE (counted from what it logged), it leases again
// once the last policy is cleared; the probes refused; every job finished
// exactly once, none lost.
func TestMixed26PolicyQuick(t *testing.T) {
	res := runQuick(t, "mixed26policy")
	for _, k := range []string{"kills_go", "kills_go261", "freezes_go", "freezes_go261", "workers_go", "workers_go261",
		"policy_cycles", "resumed_go", "resumed_go261", "logged_old_claiming_WRONGTYPE", "probe_accepted"} {
		if res.Counts[k] == 0 {
			t.Errorf("count %s is 0: the scenario did not exercise what it claims (counts %v)", k, res.Counts)
		}
	}
	if res.Counts["probe_refusals"] != 5 {
		t.Errorf("%d of 5 tripwire probes refused", res.Counts["probe_refusals"])
	}
	for _, k := range []string{"old_claims_under_policy", "old_settles_under_policy", "old_released_early", "paused_claims", "cap_breaches"} {
		if res.Counts[k] != 0 {
			t.Errorf("count %s is %d; want 0", k, res.Counts[k])
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestJudgePolicy: the judge of the policy scenarios, on a timeline made by
// hand. A lease claimed while the queue was surely paused is a violation;
// one claimed in the millisecond of a change's bracket is not; a claim
// leaving more leases surely held than the cap is, and one after a settle
// accepted (the slot freed) is not; a cap lowered below the leases held
// takes none back; a lost lease stops counting at its deadline; the old
// side leasing or settling under a policy is reported, and so is a lease it
// held when a tripwire was laid leased again before its deadline.
func TestJudgePolicy(t *testing.T) {
	const lease = 1000 // ms
	ms := func(m int64) int64 { return m * 1000 }
	base := int64(1_000_000) // ms
	lr := func(id string, tok, proc int64, claim int64, end int64, outcome byte, lang Lang) *leaseRec {
		l := &leaseRec{id: id, token: tok, proc: int(proc), lang: lang, claimMS: base + claim, deadMS: base + claim + lease, startUS: ms(base + claim + 1), outcome: outcome}
		if end > 0 {
			l.endUS, l.ok = ms(base+end), true
			l.settled = l.endUS + 500
		}
		return l
	}
	change := func(at int64, from, to policyState) policyChange {
		return policyChange{Before: ms(base + at), After: ms(base+at) + 800, From: from, To: to}
	}
	none, paused, cap2, cap1 := policyState{}, policyState{Paused: true}, policyState{Cap: 2}, policyState{Cap: 1}
	changes := []policyChange{change(100, none, paused), change(200, paused, none), change(300, none, cap2), change(600, cap2, cap1), change(900, cap1, none)}

	t.Run("pause", func(t *testing.T) {
		tl := &timeline{leases: []*leaseRec{
			lr("A", 1, 1, 150, 160, recCompleted, LangGo), // surely paused: a violation
			lr("B", 1, 1, 100, 130, recCompleted, LangGo), // the pause's bracket: either
			lr("C", 1, 1, 99, 120, recCompleted, LangGo),  // before it
			lr("D", 1, 1, 201, 230, recCompleted, LangGo), // after the resume was answered
		}}
		v := judgePolicy(tl, changes, nil)
		if v.Paused != 1 || len(v.Problems) != 1 || !strings.Contains(v.Problems[0], "A token 1") {
			t.Errorf("paused %d, problems %q; want A alone", v.Paused, v.Problems)
		}
		if v.InBrackets != 1 {
			t.Errorf("%d claims in brackets; want 1 (B)", v.InBrackets)
		}
	})
	t.Run("cap", func(t *testing.T) {
		tl := &timeline{leases: []*leaseRec{
			lr("A", 1, 1, 310, 400, recCompleted, LangGo),
			lr("B", 1, 2, 320, 450, recCompleted, LangGo),
			lr("C", 1, 3, 401, 500, recCompleted, LangGo), // after A's settle: two held
			lr("D", 1, 3, 420, 440, recCompleted, LangGo), // B and C held: three
		}}
		v := judgePolicy(tl, changes, nil)
		if v.CapBreaches != 1 || len(v.Problems) != 1 || !strings.Contains(v.Problems[0], "D token 1") {
			t.Errorf("breaches %d, problems %q; want D alone", v.CapBreaches, v.Problems)
		}
		if v.MaxHeld[2] != 3 || v.Saturated[2] != 2 {
			t.Errorf("max held %v, saturated %v; want 3 held at most under cap 2, exactly 2 at two claims (B, C)", v.MaxHeld, v.Saturated)
		}
	})
	t.Run("lowered", func(t *testing.T) {
		tl := &timeline{leases: []*leaseRec{
			lr("A", 1, 1, 550, 700, recCompleted, LangGo),
			lr("B", 1, 2, 560, 720, recCompleted, LangGo), // two held when the cap drops to 1: none taken back
			lr("C", 1, 3, 730, 800, recCompleted, LangGo), // both settled: one held
		}}
		if v := judgePolicy(tl, changes, nil); v.CapBreaches != 0 || v.Paused != 0 {
			t.Errorf("breaches %d, paused %d, problems %q; want none", v.CapBreaches, v.Paused, v.Problems)
		}
	})
	t.Run("lost lease", func(t *testing.T) {
		// A's holder froze: its settle refused long after; its lease
		// counts to its deadline only. Another policy set: cap 1 from 0.
		ch := []policyChange{change(0, none, cap1)}
		a := lr("A", 1, 1, 10, 2500, recStaleDone, LangGo)
		tl := &timeline{leases: []*leaseRec{a, lr("A", 2, 2, 1020, 1100, recCompleted, LangGo)}}
		if v := judgePolicy(tl, ch, nil); v.CapBreaches != 0 || v.HandlerOverlap != 2 {
			t.Errorf("breaches %d, handler overlap %d, problems %q; want none and 2 handlers at once", v.CapBreaches, v.HandlerOverlap, v.Problems)
		}
		early := lr("A", 2, 2, 900, 950, recCompleted, LangGo)
		if v := judgePolicy(&timeline{leases: []*leaseRec{a, early}}, ch, nil); v.CapBreaches != 1 {
			t.Errorf("a second lease before the first's deadline under cap 1: breaches %d; want 1", v.CapBreaches)
		}
	})
	t.Run("old side", func(t *testing.T) {
		old := func(l Lang) bool { return l == LangPrev26 }
		ch := []policyChange{change(100, none, cap2), change(2000, cap2, none)}
		held := lr("H", 1, 1, 50, 150, recFailed, LangPrev26) // held at the laying, its completion failed
		tl := &timeline{leases: []*leaseRec{
			held,
			lr("H", 2, 2, 1060, 1100, recCompleted, LangGo),     // leased again after its deadline, under the cap
			lr("U", 1, 1, 500, 600, recCompleted, LangPrev26),   // the old side leasing under a policy
			lr("S", 1, 1, 60, 0, 0, LangPrev26),                 // its settle below
			lr("E", 1, 1, 70, 140, recFailed, LangPrev26),       // held at the laying ...
			lr("E", 2, 2, 1000, 1030, recCompleted, LangGo),     // ... leased again before its deadline (1070)
			lr("K", 1, 1, 2100, 2200, recCompleted, LangPrev26), // after the clear: fine
			lr("J", 1, 1, 80, 100, recRetried, LangPrev26),      // settled in the laying's bracket: not judged
		}}
		s := tl.leases[3]
		s.endUS, s.settled, s.outcome = ms(base+700), ms(base+710), recCompleted
		v := judgePolicy(tl, ch, old)
		if v.OldUnderPolicy != 1 || v.OldSettledUnder != 2 || v.OldStranded != 2 || v.OldTakenUnder != 1 || v.OldReleasedTooSoon != 1 {
			t.Errorf("verdict %+v; want 1 old lease and 2 old settles under the policy, 2 stranded (1 taken back under it, 1 too soon)", v)
		}
	})
}
