package chaos

import (
	"os"
	"testing"
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
