package chaos

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// longEnv, set to 1, makes runQuick run a scenario's long variant (as
// cmd/emqchaos -long does), with a timeout of 30 minutes instead of 150 s.
const longEnv = "EMQCHAOS_LONG"

// runQuick runs the quick variant of the scenario named name (the long one
// with EMQCHAOS_LONG=1) and checks the promise: nothing lost, nothing
// finished twice, no violation.
func runQuick(t *testing.T, name string) Result {
	t.Helper()
	// The quick variants are paced by their push rates and fault
	// schedules, not by the CPU: they run beside each other (go test's
	// -parallel, GOMAXPROCS by default), each on its own servers.
	t.Parallel()
	s := Lookup(name)
	if s == nil {
		t.Fatalf("no scenario %q registered", name)
	}
	long := os.Getenv(longEnv) == "1"
	limit := 150 * time.Second
	if long {
		limit = 30 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	res, err := s.Run(ctx, Config{Dir: t.TempDir(), Log: t.Logf, Long: long})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Logf("%s: %s | %s | acknowledged %d, finished %d, lost %d, twice %d, stale refused %d | %s | took %v",
		res.Scenario, res.Load, res.Faults, res.Acknowledged, res.Finished, res.Lost, res.Twice, res.StaleRefused, res.Notes, res.Took.Round(time.Millisecond))
	t.Logf("counts: %v", res.Counts)
	if res.Acknowledged == 0 {
		t.Error("no enqueue was acknowledged")
	}
	if res.Lost != 0 || res.Twice != 0 {
		t.Errorf("lost %d, finished twice %d; want 0 and 0", res.Lost, res.Twice)
	}
	if res.Finished != res.Acknowledged {
		t.Errorf("finished %d of %d acknowledged jobs", res.Finished, res.Acknowledged)
	}
	if len(res.Violations) > 0 {
		t.Errorf("%d violations:\n%s", len(res.Violations), strings.Join(res.Violations, "\n"))
	}
	if res.Counts["checker_passes"] == 0 {
		t.Error("the invariant checker made no pass")
	}
	if t.Failed() {
		t.Logf("details:\n%s", res.Details)
	}
	return res
}

// TestWorkersQuick SIGKILLs and freezes worker processes under load.
func TestWorkersQuick(t *testing.T) {
	res := runQuick(t, "workers")
	if res.Counts["kills"] == 0 || res.Counts["freezes"] == 0 {
		t.Errorf("kills %d, freezes %d: the faults were not injected", res.Counts["kills"], res.Counts["freezes"])
	}
	if res.Counts["reaped"] == 0 {
		t.Error("no expired lease was reaped: the killed workers' leases were not taken back?")
	}
}

// TestRestartsQuick SIGKILLs and restarts an AOF server under load.
func TestRestartsQuick(t *testing.T) {
	res := runQuick(t, "restarts")
	if res.Counts["restarts"] == 0 {
		t.Error("the server was never restarted")
	}
	if res.Counts["fence_verified"] != res.Counts["restarts"] {
		t.Errorf("the fence was re-verified after %d of %d restarts", res.Counts["fence_verified"], res.Counts["restarts"])
	}
}

// TestPauseQuick freezes the server for longer than a lease under load.
func TestPauseQuick(t *testing.T) {
	res := runQuick(t, "pause")
	if res.Counts["pauses"] == 0 {
		t.Error("the server was never paused")
	}
	// Each pause abandons one lease just before the freeze (a holder that
	// vanished); each of those must have been reaped, whatever else expired.
	if res.Counts["abandoned"] == 0 {
		t.Error("no lease was abandoned before a freeze: the pending set was empty at every pause?")
	}
	if res.Counts["reaped"] < res.Counts["abandoned"] {
		t.Errorf("reaped %d expired leases; want at least the %d abandoned before the freezes", res.Counts["reaped"], res.Counts["abandoned"])
	}
	if want := res.Counts["reaped"] + res.Counts["retried"]; res.Counts["reruns"] != want {
		t.Errorf("the tokens imply %d re-runs; reaped %d + retried %d = %d", res.Counts["reruns"], res.Counts["reaped"], res.Counts["retried"], want)
	}
}

// TestReshardQuick moves the queue's slot between the primaries of a
// Redis Cluster in small MIGRATE batches, again and again (keys in the
// server's order, the queue's sets first, its rows first, shuffled), while
// Go and TypeScript producers push and the worker processes of
// migrationWorkers work the queue: every acknowledged job completed exactly
// once, none dropped (runQuick), across the migrations.
// EMQCHAOS_LONG=1 (or cmd/emqchaos -long) runs the long variant.
func TestReshardQuick(t *testing.T) {
	res := runQuick(t, "reshard")
	if res.Counts["migrations"] < 4 || res.Counts["migrate_batches"] <= res.Counts["migrations"] {
		t.Errorf("%d migrations in %d batches: the slot was not moved in batches as planned", res.Counts["migrations"], res.Counts["migrate_batches"])
	}
	want := []string{"workers_ts", "go_to_ts", "ts_to_ts"}
	if slices.Contains(migrationWorkers, LangGo) {
		want = append(want, "workers_go", "ts_to_go", "go_to_go")
	}
	for _, k := range want {
		if res.Counts[k] == 0 {
			t.Errorf("count %s is 0: the scenario did not exercise what it claims", k)
		}
	}
}
