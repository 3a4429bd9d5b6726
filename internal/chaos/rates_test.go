package chaos

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestRatesQuick runs this tree's Go worker processes on a queue with a
// rate limit while worker processes are SIGKILLed and frozen: no window of
// the period started more jobs than the limit, the saturated run started
// them at the limit's pace (never above it; within the quick variant's
// tolerance below it), no attempt was spent without a start, nothing was
// buried, every job finished exactly once, none lost (runQuick).
func TestRatesQuick(t *testing.T) {
	res := runQuick(t, "rates")
	_, rs := ratesPlan(Config{Long: os.Getenv(longEnv) == "1"})
	for _, k := range []string{"kills", "freezes", "reaped", "starts_under_limit", "saturated_spans", "starts_log_matched"} {
		if res.Counts[k] == 0 {
			t.Errorf("count %s is 0: the scenario did not exercise what it claims (counts %v)", k, res.Counts)
		}
	}
	for _, k := range []string{"window_breaches", "saturated_over_pace", "starts_log_mismatched", "starts_log_missing", "buried"} {
		if res.Counts[k] != 0 {
			t.Errorf("count %s is %d; want 0", k, res.Counts[k])
		}
	}
	if w := res.Counts["window_max"]; w > rs.limit.N || w < rs.limit.N/2 {
		t.Errorf("at most %d starts in a window of %v; want at most the limit %d, and near it", w, rs.limit.Period, rs.limit.N)
	}
	lo := int64((1 - rs.tolerance) * 1000)
	if r := res.Counts["saturated_rate_permille"]; r < lo || r > 1020 {
		t.Errorf("the saturated start rate is %d‰ of the limit; want %d‰ to 1000‰ (the pace's tolerance: 1020‰)", r, lo)
	}
}

// TestMixed27RateQuick runs worker processes built from the frozen 2.7.0
// release beside this tree's while a controller sets a rate limit whenever
// a 2.7.0 worker holds leases and removes it again: the old side's claims
// are refused (EMQPOLICY, counted from what it logged) and it leases
// nothing under the limit, its settles of the leases it held are
// accepted, it leases again once the limit is removed; the probes refused
// and accepted as they must; no window of the period exceeded; every job
// finished exactly once, none lost.
func TestMixed27RateQuick(t *testing.T) {
	res := runQuick(t, "mixed27rate")
	for _, k := range []string{"kills_go", "kills_go270", "workers_go", "workers_go270", "rate_cycles", "resumed_go270",
		"old_claims_refused", "old_held_at_set", "old_settled_under_limit", "starts_under_limit", "probe_accepted"} {
		if res.Counts[k] == 0 {
			t.Errorf("count %s is 0: the scenario did not exercise what it claims (counts %v)", k, res.Counts)
		}
	}
	if res.Counts["probe_refusals"] != 2 {
		t.Errorf("%d of 2 rate probes refused", res.Counts["probe_refusals"])
	}
	for _, k := range []string{"old_leases_under_limit", "window_breaches", "saturated_over_pace", "starts_log_mismatched", "starts_log_missing"} {
		if res.Counts[k] != 0 {
			t.Errorf("count %s is %d; want 0", k, res.Counts[k])
		}
	}
}

// TestJudgeRates: the judge of the rate scenarios, on a timeline made by
// hand. A window of the period holding more starts than the limit is a
// breach, one exactly at it is not; a start within a change's bracket is
// judged by neither side; a token a job's records lack is taken from the
// starts log (and counted unseen when the log never held it); a recorded
// start the log holds at another millisecond is reported; a saturated span
// faster than the pace is reported; the old side leasing under the limit
// is reported.
func TestJudgeRates(t *testing.T) {
	const lease = 1000       // ms
	base := int64(1_000_000) // ms
	us := func(m int64) int64 { return (base + m) * 1000 }
	lr := func(id string, tok int64, claim int64, lang Lang) *leaseRec {
		return &leaseRec{id: id, token: tok, proc: 1, lang: lang, claimMS: base + claim, deadMS: base + claim + lease, startUS: us(claim) + 100}
	}
	lim := rateLimit{N: 3, Period: 100 * time.Millisecond}
	changes := []rateChange{{Before: us(0), After: us(0) + 500, To: lim}, {Before: us(1000), After: us(1000) + 500}}
	logOf := func(ls []*leaseRec) map[string]int64 {
		m := map[string]int64{}
		for _, l := range ls {
			m[l.id+":"+itoa(l.token)] = l.claimMS
		}
		return m
	}
	polls := []int64{}
	for m := int64(10); m < 1000; m += 20 {
		polls = append(polls, us(m))
	}
	t.Run("windows", func(t *testing.T) {
		ls := []*leaseRec{lr("A", 1, 0, LangGo), lr("B", 1, 10, LangGo), lr("C", 1, 40, LangGo), lr("D", 1, 80, LangGo), lr("E", 1, 110, LangGo), lr("F", 1, 300, LangGo), lr("G", 1, 330, LangGo), lr("H", 1, 360, LangGo), lr("I", 1, 399, LangGo)}
		v := judgeRates(&timeline{leases: ls}, changes, nil, logOf(ls), polls, nil)
		// A (in the bracket) is not judged; B C D: 3 in 100 ms; F G H I: 4 in 100 ms.
		if v.InBrackets != 1 || v.UnderLimit != 8 || v.WindowMax != 4 || v.WindowBreaches != 1 {
			t.Errorf("verdict %+v; want 1 start in a bracket, 8 under the limit, 4 at most in a window, 1 breach (I)", v)
		}
		if len(v.Problems) != 1 || !strings.Contains(v.Problems[0], "I:1") {
			t.Errorf("problems %q; want I's window alone", v.Problems)
		}
	})
	t.Run("log", func(t *testing.T) {
		ls := []*leaseRec{lr("A", 1, 100, LangGo), lr("A", 3, 400, LangGo), lr("B", 1, 200, LangGo), lr("B", 3, 600, LangGo), lr("C", 1, 700, LangGo)}
		log := logOf(ls)
		log["A:2"] = base + 250 // A's second lease: its holder died before the S line
		log["C:1"] = base + 701 // another millisecond than C's record
		v := judgeRates(&timeline{leases: ls}, changes, nil, log, polls, nil)
		if v.Unrecorded != 2 || v.FromLog != 1 || v.Unseen != 1 || v.UnseenUnder != 1 || v.LogMismatched != 1 || v.UnderLimit != 6 || !v.LogCovered {
			t.Errorf("verdict %+v; want 2 unrecorded (A:2 from the log, B:2 unseen under the limit), 1 mismatch (C), 6 under the limit", v)
		}
		// B's second lease between a lease before the limit and one under
		// it: not surely under the limit.
		ls[2] = lr("B", 1, -50, LangGo)
		if v := judgeRates(&timeline{leases: ls}, changes, nil, log, polls, nil); v.Unseen != 1 || v.UnseenUnder != 0 {
			t.Errorf("verdict %+v; want B:2 unseen, not surely under the limit", v)
		}
		polls := []int64{us(10), us(500)} // a gap of a period and more
		if v := judgeRates(&timeline{leases: ls}, changes, nil, log, polls, nil); v.LogCovered {
			t.Errorf("with the log read once in 490 ms: covered; want not (its period is 100 ms)")
		}
	})
	t.Run("pace", func(t *testing.T) {
		// One start every 10 ms over 300 ms with jobs pending: 30 starts
		// (3 per 100 ms paces one per 33.3 ms: 9 + 2 allowed).
		var ls []*leaseRec
		var samples []pendingSample
		for m := int64(100); m < 400; m += 10 {
			ls = append(ls, lr("J"+itoa(m), 1, m, LangGo))
			samples = append(samples, pendingSample{US: us(m), Pending: 5})
		}
		samples = append(samples, pendingSample{US: us(400), Pending: 5}, pendingSample{US: us(410), Pending: 0})
		v := judgeRates(&timeline{leases: ls}, changes, samples, logOf(ls), polls, nil)
		if v.SatSpans != 1 || v.SatOver != 1 || v.SatStarts != 30 || v.SatUS != 300_000 {
			t.Errorf("verdict %+v; want one saturated span of 300 ms with 30 starts, over the pace", v)
		}
	})
	t.Run("old side", func(t *testing.T) {
		ls := []*leaseRec{lr("O", 1, 500, LangPrev27), lr("P", 1, 1200, LangPrev27), lr("N", 1, 520, LangGo)}
		v := judgeRates(&timeline{leases: ls}, changes, nil, logOf(ls), polls, func(l Lang) bool { return l == LangPrev27 })
		if v.OldUnderLimit != 1 || len(v.Problems) != 1 || !strings.Contains(v.Problems[0], "O:1") {
			t.Errorf("verdict %+v; want O alone leased by the old side under the limit", v)
		}
	})
}
