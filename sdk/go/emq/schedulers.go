package emq

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// echomq 2.6.0: job schedulers. A scheduler (per queue, by an id of the
// caller's) holds a schedule and the next slot it has not fired, which
// fire_schedulers compares and sets: any number of processes, in any
// language, fire each slot once, with no leader. The runner is in
// scheduler_run.go, the schedules and the plan in schedule.go and cron.go.

// DefaultGrace is the grace of a scheduler upserted without WithGrace: a
// slot fired more than a minute after it fell due is missed.
const DefaultGrace time.Duration = time.Minute

// SchedulerOption sets what UpsertScheduler stores beside the schedule.
type SchedulerOption func(*schedulerOptions)

type schedulerOptions struct {
	missed   Missed
	backfill int
	grace    time.Duration
	template []byte
}

// WithMissed sets what the scheduler does with the slots it missed (fired
// more than its grace after they fell due): MissedRunOnce (the default,
// also for "": one run stands for them all), MissedSkip (none runs) or
// MissedBackfill (the last WithBackfill of them run, one each).
func WithMissed(m Missed) SchedulerOption {
	return func(o *schedulerOptions) { o.missed = m }
}

// WithBackfill bounds the missed slots that get a run each under
// MissedBackfill, 0 (the default) to MaxBackfill.
func WithBackfill(n int) SchedulerOption {
	return func(o *schedulerOptions) { o.backfill = n }
}

// WithGrace sets how late a slot may fire and still not be missed, on the
// server's clock at millisecond precision; DefaultGrace when not given.
func WithGrace(d time.Duration) SchedulerOption {
	return func(o *schedulerOptions) { o.grace = d }
}

// WithTemplate sets the payload of the scheduler's runs (at most
// MaxTemplate bytes), in which each firing replaces {scheduler} with the
// scheduler's id, {slot} with the run's slot and {until} with the slot it
// stands up to (not including), both in Unix milliseconds of the server's
// clock (until 0: no later slot).
func WithTemplate(b []byte) SchedulerOption {
	return func(o *schedulerOptions) { o.template = b }
}

// SchedulerUpsert is what UpsertScheduler did.
type SchedulerUpsert struct {
	// Created reports that the scheduler is new.
	Created bool
	// Changed reports that its schedule is new or differs from the one
	// stored, so its next slot was reset: to the interval's start, or to
	// the first slot of the cron expression from now. An unchanged
	// schedule keeps its next slot, so a fleet that upserts its schedulers
	// at every start never resets nor repeats a run.
	Changed bool
	// Next is its stored next slot after the upsert (server clock); zero
	// when the schedule has ended.
	Next time.Time
}

// checkSchedulerID refuses an id outside 1 to MaxSchedulerID bytes.
func checkSchedulerID(id string) error {
	if len(id) < 1 || len(id) > MaxSchedulerID {
		return &SchedulerError{Scheduler: id, Field: "scheduler", Reason: fmt.Sprintf("an id of %d bytes, 1 to %d", len(id), MaxSchedulerID)}
	}
	return nil
}

// UpsertScheduler creates or updates the job scheduler id of the queue
// (echomq 2.6.0) in one upsert_scheduler call: its schedule (a cron
// expression in a time zone, or an interval), what it does with missed
// slots (WithMissed, WithBackfill, WithGrace) and the payload of its runs
// (WithTemplate). A scheduler whose schedule is unchanged keeps its next
// slot; the other settings are replaced. Runs are fired by RunSchedulers
// or FireDue, in this process or any other.
//
// Everything is checked before anything is sent: the id (1 to
// MaxSchedulerID bytes), the schedule (exactly one of Cron and Every; the
// cron expression parses in its zone; TZ only with Cron, Start only with
// Every), the missed word, the backfill (0 to MaxBackfill), the grace (0
// or more) and the template (at most MaxTemplate bytes); a refusal is a
// *SchedulerError (matching ErrArgument). It is resent across a
// reconnect: a resend the lost attempt applied reports neither Created
// nor Changed.
func (q *Queue) UpsertScheduler(ctx context.Context, id string, s Schedule, opts ...SchedulerOption) (SchedulerUpsert, error) {
	o := schedulerOptions{missed: MissedRunOnce, grace: DefaultGrace}
	for _, f := range opts {
		f(&o)
	}
	if o.missed == "" {
		o.missed = MissedRunOnce
	}
	refuse := func(field, format string, args ...any) error {
		return &SchedulerError{Scheduler: id, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if err := checkSchedulerID(id); err != nil {
		return SchedulerUpsert{}, err
	}
	if err := s.check(id); err != nil {
		return SchedulerUpsert{}, err
	}
	switch {
	case !o.missed.Registered():
		return SchedulerUpsert{}, refuse("missed", "%q is not one of %v", string(o.missed), Misseds())
	case o.backfill < 0 || o.backfill > MaxBackfill:
		return SchedulerUpsert{}, refuse("backfill", "%d, 0 to %d", o.backfill, MaxBackfill)
	case o.grace < 0:
		return SchedulerUpsert{}, refuse("grace", "negative %v", o.grace)
	case len(o.template) > MaxTemplate:
		return SchedulerUpsert{}, refuse("template", "%d bytes, at most %d", len(o.template), MaxTemplate)
	}
	k := q.keys
	call := wire.UpsertSchedulerCall{Schedulers: k.Schedulers, SchedulerNext: k.SchedulerNext, Scheduler: id, Cron: s.Cron,
		EveryMS: ms(s.Every), StartMS: msOfTime(s.Start), Tz: s.TZ, Missed: o.missed, Backfill: int64(o.backfill),
		GraceMS: ms(o.grace), Template: rueidis.BinaryString(o.template)}
	var r wire.UpsertSchedulerReply
	err := q.c.idempotent(ctx, func(ctx context.Context) error {
		if err := q.c.ensure(ctx); err != nil {
			return err
		}
		var err error
		r, err = call.Exec(ctx, q.c.rc)
		return err
	})
	if err != nil {
		return SchedulerUpsert{}, err
	}
	return SchedulerUpsert{Created: r.Created == 1, Changed: r.Changed == 1, Next: timeOfMS(r.NextMS)}, nil
}

// SchedulerInfo is a job scheduler's record as the server holds it
// (echomq 2.6.0).
type SchedulerInfo struct {
	// ID is the scheduler's id; empty when there is no such scheduler
	// (Schedulers), and then every other field but Now is zero.
	ID string
	// Schedule is its schedule; an interval's Start is its anchor, the
	// upsert's server time when none was given.
	Schedule
	// Missed is what it does with missed slots; a word of a later minor is
	// kept as it is (planned as MissedRunOnce).
	Missed Missed
	// Backfill bounds the missed slots that get a run each
	// (MissedBackfill).
	Backfill int
	// Grace is how late a slot may fire and still not be missed.
	Grace time.Duration
	// Template is the payload of its runs, before {scheduler}, {slot} and
	// {until} are replaced.
	Template []byte
	// Paused reports that it is paused: it fires nothing.
	Paused bool
	// Next is its stored next slot: the first slot not fired is the first
	// slot of its schedule at or after it. Zero when the schedule has no
	// further slot.
	Next time.Time
	// LastSlot is the slot of its last run; zero when it fired none.
	LastSlot time.Time
	// LastID is the job id of its last run; zero when it fired none.
	LastID ID
	// Runs counts the runs it fired.
	Runs int64
	// Now is the server's time of the read: plan with it (PlanScheduler),
	// never with the local clock.
	Now time.Time
}

// Found reports whether the record is a scheduler's (not a missing one).
func (i SchedulerInfo) Found() bool { return i.ID != "" }

// schedulerRecord is the elements every reading script answers.
type schedulerRecord = wire.SchedulerEntriesReply

func schedulerInfoOf(r schedulerRecord) (SchedulerInfo, error) {
	if r.Scheduler == "" {
		return SchedulerInfo{Now: timeOfMS(r.NowMS)}, nil
	}
	info := SchedulerInfo{ID: r.Scheduler, Schedule: Schedule{Cron: r.Cron, TZ: r.Tz, Every: time.Duration(r.EveryMS) * time.Millisecond,
		Start: timeOfMS(r.StartMS)}, Missed: r.Missed, Backfill: int(r.Backfill), Grace: time.Duration(r.GraceMS) * time.Millisecond,
		Template: []byte(r.Template), Paused: r.Paused != 0, Next: timeOfMS(r.NextMS), LastSlot: timeOfMS(r.LastSlotMS), Runs: r.Runs,
		Now: timeOfMS(r.NowMS)}
	if r.LastID != "" {
		var err error
		if info.LastID, err = ParseID(r.LastID); err != nil {
			return SchedulerInfo{}, errorf("emq: scheduler %q: last id: %w", r.Scheduler, err)
		}
	}
	return info, nil
}

// readSchedulers runs one read-only script that answers scheduler
// records (EVALSHA_RO), resent across a reconnect like every read.
func (q *Queue) readSchedulers(ctx context.Context, s *wire.Script, x rueidis.LuaExec, decode func(rueidis.RedisResult) ([]schedulerRecord, error)) ([]SchedulerInfo, error) {
	var out []SchedulerInfo
	err := q.c.idempotent(ctx, func(ctx context.Context) error {
		if err := q.c.ensureRead(ctx); err != nil {
			return err
		}
		res := q.c.execScriptsRO(ctx, []*wire.Script{s}, []rueidis.LuaExec{x})
		recs, err := decode(res[0])
		if err != nil {
			return err
		}
		got := make([]SchedulerInfo, len(recs))
		for i, r := range recs {
			if got[i], err = schedulerInfoOf(r); err != nil {
				return err
			}
		}
		out = got
		return nil
	})
	return out, err
}

// Schedulers reads the records of the job schedulers ids, in order, in
// one read-only scheduler_entries call (echomq 2.6.0): a missing one reads
// as a SchedulerInfo with only Now set (Found false). It only reads
// (EVALSHA_RO), also on an observing client, and is resent across a
// reconnect. No ids sends nothing.
func (q *Queue) Schedulers(ctx context.Context, ids ...string) ([]SchedulerInfo, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	k := q.keys
	call := wire.SchedulerEntriesCall{SchedulersKey: k.Schedulers, SchedulerNext: k.SchedulerNext, Schedulers: ids}
	out, err := q.readSchedulers(ctx, wire.ScriptSchedulerEntries, call.LuaExec(), wire.DecodeSchedulerEntries)
	if err == nil && len(out) != len(ids) {
		return nil, errorf("emq: %s: %d records for %d schedulers", wire.ScriptSchedulerEntries.Name, len(out), len(ids))
	}
	return out, err
}

// MaxSchedulerPage is the most records one ListSchedulers or due page
// holds.
const MaxSchedulerPage = 1000

// ListSchedulers reads a page of the queue's job schedulers in one
// read-only list_schedulers call (echomq 2.6.0): count records (1 to
// MaxSchedulerPage) from offset (0 or more) in next-slot order, paused and
// ended ones last; fewer, or none, past the last. A page is by rank, so a
// scheduler that fires meanwhile may move across pages. An offset or count
// out of range is refused with ErrArgument before anything is sent.
func (q *Queue) ListSchedulers(ctx context.Context, offset, count int) ([]SchedulerInfo, error) {
	if offset < 0 || count < 1 || count > MaxSchedulerPage {
		return nil, errorf("%w: a page of %d schedulers from %d (count 1 to %d, offset 0 or more)", ErrArgument, count, offset, MaxSchedulerPage)
	}
	k := q.keys
	call := wire.ListSchedulersCall{Schedulers: k.Schedulers, SchedulerNext: k.SchedulerNext, Offset: int64(offset), Count: int64(count)}
	return q.readSchedulers(ctx, wire.ScriptListSchedulers, call.LuaExec(), func(r rueidis.RedisResult) ([]schedulerRecord, error) {
		recs, err := wire.DecodeListSchedulers(r)
		out := make([]schedulerRecord, len(recs))
		for i, x := range recs {
			out[i] = schedulerRecord(x)
		}
		return out, err
	})
}

// DueSchedulers reads a page of the job schedulers due within horizon
// (next slot at most the server's now plus horizon) in one read-only
// due_schedulers call (echomq 2.6.0): of the d due, in next-slot order,
// the page spread modulo ⌈d / count⌉ of count records (1 to
// MaxSchedulerPage), so that competing runners given random spreads work
// different pages. Each record's Now is the server's time of the read:
// plan with it (PlanScheduler). FireDue is the tick built on it. A count
// out of range, a negative horizon or spread is refused with ErrArgument
// before anything is sent.
func (q *Queue) DueSchedulers(ctx context.Context, horizon time.Duration, count, spread int) ([]SchedulerInfo, error) {
	if horizon < 0 || spread < 0 || count < 1 || count > MaxSchedulerPage {
		return nil, errorf("%w: a due page of %d schedulers (1 to %d), horizon %v, spread %d (neither negative)", ErrArgument, count, MaxSchedulerPage, horizon, spread)
	}
	k := q.keys
	call := wire.DueSchedulersCall{Schedulers: k.Schedulers, SchedulerNext: k.SchedulerNext, HorizonMS: ms(horizon), Count: int64(count), Spread: int64(spread)}
	return q.readSchedulers(ctx, wire.ScriptDueSchedulers, call.LuaExec(), func(r rueidis.RedisResult) ([]schedulerRecord, error) {
		recs, err := wire.DecodeDueSchedulers(r)
		out := make([]schedulerRecord, len(recs))
		for i, x := range recs {
			out[i] = schedulerRecord(x)
		}
		return out, err
	})
}

// PauseSchedulers pauses the job schedulers ids in one pause_schedulers
// call (echomq 2.6.0): a paused scheduler fires nothing. It returns how
// many changed (one already paused, or missing, is not counted). It is
// resent across a reconnect (a resend counts what the lost attempt did not
// change). No ids sends nothing.
func (q *Queue) PauseSchedulers(ctx context.Context, ids ...string) (int, error) {
	return q.pauseSchedulers(ctx, 1, ids)
}

// ResumeSchedulers resumes the paused job schedulers ids in one
// pause_schedulers call (echomq 2.6.0): a resumed scheduler's next slot is
// at the earliest now, so the slots that fell due while it was paused
// never run. It returns how many changed, and is resent like
// PauseSchedulers.
func (q *Queue) ResumeSchedulers(ctx context.Context, ids ...string) (int, error) {
	return q.pauseSchedulers(ctx, 0, ids)
}

func (q *Queue) pauseSchedulers(ctx context.Context, paused int64, ids []string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	k := q.keys
	call := wire.PauseSchedulersCall{SchedulersKey: k.Schedulers, SchedulerNext: k.SchedulerNext, Paused: paused, Schedulers: ids}
	return q.resentCount(ctx, call.Exec)
}

// resentCount runs a call that answers a count, resent across a
// reconnect (a resend counts what the lost attempt did not do).
func (q *Queue) resentCount(ctx context.Context, exec func(context.Context, rueidis.Client) (int64, error)) (int, error) {
	var n int64
	err := q.c.idempotent(ctx, func(ctx context.Context) error {
		if err := q.c.ensure(ctx); err != nil {
			return err
		}
		var err error
		n, err = exec(ctx, q.c.rc)
		return err
	})
	return int(n), err
}

// RemoveSchedulers removes the job schedulers ids in one remove_schedulers
// call (echomq 2.6.0); the runs they fired are jobs and stay. It returns
// how many existed, and is resent across a reconnect (a resend counts
// what the lost attempt did not remove). No ids sends nothing.
func (q *Queue) RemoveSchedulers(ctx context.Context, ids ...string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	k := q.keys
	call := wire.RemoveSchedulersCall{SchedulersKey: k.Schedulers, SchedulerNext: k.SchedulerNext, Schedulers: ids}
	return q.resentCount(ctx, call.Exec)
}

// SchedulerFiring is one entry of a FireSchedulers call: the scheduler's
// next slot it was planned from (Expect) and the one it sets (Next), and
// the run it creates, when Slot is not zero, as the job ID with the
// scheduler's template filled in for Slot and Until. PlanScheduler plans
// them (without an ID). Times are on the server's clock; zero is 0 on
// the wire (Next: the schedule has ended; Until: no later slot).
type SchedulerFiring struct {
	ID        ID
	Scheduler string
	Expect    time.Time
	Next      time.Time
	Slot      time.Time
	Until     time.Time
}

// FireSchedulers fires entries in one fire_schedulers call (echomq 2.6.0)
// and returns, per entry and in order, what was done: FiringFired (the run
// was created, pending when its slot is due, scheduled at its slot
// otherwise, and the scheduler's next slot moved), FiringAdvanced (the
// next slot moved; the entry has no run), or nothing: FiringStale (the
// scheduler's next slot is not the entry's Expect: another process fired
// it first, or the schedule changed; or the run's row exists),
// FiringPaused, FiringGone. Each run needs an ID of WorkKind minted by the
// caller, also an entry without a run: an id of another kind refuses the
// call with ErrKind (nothing is written). A malformed id is refused with
// ErrID and a time before the Unix epoch with ErrArgument before anything
// is sent. It is not resent across a reconnect (a resend would report the
// entries the lost attempt fired as stale). No entries sends nothing.
func (q *Queue) FireSchedulers(ctx context.Context, entries []SchedulerFiring) (_ []Firing, err error) {
	defer q.c.afterFailure(ctx, &err)
	if len(entries) == 0 {
		return nil, nil
	}
	k := q.keys
	call := wire.FireSchedulersCall{SchedulersKey: k.Schedulers, SchedulerNext: k.SchedulerNext, Pending: k.Pending, Schedule: k.Schedule, Wake: k.Wake,
		Rows: make([]string, len(entries)), Entries: make([]wire.FireSchedulersEntry, len(entries))}
	for i, e := range entries {
		if call.Rows[i], err = k.Row(e.ID); err != nil {
			return nil, errorf("entry %d: %w", i, err)
		}
		w := wire.FireSchedulersEntry{ID: e.ID, Scheduler: e.Scheduler, Expect: msOfTime(e.Expect), Next: msOfTime(e.Next), Slot: msOfTime(e.Slot), Until: msOfTime(e.Until)}
		if w.Expect < 0 || w.Next < 0 || w.Slot < 0 || w.Until < 0 {
			return nil, errorf("%w: entry %d of scheduler %q: a time before the Unix epoch", ErrArgument, i, e.Scheduler)
		}
		call.Entries[i] = w
	}
	if err := q.c.ensure(ctx); err != nil {
		return nil, err
	}
	rs, err := call.Exec(ctx, q.c.rc)
	if err != nil {
		return nil, err
	}
	if len(rs) != len(entries) {
		return nil, errorf("emq: %s: %d records for %d entries", wire.ScriptFireSchedulers.Name, len(rs), len(entries))
	}
	out := make([]Firing, len(rs))
	n := int64(0)
	for i, r := range rs {
		out[i] = r.Outcome
		if r.Outcome == FiringFired {
			n++
		}
	}
	q.c.metrics.Add(Enqueued, q.Name(), n)
	return out, nil
}
