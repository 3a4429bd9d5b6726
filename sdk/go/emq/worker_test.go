package emq_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// workerEnv is a client with a tally, a queue and a way to run workers
// that stop with the test.
type workerEnv struct {
	t     *testing.T
	srv   *redistest.Server
	c     *emq.Client
	q     *emq.Queue
	tally *emq.Tally
	log   *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newWorkerEnv(t *testing.T, srvOpts ...redistest.Option) *workerEnv {
	t.Helper()
	e := &workerEnv{t: t, srv: redistest.Start(t, srvOpts...), tally: &emq.Tally{}, log: &syncBuffer{}}
	opt := options(e.srv)
	opt.Metrics = e.tally
	opt.Logger = slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, err := emq.Connect(ctxT(t), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	e.c = c
	e.q = queue(t, c, "work")
	return e
}

// run starts a worker; the returned stop cancels it and waits for Run.
func (e *workerEnv) run(h emq.Handler, opt emq.WorkerOptions) (stop func() time.Duration) {
	e.t.Helper()
	w, err := emq.NewWorker(e.q, h, opt)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	var took time.Duration
	stop = func() time.Duration {
		once.Do(func() {
			start := time.Now()
			cancel()
			select {
			case err := <-done:
				if err != nil {
					e.t.Errorf("Run: %v", err)
				}
			case <-time.After(30 * time.Second):
				e.t.Error("Run did not return within 30s of its context's end")
			}
			took = time.Since(start)
		})
		return took
	}
	e.t.Cleanup(func() { stop() })
	return stop
}

func (e *workerEnv) push(n int) []emq.ID {
	e.t.Helper()
	jobs := make([]emq.NewJob, n)
	ids := make([]emq.ID, n)
	for i := range jobs {
		ids[i] = mint(e.t, e.c, emq.WorkKind)
		jobs[i] = emq.NewJob{ID: ids[i], Payload: []byte(strconv.Itoa(i))}
	}
	oks, err := e.q.PushBatch(ctxT(e.t), jobs)
	if err != nil {
		e.t.Fatal(err)
	}
	for i, ok := range oks {
		if !ok {
			e.t.Fatalf("job %d was a duplicate", i)
		}
	}
	return ids
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (e *workerEnv) sizes() map[emq.Set]int64 {
	e.t.Helper()
	m, err := e.q.Sizes(ctxT(e.t))
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

func (e *workerEnv) empty() bool {
	for _, n := range e.sizes() {
		if n != 0 {
			return false
		}
	}
	return true
}

// Every job pushed runs exactly once and is completed; nothing remains.
func TestWorkerRunsEveryJobOnce(t *testing.T) {
	e := newWorkerEnv(t)
	const n = 500
	ids := e.push(n)
	var mu sync.Mutex
	seen := map[emq.ID]int{}
	stop := e.run(func(ctx context.Context, j emq.Job) error {
		mu.Lock()
		seen[j.ID]++
		mu.Unlock()
		return nil
	}, emq.WorkerOptions{Concurrency: 8, Batch: 4})
	eventually(t, 20*time.Second, "all jobs completed", func() bool { return e.tally.Get(emq.Completed) == n })
	stop()
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("job %s ran %d times", id, seen[id])
		}
	}
	if !e.empty() {
		t.Errorf("sets after the run: %v", e.sizes())
	}
	if got := e.tally.Get(emq.Claimed); got != n {
		t.Errorf("claimed %d, want %d", got, n)
	}
	if e.tally.Get(emq.Enqueued) != n || e.tally.Get(emq.Stale) != 0 || e.tally.Get(emq.Retried) != 0 {
		t.Errorf("counters: %v", e.tally.Snapshot())
	}
}

// An idle worker blocks on the doorbell: a pushed job starts long before
// the doorbell wait (30s here) would have ended, with no polling.
func TestWorkerWakesOnPush(t *testing.T) {
	e := newWorkerEnv(t)
	started := make(chan time.Time, 10)
	e.run(func(ctx context.Context, j emq.Job) error {
		started <- time.Now()
		return nil
	}, emq.WorkerOptions{Concurrency: 2, Wait: 30 * time.Second})
	time.Sleep(300 * time.Millisecond) // the worker is blocked on the doorbell by now
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		e.push(1)
		select {
		case s := <-started:
			t.Logf("push -> handler start: %v", s.Sub(t0))
		case <-time.After(10 * time.Second):
			t.Fatal("a pushed job did not start within 10s; the doorbell wait is 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A 2.0.0 producer rings no doorbell; the worker finds its jobs when its
// bounded wait ends.
func TestWorkerFindsJobsOfOldProducers(t *testing.T) {
	e := newWorkerEnv(t)
	done := make(chan emq.ID, 1)
	e.run(func(ctx context.Context, j emq.Job) error {
		done <- j.ID
		return nil
	}, emq.WorkerOptions{Concurrency: 1, Wait: 100 * time.Millisecond})
	time.Sleep(200 * time.Millisecond)
	id := mint(t, e.c, emq.WorkKind)
	if _, err := e.q.Enqueue(ctxT(t), id, []byte("old")); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-done:
		if got != id {
			t.Fatalf("ran %s, want %s", got, id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a job enqueued by the 2.0.0 script never ran")
	}
}

// A failing job runs again after its backoff and completes; one out of
// attempts is buried; a permanent failure is buried at once; a panic is a
// failure.
func TestWorkerFailures(t *testing.T) {
	e := newWorkerEnv(t)
	flaky, doomed, perm, panicky := mint(t, e.c, emq.WorkKind), mint(t, e.c, emq.WorkKind), mint(t, e.c, emq.WorkKind), mint(t, e.c, emq.WorkKind)
	var mu sync.Mutex
	attempts := map[emq.ID][]int64{}
	var backoffs atomic.Int64
	e.run(func(ctx context.Context, j emq.Job) error {
		mu.Lock()
		attempts[j.ID] = append(attempts[j.ID], j.Token)
		mu.Unlock()
		switch j.ID {
		case flaky:
			if j.Token < 3 {
				return errors.New("not yet")
			}
			return nil
		case doomed:
			return errors.New("never")
		case perm:
			return emq.Permanent(errors.New("bad payload"))
		case panicky:
			if j.Token == 1 {
				panic("boom")
			}
			return nil
		}
		return nil
	}, emq.WorkerOptions{Concurrency: 4, MaxAttempts: 4, Maintenance: 20 * time.Millisecond, Wait: 50 * time.Millisecond,
		Backoff: func(a int64) time.Duration { backoffs.Add(1); return time.Duration(a) * time.Millisecond }})
	for _, id := range []emq.ID{flaky, doomed, perm, panicky} {
		if _, err := e.q.Push(ctxT(t), id, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 20*time.Second, "flaky and panicky completed, doomed and perm buried", func() bool {
		s := e.sizes()
		return e.tally.Get(emq.Completed) == 2 && s[emq.SetDead] == 2 && s[emq.SetPending]+s[emq.SetActive]+s[emq.SetSchedule] == 0
	})
	mu.Lock()
	defer mu.Unlock()
	want := map[emq.ID][]int64{flaky: {1, 2, 3}, doomed: {1, 2, 3, 4}, perm: {1}, panicky: {1, 2}}
	for id, w := range want {
		if fmt.Sprint(attempts[id]) != fmt.Sprint(w) {
			t.Errorf("%s ran with tokens %v, want %v", id, attempts[id], w)
		}
	}
	dead, _ := e.q.Browse(ctxT(t), emq.SetDead, 10)
	if len(dead) != 2 || !(dead[0] == doomed || dead[1] == doomed) || !(dead[0] == perm || dead[1] == perm) {
		t.Errorf("dead = %v, want doomed and perm", dead)
	}
	// Backoff is asked for every failure that is not permanent (2.4.0):
	// the server decides whether it retries, as a job may have attempts of
	// its own beyond MaxAttempts; doomed's last failure asks too.
	if e.tally.Get(emq.Panicked) != 1 || e.tally.Get(emq.Buried) != 2 || e.tally.Get(emq.Retried) != 2+3+1 || backoffs.Load() != 7 {
		t.Errorf("counters %v, backoffs %d", e.tally.Snapshot(), backoffs.Load())
	}
}

// A handler that runs past its lease keeps the job: the worker extends the
// lease, and the maintenance of another worker does not reap it.
func TestWorkerExtendsLeases(t *testing.T) {
	e := newWorkerEnv(t)
	id := e.push(1)[0]
	var runs atomic.Int32
	e.run(func(ctx context.Context, j emq.Job) error {
		runs.Add(1)
		select {
		case <-time.After(1500 * time.Millisecond): // five leases
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}, emq.WorkerOptions{Concurrency: 1, Lease: 300 * time.Millisecond, Maintenance: 50 * time.Millisecond})
	eventually(t, 10*time.Second, "the slow job completed", func() bool { return e.tally.Get(emq.Completed) == 1 })
	if runs.Load() != 1 || e.tally.Get(emq.Reaped) != 0 || e.tally.Get(emq.Stale) != 0 {
		t.Errorf("the slow job %s ran %d times; counters %v", id, runs.Load(), e.tally.Snapshot())
	}
}

// When the lease is lost (another claim took the job), the handler's
// context is cancelled with ErrLeaseLost, and the late completion is
// refused, counted as stale and logged calmly.
func TestWorkerLostLease(t *testing.T) {
	e := newWorkerEnv(t)
	id := e.push(1)[0]
	row, _ := e.q.Keys().Row(id)
	cause := make(chan error, 1)
	inHandler := make(chan struct{})
	e.run(func(ctx context.Context, j emq.Job) error {
		close(inHandler)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return nil // the handler claims success; the completion must be refused
	}, emq.WorkerOptions{Concurrency: 1, Lease: 300 * time.Millisecond, Maintenance: -1})
	<-inHandler
	// Another claim took the job: its token moved on.
	if err := do(t, e.c, "HINCRBY", row, wire.FieldToken, "1").Error(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-cause:
		if !errors.Is(err, emq.ErrLeaseLost) {
			t.Fatalf("the handler's context ended with %v, want ErrLeaseLost", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the lost lease never cancelled the handler")
	}
	eventually(t, 5*time.Second, "stale counted", func() bool { return e.tally.Get(emq.Stale) >= 1 })
	if e.tally.Get(emq.Completed) != 0 {
		t.Errorf("a stale completion was counted as completed: %v", e.tally.Snapshot())
	}
	if m := hgetall(t, e.c, row); m[wire.FieldState] != string(emq.StateActive) {
		t.Errorf("the row of the new lease holder was changed: %v", m)
	}
}

// Shutdown stops claiming, lets a running handler finish and completes its
// job, then Run returns.
func TestWorkerGracefulShutdown(t *testing.T) {
	e := newWorkerEnv(t)
	e.push(1)
	release := make(chan struct{})
	in := make(chan struct{}, 1)
	stop := e.run(func(ctx context.Context, j emq.Job) error {
		in <- struct{}{}
		<-release
		return nil
	}, emq.WorkerOptions{Concurrency: 2, ShutdownTimeout: 20 * time.Second})
	<-in
	e.push(1) // must not be claimed after the shutdown begins
	stopped := make(chan time.Duration)
	go func() { stopped <- stop() }()
	time.Sleep(200 * time.Millisecond)
	close(release)
	select {
	case <-stopped:
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after the running handler finished")
	}
	s := e.sizes()
	if e.tally.Get(emq.Completed) < 1 || s[emq.SetActive] != 0 {
		t.Errorf("after shutdown: counters %v, sets %v", e.tally.Snapshot(), s)
	}
	if e.tally.Get(emq.Completed)+s[emq.SetPending] != 2 {
		t.Errorf("the second job was lost: completed %d, pending %d", e.tally.Get(emq.Completed), s[emq.SetPending])
	}
}

// A handler that overruns the shutdown deadline has its job handed back at
// once — pending again, not waiting out a minute's lease — and its context
// cancelled with ErrShutdown.
func TestWorkerHandsBackAtDeadline(t *testing.T) {
	e := newWorkerEnv(t)
	id := e.push(1)[0]
	in := make(chan struct{})
	cause := make(chan error, 1)
	stop := e.run(func(ctx context.Context, j emq.Job) error {
		close(in)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return ctx.Err()
	}, emq.WorkerOptions{Concurrency: 1, Lease: time.Minute, ShutdownTimeout: 200 * time.Millisecond})
	<-in
	if took := stop(); took > 10*time.Second {
		t.Errorf("Run took %v to return", took)
	}
	if err := <-cause; !errors.Is(err, emq.ErrShutdown) {
		t.Errorf("the overrunning handler's context ended with %v", err)
	}
	pending, _ := e.q.Browse(ctxT(t), emq.SetPending, 10)
	if len(pending) != 1 || pending[0] != id {
		t.Fatalf("pending = %v after the hand-back, want %s (sets %v)", pending, id, e.sizes())
	}
	row, _ := e.q.Keys().Row(id)
	if m := hgetall(t, e.c, row); m[wire.FieldState] != string(emq.StatePending) {
		t.Errorf("handed-back row = %v", m)
	}
}

// A row planted with an id the SDK cannot decode is buried, and the queue
// keeps flowing.
func TestWorkerBuriesUndecodableJobs(t *testing.T) {
	e := newWorkerEnv(t)
	bad := "JOB!!!notanid!"
	row := e.q.Keys().RowPrefix() + bad
	for _, cmd := range [][]string{
		{"HSET", row, wire.FieldState, string(emq.StatePending), wire.FieldToken, "0", wire.FieldPayload, "x"},
		{"ZADD", e.q.Keys().Pending, "0", bad},
	} {
		if err := do(t, e.c, cmd...).Error(); err != nil {
			t.Fatal(err)
		}
	}
	e.push(20)
	e.run(func(ctx context.Context, j emq.Job) error { return nil }, emq.WorkerOptions{Concurrency: 4})
	eventually(t, 10*time.Second, "the good jobs completed", func() bool { return e.tally.Get(emq.Completed) == 20 })
	dead, err := do(t, e.c, "ZRANGE", e.q.Keys().Dead, "0", "-1").AsStrSlice()
	if err != nil || len(dead) != 1 || dead[0] != bad {
		t.Errorf("dead = %v, %v; want the planted id", dead, err)
	}
	if e.tally.Get(emq.Buried) != 1 {
		t.Errorf("counters %v", e.tally.Snapshot())
	}
}

// Maintenance promotes due retries and reaps expired leases, under the
// queue's maintenance lock: with two workers, one holds it.
func TestWorkerMaintenance(t *testing.T) {
	e := newWorkerEnv(t)
	// An expired lease left by a crashed worker.
	id := e.push(1)[0]
	if _, ok, err := e.q.Claim(ctxT(t), 50*time.Millisecond); err != nil || !ok {
		t.Fatal(ok, err)
	}
	// A scheduled job due now.
	at := mint(t, e.c, emq.WorkKind)
	if _, err := e.q.EnqueueAt(ctxT(t), at, []byte("x"), time.Now()); err != nil {
		t.Fatal(err)
	}
	var ran sync.Map
	h := func(ctx context.Context, j emq.Job) error { ran.Store(j.ID, j.Token); return nil }
	e.run(h, emq.WorkerOptions{Concurrency: 2, Maintenance: 30 * time.Millisecond, Wait: 50 * time.Millisecond})
	e.run(h, emq.WorkerOptions{Concurrency: 2, Maintenance: 30 * time.Millisecond, Wait: 50 * time.Millisecond})
	eventually(t, 10*time.Second, "the reaped and the promoted job ran", func() bool {
		_, a := ran.Load(id)
		_, b := ran.Load(at)
		return a && b
	})
	if tok, _ := ran.Load(id); tok.(int64) != 2 {
		t.Errorf("the reaped job ran with token %v, want 2", tok)
	}
	if e.tally.Get(emq.Reaped) != 1 || e.tally.Get(emq.Promoted) != 1 {
		t.Errorf("counters %v", e.tally.Snapshot())
	}
	holders, err := do(t, e.c, "HGET", wire.KeyLocks, wire.LockMaintenance(e.q.Name())).ToString()
	if err != nil || holders == "" {
		t.Errorf("nobody holds the maintenance lock: %q %v", holders, err)
	}
}

// Connect warns when the server may evict job keys.
func TestEvictionPolicyWarning(t *testing.T) {
	e := newWorkerEnv(t, redistest.WithArgs("--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"))
	if !bytes.Contains([]byte(e.log.String()), []byte("maxmemory-policy=allkeys-lru")) {
		t.Errorf("no eviction warning in the log:\n%s", e.log.String())
	}
	quiet := newWorkerEnv(t)
	if bytes.Contains([]byte(quiet.log.String()), []byte("maxmemory-policy")) {
		t.Errorf("a warning on a noeviction server:\n%s", quiet.log.String())
	}
}

// PushBatch pipelines, refuses a malformed batch before sending, reports
// per-job refusals as a *BatchError, and survives a script cache flushed
// between batches (NOSCRIPT answered per reply).
func TestPushBatch(t *testing.T) {
	e := newWorkerEnv(t)
	ctx := ctxT(t)
	good := mint(t, e.c, emq.WorkKind)
	foreign := mint(t, e.c, emq.Kind("ORD"))
	if err := do(t, e.c, "SCRIPT", "FLUSH").Error(); err != nil {
		t.Fatal(err)
	}
	oks, err := e.q.PushBatch(ctx, []emq.NewJob{{ID: good, Payload: []byte("a")}, {ID: foreign, Payload: []byte("b")}, {ID: good, Payload: []byte("c")}})
	var be *emq.BatchError
	if !errors.As(err, &be) || !errors.Is(err, emq.ErrKind) || be.Errs[0] != nil || be.Errs[1] == nil || be.Errs[2] != nil {
		t.Fatalf("PushBatch = %v, %v", oks, err)
	}
	if !oks[0] || oks[1] || oks[2] {
		t.Errorf("oks = %v, want [true false false]", oks)
	}
	if _, err := e.q.PushBatch(ctx, []emq.NewJob{{ID: emq.ID{}, Payload: nil}}); !errors.Is(err, emq.ErrID) {
		t.Errorf("a zero id = %v, want ErrID before sending", err)
	}
	if n, _ := e.q.PendingSize(ctx); n != 1 {
		t.Errorf("pending = %d", n)
	}
	if n, _ := do(t, e.c, "LLEN", e.q.Keys().Wake).AsInt64(); n != 1 {
		t.Errorf("doorbell holds %d markers, want 1", n)
	}
}

// No goroutine of the worker outlives Run. (The client's connection pools
// start and stop their own goroutines as connections come and go; those
// are rueidis's, not counted here.)
func TestWorkerLeavesNoGoroutines(t *testing.T) {
	e := newWorkerEnv(t)
	e.push(50)
	stop := e.run(func(ctx context.Context, j emq.Job) error { return nil }, emq.WorkerOptions{Concurrency: 16, Wait: 50 * time.Millisecond})
	eventually(t, 10*time.Second, "jobs completed", func() bool { return e.tally.Get(emq.Completed) == 50 })
	if workerGoroutines() < 16 {
		t.Fatalf("only %d worker goroutines while running", workerGoroutines())
	}
	stop()
	eventually(t, 5*time.Second, "no worker goroutine left", func() bool { return workerGoroutines() == 0 })
}

// workerGoroutines counts the goroutines running a Worker's code.
func workerGoroutines() int {
	buf := make([]byte, 1<<22)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "sdk/go/emq.(*Worker)") {
			n++
		}
	}
	return n
}

// A retry due sooner than the next maintenance is promoted when it is due,
// not at the maintenance tick.
func TestWorkerShortRetryDoesNotWaitForMaintenance(t *testing.T) {
	e := newWorkerEnv(t)
	e.push(1)
	var runs atomic.Int32
	e.run(func(ctx context.Context, j emq.Job) error {
		if runs.Add(1) == 1 {
			return errors.New("once")
		}
		return nil
	}, emq.WorkerOptions{Concurrency: 1, Maintenance: time.Minute, Wait: time.Minute,
		Backoff: func(int64) time.Duration { return 20 * time.Millisecond }})
	eventually(t, 10*time.Second, "the retried job completed, long before the minute's maintenance", func() bool {
		return e.tally.Get(emq.Completed) == 1
	})
	if e.tally.Get(emq.Retried) != 1 || e.tally.Get(emq.Promoted) != 1 {
		t.Errorf("counters %v", e.tally.Snapshot())
	}
}

// A payload over the server's proto-max-bulk-len is refused before it is
// sent, with a typed error; the connection, and the commands in flight on
// it, are left alone.
func TestPayloadCap(t *testing.T) {
	e := newWorkerEnv(t, redistest.WithArgs("--proto-max-bulk-len", "1mb"))
	ctx := ctxT(t)
	big := make([]byte, 1<<20+1)
	id := mint(t, e.c, emq.WorkKind)
	for name, push := range map[string]func() error{
		"Push":      func() error { _, err := e.q.Push(ctx, id, big); return err },
		"PushBatch": func() error { _, err := e.q.PushBatch(ctx, []emq.NewJob{{ID: id, Payload: big}}); return err },
		"Enqueue":   func() error { _, err := e.q.Enqueue(ctx, id, big); return err },
		"EnqueueAt": func() error { _, err := e.q.EnqueueAt(ctx, id, big, time.Now()); return err },
	} {
		if err := push(); !errors.Is(err, emq.ErrPayloadTooLarge) || !errors.Is(err, emq.ErrArgument) {
			t.Errorf("%s of %d bytes = %v, want ErrPayloadTooLarge", name, len(big), err)
		}
	}
	if ok, err := e.q.Push(ctx, id, big[:1<<20]); !ok || err != nil {
		t.Errorf("a payload at the cap = %v, %v", ok, err)
	}
	if n, _ := e.q.PendingSize(ctx); n != 1 {
		t.Errorf("pending = %d, want only the payload at the cap", n)
	}
}
