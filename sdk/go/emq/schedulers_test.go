package emq_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// serverTime reads the server's clock (TIME): schedules are planned on it,
// so the tests anchor theirs there, never on the local clock.
func serverTime(t *testing.T, c *emq.Client) time.Time {
	t.Helper()
	v, err := do(t, c, "TIME").AsStrSlice()
	if err != nil || len(v) != 2 {
		t.Fatalf("TIME = %v, %v", v, err)
	}
	s, _ := strconv.ParseInt(v[0], 10, 64)
	us, _ := strconv.ParseInt(v[1], 10, 64)
	return time.UnixMilli(s*1000 + us/1000)
}

// schedulerInfo reads one scheduler's record, which must exist.
func schedulerInfo(t *testing.T, q *emq.Queue, id string) emq.SchedulerInfo {
	t.Helper()
	recs, err := q.Schedulers(ctxT(t), id)
	if err != nil || len(recs) != 1 || !recs[0].Found() {
		t.Fatalf("Schedulers(%q) = %v, %v", id, recs, err)
	}
	return recs[0]
}

// upsert upserts a scheduler, failing the test on an error.
func upsert(t *testing.T, q *emq.Queue, id string, s emq.Schedule, opts ...emq.SchedulerOption) emq.SchedulerUpsert {
	t.Helper()
	r, err := q.UpsertScheduler(ctxT(t), id, s, opts...)
	if err != nil {
		t.Fatalf("UpsertScheduler(%q): %v", id, err)
	}
	return r
}

// fireDue is one tick, failing the test on an error.
func fireDue(t *testing.T, q *emq.Queue, horizon time.Duration) []emq.FiredRun {
	t.Helper()
	fired, err := q.FireDue(ctxT(t), horizon)
	if err != nil {
		t.Fatalf("FireDue: %v", err)
	}
	return fired
}

// An upsert creates a scheduler (its next slot the interval's start), an
// upsert of the same schedule keeps its next slot whatever else changes
// (template, missed policy, grace), and an upsert of another schedule
// resets it; a cron expression's next slot is reset to now, and its zone
// is stored as UTC when none was given.
func TestUpsertSchedulerCreateUnchangedChanged(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "sched-upsert")
	now := serverTime(t, c)
	start := now.Add(time.Hour).Truncate(time.Millisecond)
	every := emq.Schedule{Every: time.Minute, Start: start}

	r := upsert(t, q, "report", every, emq.WithTemplate([]byte("v1")))
	if !r.Created || !r.Changed || !r.Next.Equal(start) {
		t.Fatalf("the first upsert = %+v; want created, changed, next %v", r, start)
	}
	r = upsert(t, q, "report", every, emq.WithTemplate([]byte("v2")), emq.WithMissed(emq.MissedSkip), emq.WithGrace(time.Second))
	if r.Created || r.Changed || !r.Next.Equal(start) {
		t.Fatalf("the same schedule again = %+v; want neither created nor changed, next kept", r)
	}
	info := schedulerInfo(t, q, "report")
	if string(info.Template) != "v2" || info.Missed != emq.MissedSkip || info.Grace != time.Second || info.Every != time.Minute || !info.Start.Equal(start) {
		t.Fatalf("the record after the second upsert = %+v", info)
	}
	later := start.Add(time.Hour)
	r = upsert(t, q, "report", emq.Schedule{Every: time.Minute, Start: later})
	if r.Created || !r.Changed || !r.Next.Equal(later) {
		t.Fatalf("another start = %+v; want changed, next %v", r, later)
	}
	r = upsert(t, q, "report", emq.Schedule{Cron: "0 3 * * *"})
	before := serverTime(t, c)
	if r.Created || !r.Changed || r.Next.Before(now) || r.Next.After(before) {
		t.Fatalf("a cron schedule = %+v; want changed, next now (%v..%v)", r, now, before)
	}
	info = schedulerInfo(t, q, "report")
	if info.Cron != "0 3 * * *" || info.TZ != "UTC" || info.Every != 0 || !info.Start.IsZero() || string(info.Template) != "" {
		t.Fatalf("the cron record = %+v; want tz UTC, no interval, the default template", info)
	}
	// An interval anchored at the upsert's server time is due at once.
	r = upsert(t, q, "now", emq.Schedule{Every: time.Hour})
	after := serverTime(t, c)
	if !r.Created || r.Next.Before(now) || r.Next.After(after) {
		t.Fatalf("an interval without a start = %+v; want next at the upsert (%v..%v)", r, now, after)
	}
	if recs, err := q.Schedulers(ctxT(t), "nobody", "now"); err != nil || len(recs) != 2 || recs[0].Found() || recs[0].ID != "" || recs[1].ID != "now" {
		t.Fatalf("Schedulers(missing, now) = %+v, %v", recs, err)
	}
}

// Everything upsert_scheduler refuses, and what only the caller can
// judge (a cron expression, a zone), is refused with a *SchedulerError
// matching ErrArgument before anything is sent: the keyspace holds no
// scheduler afterwards.
func TestUpsertSchedulerRefusals(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "sched-refusals")
	ctx := ctxT(t)
	cron := emq.Schedule{Cron: "*/5 * * * *"}
	cases := []struct {
		name  string
		id    string
		s     emq.Schedule
		opts  []emq.SchedulerOption
		field string
	}{
		{"empty id", "", cron, nil, "scheduler"},
		{"long id", strings.Repeat("x", emq.MaxSchedulerID+1), cron, nil, "scheduler"},
		{"neither", "a", emq.Schedule{}, nil, "cron"},
		{"both", "a", emq.Schedule{Cron: "* * * * *", Every: time.Second}, nil, "cron"},
		{"bad cron", "a", emq.Schedule{Cron: "61 * * * *"}, nil, "cron"},
		{"unknown zone", "a", emq.Schedule{Cron: "* * * * *", TZ: "Mars/Olympus"}, nil, "tz"},
		{"local zone", "a", emq.Schedule{Cron: "* * * * *", TZ: "Local"}, nil, "tz"},
		{"negative every", "a", emq.Schedule{Every: -time.Second}, nil, "every"},
		{"sub-millisecond every", "a", emq.Schedule{Every: 1500 * time.Microsecond}, nil, "every"},
		{"tz with every", "a", emq.Schedule{Every: time.Second, TZ: "UTC"}, nil, "tz"},
		{"start with cron", "a", emq.Schedule{Cron: "* * * * *", Start: time.Now()}, nil, "start"},
		{"start before the epoch", "a", emq.Schedule{Every: time.Second, Start: time.UnixMilli(-5)}, nil, "start"},
		{"long cron", "a", emq.Schedule{Cron: "0" + strings.Repeat(" ", emq.MaxCronBytes) + "* * * *"}, nil, "cron"},
		{"missed", "a", cron, []emq.SchedulerOption{emq.WithMissed("later_word")}, "missed"},
		{"negative backfill", "a", cron, []emq.SchedulerOption{emq.WithBackfill(-1)}, "backfill"},
		{"backfill over the bound", "a", cron, []emq.SchedulerOption{emq.WithBackfill(emq.MaxBackfill + 1)}, "backfill"},
		{"negative grace", "a", cron, []emq.SchedulerOption{emq.WithGrace(-time.Second)}, "grace"},
		{"template", "a", cron, []emq.SchedulerOption{emq.WithTemplate(make([]byte, emq.MaxTemplate+1))}, "template"},
	}
	for _, tc := range cases {
		_, err := q.UpsertScheduler(ctx, tc.id, tc.s, tc.opts...)
		var se *emq.SchedulerError
		if !errors.Is(err, emq.ErrArgument) || !errors.As(err, &se) || se.Field != tc.field {
			t.Errorf("%s: UpsertScheduler = %v; want a *SchedulerError of %s matching ErrArgument", tc.name, err, tc.field)
		}
		if tc.field == "cron" && tc.s.Cron != "" && tc.s.Every == 0 && len(tc.s.Cron) <= emq.MaxCronBytes {
			var ce *emq.CronError
			if !errors.As(err, &ce) {
				t.Errorf("%s: %v does not carry the *CronError", tc.name, err)
			}
		}
	}
	if n, err := do(t, c, "EXISTS", q.Keys().Schedulers, q.Keys().SchedulerNext).AsInt64(); err != nil || n != 0 {
		t.Fatalf("the refused upserts left %d scheduler keys (%v)", n, err)
	}
	if _, err := q.ListSchedulers(ctx, 0, 0); !errors.Is(err, emq.ErrArgument) {
		t.Errorf("ListSchedulers(count 0) = %v; want ErrArgument", err)
	}
	if _, err := q.ListSchedulers(ctx, -1, 10); !errors.Is(err, emq.ErrArgument) {
		t.Errorf("ListSchedulers(offset -1) = %v; want ErrArgument", err)
	}
	if _, err := q.ListSchedulers(ctx, 0, emq.MaxSchedulerPage+1); !errors.Is(err, emq.ErrArgument) {
		t.Errorf("ListSchedulers(count over the page) = %v; want ErrArgument", err)
	}
	if _, err := q.FireDue(ctx, -time.Second); !errors.Is(err, emq.ErrArgument) {
		t.Errorf("FireDue(negative horizon) = %v; want ErrArgument", err)
	}
	if _, err := q.FireSchedulers(ctx, []emq.SchedulerFiring{{Scheduler: "a"}}); !errors.Is(err, emq.ErrID) {
		t.Errorf("FireSchedulers(zero id) = %v; want ErrID", err)
	}
}

// An interval that fell behind by more than its grace fires its missed
// slots by its policy: run_once (one run standing for all of them, up to
// the first slot not missed), skip (none: the next slot only moves), or
// backfill (the last n, one run each); a slot within the grace runs.
func TestFireDueMissedPolicies(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "sched-missed")
	now := serverTime(t, c)
	// Eleven hourly slots fell due, the last 30 minutes ago: all missed
	// with a grace of a minute; the first slot not missed is start + 11h.
	start := now.Add(-10*time.Hour - 30*time.Minute).Truncate(time.Millisecond)
	hourly := emq.Schedule{Every: time.Hour, Start: start}
	upsert(t, q, "once", hourly)
	upsert(t, q, "skip", hourly, emq.WithMissed(emq.MissedSkip))
	upsert(t, q, "back", hourly, emq.WithMissed(emq.MissedBackfill), emq.WithBackfill(3))
	// Due 10 seconds ago: within the grace.
	recent := now.Add(-10 * time.Second).Truncate(time.Millisecond)
	upsert(t, q, "recent", emq.Schedule{Every: time.Hour, Start: recent})

	fired := fireDue(t, q, 0)
	slices.SortFunc(fired, func(a, b emq.FiredRun) int {
		if c := strings.Compare(a.Scheduler, b.Scheduler); c != 0 {
			return c
		}
		return a.Slot.Compare(b.Slot)
	})
	h := func(n int) time.Time { return start.Add(time.Duration(n) * time.Hour) }
	type run struct {
		s           string
		slot, until time.Time
	}
	want := []run{{"back", h(8), h(9)}, {"back", h(9), h(10)}, {"back", h(10), h(11)}, {"once", h(0), h(11)}, {"recent", recent, recent.Add(time.Hour)}}
	got := make([]run, len(fired))
	for i, f := range fired {
		got[i] = run{f.Scheduler, f.Slot, f.Until}
	}
	if !slices.EqualFunc(got, want, func(a, b run) bool { return a.s == b.s && a.slot.Equal(b.slot) && a.until.Equal(b.until) }) {
		t.Fatalf("fired %v; want %v", got, want)
	}
	for id, next := range map[string]time.Time{"once": h(11), "skip": h(11), "back": h(11), "recent": recent.Add(time.Hour)} {
		info := schedulerInfo(t, q, id)
		if !info.Next.Equal(next) {
			t.Errorf("%s: next %v; want %v", id, info.Next, next)
		}
	}
	skip := schedulerInfo(t, q, "skip")
	if skip.Runs != 0 || !skip.LastSlot.IsZero() || !skip.LastID.IsZero() {
		t.Errorf("skip fired: %+v", skip)
	}
	back := schedulerInfo(t, q, "back")
	if back.Runs != 3 || !back.LastSlot.Equal(h(10)) || back.LastID != fired[2].ID {
		t.Errorf("back's record %+v; want 3 runs, the last at %v as %s", back, h(10), fired[2].ID)
	}
	// Every run is a pending job.
	for _, f := range fired {
		info, ok, err := q.Get(ctxT(t), f.ID)
		if err != nil || !ok || info.State != emq.StatePending {
			t.Errorf("run %s of %s: %+v, %v, %v; want pending", f.ID, f.Scheduler, info, ok, err)
		}
	}
	// Nothing is due any more.
	if again := fireDue(t, q, 0); len(again) != 0 {
		t.Fatalf("a second tick fired %v", again)
	}
}

// A run's payload is its scheduler's template with {scheduler}, {slot}
// and {until} filled in; a run whose slot lies within the horizon is
// created scheduled at its slot; a worker claims the runs as any jobs.
func TestSchedulerRunsAreJobs(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "sched-runs")
	now := serverTime(t, c)
	start := now.Add(-time.Second).Truncate(time.Millisecond)
	tmpl := []byte(`{"by":"{scheduler}","slot":{slot},"until":{until},"raw":"{slo"}`)
	upsert(t, q, "tick", emq.Schedule{Every: time.Hour, Start: start}, emq.WithTemplate(tmpl))
	ahead := now.Add(30 * time.Second).Truncate(time.Millisecond)
	upsert(t, q, "ahead", emq.Schedule{Every: time.Hour, Start: ahead}, emq.WithTemplate([]byte("ahead {slot}")))

	fired := fireDue(t, q, time.Minute)
	if len(fired) != 2 {
		t.Fatalf("fired %v; want one run of each", fired)
	}
	runs := map[string]emq.FiredRun{}
	for _, f := range fired {
		runs[f.Scheduler] = f
	}
	want := fmt.Sprintf(`{"by":"tick","slot":%d,"until":%d,"raw":"{slo"}`, start.UnixMilli(), start.Add(time.Hour).UnixMilli())
	info, ok, err := q.Get(ctxT(t), runs["tick"].ID)
	if err != nil || !ok || info.State != emq.StatePending || string(info.Payload) != want {
		t.Fatalf("the tick run: %+v, %v, %v; want pending with %s", info, ok, err, want)
	}
	info, ok, err = q.Get(ctxT(t), runs["ahead"].ID)
	if err != nil || !ok || info.State != emq.StateScheduled || !info.At.Equal(ahead) || string(info.Payload) != fmt.Sprintf("ahead %d", ahead.UnixMilli()) {
		t.Fatalf("the run ahead: %+v, %v, %v; want scheduled at %v", info, ok, err, ahead)
	}

	got := make(chan string, 1)
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	w, err := emq.NewWorker(q, func(ctx context.Context, job emq.Job) error {
		got <- job.ID.String() + " " + string(job.Payload)
		return nil
	}, emq.WorkerOptions{Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	select {
	case g := <-got:
		if g != runs["tick"].ID.String()+" "+want {
			t.Fatalf("the worker ran %q; want the tick run", g)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no worker claimed the run within 30s")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A cron scheduler's next slot is reset to now by its upsert: a tick
// moves it to the expression's first slot (an entry without a run) until
// that slot is due; fired within a horizon, each run's slot is a slot of
// the expression and its until the next one.
func TestFireDueCron(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "sched-cron")
	upsert(t, q, "yearly", emq.Schedule{Cron: "0 0 1 1 *", TZ: "Europe/Berlin"})
	upsert(t, q, "secondly", emq.Schedule{Cron: "* * * * * *"})
	now := serverTime(t, c)
	fired := fireDue(t, q, 1500*time.Millisecond)
	yearly := schedulerInfo(t, q, "yearly")
	cs, err := emq.ParseCron("0 0 1 1 *", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	if want := cs.Next(now); !yearly.Next.Equal(want) || yearly.Runs != 0 {
		t.Fatalf("yearly: next %v, %d runs; want advanced to %v without a run", yearly.Next, yearly.Runs, want)
	}
	if len(fired) == 0 {
		t.Fatal("the secondly cron fired nothing within a horizon of 1.5s")
	}
	for i, f := range fired {
		if f.Scheduler != "secondly" || f.Slot.UnixMilli()%1000 != 0 || !f.Until.Equal(f.Slot.Add(time.Second)) {
			t.Errorf("run %d: %+v; want a secondly run on a whole second, until the next", i, f)
		}
		if i > 0 && !f.Slot.Equal(fired[i-1].Until) {
			t.Errorf("run %d at %v does not follow run %d (until %v)", i, f.Slot, i-1, fired[i-1].Until)
		}
	}
	secondly := schedulerInfo(t, q, "secondly")
	if last := fired[len(fired)-1]; !secondly.Next.Equal(last.Until) || secondly.Runs != int64(len(fired)) || secondly.LastID != last.ID {
		t.Fatalf("secondly: %+v; want next %v after %d runs", secondly, last.Until, len(fired))
	}
}

// A paused scheduler fires nothing; resumed, its next slot is at the
// earliest now, so the slots that fell due while it was paused never run.
func TestPauseResumeSchedulers(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "sched-pause")
	ctx := ctxT(t)
	now := serverTime(t, c)
	// Hourly slots, the last due half an hour ago.
	start := now.Add(-5*time.Hour - 30*time.Minute).Truncate(time.Millisecond)
	upsert(t, q, "p", emq.Schedule{Every: time.Hour, Start: start})
	if n, err := q.PauseSchedulers(ctx, "p", "missing"); err != nil || n != 1 {
		t.Fatalf("PauseSchedulers = %d, %v; want 1", n, err)
	}
	if n, err := q.PauseSchedulers(ctx, "p"); err != nil || n != 0 {
		t.Fatalf("PauseSchedulers again = %d, %v; want 0", n, err)
	}
	if info := schedulerInfo(t, q, "p"); !info.Paused || !info.Next.Equal(start) {
		t.Fatalf("paused: %+v", info)
	}
	if fired := fireDue(t, q, 0); len(fired) != 0 {
		t.Fatalf("a paused scheduler fired %v", fired)
	}
	id := mint(t, c, emq.WorkKind)
	if out, err := q.FireSchedulers(ctx, []emq.SchedulerFiring{{ID: id, Scheduler: "p", Expect: start, Next: start.Add(time.Hour), Slot: start, Until: start.Add(time.Hour)}}); err != nil || !slices.Equal(out, []emq.Firing{emq.FiringPaused}) {
		t.Fatalf("firing a paused scheduler = %v, %v; want paused", out, err)
	}
	before := serverTime(t, c)
	if n, err := q.ResumeSchedulers(ctx, "p"); err != nil || n != 1 {
		t.Fatalf("ResumeSchedulers = %d, %v; want 1", n, err)
	}
	info := schedulerInfo(t, q, "p")
	if info.Paused || info.Next.Before(before) || info.Next.After(info.Now) {
		t.Fatalf("resumed: %+v; want next at the resume (%v..%v)", info, before, info.Now)
	}
	fired := fireDue(t, q, 0)
	if len(fired) != 0 {
		t.Fatalf("the slots missed while paused fired %v", fired)
	}
	info = schedulerInfo(t, q, "p")
	if want := start.Add(6 * time.Hour); !info.Next.Equal(want) || info.Runs != 0 {
		t.Fatalf("after the resume's tick: next %v, %d runs; want the first slot after the resume, %v, and no run", info.Next, info.Runs, want)
	}
}

// RemoveSchedulers removes the schedulers; their runs stay; firing a
// removed scheduler is gone.
func TestRemoveSchedulers(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "sched-remove")
	ctx := ctxT(t)
	now := serverTime(t, c)
	upsert(t, q, "r", emq.Schedule{Every: time.Hour, Start: now.Add(-time.Second).Truncate(time.Millisecond)})
	upsert(t, q, "keep", emq.Schedule{Every: time.Hour, Start: now.Add(time.Hour).Truncate(time.Millisecond)})
	fired := fireDue(t, q, 0)
	if len(fired) != 1 {
		t.Fatalf("fired %v", fired)
	}
	if n, err := q.RemoveSchedulers(ctx, "r", "missing"); err != nil || n != 1 {
		t.Fatalf("RemoveSchedulers = %d, %v; want 1", n, err)
	}
	if n, err := q.RemoveSchedulers(ctx, "r"); err != nil || n != 0 {
		t.Fatalf("RemoveSchedulers again = %d, %v; want 0", n, err)
	}
	if recs, err := q.Schedulers(ctx, "r"); err != nil || recs[0].Found() {
		t.Fatalf("Schedulers(removed) = %+v, %v", recs, err)
	}
	if _, ok, err := q.Get(ctx, fired[0].ID); err != nil || !ok {
		t.Fatalf("the removed scheduler's run: %v, %v; want it kept", ok, err)
	}
	list, err := q.ListSchedulers(ctx, 0, 10)
	if err != nil || len(list) != 1 || list[0].ID != "keep" {
		t.Fatalf("ListSchedulers = %+v, %v; want keep alone", list, err)
	}
	id := mint(t, c, emq.WorkKind)
	out, err := q.FireSchedulers(ctx, []emq.SchedulerFiring{{ID: id, Scheduler: "r", Expect: fired[0].Until, Next: fired[0].Until.Add(time.Hour), Slot: fired[0].Until, Until: fired[0].Until.Add(time.Hour)}})
	if err != nil || !slices.Equal(out, []emq.Firing{emq.FiringGone}) {
		t.Fatalf("firing a removed scheduler = %v, %v; want gone", out, err)
	}
}

// An entry planned from a next slot that another firing moved is stale
// and writes nothing, and so is the rest of its chain; an id of another
// kind refuses the whole call with ErrKind.
func TestFireSchedulersStale(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "sched-stale")
	ctx := ctxT(t)
	now := serverTime(t, c)
	start := now.Add(-90 * time.Second).Truncate(time.Millisecond)
	upsert(t, q, "s", emq.Schedule{Every: time.Minute, Start: start}, emq.WithGrace(time.Hour))
	info := schedulerInfo(t, q, "s")
	plan, err := emq.PlanScheduler(info, info.Now, 0)
	if err != nil || len(plan) != 2 {
		t.Fatalf("PlanScheduler = %+v, %v; want the two slots due", plan, err)
	}
	withIDs := func() []emq.SchedulerFiring {
		out := slices.Clone(plan)
		for i := range out {
			out[i].ID = mint(t, c, emq.WorkKind)
		}
		return out
	}
	bad := withIDs()
	bad[1].ID = mint(t, c, emq.KindORD)
	if _, err := q.FireSchedulers(ctx, bad); !errors.Is(err, emq.ErrKind) {
		t.Fatalf("FireSchedulers(an ORD id) = %v; want ErrKind", err)
	}
	if got := schedulerInfo(t, q, "s"); !got.Next.Equal(info.Next) || got.Runs != 0 {
		t.Fatalf("the refused call wrote: %+v", got)
	}
	first := withIDs()
	if out, err := q.FireSchedulers(ctx, first); err != nil || !slices.Equal(out, []emq.Firing{emq.FiringFired, emq.FiringFired}) {
		t.Fatalf("the first firing = %v, %v; want fired twice", out, err)
	}
	again := withIDs()
	if out, err := q.FireSchedulers(ctx, again); err != nil || !slices.Equal(out, []emq.Firing{emq.FiringStale, emq.FiringStale}) {
		t.Fatalf("the same plan again = %v, %v; want stale twice", out, err)
	}
	for _, e := range again {
		if _, ok, err := q.Get(ctx, e.ID); err != nil || ok {
			t.Fatalf("a stale entry wrote its run %s: %v, %v", e.ID, ok, err)
		}
	}
	if got := schedulerInfo(t, q, "s"); !got.Next.Equal(plan[1].Next) || got.Runs != 2 || got.LastID != first[1].ID {
		t.Fatalf("after the stale firing: %+v", got)
	}
	if sizes, err := q.Sizes(ctx); err != nil || sizes[emq.SetPending] != 2 {
		t.Fatalf("pending %v, %v; want the two runs", sizes, err)
	}
}

// Several runners racing on the same schedulers, each in its own client,
// fire every slot once: the runs fired are the records' runs, one job
// each, and each scheduler's slots are its schedule's, without a gap or a
// repeat.
func TestSchedulerRunnersRace(t *testing.T) {
	srv := redistest.Start(t)
	admin := connect(t, srv)
	q := queue(t, admin, "sched-race")
	now := serverTime(t, admin)
	start := now.Add(-40 * time.Second).Truncate(time.Millisecond)
	const schedulers = 30
	for i := range schedulers {
		upsert(t, q, fmt.Sprintf("s%02d", i), emq.Schedule{Every: time.Second, Start: start.Add(time.Duration(i) * time.Millisecond)}, emq.WithGrace(time.Hour))
	}
	const runners, ticks = 4, 5
	var mu sync.Mutex
	var fired []emq.FiredRun
	var wg sync.WaitGroup
	errs := make(chan error, runners*ticks)
	for range runners {
		rq := queue(t, connect(t, srv), q.Name())
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range ticks {
				f, err := rq.FireDue(context.Background(), 0)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				fired = append(fired, f...)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	bySched := map[string][]time.Time{}
	ids := map[emq.ID]bool{}
	for _, f := range fired {
		bySched[f.Scheduler] = append(bySched[f.Scheduler], f.Slot)
		if ids[f.ID] {
			t.Fatalf("run id %s reported twice", f.ID)
		}
		ids[f.ID] = true
	}
	total := int64(0)
	for i := range schedulers {
		id := fmt.Sprintf("s%02d", i)
		info := schedulerInfo(t, q, id)
		slots := bySched[id]
		slices.SortFunc(slots, time.Time.Compare)
		if int64(len(slots)) != info.Runs || info.Runs < 40 {
			t.Fatalf("%s: %d runs reported, the record counts %d (want 40 or more)", id, len(slots), info.Runs)
		}
		for k, s := range slots {
			if want := info.Start.Add(time.Duration(k) * time.Second); !s.Equal(want) {
				t.Fatalf("%s: run %d at %v; want %v (no gap, no repeat)", id, k, s, want)
			}
		}
		if !info.Next.Equal(slots[len(slots)-1].Add(time.Second)) {
			t.Fatalf("%s: next %v after the last run at %v", id, info.Next, slots[len(slots)-1])
		}
		total += info.Runs
	}
	sizes, err := q.Sizes(ctxT(t))
	if err != nil || sizes[emq.SetPending] != total || int64(len(fired)) != total {
		t.Fatalf("%d pending jobs (%v), %d runs reported, the records count %d", sizes[emq.SetPending], err, len(fired), total)
	}
}

// RunSchedulers fires what falls due, tick after tick, reports each tick's
// runs to OnFire, and returns nil once its context is done.
func TestRunSchedulersStopsOnCancel(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "sched-run")
	now := serverTime(t, c)
	upsert(t, q, "r", emq.Schedule{Every: time.Hour, Start: now.Truncate(time.Millisecond)})
	got := make(chan []emq.FiredRun, 16)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- q.RunSchedulers(ctx, emq.SchedulerOptions{Poll: 10 * time.Millisecond, OnFire: func(f []emq.FiredRun) { got <- f }})
	}()
	select {
	case f := <-got:
		if len(f) != 1 || f[0].Scheduler != "r" {
			t.Fatalf("the runner fired %v", f)
		}
	case err := <-done:
		t.Fatalf("RunSchedulers returned %v before its context was done", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the runner fired nothing within 30s")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("RunSchedulers = %v; want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RunSchedulers did not return within 10s of its context's end")
	}
	if err := q.RunSchedulers(ctxT(t), emq.SchedulerOptions{Count: emq.MaxSchedulerPage + 1}); !errors.Is(err, emq.ErrArgument) {
		t.Fatalf("RunSchedulers(count over the page) = %v; want ErrArgument", err)
	}
}

// A runner whose server goes away logs the failed ticks and fires again
// once the server is back; a record whose cron expression does not parse
// (a foreign writer's) is skipped, and logged once, while the others
// fire.
func TestRunSchedulersRetriesAndSkipsUnparseable(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "sched-retry")
	now := serverTime(t, c)
	upsert(t, q, "bad", emq.Schedule{Cron: "* * * * *"})
	// Break the stored expression the way only a foreign writer could.
	script := `local t = cmsgpack.unpack(redis.call('HGET', KEYS[1], ARGV[1])); t[1] = 'not a cron'; redis.call('HSET', KEYS[1], ARGV[1], cmsgpack.pack(t)); return 1`
	if err := do(t, c, "EVAL", script, "1", q.Keys().Schedulers, "bad").Error(); err != nil {
		t.Fatal(err)
	}
	upsert(t, q, "good", emq.Schedule{Every: time.Hour, Start: now.Truncate(time.Millisecond)})
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	got := make(chan []emq.FiredRun, 16)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- q.RunSchedulers(ctx, emq.SchedulerOptions{Poll: 10 * time.Millisecond, Logger: log, OnFire: func(f []emq.FiredRun) { got <- f }})
	}()
	wait := func(what string) []emq.FiredRun {
		t.Helper()
		select {
		case f := <-got:
			return f
		case <-time.After(30 * time.Second):
			t.Fatalf("the runner fired nothing within 30s %s; its log:\n%s", what, logs.String())
		}
		return nil
	}
	if f := wait("at first"); len(f) != 1 || f[0].Scheduler != "good" {
		t.Fatalf("the runner fired %v; want good's run alone", f)
	}
	// A later tick reads the broken record again: it is not logged again.
	upsert(t, q, "good2", emq.Schedule{Every: time.Hour, Start: serverTime(t, c).Truncate(time.Millisecond)})
	if f := wait("for good2"); len(f) != 1 || f[0].Scheduler != "good2" {
		t.Fatalf("the runner fired %v; want good2's run alone", f)
	}
	if n := strings.Count(logs.String(), "does not parse"); n != 1 {
		t.Fatalf("the broken record was logged %d times; want once. The log:\n%s", n, logs.String())
	}
	srv.Restart() // SIGKILL: the runner's calls fail or wait meanwhile
	upsert(t, q, "after", emq.Schedule{Every: time.Hour, Start: serverTime(t, c).Truncate(time.Millisecond)})
	for {
		f := wait("after the restart")
		if len(f) == 1 && f[0].Scheduler == "after" {
			break
		}
		if len(f) != 1 || (f[0].Scheduler != "good" && f[0].Scheduler != "good2") {
			t.Fatalf("after the restart the runner fired %v", f)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
