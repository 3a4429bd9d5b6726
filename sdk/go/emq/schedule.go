package emq

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// The schedules of job schedulers (echomq 2.6.0) as slot sequences, and
// the plan of a firing: pure functions every SDK implements alike
// (conformance/vectors/schedules.json).

// Schedule is when a job scheduler runs: a cron expression in a time zone
// (Cron, TZ), or an interval (Every) from an anchor (Start). Exactly one of
// Cron and Every is given.
type Schedule struct {
	// Cron is a cron expression (see ParseCron); empty for an interval.
	Cron string
	// TZ is the cron expression's IANA time zone; empty is UTC. Only for
	// a cron expression.
	TZ string
	// Every is the interval between slots, a positive whole number of
	// milliseconds; 0 for a cron expression.
	Every time.Duration
	// Start is the interval's first slot, on the server's clock; the zero
	// time anchors it at the upsert's server time (its first run is due at
	// once). Only for an interval.
	Start time.Time
}

// Schedule limits the scripts enforce, refused before anything is sent.
const (
	// MaxSchedulerID is the longest scheduler id, in bytes.
	MaxSchedulerID = 256
	// MaxCronBytes is the longest cron expression, in bytes.
	MaxCronBytes = 256
	// MaxTZBytes is the longest time zone name, in bytes.
	MaxTZBytes = 64
	// MaxBackfill is the largest backfill bound.
	MaxBackfill = 100
	// MaxTemplate is the largest payload template, in bytes.
	MaxTemplate = 1 << 20
	// MaxPlanRuns is the most runs one plan of a scheduler holds
	// (PlanScheduler); a scheduler further behind fires again at the next
	// tick.
	MaxPlanRuns = 100
)

// SchedulerError is the refusal of a job scheduler's argument before
// anything is sent (UpsertScheduler, NextRuns). It matches ErrArgument
// under errors.Is, and a *CronError it was caused by under errors.As.
type SchedulerError struct {
	Scheduler string // the scheduler's id ("" when there is none)
	Field     string // the argument refused: scheduler, cron, tz, every, start, missed, backfill, grace or template
	Reason    string // what is wrong with it
	Err       error  // the cause (a *CronError), or nil
}

// Error says which argument is wrong and why.
func (e *SchedulerError) Error() string {
	return fmt.Sprintf("emq: invalid argument: scheduler %q: %s: %s", e.Scheduler, e.Field, e.Reason)
}

// Unwrap returns ErrArgument and the cause.
func (e *SchedulerError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrArgument}
	}
	return []error{ErrArgument, e.Err}
}

// slots is a schedule's sequence of slots in Unix milliseconds:
// nextAfter(x) is the smallest slot above x, 0 when there is none.
type slots interface {
	nextAfter(x int64) int64
}

// interval is the slots start + k·every, k ≥ 0.
type interval struct{ start, every int64 }

func (iv interval) nextAfter(x int64) int64 {
	if x < iv.start {
		return iv.start
	}
	return iv.start + (floorDiv(x-iv.start, iv.every)+1)*iv.every
}

// first is the smallest slot at or above x (0: none).
func first(s slots, x int64) int64 { return s.nextAfter(x - 1) }

// check refuses, before anything is sent, what upsert_scheduler refuses
// of a schedule (and what only the caller can judge: the cron expression
// and its zone).
func (s Schedule) check(id string) error {
	refuse := func(field, format string, args ...any) error {
		return &SchedulerError{Scheduler: id, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case (s.Cron == "") == (s.Every == 0):
		return refuse("cron", "exactly one of a cron expression and an interval (Every) must be given")
	case s.Every < 0 || (s.Every > 0 && s.Every%time.Millisecond != 0):
		return refuse("every", "%v is not a positive whole number of milliseconds", s.Every)
	case s.Every > 0 && s.TZ != "":
		return refuse("tz", "a time zone is for a cron expression only")
	case s.Cron != "" && !s.Start.IsZero():
		return refuse("start", "a start is for an interval only")
	case !s.Start.IsZero() && s.Start.UnixMilli() < 1:
		return refuse("start", "%v is not after the Unix epoch", s.Start)
	case len(s.Cron) > MaxCronBytes:
		return refuse("cron", "%d bytes, at most %d", len(s.Cron), MaxCronBytes)
	case len(s.TZ) > MaxTZBytes:
		return refuse("tz", "%d bytes, at most %d", len(s.TZ), MaxTZBytes)
	}
	if s.Cron != "" {
		if _, err := parseCronCached(s.Cron, s.TZ); err != nil {
			return cronRefusal(id, err)
		}
	}
	return nil
}

// slotsOf is the slot sequence of a schedule whose interval anchor is
// start (Unix ms).
func (s Schedule) slotsOf(start int64) (slots, error) {
	if s.Cron != "" {
		return parseCronCached(s.Cron, s.TZ)
	}
	if s.Every < time.Millisecond {
		return nil, errorf("%w: an interval of %v", ErrArgument, s.Every)
	}
	return interval{start: start, every: ms(s.Every)}, nil
}

// crons caches parsed cron expressions for planners, which meet the same
// few again at every tick.
var crons struct {
	m sync.Map // cronKey -> *CronSchedule
	n atomic.Int64
}

type cronKey struct{ expr, tz string }

// cronCacheMax bounds the cache: it is emptied when it grows past it.
const cronCacheMax = 4096

// parseCronCached is ParseCron through the cache.
func parseCronCached(expr, tz string) (*CronSchedule, error) {
	k := cronKey{expr, tz}
	if c, ok := crons.m.Load(k); ok {
		return c.(*CronSchedule), nil
	}
	c, err := ParseCron(expr, tz)
	if err != nil {
		return nil, err
	}
	if crons.n.Add(1) > cronCacheMax {
		crons.m.Clear()
		crons.n.Store(1)
	}
	crons.m.Store(k, c)
	return c, nil
}

// NextRuns returns the first n slots of s at or after from, fewer when the
// schedule ends first (a cron expression without a slot within 8·366 days
// of the one before): for a scheduler's record,
// NextRuns(info.Schedule, info.Next, n) are the runs it fires next. An
// interval without a Start is anchored at from. A schedule UpsertScheduler
// would refuse, or a negative n, is refused with a *SchedulerError
// (ErrArgument).
func NextRuns(s Schedule, from time.Time, n int) ([]time.Time, error) {
	if err := s.check(""); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, &SchedulerError{Field: "n", Reason: fmt.Sprintf("%d runs", n)}
	}
	x := from.UnixMilli()
	start := msOfTime(s.Start)
	if start == 0 {
		start = x
	}
	sl, err := s.slotsOf(start)
	if err != nil {
		return nil, err
	}
	out := []time.Time{}
	for v := first(sl, x); v != 0 && len(out) < n; v = sl.nextAfter(v) {
		out = append(out, time.UnixMilli(v))
	}
	return out, nil
}

// planned is one entry of a plan, in Unix milliseconds.
type planned struct{ expect, next, slot, until int64 }

// PlanScheduler plans the firing of a scheduler's record at now (the
// server's time of the read that returned it: SchedulerInfo.Now) with a
// horizon (runs whose slot is at most now + horizon are fired ahead,
// scheduled at their slot): the entries of one FireSchedulers call, each
// with the record's scheduler and without a run id (mint one of WorkKind
// for each, also for an entry without a run). It is what FireDue and
// RunSchedulers fire, and every SDK plans alike:
//
//   - A paused or ended record (Next zero) plans nothing.
//   - Slots more than the record's Grace before now are missed: under
//     MissedSkip they get no run; under MissedRunOnce (and any word this
//     SDK does not know) one run stands for all of them, from the first
//     missed slot up to the first slot within the grace; under
//     MissedBackfill the last Backfill of them (at most MaxPlanRuns) get a
//     run each, oldest first.
//   - Then every slot up to now + horizon gets a run, at most MaxPlanRuns
//     runs in all.
//   - The entries chain: each expects the next slot the one before set.
//     A plan without runs that moves the next slot is one entry without a
//     run (Slot zero).
//
// A record whose cron expression or zone does not parse is refused with a
// *SchedulerError (ErrArgument).
func PlanScheduler(info SchedulerInfo, now time.Time, horizon time.Duration) ([]SchedulerFiring, error) {
	sl, err := info.slots()
	if err != nil {
		return nil, err
	}
	ps := plan(sl, msOfTime(info.Next), info.Paused, info.Missed, info.Backfill, ms(info.Grace), now.UnixMilli(), ms(horizon))
	out := make([]SchedulerFiring, len(ps))
	for i, p := range ps {
		out[i] = SchedulerFiring{Scheduler: info.ID, Expect: timeOfMS(p.expect), Next: timeOfMS(p.next), Slot: timeOfMS(p.slot), Until: timeOfMS(p.until)}
	}
	return out, nil
}

// slots is the slot sequence of a record.
func (i SchedulerInfo) slots() (slots, error) {
	if i.Cron == "" && i.Every < time.Millisecond {
		return nil, &SchedulerError{Scheduler: i.ID, Field: "every", Reason: fmt.Sprintf("a record without a cron expression and with an interval of %v", i.Every)}
	}
	sl, err := i.Schedule.slotsOf(msOfTime(i.Start))
	if err != nil {
		return nil, cronRefusal(i.ID, err)
	}
	return sl, nil
}

// cronRefusal is the *SchedulerError of a scheduler whose cron expression
// or zone ParseCron refused.
func cronRefusal(id string, err error) error {
	var ce *CronError
	if !errors.As(err, &ce) {
		return err
	}
	field := "cron"
	if ce.zone {
		field = "tz"
	}
	return &SchedulerError{Scheduler: id, Field: field, Reason: fmt.Sprintf("%q in zone %q: %s", ce.Expr, ce.TZ, ce.Reason), Err: ce}
}

// plan is PlanScheduler on Unix milliseconds (the design's pseudo-code).
func plan(s slots, next int64, paused bool, missed Missed, backfill int, grace, now, horizon int64) []planned {
	if next == 0 || paused {
		return nil
	}
	cutoff, end := now-grace, now+horizon
	type run struct{ slot, until int64 }
	var runs []run
	s1 := first(s, next)
	var at int64
	if s1 != 0 && s1 < cutoff { // missed slots exist
		o := first(s, cutoff) // the first slot not missed (0: none)
		switch missed {
		case MissedSkip:
		case MissedBackfill:
			for _, v := range lastSlots(s, s1, cutoff, min(backfill, MaxPlanRuns)) {
				runs = append(runs, run{v, s.nextAfter(v)})
			}
		default: // MissedRunOnce, and a later minor's word
			runs = append(runs, run{s1, o})
		}
		at = o
	} else {
		at = s1
	}
	for at != 0 && at <= end && len(runs) < MaxPlanRuns {
		n := s.nextAfter(at)
		runs = append(runs, run{at, n})
		at = n
	}
	var out []planned
	e := next
	for _, r := range runs {
		out = append(out, planned{expect: e, next: r.until, slot: r.slot, until: r.until})
		e = r.until
	}
	if len(runs) == 0 && at != next {
		out = append(out, planned{expect: next, next: at})
	}
	return out
}

// lastSlots returns the last k slots in [s1, cutoff), oldest first; s1 is
// a slot below cutoff.
func lastSlots(s slots, s1, cutoff int64, k int) []int64 {
	if k <= 0 {
		return nil
	}
	if iv, ok := s.(interval); ok {
		last := floorDiv(cutoff-1-iv.start, iv.every) // the index of the last slot below cutoff
		from := max((s1-iv.start)/iv.every, last-int64(k)+1)
		out := make([]int64, 0, last-from+1)
		for j := from; j <= last; j++ {
			out = append(out, iv.start+j*iv.every)
		}
		return out
	}
	// A cron expression: slots are whole seconds, so the last k lie
	// within k seconds of cutoff at best; widen the window until it holds
	// k of them or reaches s1.
	ring := make([]int64, k)
	for window := int64(2*k) * 1000; ; window *= 8 {
		from := max(s1, cutoff-window)
		n := 0
		for v := first(s, from); v != 0 && v < cutoff; v = s.nextAfter(v) {
			ring[n%k] = v
			n++
		}
		if n >= k || from == s1 {
			out := make([]int64, 0, min(n, k))
			for i := max(0, n-k); i < n; i++ {
				out = append(out, ring[i%k])
			}
			return out
		}
	}
}
