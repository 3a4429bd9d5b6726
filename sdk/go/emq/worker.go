package emq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// Handler processes one job. A nil error completes it. An error hands it
// back to run again after a backoff, until the job has been claimed
// MaxAttempts times (or the attempts the producer gave the job, Push with
// Attempts); then it is buried. An error wrapped with Permanent, or
// wrapping ErrPermanent, buries it at once. A panic is recovered and is a
// failure like an error. The handler may report its progress with
// ReportProgress(ctx, ...).
//
// ctx is cancelled when the job's lease is lost (another worker may be
// running it: stop, nothing the handler does can be completed; cause
// ErrLeaseLost), when the job is cancelled (echomq 2.5.0, Queue.CancelIDs
// by any client; cause ErrCancelled), and when a shutdown's deadline
// passes (cause ErrShutdown). context.Cause(ctx) tells which.
type Handler func(ctx context.Context, job Job) error

// ResultHandler is a Handler that returns a result when it completes its
// job (echomq 2.4.0): the bytes (at most 1 MiB; nil for none) are kept
// in the job's completion record as WorkerOptions.KeepResults says, and
// read back by Get and Output once the job is completed. NewResultWorker
// runs one.
type ResultHandler func(ctx context.Context, job Job) ([]byte, error)

// Permanent marks a handler error that no retry can fix: the job is buried
// at once instead of retried. The error matches ErrPermanent.
func Permanent(err error) error { return &permanentError{err: err} }

type permanentError struct{ err error }

func (e *permanentError) Error() string { return "permanent: " + e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// ErrLeaseLost is the cause of a handler's context when the job's lease
// was lost: its extension was refused with ErrStale.
var ErrLeaseLost = errors.New("emq: the job's lease was lost")

// ErrShutdown is the cause of a handler's context when a shutdown's
// deadline passed before the handler returned; its job was handed back.
var ErrShutdown = errors.New("emq: the worker shut down")

// ExponentialBackoff returns a backoff policy: base for the first attempt,
// doubling with each further attempt up to max, with jitter drawn from the
// upper half of the interval so that retries of a burst spread out.
func ExponentialBackoff(base, max time.Duration) func(attempt int64) time.Duration {
	return func(attempt int64) time.Duration {
		d := base
		for i := int64(1); i < attempt && d < max; i++ {
			d *= 2
		}
		d = min(d, max)
		if d < 2 {
			return d
		}
		return d/2 + time.Duration(mrand.Int64N(int64(d/2)+1))
	}
}

// WorkerOptions configure a Worker. Zero values take the defaults.
type WorkerOptions struct {
	// Concurrency is how many handlers run at once. Default 10.
	Concurrency int
	// Lease is how long a job is leased; the worker extends it every third
	// of it while the handler runs. Default 30s.
	Lease time.Duration
	// Batch is the most jobs claimed in one call when several handlers are
	// idle. Default Concurrency.
	Batch int
	// MaxAttempts is how many claims a job gets: a failure on the last one
	// buries it, and maintenance buries an expired lease that used it.
	// Default 25.
	MaxAttempts int64
	// Backoff is the delay before a failed job runs again, by the attempt
	// that failed (1 for the first). Default ExponentialBackoff(time.Second,
	// 10*time.Minute). The worker computes it and the server applies it as
	// a fixed delay, unless the job has a backoff of its own; BackoffPolicy,
	// when set, replaces it.
	Backoff func(attempt int64) time.Duration
	// BackoffPolicy is the worker's retry delay as the server applies it
	// (echomq 2.4.0): FixedBackoff or ExponentialPolicy, with the jitter of
	// an exponential one drawn per failure. It applies to jobs without a
	// backoff of their own (WithBackoff), and replaces Backoff. Default:
	// Backoff when set, else ExponentialPolicy(time.Second,
	// 10*time.Minute) — what the default Backoff computes.
	BackoffPolicy *BackoffPolicy
	// KeepResults is how many completion records (the result a
	// ResultHandler returned, the attempt and the time) the queue keeps,
	// and for how long (echomq 2.4.0). The default keeps none, like
	// BullMQ's removeOnComplete: true; Retention{Count: 1000} keeps the
	// last thousand.
	KeepResults Retention
	// EventsMax is the approximate bound of the queue's events stream that
	// this worker's settlements keep (echomq 2.4.0). Default 10000;
	// negative writes no event.
	EventsMax int
	// Wait is the longest an idle worker blocks on the queue's doorbell
	// before it looks for work anyway (jobs of 2.0.0 producers, or due
	// retries, ring no bell). Default 1s.
	Wait time.Duration
	// Maintenance is how often the queue is maintained: due scheduled jobs
	// promoted, expired leases reaped, the doorbell rung for them. Only one
	// worker of the queue does it at a time, under the maintenance lock.
	// Default 1s; negative turns it off for this worker.
	Maintenance time.Duration
	// ShutdownTimeout is how long Run waits, once its context is done, for
	// running handlers to return; then their jobs are handed back at once
	// and their contexts cancelled. Default 30s; negative hands back at
	// once.
	ShutdownTimeout time.Duration
	// JobTimeout bounds each run of the handler (echomq 2.3.0): the
	// handler's context gets this deadline, and a handler that returns
	// after it — with an error wrapping context.DeadlineExceeded from its
	// context, or any other outcome, nil included — failed by timeout: the
	// job is retried or buried like any failure, recorded with
	// FailureClassTimeout. Keep it below the job's useful life; the lease is
	// extended meanwhile as for any handler. Default 0: no deadline.
	JobTimeout time.Duration
	// WorkerName names this worker in the failure records of the jobs it
	// fails (echomq 2.3.0; the record keeps its first 128 bytes). Default
	// "<hostname>:<pid>".
	WorkerName string
	// Logger; default the client's.
	Logger *slog.Logger
	// Metrics; default the client's.
	Metrics Metrics
}

// Worker runs a handler over the jobs of one queue. Create it with
// NewWorker and run it with Run.
//
// Every script a Worker runs declares every key it touches (echomq
// 2.2.0): it reads the ids at the head of pending (a ZRANGE pipelined
// behind its claiming calls, so the steady state is one script call per
// job) and leases exactly those with claim_ids, or with
// complete_result_claim_ids as it completes a job (echomq 2.4.0: keeping
// the result as KeepResults says, reporting to the events stream and
// counting); a failure is settled by fail, by the job's own policy or the
// worker's; maintenance reads the heads of the schedule and the active set
// and runs promote_ids and reap_recorded_ids, and an idle worker promotes
// the schedule's earliest job itself at its run-at. An id another worker
// took in between is skipped. So a Redis Cluster slot split by a batched
// migration answers TRYAGAIN or ASK, which the client resends, instead of
// letting a script miss a row and lose its job, and an ACL user is checked
// on every row before a script runs.
//
// A Worker listens on its queue's cancel channel (echomq 2.5.0; sharded
// pub/sub, SSUBSCRIBE, on a cluster the node of the queue's slot) from
// before its first claim until Run returns, subscribing again after a
// reconnect: a job cancelled by any client while its handler runs has the
// handler's context cancelled at once with cause ErrCancelled, and is
// neither settled nor retried. Its maintenance also walks the queue's
// deduplication entries (sweep_dedup), so that a keep_last job parked
// behind a finished holder becomes due.
type Worker struct {
	q     *Queue
	h     ResultHandler
	opt   WorkerOptions
	log   *slog.Logger
	m     Metrics
	owner string

	pop   popper        // how jobs are leased and the queue maintained
	jobs  chan Job      // claimed jobs, to idle runners
	idle  chan struct{} // one token per idle runner
	slots []slot        // what each runner runs

	hard     context.Context // parent of handler contexts; cancelled after the shutdown deadline
	draining atomic.Bool
	started  atomic.Bool

	sweep       [3]uint64 // the orphan sweep's HSCAN cursors of the failures, options and progress hashes, kept across maintenance ticks
	dedupCursor string    // the sweep_dedup walk's cursor, kept across maintenance ticks
	cancels     cancels   // the cancellations heard on the queue's cancel channel

	backoff   func(attempt int64) BackoffPolicy // the worker's retry policy for an attempt that failed
	eventsMax int64                             // EventsMax, defaulted; 0: no events
}

type slot struct {
	cur atomic.Pointer[inflight]
}

// inflight is a job a handler is running.
type inflight struct {
	job        Job
	deadline   atomic.Int64 // lease deadline, Unix ms
	cancel     context.CancelCauseFunc
	lost       atomic.Bool // the lease was lost
	cancelled  atomic.Bool // the job was cancelled (echomq 2.5.0): its row is gone
	handedBack atomic.Bool // shutdown handed it back
}

// NewWorker makes a worker for q that runs h.
func NewWorker(q *Queue, h Handler, opt WorkerOptions) (*Worker, error) {
	if h == nil {
		return nil, errorf("%w: a worker needs a queue and a handler", ErrArgument)
	}
	return NewResultWorker(q, func(ctx context.Context, job Job) ([]byte, error) { return nil, h(ctx, job) }, opt)
}

// NewResultWorker makes a worker for q that runs h, keeping the results
// it returns as opt.KeepResults says (echomq 2.4.0).
func NewResultWorker(q *Queue, h ResultHandler, opt WorkerOptions) (*Worker, error) {
	if q == nil || h == nil {
		return nil, errorf("%w: a worker needs a queue and a handler", ErrArgument)
	}
	if opt.KeepResults.Count < 0 || opt.KeepResults.Age < 0 {
		return nil, errorf("%w: negative result retention %+v", ErrArgument, opt.KeepResults)
	}
	var backoff func(int64) BackoffPolicy
	switch {
	case opt.BackoffPolicy != nil:
		if err := opt.BackoffPolicy.check(true); err != nil {
			return nil, err
		}
		p := *opt.BackoffPolicy
		backoff = func(int64) BackoffPolicy { return p }
	case opt.Backoff != nil:
		f := opt.Backoff
		backoff = func(attempt int64) BackoffPolicy { return FixedBackoff(max(f(attempt), 0)) }
	default:
		p := ExponentialPolicy(time.Second, 10*time.Minute)
		backoff = func(int64) BackoffPolicy { return p }
	}
	if opt.Concurrency <= 0 {
		opt.Concurrency = 10
	}
	if opt.Lease == 0 {
		opt.Lease = 30 * time.Second
	}
	if err := positive("lease", opt.Lease); err != nil {
		return nil, err
	}
	if opt.Batch <= 0 {
		opt.Batch = opt.Concurrency
	}
	opt.Batch = min(opt.Batch, opt.Concurrency)
	if opt.MaxAttempts <= 0 {
		opt.MaxAttempts = 25
	}
	if opt.Backoff == nil {
		opt.Backoff = ExponentialBackoff(time.Second, 10*time.Minute)
	}
	if opt.Wait <= 0 {
		opt.Wait = time.Second
	}
	if opt.JobTimeout < 0 {
		return nil, errorf("%w: negative job timeout %v", ErrArgument, opt.JobTimeout)
	}
	if opt.WorkerName == "" {
		opt.WorkerName = defaultWorkerName()
	}
	if opt.Maintenance == 0 {
		opt.Maintenance = time.Second
	}
	switch {
	case opt.ShutdownTimeout == 0:
		opt.ShutdownTimeout = 30 * time.Second
	case opt.ShutdownTimeout < 0:
		opt.ShutdownTimeout = 0
	}
	w := &Worker{q: q, h: h, opt: opt, log: opt.Logger, m: opt.Metrics,
		jobs: make(chan Job), idle: make(chan struct{}, opt.Concurrency), slots: make([]slot, opt.Concurrency)}
	if w.log == nil {
		w.log = q.c.log
	}
	if w.m == nil {
		w.m = q.c.metrics
	}
	w.log = w.log.With("queue", q.Name())
	w.owner = fmt.Sprintf("%s/%s/%x", q.c.owner, q.Name(), mrand.Uint32())
	w.pop = newDeclaredPop(w)
	w.backoff, w.eventsMax = backoff, eventsMaxOf(opt.EventsMax)
	return w, nil
}

// opTimeout bounds each call a worker makes on its own behalf.
const opTimeout = 10 * time.Second

// Run claims and runs jobs until ctx is done, then shuts down gracefully:
// it stops claiming, lets running handlers finish (completing their jobs
// without claiming more) for up to ShutdownTimeout, then hands the jobs of
// handlers still running back to the queue at once — they run again
// elsewhere without waiting out their lease — and cancels their contexts.
// It returns nil after a clean shutdown. A Worker runs once.
func (w *Worker) Run(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return errorf("%w: a worker runs once", ErrArgument)
	}
	if err := w.q.c.ensure(ctx); err != nil {
		return err
	}
	hard, stopHandlers := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopHandlers(ErrShutdown)
	w.hard = hard

	var runners sync.WaitGroup
	for i := range w.slots {
		runners.Add(1)
		go func() {
			defer runners.Done()
			w.runner(i)
		}()
	}
	stopAux := make(chan struct{})
	var aux sync.WaitGroup
	lctx, stopListen := context.WithCancel(context.WithoutCancel(ctx))
	defer stopListen()
	subscribed := make(chan struct{})
	aux.Add(1)
	go func() {
		defer aux.Done()
		w.listenCancels(lctx, subscribed)
	}()
	select { // claim once the cancel channel is listened to, or a failure is logged
	case <-subscribed:
	case <-time.After(subscribeWait):
	case <-ctx.Done():
	}
	aux.Add(1)
	go func() {
		defer aux.Done()
		w.extender(stopAux)
	}()
	if w.opt.Maintenance > 0 {
		aux.Add(1)
		go func() {
			defer aux.Done()
			w.maintain(stopAux)
		}()
	}
	w.claimer(ctx) // returns when ctx is done

	w.draining.Store(true)
	close(w.jobs)
	done := make(chan struct{})
	go func() {
		runners.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(w.opt.ShutdownTimeout):
		w.handBack()
		stopHandlers(ErrShutdown)
		select {
		case <-done:
		case <-time.After(time.Second):
			w.log.Warn("emq: handlers still running after the shutdown deadline; their jobs were handed back")
		}
	}
	close(stopAux)
	stopListen()
	aux.Wait()
	return nil
}

// subscribeWait bounds how long Run waits for its subscription to the
// cancel channel before it claims anyway.
const subscribeWait = 2 * time.Second

// runner runs the jobs sent to it, and the jobs each completion claims
// next, until the worker drains.
func (w *Worker) runner(i int) {
	for {
		w.idle <- struct{}{}
		job, ok := <-w.jobs
		if !ok {
			return
		}
		for ok {
			job, ok = w.process(i, job)
		}
	}
}

// claimer leases jobs for idle runners until ctx is done, blocking on the
// doorbell when the queue is empty.
func (w *Worker) claimer(ctx context.Context) {
	pause := 50 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.idle:
		}
		n := 1
	more:
		for n < w.opt.Batch {
			select {
			case <-w.idle:
				n++
			default:
				break more
			}
		}
		// The claim itself is not cancelled with ctx: a lease the server
		// granted must reach a runner, or it would sit out its lease.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
		jobs, admit, err := w.claim(cctx, n)
		cancel()
		for _, j := range jobs {
			w.jobs <- j
		}
		for k := len(jobs); k < n; k++ {
			w.idle <- struct{}{}
		}
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, ErrPolicy):
			// The queue's tripwire names a later minor to claim (a policy
			// this client cannot honour): the worker leases nothing there
			// and keeps settling the jobs it holds, asking again after a
			// growing pause, until the policy is lifted or it is stopped.
			w.log.Warn("emq: the queue's policy needs a later client to claim; retrying", "queue", w.q.Name(), "err", err, "in", pause)
			sleep(ctx, pause)
			pause = min(pause*2, 5*time.Second)
		case err != nil:
			w.log.Warn("emq: claiming failed; retrying", "err", err, "in", pause)
			sleep(ctx, pause)
			pause = min(pause*2, 5*time.Second)
		case len(jobs) == 0:
			pause = 50 * time.Millisecond
			w.waitBell(ctx, admit)
		default:
			pause = 50 * time.Millisecond
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// claim leases up to n jobs; admit is how long until the queue's rate
// limit admits a start when it held the claim back.
func (w *Worker) claim(ctx context.Context, n int) ([]Job, time.Duration, error) {
	return w.pop.claim(ctx, n)
}

// records decodes a reply of leased jobs one record at a time: a record
// that cannot be decoded (an id a foreign writer planted) is buried, not
// left to stall the queue.
func (w *Worker) records(ctx context.Context, r rueidis.RedisResult, script string, dec func([]rueidis.RedisMessage) (Job, error)) ([]Job, error) {
	items, err := r.ToArray()
	if err != nil {
		return nil, wire.ScriptError(script, err)
	}
	jobs := make([]Job, 0, len(items))
	for i := range items {
		arr, err := items[i].ToArray()
		if err != nil {
			return jobs, errorf("emq: %s: record %d: %w", script, i, err)
		}
		job, err := dec(arr)
		if err != nil {
			w.buryRaw(ctx, arr, err)
			continue
		}
		jobs = append(jobs, job)
	}
	w.m.Add(Claimed, w.q.Name(), int64(len(jobs)))
	return jobs, nil
}

// buryRaw buries a leased record whose id does not parse, addressing it by
// the raw member the script returned.
func (w *Worker) buryRaw(ctx context.Context, arr []rueidis.RedisMessage, why error) {
	if len(arr) < 2 {
		w.log.Error("emq: a leased record cannot be read; it will be reaped", "err", why)
		return
	}
	raw, err1 := arr[0].ToString()
	token, err2 := arr[1].AsInt64()
	if err1 != nil || err2 != nil {
		w.log.Error("emq: a leased record cannot be read; it will be reaped", "err", why)
		return
	}
	// rawCall is s's call with the raw id in its id and row slots.
	rawCall := func(s *wire.Script, args []string) rueidis.RedisResult {
		keys := make([]string, len(s.Keys))
		for i, kt := range s.KeyTypes {
			if k, ok := w.q.keys.Key(kt); ok {
				keys[i] = k
			} else {
				keys[i] = w.q.keys.RowPrefix() + raw
			}
		}
		for i, at := range s.ArgTypes {
			if at == "id" {
				args[i] = raw
			}
		}
		return s.Lua().Exec(ctx, w.q.c.rc, keys, args)
	}
	bury := wire.BuryPolicyCall{Token: token}
	_, err := wire.DecodeBuryPolicy(rawCall(wire.ScriptBuryPolicy, bury.Args()))
	if err != nil {
		w.log.Error("emq: burying an undecodable job failed", "id", raw, "err", err)
		return
	}
	w.m.Add(Buried, w.q.Name(), 1)
	w.log.Error("emq: buried a job that cannot be decoded", "id", raw, "err", why)
}

// process runs one job and settles it; it returns the next job when the
// completion leased one.
func (w *Worker) process(i int, job Job) (Job, bool) {
	fl := &inflight{job: job}
	fl.deadline.Store(job.Deadline.UnixMilli())
	hctx, cancel := context.WithCancelCause(w.hard)
	fl.cancel = cancel
	hctx = context.WithValue(hctx, runningKey{}, &running{w: w, job: job})
	w.slots[i].cur.Store(fl)
	var class FailureClass
	var result []byte
	var err error
	if w.opt.JobTimeout > 0 {
		class, result, err = w.callTimed(hctx, job)
	} else {
		class, result, err = w.call(hctx, job)
	}
	if w.opt.KeepResults.Count == 0 {
		result = nil // kept nowhere: not sent
	}
	if err == nil && len(result) > maxResultBytes {
		class, err = FailureClassError, errorf("emq: the handler's result of %d bytes is over %d", len(result), maxResultBytes)
	}
	w.slots[i].cur.Store(nil)
	cancel(nil)
	if fl.handedBack.Load() {
		return Job{}, false
	}
	if fl.cancelled.Load() {
		w.settledCancelled(job, "settle")
		return Job{}, false
	}
	ctx, done := context.WithTimeout(context.Background(), opTimeout)
	defer done()
	if err != nil {
		w.fail(ctx, job, err, class)
		return Job{}, false
	}
	count := 1
	if w.draining.Load() {
		count = 0
	}
	next, err := w.pop.completeClaim(ctx, job, count, result)
	switch {
	case errors.Is(err, ErrStale) && w.cancels.has(job):
		w.settledCancelled(job, "complete")
		return Job{}, false
	case errors.Is(err, ErrStale):
		w.stale(job, "complete", err)
		return Job{}, false
	case err != nil && len(next) == 0:
		w.log.Error("emq: completing a job failed; its lease will be reaped and it runs again", "id", job.ID, "err", err)
		return Job{}, false
	}
	w.m.Add(Completed, w.q.Name(), 1)
	if len(next) == 0 {
		return Job{}, false
	}
	return next[0], true
}

// call runs the handler, turning a panic into an error; the class says
// how a failure failed: FailureClassError for a returned error,
// FailureClassPanic for a recovered panic.
func (w *Worker) call(ctx context.Context, job Job) (class FailureClass, result []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			w.m.Add(Panicked, w.q.Name(), 1)
			w.log.Error("emq: the handler panicked", "id", job.ID, "panic", p, "stack", string(debug.Stack()))
			class, result, err = FailureClassPanic, nil, errorf("emq: handler panic: %v", p)
		}
	}()
	result, err = w.h(ctx, job)
	return FailureClassError, result, err
}

// errJobTimeout is the cause of a handler's context when JobTimeout
// elapsed.
var errJobTimeout = errors.New("emq: the job ran past the worker's job timeout")

// callTimed runs the handler under JobTimeout: a handler that returns
// after its deadline failed by timeout, whatever it returned.
func (w *Worker) callTimed(ctx context.Context, job Job) (FailureClass, []byte, error) {
	tctx, cancel := context.WithTimeoutCause(ctx, w.opt.JobTimeout, errJobTimeout)
	defer cancel()
	class, result, err := w.call(tctx, job)
	if tctx.Err() == nil || !errors.Is(context.Cause(tctx), errJobTimeout) {
		return class, result, err
	}
	if err == nil {
		err = errorf("emq: the handler returned after its job timeout of %v", w.opt.JobTimeout)
	} else {
		err = errorf("emq: the handler ran past its job timeout of %v: %w", w.opt.JobTimeout, err)
	}
	return FailureClassTimeout, nil, err
}

// defaultWorkerName is "<hostname>:<pid>".
func defaultWorkerName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}

// fail settles a failed attempt with the fail script: the job is retried
// after its backoff (its own policy, else the worker's, with a fresh
// jitter draw), or buried when it is out of attempts (its own, else
// MaxAttempts) or failed permanently (ErrPermanent); the attempt is
// recorded with class, the worker's name and the error's text in the
// job's failure record. A retry due sooner than the next look at the
// schedule is promoted by an idle claimer (waitBell): the script rings
// the doorbell when the job is the schedule's earliest.
func (w *Worker) fail(ctx context.Context, job Job, why error, class FailureClass) {
	f := Failure{Class: class, Worker: w.opt.WorkerName, Message: why.Error()}
	o := FailOptions{MaxAttempts: int(w.opt.MaxAttempts), Jitter: mrand.IntN(maxJitter + 1), Bury: errors.Is(why, ErrPermanent), EventsMax: int(w.eventsMax)}
	if o.Bury {
		o.Backoff = FixedBackoff(0) // buried whatever the policy says
	} else {
		o.Backoff = w.backoff(job.Token)
	}
	outcome, runAt, err := w.q.Fail(ctx, job.ID, job.Token, f, o)
	if err != nil {
		w.settleError(job, "fail", err)
		return
	}
	if outcome == EventDead {
		w.m.Add(Buried, w.q.Name(), 1)
		w.log.Warn("emq: job buried", "id", job.ID, "attempt", job.Token, "class", string(class), "err", why)
		return
	}
	w.m.Add(Retried, w.q.Name(), 1)
	w.log.Info("emq: job failed; it runs again", "id", job.ID, "attempt", job.Token, "class", string(class), "at", runAt, "err", why)
}

func (w *Worker) settleError(job Job, op string, err error) {
	if errors.Is(err, ErrStale) && w.cancels.has(job) {
		w.settledCancelled(job, op)
		return
	}
	if errors.Is(err, ErrStale) {
		w.stale(job, op, err)
		return
	}
	w.log.Error("emq: settling a job failed; its lease will be reaped and it runs again", "op", op, "id", job.ID, "err", err)
}

// stale counts a transition refused because the lease was lost: another
// claim took the job, which runs (or ran) there. It is the normal outcome
// of a handler slower than its lease, not an alarm.
func (w *Worker) stale(job Job, op string, err error) {
	w.m.Add(Stale, w.q.Name(), 1)
	w.log.Info("emq: the job's lease was lost before its "+op+"; the holder of the new lease settles it", "id", job.ID, "token", job.Token, "err", err)
}

// extender extends the leases of running jobs, every third of the lease,
// in one pipelined round trip; a refused extension cancels the handler.
func (w *Worker) extender(stop <-chan struct{}) {
	every := w.opt.Lease / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		now := time.Now().UnixMilli()
		var due []*inflight
		var execs []rueidis.LuaExec
		for i := range w.slots {
			fl := w.slots[i].cur.Load()
			if fl == nil || fl.lost.Load() || fl.cancelled.Load() || fl.handedBack.Load() || fl.deadline.Load()-now > (w.opt.Lease-every).Milliseconds() {
				continue
			}
			row, _ := w.q.keys.Row(fl.job.ID)
			call := wire.ExtendPolicyCall{Active: w.q.keys.Active, Running: w.q.keys.Running, Row: row, ID: fl.job.ID, Token: fl.job.Token, LeaseMS: ms(w.opt.Lease)}
			due, execs = append(due, fl), append(execs, call.LuaExec())
		}
		if len(due) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), every)
		for i, r := range w.q.c.execMany(ctx, wire.ScriptExtendPolicy, execs) {
			deadline, err := wire.DecodeExtendPolicy(r)
			switch {
			case err == nil:
				due[i].deadline.Store(deadline)
			case errors.Is(err, ErrStale) && (due[i].cancelled.Load() || w.cancels.has(due[i].job)):
				due[i].cancelled.Store(true)
				due[i].cancel(ErrCancelled)
			case errors.Is(err, ErrStale):
				due[i].lost.Store(true)
				due[i].cancel(ErrLeaseLost)
				w.stale(due[i].job, "extend", err)
			default:
				w.log.Warn("emq: extending a lease failed; retrying", "id", due[i].job.ID, "err", err)
			}
		}
		cancel()
	}
}

// handBack gives the jobs of handlers still running back to the queue at
// once: they are retried with no delay and promoted.
func (w *Worker) handBack() {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	n := 0
	for i := range w.slots {
		fl := w.slots[i].cur.Load()
		if fl == nil || fl.lost.Load() || !fl.handedBack.CompareAndSwap(false, true) {
			continue
		}
		if _, err := w.q.Retry(ctx, fl.job.ID, fl.job.Token, 0); err != nil {
			w.settleError(fl.job, "hand-back", err)
			continue
		}
		w.m.Add(HandedBack, w.q.Name(), 1)
		n++
	}
	if n > 0 {
		w.log.Warn("emq: handlers overran the shutdown deadline; their jobs were handed back", "jobs", n)
		w.promote(ctx)
	}
}

// maintain promotes due jobs and reaps expired leases every Maintenance,
// while this worker holds the queue's maintenance lock, so that one worker
// per queue does it (on a queue with a policy it reaps without the lock
// too); and every tick, lock or not, it sweeps a slice of the queue's
// orphaned failure records (sweepOrphans).
func (w *Worker) maintain(stop <-chan struct{}) {
	every := w.opt.Maintenance
	name := wire.LockMaintenance(w.q.Name())
	t := time.NewTicker(every)
	defer t.Stop()
	held := false
	for {
		select {
		case <-stop:
			if held {
				ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
				call := wire.UnlockCall{Locks: wire.KeyLocks, Name: name, Owner: w.owner}
				_, _ = call.Exec(ctx, w.q.c.rc)
				cancel()
			}
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), every+opTimeout)
		call := wire.LockCall{Locks: wire.KeyLocks, Name: name, Owner: w.owner, TTLMS: (3 * every).Milliseconds()}
		d, err := call.Exec(ctx, w.q.c.rc)
		held = err == nil && d != wire.LockHeld
		switch {
		case held:
			w.promote(ctx)
			w.reap(ctx)
		case err != nil:
			w.log.Warn("emq: taking the maintenance lock failed", "err", err)
		case w.q.c.tripped(ctx, w.q.keys):
			// Under a queue's policy the lock's holder may be a worker
			// older than 2.7, whose reaps fail on the tripwire while it
			// renews the lock: every 2.7 worker reaps then, lock or not
			// (reap_policy_ids takes back only leases still expired, so
			// reapers side by side are safe), lest expired leases fill a
			// capped queue until the policy is cleared.
			w.reap(ctx)
		}
		// Every worker sweeps, whoever holds the lock: a 2.2 worker
		// holding it never sweeps, and the orphans are its clients'.
		w.sweepOrphans(ctx)
		w.sweepDedup(ctx)
		cancel()
	}
}

const maintenanceBatch = 1000

// promote moves due scheduled jobs to pending; the script rings the
// doorbell for them.
func (w *Worker) promote(ctx context.Context) {
	n, err := w.pop.promote(ctx)
	if err != nil {
		w.log.Warn("emq: promoting due jobs failed", "err", err)
	}
	if n > 0 {
		w.m.Add(Promoted, w.q.Name(), int64(n))
	}
}

// reap takes back expired leases; the script rings the doorbell for those
// back in pending.
func (w *Worker) reap(ctx context.Context) {
	n, err := w.pop.reap(ctx)
	if err != nil {
		w.log.Warn("emq: reaping expired leases failed", "err", err)
	}
	if n > 0 {
		w.m.Add(Reaped, w.q.Name(), int64(n))
		w.log.Info("emq: expired leases taken back", "jobs", n)
	}
}
