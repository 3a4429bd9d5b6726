package chaos

import (
	"context"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// TestMixed25Quick runs worker processes built from the frozen 2.5.0
// release beside this tree's on one queue, producers of both sides pushing
// to it and this tree's Go scheduler processes firing interval schedulers
// into it, while worker processes of both sides are SIGKILLed and frozen
// and the scheduler processes are SIGKILLed, frozen and blacked out: every
// job and every run finished exactly once, none lost (runQuick); runs
// finished by both sides; each scheduler's runs tile its timeline; the
// scheduler keys untouched by the old side.
func TestMixed25Quick(t *testing.T) {
	res := runQuick(t, "mixed25")
	for _, k := range []string{"kills_go", "kills_go250", "freezes_go", "freezes_go250", "workers_go", "workers_go250",
		"go_to_go250", "go250_to_go", "sched_kills", "sched_freezes", "sched_blackouts", "runs", "slots",
		"runs_by_go", "runs_by_go250", "multi_slot_runs"} {
		if res.Counts[k] == 0 {
			t.Errorf("count %s is 0: the scenario did not exercise what it claims (counts %v)", k, res.Counts)
		}
	}
	if res.Counts["missed"] != 0 || res.Counts["twice"] != 0 {
		t.Errorf("%d slots missed, %d fired twice; want none", res.Counts["missed"], res.Counts["twice"])
	}
	if res.Acknowledged <= res.Counts["runs"] {
		t.Errorf("%d jobs acknowledged with %d runs: the producers' jobs are not among them", res.Acknowledged, res.Counts["runs"])
	}
}

// TestMixed25SchedulerKeys: the scheduler keys after the drain hold exactly
// the upserted schedulers, as the fleet left them; a stray field or
// member, a changed record, a paused one and a due score other than the
// next slot are each reported.
func TestMixed25SchedulerKeys(t *testing.T) {
	specs := mixed25Specs(2, 1_000_000)
	rec := func(s SchedulerSpec, next int64, runs int64) emq.SchedulerInfo {
		return emq.SchedulerInfo{ID: s.ID, Schedule: emq.Schedule{Every: s.Every, Start: time.UnixMilli(s.StartMS)}, Missed: s.Missed, Backfill: s.Backfill,
			Grace: s.Grace, Next: time.UnixMilli(next), LastSlot: time.UnixMilli(next - s.Every.Milliseconds()), Runs: runs}
	}
	before := []emq.SchedulerInfo{rec(specs[0], 1_005_000, 50), rec(specs[1], 1_006_050, 40)}
	fields := []string{specs[1].ID, specs[0].ID}
	scores := map[string]float64{specs[0].ID: 1_005_000, specs[1].ID: 1_006_050}
	if p := judgeSchedulerKeys(specs, before, before, fields, scores); len(p) != 0 {
		t.Fatalf("untouched keys: %q; want no problem", p)
	}
	changed := []emq.SchedulerInfo{before[0], rec(specs[1], 1_006_450, 41)}
	paused := []emq.SchedulerInfo{before[0], before[1]}
	paused[1].Paused = true
	for _, c := range []struct {
		name   string
		after  []emq.SchedulerInfo
		fields []string
		scores map[string]float64
		want   string
	}{
		{"a stray field", before, append(fields, "stray"), scores, "scheduler hash"},
		{"a field missing", before, fields[:1], scores, "scheduler hash"},
		{"a stray member", before, fields, map[string]float64{specs[0].ID: 1_005_000, specs[1].ID: 1_006_050, "stray": 1}, "due index"},
		{"a changed record", changed, fields, map[string]float64{specs[0].ID: 1_005_000, specs[1].ID: 1_006_450}, "changed after the fleet stopped"},
		{"a paused record", paused, fields, scores, "paused true"},
		{"a due score off its next slot", before, fields, map[string]float64{specs[0].ID: 1_005_000, specs[1].ID: 1_006_000}, "due score"},
		{"a record gone", []emq.SchedulerInfo{before[0], {}}, fields, scores, "no record"},
	} {
		got := strings.Join(judgeSchedulerKeys(specs, before, c.after, c.fields, c.scores), "\n")
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: problems %q; want one saying %q", c.name, got, c.want)
		}
	}
}

// TestMixed25Records: an F record parses (a line of another kind, or one
// cut short, does not), and a thread's stat line reads stopped only in
// the states T, t, Z and X, whatever its command name holds.
func TestMixed25Records(t *testing.T) {
	f, ok := parseFired("F JOB-abc 1000 1100 mix-001")
	if !ok || f != (firedRun{id: "JOB-abc", slot: 1000, until: 1100, scheduler: "mix-001"}) {
		t.Errorf("parseFired: %+v %v", f, ok)
	}
	for _, line := range []string{"H 123", "F JOB-abc 1000 1100", "F JOB-abc x 1100 mix-001", ""} {
		if _, ok := parseFired(line); ok {
			t.Errorf("parseFired(%q) parsed", line)
		}
	}
	for stat, want := range map[string]bool{
		"12 (emqchaos) T 1 2 3": true, "12 (a) b) t 1": true, "12 (x) Z 0": true,
		"12 (emqchaos) S 1 2 3": false, "12 (emq) R 1": false, "12 (T) S 1": false, "garbage": false,
	} {
		if got := threadStopped(stat); got != want {
			t.Errorf("threadStopped(%q) = %v; want %v", stat, got, want)
		}
	}
}

// TestMixed25CleanPoint: against a real server, the clean-point check of
// the scheduler kills reports a run the server's record counts and no
// process recorded (a firing whose record a SIGKILL would lose), and
// nothing once the run is recorded.
func TestMixed25CleanPoint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	srv, err := redistest.StartServer(redistest.WithDir(filepath.Join(dir, "redis")))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, err := emq.Connect(ctx, emq.Options{Redis: rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	q, err := c.Queue(queueName)
	if err != nil {
		t.Fatal(err)
	}
	chk, err := NewChecker([]string{srv.Addr()}, q.Keys())
	if err != nil {
		t.Fatal(err)
	}
	defer chk.Close()
	now, err := c.ServerTime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	specs := mixed25Specs(2, now.UnixMilli()-10_000) // both due now
	for _, s := range specs {
		if _, err := q.UpsertScheduler(ctx, s.ID, emq.Schedule{Every: s.Every, Start: time.UnixMilli(s.StartMS)}, emq.WithMissed(s.Missed),
			emq.WithBackfill(s.Backfill), emq.WithGrace(s.Grace), emq.WithTemplate([]byte(mixed25Template))); err != nil {
			t.Fatal(err)
		}
	}
	records := filepath.Join(dir, "scheduler-001.rec")
	rec, err := openRecorder(records)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.close()
	rec.text(recSchedHello, "1")
	m := &schedMix{r: &run{chk: chk, queue: q}, specs: specs, ids: []string{specs[0].ID, specs[1].ID},
		fleet: &schedFleet{all: []*schedProc{{n: 1, lang: LangGo, records: records}}}}
	if why, _, err := m.unrecorded(ctx); err != nil || why != "" {
		t.Fatalf("before any firing: %q, %v; want nothing unrecorded", why, err)
	}
	fired, err := q.FireDue(ctx, 0)
	if err != nil || len(fired) == 0 {
		t.Fatalf("FireDue fired %d runs, %v; want some", len(fired), err)
	}
	why, _, err := m.unrecorded(ctx)
	if err != nil || !strings.Contains(why, "recorded") {
		t.Fatalf("with %d runs fired and none recorded: %q, %v; want them reported", len(fired), why, err)
	}
	for _, r := range fired[:len(fired)-1] {
		rec.text(recSchedFired, r.ID.String(), strconv.FormatInt(r.Slot.UnixMilli(), 10), strconv.FormatInt(msOf(r.Until), 10), r.Scheduler)
	}
	if why, _, err := m.unrecorded(ctx); err != nil || why == "" {
		t.Fatalf("with the last of %d runs unrecorded: %q, %v; want it reported", len(fired), why, err)
	}
	last := fired[len(fired)-1]
	rec.text(recSchedFired, last.ID.String(), strconv.FormatInt(last.Slot.UnixMilli(), 10), strconv.FormatInt(msOf(last.Until), 10), last.Scheduler)
	if why, _, err := m.unrecorded(ctx); err != nil || why != "" {
		t.Fatalf("with every run recorded: %q, %v; want nothing unrecorded", why, err)
	}
	runs, err := m.recorded()
	if err != nil || len(runs) != len(fired) {
		t.Fatalf("read %d recorded runs, %v; want %d", len(runs), err, len(fired))
	}
}
