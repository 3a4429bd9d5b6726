package emq_test

// TestInvariant's echomq 2.6.0 operations: upsert_scheduler,
// remove_schedulers, pause_schedulers, scheduler_entries, list_schedulers,
// due_schedulers and fire_schedulers, through their generated calls (raw
// script calls, as a client of any language sends them), and a race of
// identical firings from several goroutines.
//
// The model keeps each scheduler's record (invModel.sched): its schedule,
// missed policy, template, paused, the next slot (the compare-and-set
// token), the last run and the runs count; check holds the schedulers hash
// and its due index to it and reads every record back through
// scheduler_entries. The firings are planned by the design's plan over
// schedules the test evaluates itself: intervals, and cron expressions
// whose slots are the multiples of a period in any zone of whole-minute
// offsets (or none at all). Every entry's outcome is the model's: fired
// (its run a job, pending when its slot is due, scheduled at its slot
// otherwise, its payload the template filled), advanced, stale (the next
// slot moved, or the run's row exists), paused or gone; and the fired runs
// of a scheduler, since its schedule last changed, never overlap: a slot
// fires once.

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// invSched is the model of one scheduler's record.
type invSched struct {
	cron       string
	every      int64
	startGiven int64 // the start the upsert gave (0: the upsert's time)
	start      int64 // the interval's anchor as stored
	tz         string
	missed     wire.Missed
	backfill   int64
	grace      int64
	template   string
	paused     bool
	next       int64
	lastSlot   int64
	lastID     string
	runs       int64
}

// invSchedIDs are the schedulers the operations name: one whose id holds a
// placeholder the template fill meets again, braces, multi-byte UTF-8, and
// the longest id allowed.
var invSchedIDs = []string{"nightly", "run-{slot}", "{braces}:x", "日次レポート", strings.Repeat("s", 256)}

// invCron is a cron schedule the test evaluates: its slots are the
// multiples of period (0: none ever) in each of its zones.
type invCron struct {
	expr   string
	zones  []string
	period int64
}

var invCrons = []invCron{
	{"* * * * *", []string{"", "UTC", "Europe/Berlin", "Asia/Kolkata"}, 60_000},
	{"*/2 * * * * *", []string{"", "America/New_York"}, 2_000},
	{"*/10 * * * * *", []string{"UTC", "Australia/Adelaide"}, 10_000},
	{"@hourly", []string{"", "UTC"}, 3_600_000},
	{"0 0 30 2 *", []string{"America/New_York"}, 0},
}

// invSchedCap is the most runs one plan makes (the design's CAP).
const invSchedCap = 100

func (s *invSched) period() int64 {
	for _, c := range invCrons {
		if c.expr == s.cron {
			return c.period
		}
	}
	panic("no period for cron " + s.cron)
}

// nextAfter is the smallest slot strictly after x; 0 when there is none.
func (s *invSched) nextAfter(x int64) int64 {
	if s.every > 0 {
		if x < s.start {
			return s.start
		}
		return s.start + ((x-s.start)/s.every+1)*s.every
	}
	p := s.period()
	if p == 0 {
		return 0
	}
	q := x / p
	if x < 0 && x%p != 0 {
		q--
	}
	return (q + 1) * p
}

// first is the smallest slot at or after x.
func (s *invSched) first(x int64) int64 { return s.nextAfter(x - 1) }

// plan is the design's plan of a firing at now with a horizon.
func (s *invSched) plan(now, horizon int64, ignorePaused bool) []wire.FireSchedulersEntry {
	n := s.next
	if n == 0 || (s.paused && !ignorePaused) {
		return nil
	}
	cutoff, end := now-s.grace, now+horizon
	var runs [][2]int64
	cur := s.first(n)
	if cur != 0 && cur < cutoff {
		o := s.first(cutoff)
		switch s.missed {
		case wire.MissedSkip:
		case wire.MissedBackfill:
			var last []int64
			for x := cur; x != 0 && x < cutoff; x = s.nextAfter(x) {
				last = append(last, x)
				if int64(len(last)) > min(s.backfill, invSchedCap) {
					last = last[1:]
				}
			}
			for _, x := range last {
				runs = append(runs, [2]int64{x, s.nextAfter(x)})
			}
		default:
			runs = append(runs, [2]int64{cur, o})
		}
		cur = o
	}
	for cur != 0 && cur <= end && len(runs) < invSchedCap {
		runs = append(runs, [2]int64{cur, s.nextAfter(cur)})
		cur = s.nextAfter(cur)
	}
	var out []wire.FireSchedulersEntry
	e := n
	for _, r := range runs {
		out = append(out, wire.FireSchedulersEntry{Expect: e, Next: r[1], Slot: r[0], Until: r[1]})
		e = r[1]
	}
	if len(runs) == 0 && cur != n {
		out = append(out, wire.FireSchedulersEntry{Expect: n, Next: cur})
	}
	return out
}

// score is the scheduler's score in the due index.
func (v *invariant) score(s *invSched) int64 {
	if s.paused || s.next == 0 {
		return v.never
	}
	return s.next
}

// schedOrder is the model's schedulers in the due index's order: by score,
// then by id.
func (v *invariant) schedOrder() []string {
	ids := make([]string, 0, len(v.model.sched))
	for id := range v.model.sched {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool {
		sa, sb := v.score(v.model.sched[ids[a]]), v.score(v.model.sched[ids[b]])
		if sa != sb {
			return sa < sb
		}
		return ids[a] < ids[b]
	})
	return ids
}

// learnNever finds the due index's score of a paused scheduler on a
// scratch queue, and leaves nothing of it.
func learnNever(v *invariant) {
	v.t.Helper()
	k, err := wire.NewQueueKeys("invariant-never")
	if err != nil {
		v.t.Fatal(err)
	}
	rc := v.c.Redis()
	if _, err := (&wire.UpsertSchedulerCall{Schedulers: k.Schedulers, SchedulerNext: k.SchedulerNext, Scheduler: "x", EveryMS: 1000, Missed: wire.MissedSkip}).Exec(v.ctx, rc); err != nil {
		v.t.Fatal(err)
	}
	if n, err := (&wire.PauseSchedulersCall{SchedulersKey: k.Schedulers, SchedulerNext: k.SchedulerNext, Paused: 1, Schedulers: []string{"x"}}).Exec(v.ctx, rc); err != nil || n != 1 {
		v.t.Fatalf("pause_schedulers = %d, %v", n, err)
	}
	score, err := rc.Do(v.ctx, rc.B().Zscore().Key(k.SchedulerNext).Member("x").Build()).AsInt64()
	if err != nil {
		v.t.Fatal(err)
	}
	if n, err := (&wire.RemoveSchedulersCall{SchedulersKey: k.Schedulers, SchedulerNext: k.SchedulerNext, Schedulers: []string{"x"}}).Exec(v.ctx, rc); err != nil || n != 1 {
		v.t.Fatalf("remove_schedulers = %d, %v", n, err)
	}
	if now := v.now(); score < now+1000*365*24*3600*1000 {
		v.t.Fatalf("a paused scheduler scores %d, which a due read reaches", score)
	}
	v.never = score
}

// schedID picks a scheduler: mostly one the model has.
func (v *invariant) schedID() string {
	if len(v.model.sched) > 0 && v.rnd.IntN(3) > 0 {
		ids := v.schedOrder()
		return ids[v.rnd.IntN(len(ids))]
	}
	return invSchedIDs[v.rnd.IntN(len(invSchedIDs))]
}

// schedIDs picks a few schedulers, sometimes one repeated, sometimes none.
func (v *invariant) schedIDs() []string {
	var ids []string
	for n := v.rnd.IntN(4); len(ids) < n; {
		if len(ids) > 0 && v.rnd.IntN(5) == 0 {
			ids = append(ids, ids[v.rnd.IntN(len(ids))])
			continue
		}
		ids = append(ids, v.schedID())
	}
	return ids
}

var invTemplates = []string{"", "plain", "{scheduler}@{slot}..{until}", "{slot}{slot}{until}", "{unclosed {slot", "\x00\xff{slot}\xfe", "{scheduler}"}

func (v *invariant) schedKeys() (string, string) { return v.k.Schedulers, v.k.SchedulerNext }

// upsertScheduler creates or updates a scheduler with a random schedule;
// one in eight upserts sends something the script refuses, and nothing is
// written.
func (v *invariant) upsertScheduler() {
	hk, zk := v.schedKeys()
	call := wire.UpsertSchedulerCall{Schedulers: hk, SchedulerNext: zk, Scheduler: v.schedID(),
		Missed: wire.Misseds()[v.rnd.IntN(len(wire.Misseds()))], Template: invTemplates[v.rnd.IntN(len(invTemplates))]}
	switch v.rnd.IntN(4) {
	case 0:
		call.Backfill = 100
	default:
		call.Backfill = int64(v.rnd.IntN(4))
	}
	call.GraceMS = []int64{0, 300, 1500, 60_000}[v.rnd.IntN(4)]
	now := v.now()
	if v.rnd.IntN(2) == 0 {
		call.EveryMS = []int64{1000, 2500, 60_000}[v.rnd.IntN(3)]
		switch v.rnd.IntN(3) {
		case 1: // in the past: slots missed at once
			call.StartMS = now - int64(v.rnd.IntN(12))*call.EveryMS - int64(v.rnd.IntN(int(call.EveryMS)))
		case 2: // ahead: runs scheduled at their slots
			call.StartMS = now + 200 + int64(v.rnd.IntN(2800))
		}
	} else {
		c := invCrons[v.rnd.IntN(len(invCrons))]
		call.Cron, call.Tz = c.expr, c.zones[v.rnd.IntN(len(c.zones))]
	}
	refusals := []struct {
		what string
		bad  func()
	}{
		{"an empty scheduler", func() { call.Scheduler = "" }},
		{"a 257-byte scheduler", func() { call.Scheduler = strings.Repeat("s", 257) }},
		{"both cron and every_ms", func() { call.Cron, call.EveryMS, call.StartMS = "* * * * *", 1000, 0 }},
		{"neither cron nor every_ms", func() { call.Cron, call.EveryMS, call.StartMS, call.Tz = "", 0, 0, "" }},
		{"backfill 101", func() { call.Backfill = 101 }},
		{"a negative grace", func() { call.GraceMS = -1 }},
		{"tz with every_ms", func() { call.Cron, call.EveryMS, call.Tz = "", 1000, "UTC" }},
		{"start_ms with cron", func() { call.Cron, call.EveryMS, call.StartMS = "* * * * *", 0, now }},
		{"a missed word of no vocabulary", func() { call.Missed = "sometimes" }},
		{"a 257-byte cron", func() { call.Cron, call.EveryMS, call.StartMS = strings.Repeat("*", 257), 0, 0 }},
		{"a 65-byte tz", func() { call.Cron, call.EveryMS, call.StartMS, call.Tz = "* * * * *", 0, 0, strings.Repeat("z", 65) }},
	}
	refused := ""
	if v.rnd.IntN(8) == 0 {
		r := refusals[v.rnd.IntN(len(refusals))]
		r.bad()
		refused = r.what
	}
	v.note("upsert_scheduler %q cron %q tz %q every %d start %d %s backfill %d grace %d template %q (refused: %q)",
		call.Scheduler, call.Cron, call.Tz, call.EveryMS, call.StartMS, call.Missed, call.Backfill, call.GraceMS, call.Template, refused)
	t0 := v.now()
	got, err := call.Exec(v.ctx, v.c.Redis())
	t1 := v.now()
	if refused != "" {
		var ce *emq.ClassError
		if err == nil || errors.As(err, &ce) {
			v.fail("upsert_scheduler with %s = %+v, %v; want an ERR refusal", refused, got, err)
		}
		v.count(wire.ScriptUpsertScheduler.Name, false)
		return
	}
	if err != nil {
		v.fail("upsert_scheduler(%q): %v", call.Scheduler, err)
	}
	tz := call.Tz
	if call.Cron != "" && tz == "" {
		tz = "UTC" // the zone upsert_scheduler stores for a cron without one
	}
	r := v.model.sched[call.Scheduler]
	created := r == nil
	changed := created || r.cron != call.Cron || r.every != call.EveryMS || r.startGiven != call.StartMS || r.tz != tz
	if created {
		r = &invSched{}
	}
	if got.Created != b2i(created) || got.Changed != b2i(changed) {
		v.fail("upsert_scheduler(%q) = %+v; the model says created %v, changed %v", call.Scheduler, got, created, changed)
	}
	if changed {
		r.cron, r.every, r.startGiven, r.tz = call.Cron, call.EveryMS, call.StartMS, tz
		switch {
		case call.EveryMS > 0 && call.StartMS > 0:
			r.start = call.StartMS
			if got.NextMS != r.start {
				v.fail("upsert_scheduler(%q) next %d; the interval starts at %d", call.Scheduler, got.NextMS, r.start)
			}
		case call.EveryMS > 0:
			v.within("upsert_scheduler's start (its time)", got.NextMS, t0, t1)
			r.start = got.NextMS
		default:
			v.within("upsert_scheduler's next (its time)", got.NextMS, t0, t1)
			r.start = 0
		}
		r.next = got.NextMS
		delete(v.model.schedRuns, call.Scheduler) // a new timeline
	} else if got.NextMS != r.next {
		v.fail("upsert_scheduler(%q) kept the schedule but next is %d; the model's is %d", call.Scheduler, got.NextMS, r.next)
	}
	r.missed, r.backfill, r.grace, r.template = call.Missed, call.Backfill, call.GraceMS, call.Template
	v.model.sched[call.Scheduler] = r
	v.count(wire.ScriptUpsertScheduler.Name, true)
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func (v *invariant) removeSchedulers() {
	hk, zk := v.schedKeys()
	ids := v.schedIDs()
	// Every other call names only schedulers the model lacks, and the
	// others at least one it has (when it has any), so that a run of any
	// seed sees both answers.
	v.removes++
	if v.removes%2 == 0 {
		ids = slices.DeleteFunc(ids, func(id string) bool { return v.model.sched[id] != nil })
		ids = append(ids, fmt.Sprintf("never-upserted-%d", v.removes))
	} else if order := v.schedOrder(); len(order) > 0 {
		ids = append(ids, order[v.rnd.IntN(len(order))])
	}
	v.note("remove_schedulers %q", ids)
	n, err := (&wire.RemoveSchedulersCall{SchedulersKey: hk, SchedulerNext: zk, Schedulers: ids}).Exec(v.ctx, v.c.Redis())
	want := 0
	for _, id := range ids {
		if v.model.sched[id] != nil {
			delete(v.model.sched, id)
			delete(v.model.schedRuns, id)
			want++
		}
	}
	if err != nil || n != int64(want) {
		v.fail("remove_schedulers(%q) = %d, %v; the model removes %d", ids, n, err, want)
	}
	v.count(wire.ScriptRemoveSchedulers.Name, want > 0)
}

// pauseSchedulers pauses or resumes a few; a resumed scheduler's next slot
// is at the earliest the call's time, which the test reads back.
func (v *invariant) pauseSchedulers() {
	hk, zk := v.schedKeys()
	ids, paused := v.schedIDs(), v.rnd.IntN(2) == 0
	v.note("pause_schedulers %v %q", paused, ids)
	t0 := v.now()
	n, err := (&wire.PauseSchedulersCall{SchedulersKey: hk, SchedulerNext: zk, Paused: b2i(paused), Schedulers: ids}).Exec(v.ctx, v.c.Redis())
	t1 := v.now()
	if err != nil {
		v.fail("pause_schedulers(%v, %q): %v", paused, ids, err)
	}
	want := 0
	var resumed []string
	for _, id := range ids {
		r := v.model.sched[id]
		if r == nil || r.paused == paused {
			continue
		}
		r.paused = paused
		want++
		if !paused && r.next > 0 && r.next < t1 {
			resumed = append(resumed, id)
		}
	}
	if n != int64(want) {
		v.fail("pause_schedulers(%v, %q) changed %d; the model says %d", paused, ids, n, want)
	}
	if len(resumed) > 0 {
		got := v.entries(resumed)
		for i, id := range resumed {
			r := v.model.sched[id]
			if nx := got[i].NextMS; nx < r.next || nx > t1 || (r.next < t0 && nx < t0) {
				v.fail("resumed %q's next is %d; it was %d, the call ran within [%d, %d]", id, nx, r.next, t0, t1)
			}
			r.next = got[i].NextMS
		}
	}
	v.count(wire.ScriptPauseSchedulers.Name, want > 0)
}

// entries reads records through scheduler_entries.
func (v *invariant) entries(ids []string) []wire.SchedulerEntriesReply {
	v.t.Helper()
	hk, zk := v.schedKeys()
	got, err := (&wire.SchedulerEntriesCall{SchedulersKey: hk, SchedulerNext: zk, Schedulers: ids}).Exec(v.ctx, v.c.Redis())
	if err != nil || len(got) != len(ids) {
		v.fail("scheduler_entries(%q) = %d records, %v", ids, len(got), err)
	}
	return got
}

// wantRecord holds a record read at a time within [t0, t1] to the model's
// (the empty record when the model has none).
func (v *invariant) wantRecord(what string, got wire.SchedulerEntriesReply, id string, t0, t1 int64) {
	v.t.Helper()
	v.within(what+" now_ms", got.NowMS, t0, t1)
	want := wire.SchedulerEntriesReply{NowMS: got.NowMS}
	if r := v.model.sched[id]; r != nil {
		want = wire.SchedulerEntriesReply{Scheduler: id, Cron: r.cron, EveryMS: r.every, StartMS: r.start, Tz: r.tz, Missed: r.missed,
			Backfill: r.backfill, GraceMS: r.grace, Template: r.template, Paused: b2i(r.paused), NextMS: r.next,
			LastSlotMS: r.lastSlot, LastID: r.lastID, Runs: r.runs, NowMS: got.NowMS}
	}
	if got != want {
		v.fail("%s record of %q = %+v; the model says %+v", what, id, got, want)
	}
}

func (v *invariant) schedulerEntries() {
	ids := v.schedIDs()
	v.note("scheduler_entries %q", ids)
	t0 := v.now()
	got := v.entries(ids)
	t1 := v.now()
	found := false
	for i, id := range ids {
		v.wantRecord(wire.ScriptSchedulerEntries.Name, got[i], id, t0, t1)
		found = found || v.model.sched[id] != nil
	}
	v.count(wire.ScriptSchedulerEntries.Name, found)
}

// listSchedulers reads a page in the due index's order; one in six asks
// a count out of range, refused.
func (v *invariant) listSchedulers() {
	hk, zk := v.schedKeys()
	call := wire.ListSchedulersCall{Schedulers: hk, SchedulerNext: zk, Offset: int64(v.rnd.IntN(len(v.model.sched) + 2)), Count: int64(1 + v.rnd.IntN(4))}
	bad := v.rnd.IntN(6) == 0
	if bad {
		call.Count = []int64{0, 1001}[v.rnd.IntN(2)]
	}
	v.note("list_schedulers offset %d count %d", call.Offset, call.Count)
	t0 := v.now()
	got, err := call.Exec(v.ctx, v.c.Redis())
	t1 := v.now()
	if bad {
		if err == nil {
			v.fail("list_schedulers count %d = %+v; want an ERR refusal", call.Count, got)
		}
		v.count(wire.ScriptListSchedulers.Name, false)
		return
	}
	order := v.schedOrder()
	want := order[min(int(call.Offset), len(order)):min(int(call.Offset+call.Count), len(order))]
	if err != nil || len(got) != len(want) {
		v.fail("list_schedulers(%d, %d) = %d records, %v; the model's page is %q", call.Offset, call.Count, len(got), err, want)
	}
	for i, id := range want {
		v.wantRecord(wire.ScriptListSchedulers.Name, wire.SchedulerEntriesReply(got[i]), id, t0, t1)
	}
	v.count(wire.ScriptListSchedulers.Name, len(got) > 0)
}

// dueSchedulers reads a page of the due ones: the page is the spread's,
// of the schedulers due at the reply's own now_ms.
func (v *invariant) dueSchedulers() {
	hk, zk := v.schedKeys()
	call := wire.DueSchedulersCall{Schedulers: hk, SchedulerNext: zk, HorizonMS: []int64{0, 500, 5000}[v.rnd.IntN(3)],
		Count: []int64{1, 2, 100}[v.rnd.IntN(3)], Spread: int64(v.rnd.Uint32())}
	bad := v.rnd.IntN(6) == 0
	if bad {
		call.Count = []int64{0, 1001}[v.rnd.IntN(2)]
	}
	v.note("due_schedulers horizon %d count %d spread %d", call.HorizonMS, call.Count, call.Spread)
	t0 := v.now()
	got, err := call.Exec(v.ctx, v.c.Redis())
	t1 := v.now()
	if bad {
		if err == nil {
			v.fail("due_schedulers count %d = %+v; want an ERR refusal", call.Count, got)
		}
		v.count(wire.ScriptDueSchedulers.Name, false)
		return
	}
	if err != nil {
		v.fail("due_schedulers: %v", err)
	}
	order := v.schedOrder()
	dueAt := func(now int64) []string {
		n := 0
		for n < len(order) && v.score(v.model.sched[order[n]]) <= now+call.HorizonMS {
			n++
		}
		return order[:n]
	}
	if len(got) == 0 {
		if d := dueAt(t0); len(d) > 0 {
			v.fail("due_schedulers found none; the model has %q due by %d", d, t0)
		}
		v.count(wire.ScriptDueSchedulers.Name, false)
		return
	}
	due := dueAt(got[0].NowMS)
	pages := (int64(len(due)) + call.Count - 1) / call.Count
	if pages == 0 {
		v.fail("due_schedulers = %d records at %d; the model has none due", len(got), got[0].NowMS)
	}
	off := (call.Spread % pages) * call.Count
	want := due[off:min(off+call.Count, int64(len(due)))]
	if len(got) != len(want) {
		v.fail("due_schedulers = %d records; the model's page %d of %q is %q", len(got), call.Spread%pages, due, want)
	}
	for i, id := range want {
		v.wantRecord(wire.ScriptDueSchedulers.Name, wire.SchedulerEntriesReply(got[i]), id, t0, t1)
	}
	v.count(wire.ScriptDueSchedulers.Name, true)
}

// absent returns a pool id the model has no row of and taken does not
// hold, or a fresh id.
func (v *invariant) absent(taken map[emq.ID]bool) emq.ID {
	var ids []emq.ID
	for _, id := range v.pool {
		if v.model.jobs[id] == nil && !taken[id] {
			ids = append(ids, id)
		}
	}
	var id emq.ID
	if len(ids) == 0 {
		id = mint(v.t, v.c, emq.WorkKind)
	} else {
		id = ids[v.rnd.IntN(len(ids))]
	}
	taken[id] = true
	return id
}

// fireCall is a fire_schedulers call of entries.
func (v *invariant) fireCall(entries []wire.FireSchedulersEntry) *wire.FireSchedulersCall {
	hk, zk := v.schedKeys()
	call := &wire.FireSchedulersCall{SchedulersKey: hk, SchedulerNext: zk, Pending: v.k.Pending, Schedule: v.k.Schedule, Wake: v.k.Wake, Entries: entries}
	for _, e := range entries {
		call.Rows = append(call.Rows, mustRow(v.t, v.q, e.ID))
	}
	return call
}

// fired applies a fire_schedulers call that ran within [t0, t1] to the
// model, entry by entry, as the script does, and returns each entry's
// outcome. head is the schedule's head before the call (its run-at, and
// whether there was one). A run whose slot the call's time may or may not
// have reached is read back.
func (v *invariant) fired(entries []wire.FireSchedulersEntry, t0, t1, head int64, scheduled bool) []wire.Firing {
	v.t.Helper()
	out := make([]wire.Firing, len(entries))
	pend, earliest := 0, int64(0)
	for i, e := range entries {
		r := v.model.sched[e.Scheduler]
		switch {
		case r == nil:
			out[i] = wire.FiringGone
			continue
		case r.paused:
			out[i] = wire.FiringPaused
			continue
		case r.next != e.Expect || (e.Slot > 0 && v.model.jobs[e.ID] != nil):
			out[i] = wire.FiringStale
			continue
		}
		out[i] = wire.FiringAdvanced
		if e.Slot > 0 {
			out[i] = wire.FiringFired
			p := r.template
			if strings.Contains(p, "{") {
				p = strings.ReplaceAll(p, "{scheduler}", e.Scheduler)
				p = strings.ReplaceAll(p, "{slot}", strconv.FormatInt(e.Slot, 10))
				p = strings.ReplaceAll(p, "{until}", strconv.FormatInt(e.Until, 10))
			}
			pending := e.Slot <= t0
			if e.Slot > t0 && e.Slot <= t1 {
				st := hgetall(v.t, v.c, mustRow(v.t, v.q, e.ID))[wire.FieldState]
				pending = st == string(emq.StatePending)
			}
			j := &invJob{state: emq.StateScheduled, payload: p, score: e.Slot}
			if pending {
				j.state, j.score = emq.StatePending, 0
				pend++
			} else if earliest == 0 || e.Slot < earliest {
				earliest = e.Slot
			}
			v.model.jobs[e.ID] = j
			r.lastSlot, r.lastID, r.runs = e.Slot, e.ID.String(), r.runs+1
			for _, run := range v.model.schedRuns[e.Scheduler] {
				if e.Slot < orMax(run[1]) && run[0] < orMax(e.Until) {
					v.fail("%q fired [%d, %d), which overlaps its run [%d, %d)", e.Scheduler, e.Slot, e.Until, run[0], run[1])
				}
			}
			v.model.schedRuns[e.Scheduler] = append(v.model.schedRuns[e.Scheduler], [2]int64{e.Slot, e.Until})
		}
		r.next = e.Next
	}
	if pend > 0 || (earliest > 0 && (!scheduled || earliest < head)) {
		v.model.wake = true
	}
	return out
}

// orMax is an until for the overlap test: 0 (no later slot) is the end of
// time.
func orMax(u int64) int64 {
	if u == 0 {
		return 1 << 62
	}
	return u
}

// fireSchedulers plans a firing of a few schedulers (a gone one, a paused
// one planned as if it were not), perturbed now and then so that an entry
// is stale (a moved next, a run id whose row exists) or the call is
// refused EMQKIND (a foreign id: nothing is written).
func (v *invariant) fireSchedulers() {
	now := v.now()
	horizon := []int64{0, 1500, 4000, 12_000}[v.rnd.IntN(4)]
	var entries []wire.FireSchedulersEntry
	taken := map[emq.ID]bool{}
	for n := 1 + v.rnd.IntN(3); n > 0; n-- {
		id := invSchedIDs[v.rnd.IntN(len(invSchedIDs))]
		if ids := v.schedOrder(); len(ids) > 0 && v.rnd.IntN(8) > 0 {
			id = ids[v.rnd.IntN(len(ids))]
		}
		r := v.model.sched[id]
		if r == nil {
			// Planned from a record that is gone (or never was).
			r = &invSched{every: 60_000, start: now - 500, next: now - 500, missed: wire.MissedRunOnce, grace: 60_000}
		}
		ignorePaused := v.rnd.IntN(4) == 0
		es := r.plan(now, horizon, ignorePaused)
		if v.model.sched[id] != nil && !ignorePaused {
			v.samePlan(id, r, now, horizon, es)
		}
		for i := range es {
			es[i].Scheduler = id
			switch {
			case es[i].Slot == 0 || v.rnd.IntN(8) == 0:
				es[i].ID = v.pick() // its row may exist (a stale run)
			default:
				es[i].ID = v.absent(taken)
			}
		}
		if len(es) > 0 && v.rnd.IntN(6) == 0 {
			es[0].Expect++ // planned from a next that moved
		}
		entries = append(entries, es...)
	}
	foreign := len(entries) > 0 && v.rnd.IntN(12) == 0
	if foreign {
		entries[v.rnd.IntN(len(entries))].ID = mint(v.t, v.c, emq.KindORD)
	}
	v.note("fire_schedulers horizon %d %s (foreign %v)", horizon, fmtEntries(entries), foreign)
	_, head, scheduled := v.scheduleHead()
	call := v.fireCall(entries)
	t0 := v.now()
	got, err := call.Exec(v.ctx, v.c.Redis())
	t1 := v.now()
	if foreign {
		var ce *emq.ClassError
		if got != nil || !errors.Is(err, emq.ErrKind) || !errors.As(err, &ce) || ce.Script != wire.ScriptFireSchedulers.Name {
			v.fail("fire_schedulers with a foreign id = %v, %v; want EMQKIND", got, err)
		}
		v.count(wire.ScriptFireSchedulers.Name, false)
		return
	}
	if err != nil || len(got) != len(entries) {
		v.fail("fire_schedulers(%s) = %v, %v", fmtEntries(entries), got, err)
	}
	want := v.fired(entries, t0, t1, head, scheduled)
	n := 0
	for i := range entries {
		if got[i].Outcome != want[i] {
			v.fail("fire_schedulers entry %d (%+v) = %s; the model says %s", i, entries[i], got[i].Outcome, want[i])
		}
		if want[i] == wire.FiringFired {
			n++
		}
		v.count("fire_schedulers "+string(want[i]), true)
	}
	v.count(wire.ScriptFireSchedulers.Name, n > 0)
}

// samePlan holds the SDK's planner (PlanScheduler) to the test's over the
// model's record: the same entries.
func (v *invariant) samePlan(id string, r *invSched, now, horizon int64, want []wire.FireSchedulersEntry) {
	v.t.Helper()
	info := emq.SchedulerInfo{ID: id, Schedule: emq.Schedule{Cron: r.cron, TZ: r.tz, Every: time.Duration(r.every) * time.Millisecond, Start: timeOf(r.start)},
		Missed: r.missed, Backfill: int(r.backfill), Grace: time.Duration(r.grace) * time.Millisecond, Template: []byte(r.template),
		Paused: r.paused, Next: timeOf(r.next), Now: timeOf(now)}
	got, err := emq.PlanScheduler(info, time.UnixMilli(now), time.Duration(horizon)*time.Millisecond)
	if err != nil || len(got) != len(want) {
		v.fail("PlanScheduler(%q at %d, horizon %d) = %d entries, %v; the test plans %s", id, now, horizon, len(got), err, fmtEntries(want))
	}
	for i, g := range got {
		w := want[i]
		if g.Scheduler != id || msOf(g.Expect) != w.Expect || msOf(g.Next) != w.Next || msOf(g.Slot) != w.Slot || msOf(g.Until) != w.Until {
			v.fail("PlanScheduler(%q) entry %d = %+v; the test plans %+v", id, i, g, w)
		}
	}
}

func fmtEntries(es []wire.FireSchedulersEntry) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "[%q %v %d->%d slot %d until %d]", e.Scheduler, e.ID, e.Expect, e.Next, e.Slot, e.Until)
	}
	return b.String()
}

// raceFire fires one plan from several goroutines at once, each with run
// ids of its own: one call fires every entry, the others find every entry
// stale, so each slot fires once.
func (v *invariant) raceFire() {
	var live []string
	for _, id := range v.schedOrder() {
		if r := v.model.sched[id]; !r.paused && r.next > 0 {
			live = append(live, id)
		}
	}
	if len(live) == 0 {
		v.note("racing fire: no live scheduler")
		v.count("racing fire", false)
		return
	}
	sid := live[v.rnd.IntN(len(live))]
	now := v.now()
	plan := v.model.sched[sid].plan(now, []int64{0, 3000, 12_000}[v.rnd.IntN(3)], false)
	if len(plan) == 0 {
		v.note("racing fire %q: nothing to plan", sid)
		v.count("racing fire", false)
		return
	}
	racers := 2 + v.rnd.IntN(3)
	taken := map[emq.ID]bool{}
	calls := make([]*wire.FireSchedulersCall, racers)
	for i := range calls {
		es := slices.Clone(plan)
		for j := range es {
			es[j].Scheduler = sid
			es[j].ID = v.absent(taken)
		}
		calls[i] = v.fireCall(es)
	}
	v.note("racing fire %q by %d: %s", sid, racers, fmtEntries(plan))
	_, head, scheduled := v.scheduleHead()
	got := make([][]wire.FireSchedulersReply, racers)
	errs := make([]error, racers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	t0 := v.now()
	for i, call := range calls {
		wg.Go(func() {
			<-start
			got[i], errs[i] = call.Exec(v.ctx, v.c.Redis())
		})
	}
	close(start)
	wg.Wait()
	t1 := v.now()
	winner := -1
	for i := range calls {
		if errs[i] != nil || len(got[i]) != len(plan) {
			v.fail("racer %d: %v, %v", i, got[i], errs[i])
		}
		if got[i][0].Outcome != wire.FiringStale {
			if winner >= 0 {
				v.fail("racers %d and %d both fired %q from %d: %v, %v", winner, i, sid, plan[0].Expect, got[winner], got[i])
			}
			winner = i
		}
	}
	if winner < 0 {
		v.fail("no racer fired %q from %d: %v", sid, plan[0].Expect, got)
	}
	want := v.fired(calls[winner].Entries, t0, t1, head, scheduled)
	for i := range calls {
		for j := range plan {
			w := want[j]
			if i != winner {
				w = wire.FiringStale
			}
			if got[i][j].Outcome != w {
				v.fail("racer %d (winner %d) entry %d = %s; want %s", i, winner, j, got[i][j].Outcome, w)
			}
		}
	}
	v.count("racing fire", true)
}

// scan26 reads a 2.6.0 key into the snapshot; false when key is none.
func (v *invariant) scan26(s *invSnap, key, typ string, r rueidis.RedisResult) bool {
	v.t.Helper()
	switch key {
	case v.k.Schedulers:
		if typ != "hash" {
			v.fail("the schedulers %s are a %s", key, typ)
		}
		fields, err := r.AsStrSlice()
		if err != nil {
			v.fail("HKEYS %s: %v", key, err)
		}
		for _, f := range fields {
			s.schedulers[f] = true
		}
	case v.k.SchedulerNext:
		if typ != "zset" {
			v.fail("the due index %s is a %s", key, typ)
		}
		zs, err := r.AsZScores()
		if err != nil {
			v.fail("ZRANGE %s: %v", key, err)
		}
		for _, z := range zs {
			if z.Score != float64(int64(z.Score)) {
				v.fail("the due index scores %q at %f, not a whole millisecond", z.Member, z.Score)
			}
			s.schedNext[z.Member] = int64(z.Score)
		}
	default:
		return false
	}
	return true
}

// scan26Cmd is the read of a 2.6.0 key for scan.
func (v *invariant) scan26Cmd(key string) (rueidis.Completed, bool) {
	rc := v.c.Redis()
	switch key {
	case v.k.Schedulers:
		return rc.B().Hkeys().Key(key).Build(), true
	case v.k.SchedulerNext:
		return rc.B().Zrange().Key(key).Min("0").Max("-1").Withscores().Build(), true
	}
	return rueidis.Completed{}, false
}

// check26 holds the schedulers hash, its due index and every record to
// the model.
func (v *invariant) check26(s invSnap) {
	v.t.Helper()
	if len(s.schedulers) != len(v.model.sched) || len(s.schedNext) != len(v.model.sched) {
		v.fail("the schedulers hash holds %v and the due index %v; the model has %d schedulers", s.schedulers, s.schedNext, len(v.model.sched))
	}
	ids := v.schedOrder()
	for _, id := range ids {
		if !s.schedulers[id] {
			v.fail("the schedulers hash lacks %q", id)
		}
		if got, want := s.schedNext[id], v.score(v.model.sched[id]); got != want {
			v.fail("the due index scores %q at %d; the model says %d", id, got, want)
		}
	}
	if len(ids) == 0 {
		return
	}
	t0 := v.now()
	got := v.entries(ids)
	t1 := v.now()
	for i, id := range ids {
		v.wantRecord("check", got[i], id, t0, t1)
	}
}
