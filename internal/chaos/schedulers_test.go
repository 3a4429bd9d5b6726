package chaos

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
)

// TestSchedulersQuick runs Go, Python and TypeScript scheduler processes over a
// queue's interval schedulers for a few seconds while they are SIGKILLed,
// frozen and all stopped past the schedulers' grace: every scheduler's runs
// tile its timeline from its start to its final next slot, no slot missed
// and none fired twice, and every process took part. EMQCHAOS_LONG=1 runs
// the long variant (100 schedulers, two minutes).
func TestSchedulersQuick(t *testing.T) {
	t.Parallel() // paced by its own schedule, on its own servers (see runQuick)
	long := os.Getenv(longEnv) == "1"
	limit := 150 * time.Second
	if long {
		limit = 30 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	res, err := Schedulers{}.Run(ctx, Config{Dir: t.TempDir(), Log: t.Logf, Long: long})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s | %s | %s | %s | took %v", res.Scenario, res.Load, res.Faults, res.Notes, res.Took.Round(time.Millisecond))
	t.Logf("counts: %v", res.Counts)
	if len(res.Violations) > 0 {
		t.Errorf("%d violations:\n%s", len(res.Violations), strings.Join(res.Violations, "\n"))
	}
	if res.Lost != 0 || res.Twice != 0 || res.Finished != res.Acknowledged || res.Acknowledged == 0 {
		t.Errorf("slots %d: in one run %d, in none %d, in several %d; want every slot in exactly one", res.Acknowledged, res.Finished, res.Lost, res.Twice)
	}
	for _, k := range []string{"kills_go", "kills_py", "kills_ts", "freezes", "blackouts", "runs_go", "runs_py", "runs_ts", "multi_slot_runs", "passes"} {
		if res.Counts[k] == 0 {
			t.Errorf("count %s is 0: the scenario did not exercise what it claims (counts %v)", k, res.Counts)
		}
	}
}

// TestJudgeScheduler: runs that tile pass; a gap, an overlap, a run off
// the slots, a wrong count or last run are each reported.
func TestJudgeScheduler(t *testing.T) {
	s := SchedulerSpec{ID: "s", Every: 100 * time.Millisecond, StartMS: 1000}
	info := func(next int64, runs int64, last string, lastSlot int64) emq.SchedulerInfo {
		id, _ := emq.ParseID(last)
		return emq.SchedulerInfo{ID: "s", Next: time.UnixMilli(next), Runs: runs, LastID: id, LastSlot: time.UnixMilli(lastSlot)}
	}
	id := func(n string) string {
		return string(emq.WorkKind) + strings.Repeat("0", 14-len(emq.WorkKind)-len(n)) + n
	}
	tile := []schedRun{{id: id("1"), slot: 1000, until: 1100}, {id: id("2"), slot: 1100, until: 1400}, {id: id("3"), slot: 1400, until: 1500}}
	if v := judgeScheduler(s, info(1500, 3, id("3"), 1400), tile); len(v.problems) > 0 || v.slots != 5 || v.covered != 5 || v.multi != 1 {
		t.Errorf("a tiling: %+v", v)
	}
	gap := []schedRun{tile[0], tile[2]}
	if v := judgeScheduler(s, info(1500, 2, id("3"), 1400), gap); v.missed != 3 || len(v.problems) == 0 {
		t.Errorf("a gap: %+v", v)
	}
	twice := append(tile, schedRun{id: id("4"), slot: 1200, until: 1300})
	if v := judgeScheduler(s, info(1500, 4, id("3"), 1400), twice); v.twice != 1 {
		t.Errorf("an overlap: %+v", v)
	}
	if v := judgeScheduler(s, info(1500, 3, id("3"), 1400), []schedRun{tile[0], tile[1], {id: id("3"), slot: 1450, until: 1500}}); len(v.problems) == 0 {
		t.Errorf("a run off the slots: %+v", v)
	}
	if v := judgeScheduler(s, info(1500, 4, id("2"), 1100), tile); len(v.problems) != 2 {
		t.Errorf("a wrong count and last run: %+v", v)
	}
}
