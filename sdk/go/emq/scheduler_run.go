package emq

import (
	"context"
	"log/slog"
	mrand "math/rand/v2"
	"sync"
	"time"
)

// The scheduler runner (echomq 2.6.0): read the due schedulers, plan each
// with the server's time of the read, fire every plan of a page in one
// call. Any number of runners, in any language, share the work.

// FiredRun is a run a firing created: a job of the queue.
type FiredRun struct {
	// Scheduler is the scheduler that fired it.
	Scheduler string
	// Slot is its slot (server clock).
	Slot time.Time
	// Until is the slot it stands up to, not including: the next slot of
	// the schedule, or, under MissedRunOnce, the first slot not missed;
	// zero when the schedule has no later slot.
	Until time.Time
	// ID is the run's job id.
	ID ID
}

// DefaultSchedulerPoll is how long RunSchedulers waits between ticks.
const DefaultSchedulerPoll time.Duration = 250 * time.Millisecond

// DefaultDuePage is how many due schedulers one round of a tick reads.
const DefaultDuePage = 100

// SchedulerOptions configure RunSchedulers.
type SchedulerOptions struct {
	// Poll is the wait between ticks; DefaultSchedulerPoll when 0.
	Poll time.Duration
	// Horizon fires ahead: runs whose slot is at most Horizon away are
	// created at once, scheduled at their slot (a worker's promote makes
	// them due then). 0, the default, fires each run when its slot is due.
	Horizon time.Duration
	// Count is how many due schedulers one round reads, 1 to
	// MaxSchedulerPage; DefaultDuePage when 0. A full page is followed by
	// another round at once.
	Count int
	// Logger receives the runner's log; the client's when nil.
	Logger *slog.Logger
	// OnFire, when set, is called after each tick that fired runs, with
	// them, from the runner's goroutine.
	OnFire func([]FiredRun)
}

// schedulerBackoff bounds the runner's pauses after a failed tick.
const (
	schedulerBackoffMin = 100 * time.Millisecond
	schedulerBackoffMax = 10 * time.Second
)

// RunSchedulers fires the queue's job schedulers (echomq 2.6.0) until ctx
// is done, then returns nil: a tick (FireDue) every Poll. A failed tick is
// logged and tried again after a backoff (up to 10s); nothing ends the
// loop but ctx. Run it in as many processes as you like: each slot fires
// once. Options out of range are refused with ErrArgument.
func (q *Queue) RunSchedulers(ctx context.Context, opt SchedulerOptions) error {
	if opt.Poll < 0 || opt.Horizon < 0 || opt.Count < 0 || opt.Count > MaxSchedulerPage {
		return errorf("%w: scheduler options: poll %v, horizon %v, count %d (0 to %d)", ErrArgument, opt.Poll, opt.Horizon, opt.Count, MaxSchedulerPage)
	}
	if opt.Poll == 0 {
		opt.Poll = DefaultSchedulerPoll
	}
	if opt.Count == 0 {
		opt.Count = DefaultDuePage
	}
	log := opt.Logger
	if log == nil {
		log = q.c.log
	}
	log = log.With("queue", q.Name())
	failures := 0
	for ctx.Err() == nil {
		fired, err := q.fireDue(ctx, opt.Horizon, opt.Count, log)
		if len(fired) > 0 && opt.OnFire != nil {
			opt.OnFire(fired)
		}
		wait := opt.Poll
		if err != nil && ctx.Err() == nil {
			failures++
			wait = schedulerBackoffMin << min(failures-1, 10)
			wait = min(wait, schedulerBackoffMax)
			wait = wait/2 + time.Duration(mrand.Int64N(int64(wait/2)+1))
			log.Warn("emq: a scheduler tick failed; trying again", "err", err, "in_a_row", failures, "wait", wait)
		} else {
			failures = 0
		}
		pause(ctx, wait)
	}
	return nil
}

// FireDue runs one tick of the scheduler runner (echomq 2.6.0) and returns
// the runs it fired: it reads a page of the schedulers due within horizon
// (DueSchedulers, DefaultDuePage of them, the page picked at random so
// that competing runners work different pages), plans each with the
// server's time of the read (PlanScheduler), mints a run id of WorkKind
// for each entry and fires the page's entries in one FireSchedulers call;
// again at once while the page was full and something fired. A scheduler
// another process fired first is stale and left to it. A record whose
// cron expression does not parse is skipped (logged at warning once per
// client, scheduler and expression).
func (q *Queue) FireDue(ctx context.Context, horizon time.Duration) ([]FiredRun, error) {
	if horizon < 0 {
		return nil, errorf("%w: negative horizon %v", ErrArgument, horizon)
	}
	return q.fireDue(ctx, horizon, DefaultDuePage, q.c.log.With("queue", q.Name()))
}

// unparsedLog remembers the records whose schedule a client's planner
// found unparseable, so that each is logged once.
type unparsedLog struct {
	mu   sync.Mutex
	seen map[[4]string]bool
}

// warn logs, once per queue, scheduler, expression and zone, that a
// record's schedule does not parse.
func (u *unparsedLog) warn(log *slog.Logger, queue string, info SchedulerInfo, err error) {
	k := [4]string{queue, info.ID, info.Cron, info.TZ}
	u.mu.Lock()
	if u.seen == nil || len(u.seen) >= cronCacheMax {
		u.seen = map[[4]string]bool{}
	}
	seen := u.seen[k]
	u.seen[k] = true
	u.mu.Unlock()
	if !seen {
		log.Warn("emq: a scheduler's schedule does not parse; it is not fired", "scheduler", info.ID, "cron", info.Cron, "tz", info.TZ, "err", err)
	}
}

// fireDue is FireDue with a page size and a logger.
func (q *Queue) fireDue(ctx context.Context, horizon time.Duration, count int, log *slog.Logger) ([]FiredRun, error) {
	var fired []FiredRun
	for {
		recs, err := q.DueSchedulers(ctx, horizon, count, int(mrand.Uint32()))
		if err != nil {
			return fired, err
		}
		var entries []SchedulerFiring
		for _, r := range recs {
			es, err := PlanScheduler(r, r.Now, horizon)
			if err != nil {
				q.c.unparsed.warn(log, q.Name(), r, err)
				continue
			}
			entries = append(entries, es...)
		}
		for i := range entries {
			if entries[i].ID, err = q.c.Mint(WorkKind); err != nil {
				return fired, err
			}
		}
		outcomes, err := q.FireSchedulers(ctx, entries)
		if err != nil {
			return fired, err
		}
		moved := false
		for i, o := range outcomes {
			switch o {
			case FiringFired:
				e := entries[i]
				fired = append(fired, FiredRun{Scheduler: e.Scheduler, Slot: e.Slot, Until: e.Until, ID: e.ID})
				moved = true
			case FiringAdvanced:
				moved = true
			}
		}
		if len(recs) < count || !moved {
			return fired, nil
		}
	}
}
