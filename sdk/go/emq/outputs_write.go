package emq

import (
	"context"
	"errors"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// The write side of echomq 2.4.0: admission with a relative delay and a
// retry policy of the job's own (add_many), completion that keeps the
// handler's result (complete_result_claim_ids), failure settled by policy
// on the server (fail), lost leases reaped by the job's own attempts
// (reap_recorded_ids), progress reports (progress), revival reported as an
// event (revive_recorded) and the forgetting of what a row that is gone
// left behind (forget_ids).

// Bounds the scripts enforce, checked before sending.
const (
	maxResultBytes   = 1 << 20 // complete_result_claim_ids: a result of at most 1 MiB
	maxProgressBytes = 4096    // progress: a report of at most 4 KiB
	maxJitter        = 1000    // fail: a jitter draw of 0..1000
)

// defaultEventsMax is the events stream's bound of a client and a worker
// that set none.
const defaultEventsMax = 10000

// eventsMaxOf defaults an EventsMax option: 0 is defaultEventsMax, a
// negative value writes no event (0 on the wire).
func eventsMaxOf(n int) int64 {
	switch {
	case n == 0:
		return defaultEventsMax
	case n < 0:
		return 0
	}
	return int64(n)
}

// ErrPermanent marks a handler error that no retry can fix: a handler
// returning an error that wraps it (fmt.Errorf("...: %w", emq.ErrPermanent),
// or Permanent(err)) has its job buried at once, whatever its attempts and
// policy.
var ErrPermanent = errors.New("emq: permanent failure")

// Is makes an error made by Permanent match ErrPermanent.
func (e *permanentError) Is(target error) bool { return target == ErrPermanent }

// BackoffPolicy is a retry delay the server applies when an attempt fails
// (echomq 2.4.0): fixed waits Delay after every failed attempt;
// exponential waits Delay doubled for every earlier attempt, at most Max
// when Max is above 0, spread over its upper half by a random draw made
// per failure. A producer gives a job its own with WithBackoff; a worker
// applies WorkerOptions.BackoffPolicy to jobs that have none.
type BackoffPolicy struct {
	// Type is BackoffFixed or BackoffExponential; BackoffInherit (or
	// empty) says "none of its own" in a job's policy.
	Type Backoff
	// Delay is the base delay, at millisecond precision.
	Delay time.Duration
	// Max bounds an exponential delay; 0 is unbounded.
	Max time.Duration
}

// FixedBackoff is the policy that waits d after every failed attempt.
func FixedBackoff(d time.Duration) BackoffPolicy {
	return BackoffPolicy{Type: BackoffFixed, Delay: d}
}

// ExponentialPolicy is the policy that waits base after the first failed
// attempt, doubling for each further one up to max (0: unbounded), each
// wait drawn over its upper half. ExponentialPolicy(time.Second,
// 10*time.Minute) is what a worker applies by default.
func ExponentialPolicy(base, max time.Duration) BackoffPolicy {
	return BackoffPolicy{Type: BackoffExponential, Delay: base, Max: max}
}

// kind is the policy's vocabulary word, inherit when empty.
func (b BackoffPolicy) kind() Backoff {
	if b.Type == "" {
		return BackoffInherit
	}
	return b.Type
}

// check refuses, before anything is sent, a word outside the vocabulary
// and a negative delay or bound; worker says inherit is refused too (a
// worker's policy must say how to wait).
func (b BackoffPolicy) check(worker bool) error {
	k := b.kind()
	switch {
	case !k.Registered():
		return errorf("%w: backoff %q is not one of %v", ErrArgument, string(k), Backoffs())
	case worker && k == BackoffInherit:
		return errorf("%w: a worker's backoff is %s or %s, not %s", ErrArgument, BackoffFixed, BackoffExponential, BackoffInherit)
	case b.Delay < 0 || b.Max < 0:
		return errorf("%w: negative backoff delay %v or bound %v", ErrArgument, b.Delay, b.Max)
	}
	return nil
}

// PushOption sets how a job is admitted (echomq 2.4.0): Delay, Attempts,
// WithBackoff. PushWith, PushBatchWith and AddMany take them; a push with none
// runs exactly as before (push_many through the coalescer).
type PushOption func(*admitOptions)

// admitOptions are the options of an admission, comparable: the
// coalescer groups only pushes whose options are equal.
type admitOptions struct {
	delay    time.Duration
	attempts int
	backoff  BackoffPolicy
	dedup    DedupPolicy // echomq 2.5.0: for the jobs with a DedupKey
}

// Delay admits the job to run d after it is admitted, measured on the
// server's clock (relative: immune to the client's clock). Zero or less
// admits it pending. EnqueueAt takes an absolute run-at instead.
func Delay(d time.Duration) PushOption {
	return func(o *admitOptions) { o.delay = d }
}

// Attempts gives the job its own attempts before burial, instead of the
// worker's MaxAttempts; 0 keeps the worker's. A negative n is refused with
// ErrArgument before anything is sent.
func Attempts(n int) PushOption {
	return func(o *admitOptions) { o.attempts = n }
}

// WithBackoff gives the job its own retry delay, instead of the worker's
// (FixedBackoff, ExponentialPolicy). A type outside the backoff
// vocabulary, or a negative delay or bound, is refused with ErrArgument
// before anything is sent.
func WithBackoff(b BackoffPolicy) PushOption {
	return func(o *admitOptions) { o.backoff = b }
}

// admitOf applies opts; plain says none changes anything (the push runs
// as a 2.3 push).
func admitOf(opts []PushOption) (o admitOptions, plain bool, err error) {
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	if o.attempts < 0 {
		return o, false, errorf("%w: negative attempts %d", ErrArgument, o.attempts)
	}
	if err := o.backoff.check(false); err != nil {
		return o, false, err
	}
	if o.backoff.kind() == BackoffInherit {
		o.backoff = BackoffPolicy{Type: BackoffInherit} // its delays say nothing
	}
	if o.delay < 0 {
		o.delay = 0
	}
	plain = o.delay == 0 && o.attempts == 0 && o.backoff.Type == BackoffInherit
	return o, plain, nil
}

// Admitted is what AddMany says of one job: whether it was enqueued
// (false: a duplicate, its row left untouched) and, when it was admitted
// with a delay, its run-at on the server's clock (zero when pending).
type Admitted struct {
	Enqueued bool
	RunAt    time.Time
}

// AddMany admits jobs in one add_many call (echomq 2.4.0) with the options
// given — a relative Delay, the jobs' own Attempts and WithBackoff — and
// rings the queue's doorbell once when it leaves claimable jobs or
// schedules the queue's earliest job. The result tells, per job and in
// order, whether it was enqueued and when it runs. An id of a kind other
// than WorkKind refuses the whole call with ErrKind and nothing is
// written. A malformed id, a payload over MaxPayload or an option out of
// range is refused before anything is sent; no jobs sends nothing.
//
// Like PushMany it is idempotent while the jobs exist and is resent across
// a reconnect. PushWith and PushBatchWith with options use it.
func (q *Queue) AddMany(ctx context.Context, jobs []NewJob, opts ...PushOption) (out []Admitted, err error) {
	o, _, err := admitOf(opts)
	if err != nil {
		return nil, err
	}
	pj := make([]pushJob, len(jobs))
	for i, j := range jobs {
		if pj[i], err = q.pushJob(j.ID, j.Payload); err != nil {
			return nil, errorf("job %d: %w", i, err)
		}
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	call := q.addManyCall(o, pj)
	err = q.c.idempotent(ctx, func(ctx context.Context) error {
		if err := q.c.ensure(ctx); err != nil {
			return err
		}
		rs, err := call.Exec(ctx, q.c.rc)
		if err != nil {
			return err
		}
		got, n, err := admittedOf(rs, len(jobs))
		if err != nil {
			return err
		}
		q.c.metrics.Add(Enqueued, q.Name(), n)
		out = got
		return nil
	})
	return out, err
}

// addManyCall is the add_many call of jobs with o.
func (q *Queue) addManyCall(o admitOptions, jobs []pushJob) wire.AddManyCall {
	call := wire.AddManyCall{Pending: q.keys.Pending, Schedule: q.keys.Schedule, Wake: q.keys.Wake, Options: q.keys.Options,
		Rows: make([]string, len(jobs)), Entries: make([]wire.AddManyEntry, len(jobs)),
		DelayMS: ms(o.delay), Attempts: int64(o.attempts), Backoff: o.backoff.kind(), BackoffMS: ms(o.backoff.Delay), BackoffMaxMS: ms(o.backoff.Max)}
	for i, j := range jobs {
		call.Rows[i] = j.row
		call.Entries[i] = wire.AddManyEntry{ID: j.id, Payload: j.payload}
	}
	return call
}

// admittedOf turns add_many's records for n jobs into results, counting
// the jobs enqueued.
func admittedOf(rs []wire.AddManyReply, n int) ([]Admitted, int64, error) {
	if len(rs) != n {
		return nil, 0, errorf("emq: %s: %d records for %d jobs", wire.ScriptAddMany.Name, len(rs), n)
	}
	out := make([]Admitted, n)
	k := int64(0)
	for i, r := range rs {
		out[i].Enqueued = r.Enqueued != 0
		if out[i].Enqueued {
			k++
		}
		if r.RunAtMS > 0 {
			out[i].RunAt = time.UnixMilli(r.RunAtMS)
		}
	}
	return out, k, nil
}

// addMany admits jobs (checked by pushJob) with o in add_many calls cut by
// chunks, pipelined, as pushMany does for push_many: a call refused as a
// whole (EMQKIND) is replaced by one call per job so that each job gets
// its own answer, and the calls that failed in transport are resent,
// whole, on a fresh, re-fenced connection, up to resendAttempts attempts
// within ctx. err is the fence's refusal when it came before anything was
// written.
func (q *Queue) addMany(ctx context.Context, o admitOptions, jobs []pushJob) (out []bool, errs []error, err error) {
	out = make([]bool, len(jobs))
	errs = make([]error, len(jobs))
	todo := q.c.chunks(jobs)
	enqueued := int64(0)
	defer func() { q.c.metrics.Add(Enqueued, q.Name(), enqueued) }()
	fail := func(u pushUnit, err error) {
		for i := u.lo; i < u.hi; i++ {
			errs[i] = err
		}
	}
	for attempt := 0; attempt < resendAttempts && len(todo) > 0; attempt++ {
		if attempt > 0 {
			if d := resendWait(attempt); (d > 0 && !pause(ctx, d)) || ctx.Err() != nil {
				break
			}
		}
		if err = q.c.ensure(ctx); err != nil {
			if !transient(err) && attempt == 0 {
				return nil, nil, err
			}
			for _, u := range todo {
				fail(u, err)
			}
			if !transient(err) || neverSent(err) {
				break
			}
			continue
		}
		var again []pushUnit
		for round := todo; len(round) > 0; {
			scripts := make([]*wire.Script, len(round))
			calls := make([]rueidis.LuaExec, len(round))
			for j, u := range round {
				call := q.addManyCall(o, jobs[u.lo:u.hi])
				scripts[j], calls[j] = wire.ScriptAddMany, call.LuaExec()
			}
			var split []pushUnit
			for j, r := range q.c.execScripts(ctx, scripts, calls) {
				u := round[j]
				rs, err := wire.DecodeAddMany(r)
				var got []Admitted
				var n int64
				if err == nil {
					got, n, err = admittedOf(rs, u.hi-u.lo)
				}
				switch {
				case err == nil:
					for k, a := range got {
						out[u.lo+k], errs[u.lo+k] = a.Enqueued, nil
					}
					enqueued += n
				case transient(err):
					fail(u, err)
					if !neverSent(err) {
						again = append(again, u)
					}
				case ctx.Err() != nil || u.hi-u.lo == 1:
					fail(u, err)
				default:
					for i := u.lo; i < u.hi; i++ {
						split = append(split, pushUnit{lo: i, hi: i + 1, single: true})
					}
				}
			}
			round = split
		}
		todo = again
	}
	for i, err := range errs {
		errs[i] = connectionError(err)
	}
	return out, errs, nil
}

// Retention says which completion records a queue keeps (echomq 2.4.0):
// at most Count of them, the oldest dropped first, and none older than Age
// (0: no age bound). The zero Retention keeps none — like BullMQ's
// removeOnComplete: true — and deletes a record an earlier completion of
// the same id kept.
type Retention struct {
	Count int
	Age   time.Duration
}

// Completion is what CompleteResult keeps and reports of a completion.
type Completion struct {
	// Result is the handler's result (at most 1 MiB; nil for none), kept
	// when Keep.Count is above 0 and read back by Get and Output.
	Result []byte
	// Keep is the queue's retention of completion records, applied by
	// this completion.
	Keep Retention
	// EventsMax bounds the queue's events stream (XADD MAXLEN ~); 0 writes
	// no completed event.
	EventsMax int
}

// check refuses a completion out of range before anything is sent.
func (c Completion) check() error {
	switch {
	case c.Keep.Count < 0 || c.Keep.Age < 0 || c.EventsMax < 0:
		return errorf("%w: negative keep %d, keep age %v or events max %d", ErrArgument, c.Keep.Count, c.Keep.Age, c.EventsMax)
	case len(c.Result) > maxResultBytes:
		return errorf("%w: a result of %d bytes, the most is %d", ErrArgument, len(c.Result), maxResultBytes)
	}
	return nil
}

// CompleteResult retires the active job id like CompleteClaimIDs, in one
// complete_result_claim_ids call (echomq 2.4.0): it deletes the job's
// failure record, progress report and retry policy, keeps a completion
// record (the server time, the attempt and c.Result) when c.Keep.Count is
// above 0, dropping the records c.Keep no longer allows, reports a
// completed event when c.EventsMax is above 0, counts the completion, and
// leases for lease those of next that are still pending (none: complete
// only). A stale token is refused with ErrStale and nothing is kept or
// leased. A malformed id, a lease under a millisecond or a completion out
// of range is refused with ErrID or ErrArgument before anything is sent.
func (q *Queue) CompleteResult(ctx context.Context, id ID, token int64, lease time.Duration, next []ID, c Completion) (_ []Job, err error) {
	defer q.c.afterFailure(ctx, &err)
	if err := positive("lease", lease); err != nil {
		return nil, err
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	row, err := q.keys.Row(id)
	if err != nil {
		return nil, err
	}
	rows, err := q.rowsOf(next)
	if err != nil {
		return nil, err
	}
	if err := q.c.ensure(ctx); err != nil {
		return nil, err
	}
	call := q.completeResultCall(row, id, token, lease, rows, next, c)
	rs, err := call.Exec(ctx, q.c.rc)
	if err != nil {
		return nil, err
	}
	q.c.metrics.Add(Completed, q.Name(), 1)
	jobs := make([]Job, len(rs))
	for i, r := range rs {
		jobs[i] = Job{ID: r.ID, Token: r.Token, Payload: []byte(r.Payload), Deadline: time.UnixMilli(r.DeadlineMS)}
	}
	q.c.metrics.Add(Claimed, q.Name(), int64(len(jobs)))
	return jobs, nil
}

// completeResultCall is the complete_rate_ids call of a completion
// (complete_result_claim_ids in either layout, whose next leases honour
// the queue's policies, its rate limit included).
func (q *Queue) completeResultCall(row string, id ID, token int64, lease time.Duration, rows []string, next []ID, c Completion) wire.CompleteRateIDsCall {
	k := q.keys
	return wire.CompleteRateIDsCall{Row: row, Active: k.Active, Running: k.Running, Policy: k.Policy, Starts: k.Starts, Pending: k.Pending, Wake: k.Wake, Results: k.Results, ResultTimes: k.ResultTimes,
		Progress: k.Progress, Failures: k.Failures, Options: k.Options, Events: k.Events, Counters: k.Counters, Rows: rows,
		ID: id, Token: token, LeaseMS: ms(lease), Result: rueidis.BinaryString(c.Result), Keep: int64(c.Keep.Count), KeepAgeMS: ms(c.Keep.Age),
		EventsMax: int64(c.EventsMax), IDs: next}
}

// FailOptions is the worker's side of a failed attempt's settlement
// (Queue.Fail): its policy, applied to a job that has none of its own.
type FailOptions struct {
	// MaxAttempts is the worker's attempts before burial; 0 never buries
	// by count. A job's own Attempts replace it.
	MaxAttempts int
	// Backoff is the worker's retry delay: BackoffFixed or
	// BackoffExponential. A job's own WithBackoff replaces it.
	Backoff BackoffPolicy
	// Jitter is a draw in 0..1000, made at random per failure: an
	// exponential delay d becomes d - (d/2)·Jitter/1000. A fixed one is
	// not spread.
	Jitter int
	// Bury buries the job whatever its attempts and policy: the failure is
	// final.
	Bury bool
	// EventsMax bounds the queue's events stream; 0 writes no event.
	EventsMax int
}

// Fail settles a failed attempt of an active job in one fail call (echomq
// 2.4.0): the attempt is recorded in the job's failure record as
// RetryFailed records it, then the job is retried at its run-at by its
// own policy when it has one (AddMany's Attempts and WithBackoff), else by
// o's, or buried when it is out of attempts or o.Bury is set; failed and
// retried or dead events are reported when o.EventsMax is above 0, and
// the attempt is counted. It returns the outcome, EventRetried or
// EventDead, and the run-at of the next attempt (zero when dead); the fail
// script rings the doorbell when the job is the schedule's earliest. A
// stale token is refused with ErrStale and nothing is recorded. A class
// outside the vocabulary, a backoff other than fixed or exponential, a
// jitter outside 0..1000 or a negative number is refused with ErrArgument
// before anything is sent.
func (q *Queue) Fail(ctx context.Context, id ID, token int64, f Failure, o FailOptions) (outcome Event, runAt time.Time, err error) {
	defer q.c.afterFailure(ctx, &err)
	if err := failureCheck(f); err != nil {
		return "", time.Time{}, err
	}
	if err := o.Backoff.check(true); err != nil {
		return "", time.Time{}, err
	}
	switch {
	case o.Jitter < 0 || o.Jitter > maxJitter:
		return "", time.Time{}, errorf("%w: jitter %d is outside 0..%d", ErrArgument, o.Jitter, maxJitter)
	case o.MaxAttempts < 0 || o.EventsMax < 0:
		return "", time.Time{}, errorf("%w: negative max attempts %d or events max %d", ErrArgument, o.MaxAttempts, o.EventsMax)
	}
	row, err := q.row(ctx, id)
	if err != nil {
		return "", time.Time{}, err
	}
	k := q.keys
	bury := int64(0)
	if o.Bury {
		bury = 1
	}
	call := wire.FailPolicyCall{Active: k.Active, Running: k.Running, Policy: k.Policy, Pending: k.Pending, Row: row, Schedule: k.Schedule, Dead: k.Dead, Wake: k.Wake, Failures: k.Failures, Options: k.Options,
		Events: k.Events, Counters: k.Counters, ID: id, Token: token, Class: f.Class, Worker: f.Worker, Error: f.Message,
		MaxAttempts: int64(o.MaxAttempts), Backoff: o.Backoff.kind(), BackoffMS: ms(o.Backoff.Delay), BackoffMaxMS: ms(o.Backoff.Max),
		Jitter: int64(o.Jitter), Bury: bury, EventsMax: int64(o.EventsMax)}
	r, err := call.Exec(ctx, q.c.rc)
	if err != nil {
		return "", time.Time{}, err
	}
	if r.RunAtMS > 0 {
		runAt = time.UnixMilli(r.RunAtMS)
	}
	return r.Outcome, runAt, nil
}

// ReapRecordedIDs takes back those of ids whose lease expired, as
// ReapFailedIDs does, in one reap_recorded_ids call (echomq 2.4.0): each
// is recorded as a lost lease (FailureClassLeaseLost), goes back to
// pending, or to dead when its attempts reached the job's own Attempts or,
// without those, maxAttempts above 0; failed and retried or dead events
// are reported when eventsMax is above 0, and each is counted. It returns
// how many moved. A negative maxAttempts or eventsMax, or a malformed id,
// is refused before anything is sent; no ids sends nothing.
func (q *Queue) ReapRecordedIDs(ctx context.Context, ids []ID, maxAttempts, eventsMax int) (_ int, err error) {
	defer q.c.afterFailure(ctx, &err)
	if maxAttempts < 0 || eventsMax < 0 {
		return 0, errorf("%w: max attempts %d, events max %d", ErrArgument, maxAttempts, eventsMax)
	}
	rows, err := q.rowsOf(ids)
	if err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, nil
	}
	if err := q.c.ensure(ctx); err != nil {
		return 0, err
	}
	k := q.keys
	call := wire.ReapPolicyIDsCall{Active: k.Active, Running: k.Running, Policy: k.Policy, Pending: k.Pending, Dead: k.Dead, Wake: k.Wake, Failures: k.Failures, Options: k.Options,
		Events: k.Events, Counters: k.Counters, Rows: rows, MaxAttempts: int64(maxAttempts), EventsMax: int64(eventsMax), IDs: ids}
	n, err := call.Exec(ctx, q.c.rc)
	return int(n), err
}

// reapRecordedHead reaps the expired leases among the first limit ids of
// the leased set (the active set, or the running set of a queue in the
// policy layout) with reap_policy_ids and returns how many moved and how
// many ids it read.
func (q *Queue) reapRecordedHead(ctx context.Context, limit, maxAttempts int, eventsMax int64) (moved, read int, err error) {
	members, err := q.doSet(ctx, SetActive, func(key string) rueidis.Completed { return q.headCmd(key, limit) }).AsStrSlice()
	if err != nil || len(members) == 0 {
		return 0, 0, err
	}
	k := q.keys
	call := wire.ReapPolicyIDsCall{Active: k.Active, Running: k.Running, Policy: k.Policy, Pending: k.Pending, Dead: k.Dead, Wake: k.Wake,
		Failures: k.Failures, Options: k.Options, Events: k.Events, Counters: k.Counters, Rows: q.rawRows(members),
		MaxAttempts: int64(maxAttempts), EventsMax: eventsMax}
	n, err := wire.DecodeReapPolicyIDs(wire.ScriptReapPolicyIDs.Lua().Exec(ctx, q.c.rc, call.Keys(), append(call.Args(), members...)))
	return int(n), len(members), err
}

// ReportProgress records the progress of an active job for its lease
// holder, the holder of token (echomq 2.4.0): it replaces the job's last
// report, which Get and Output read while the row exists, and reports a
// progress event when eventsMax is above 0. Anyone but the lease holder
// is refused with ErrStale and nothing is written. A report over 4096
// bytes, a negative eventsMax or a malformed id is refused before
// anything is sent. A handler reports its own job's progress with the
// package's ReportProgress.
func (q *Queue) ReportProgress(ctx context.Context, id ID, token int64, progress []byte, eventsMax int) (err error) {
	defer q.c.afterFailure(ctx, &err)
	if len(progress) > maxProgressBytes {
		return errorf("%w: a progress report of %d bytes, the most is %d", ErrArgument, len(progress), maxProgressBytes)
	}
	if eventsMax < 0 {
		return errorf("%w: negative events max %d", ErrArgument, eventsMax)
	}
	row, err := q.row(ctx, id)
	if err != nil {
		return err
	}
	call := wire.ProgressCall{Row: row, ProgressKey: q.keys.Progress, Events: q.keys.Events, ID: id, Token: token,
		Progress: rueidis.BinaryString(progress), EventsMax: int64(eventsMax)}
	_, err = call.Exec(ctx, q.c.rc)
	return err
}

// ReviveRecorded moves a dead job back to pending like Revive, in one
// revive_recorded call (echomq 2.4.0) that rings the queue's doorbell and
// reports a revived event when eventsMax is above 0. It reports false
// when the job is not dead. A negative eventsMax or a malformed id is
// refused before anything is sent. Revive runs it with the client's
// Options.EventsMax.
func (q *Queue) ReviveRecorded(ctx context.Context, id ID, eventsMax int) (_ bool, err error) {
	defer q.c.afterFailure(ctx, &err)
	if eventsMax < 0 {
		return false, errorf("%w: negative events max %d", ErrArgument, eventsMax)
	}
	row, err := q.row(ctx, id)
	if err != nil {
		return false, err
	}
	call := wire.ReviveRecordedCall{Dead: q.keys.Dead, Pending: q.keys.Pending, Row: row, Wake: q.keys.Wake, Events: q.keys.Events, ID: id, EventsMax: int64(eventsMax)}
	n, err := call.Exec(ctx, q.c.rc)
	return n == wire.ReviveRecordedRevived, err
}

// ForgetIDs deletes the failure records, progress reports and retry
// policies of those of ids whose rows are gone (a job completed or purged
// by a client that leaves them behind) in one forget_ids call (echomq
// 2.4.0), and returns how many records it deleted; a job whose row exists
// keeps them. A malformed id is refused before anything is sent; no ids
// sends nothing.
func (q *Queue) ForgetIDs(ctx context.Context, ids []ID) (_ int, err error) {
	defer q.c.afterFailure(ctx, &err)
	rows, err := q.rowsOf(ids)
	if err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, nil
	}
	if err := q.c.ensure(ctx); err != nil {
		return 0, err
	}
	call := wire.ForgetIDsCall{Failures: q.keys.Failures, Progress: q.keys.Progress, Options: q.keys.Options, Rows: rows, IDs: ids}
	n, err := call.Exec(ctx, q.c.rc)
	return int(n), err
}
