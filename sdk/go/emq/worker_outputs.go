package emq

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// The worker's side of echomq 2.4.0 beyond its settlements (worker.go):
// progress reports from inside a handler, the idle wait that promotes a
// scheduled job at its run-at, and the sweep of what rows that are gone
// left behind.

// runningKey is the context key of the job a handler runs.
type runningKey struct{}

// running is the job a handler runs, in its context.
type running struct {
	w   *Worker
	job Job
}

// ReportProgress reports the progress of the job whose handler ctx
// belongs to (echomq 2.4.0): the bytes (at most 4096) replace its last
// report, which Get and Output read while the job exists, and a progress
// event is reported within the worker's EventsMax. Call it from a Handler
// or ResultHandler with the context it was given:
//
//	func handle(ctx context.Context, job emq.Job) error {
//		for i, part := range parts {
//			...
//			if err := emq.ReportProgress(ctx, []byte(fmt.Sprintf("%d/%d", i+1, len(parts)))); err != nil {
//				return err
//			}
//		}
//		return nil
//	}
//
// When the job's lease was lost (another worker holds it now) the report
// is refused with ErrStale and nothing is written. A context that is not a
// handler's, or a report over 4096 bytes, is refused with ErrArgument
// before anything is sent.
func ReportProgress(ctx context.Context, progress []byte) error {
	r, ok := ctx.Value(runningKey{}).(*running)
	if !ok {
		return errorf("%w: ReportProgress needs the context of a worker's handler", ErrArgument)
	}
	return r.w.q.ReportProgress(ctx, r.job.ID, r.job.Token, progress, int(r.w.eventsMax))
}

// waitBell blocks on the queue's doorbell until it rings, for up to Wait.
// Before it blocks it reads the schedule's head and the server's time in
// one round trip; when the earliest run-at comes sooner than Wait, a
// timer promotes the due jobs at that run-at, whoever holds the
// maintenance lock (promote_ids is safe to race), and promote_ids rings
// the doorbell the worker blocks on, so that a delayed job starts within
// milliseconds of its run-at (the server's own timeout of a blocked
// command fires only at its next cron tick, up to 1/hz late). A run-at
// already passed is promoted at once. add_many and fail ring the doorbell
// when they schedule a new earliest job, so that a sleeper wakes and
// arms its timer again for that one.
//
// A claim its queue's rate limit held back (echomq 2.8.0) waits at most
// admit, until the limit admits the next start: a timer rings the
// doorbell then, for the same reason, unless the doorbell rang first (a
// resume, a raised cap or limit, or a start another worker leased with
// jobs left). One ring wakes one blocked claimer, so that the workers
// held back by the limit claim again about once per start each, never in
// a loop.
func (w *Worker) waitBell(ctx context.Context, admit time.Duration) {
	rc := w.q.c.rc
	wait := w.opt.Wait
	var timers []*time.Timer
	if admit > 0 && admit < wait {
		wait = admit
		timers = append(timers, time.AfterFunc(admit, func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
			defer cancel()
			ring := wire.RingCall{Wake: w.q.keys.Wake}
			if _, err := ring.Exec(rctx, rc); err != nil {
				w.log.Debug("emq: ringing the doorbell for the rate limit's next start failed", "err", err)
			}
		}))
	}
	defer func() {
		for _, t := range timers {
			t.Stop()
		}
	}()
	if d, ok := w.untilHead(ctx); ok && d < wait {
		if d <= 0 {
			w.promote(ctx)
			return
		}
		timers = append(timers, time.AfterFunc(d, func() {
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
			defer cancel()
			w.promote(pctx)
		}))
	}
	err := rc.Do(ctx, rc.B().Blpop().Key(w.q.keys.Wake).Timeout(wait.Seconds()).Build()).Error()
	if err != nil && !rueidis.IsRedisNil(err) && ctx.Err() == nil {
		w.log.Debug("emq: waiting on the doorbell failed", "err", err)
		sleep(ctx, min(wait, 100*time.Millisecond))
	}
}

// untilHead reads the schedule's earliest run-at and the server's time in
// one round trip and returns how long until that run-at (at most a
// millisecond early); ok is false when nothing is scheduled or the read
// failed.
func (w *Worker) untilHead(ctx context.Context) (time.Duration, bool) {
	rc := w.q.c.rc
	res := rc.DoMulti(ctx,
		rc.B().Zrange().Key(w.q.keys.Schedule).Min("0").Max("0").Withscores().Build(),
		rc.B().Time().Build())
	head, err := res[0].AsZScores()
	if err != nil || len(head) == 0 {
		return 0, false
	}
	t, err := res[1].AsStrSlice()
	if err != nil || len(t) != 2 {
		return 0, false
	}
	sec, err1 := strconv.ParseInt(t[0], 10, 64)
	usec, err2 := strconv.ParseInt(t[1], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	now := sec*1000 + usec/1000
	return time.Duration(int64(head[0].Score)-now) * time.Millisecond, true
}

// sweepBatch is the HSCAN COUNT of one orphan sweep, per hash.
const sweepBatch = 100

// sweepOrphans scans the next slice of each of the queue's failure
// records, retry policies and progress reports (one HSCAN each, pipelined,
// their cursors kept across ticks) and forgets, with forget_ids, those of
// the ids it saw whose rows are gone: what a 2.2 or 2.3 client's complete
// or purge left behind goes within about one tick per sweepBatch records.
// A field that is not a well-formed id (a foreign writer's) is left
// alone.
func (w *Worker) sweepOrphans(ctx context.Context) {
	rc := w.q.c.rc
	k := w.q.keys
	hashes := [len(w.sweep)]string{k.Failures, k.Options, k.Progress}
	cmds := make(rueidis.Commands, len(hashes))
	for i, h := range hashes {
		cmds[i] = rc.B().Hscan().Key(h).Cursor(w.sweep[i]).Count(sweepBatch).Build()
	}
	seen := map[ID]bool{}
	var ids []ID
	for i, r := range rc.DoMulti(ctx, cmds...) {
		e, err := r.AsScanEntry()
		if err != nil {
			w.log.Warn("emq: scanning for orphaned records failed", "key", hashes[i], "err", err)
			continue
		}
		w.sweep[i] = e.Cursor
		for j := 0; j+1 < len(e.Elements); j += 2 {
			if id, err := ParseID(e.Elements[j]); err == nil && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return
	}
	n, err := w.q.ForgetIDs(ctx, ids)
	if err != nil {
		w.log.Warn("emq: forgetting orphaned records failed", "err", err)
		return
	}
	if n > 0 {
		w.log.Debug("emq: forgot orphaned records", "records", n)
	}
}
