package emq_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// output reads a job's output with the output script's generated call
// (the read API is another file's): its progress while the row exists,
// its completion record once it is gone.
func output(t *testing.T, e *workerEnv, id emq.ID) wire.OutputReply {
	t.Helper()
	k := e.q.Keys()
	row, err := k.Row(id)
	if err != nil {
		t.Fatal(err)
	}
	call := wire.OutputCall{Row: row, Results: k.Results, Progress: k.Progress, ID: id}
	r, err := call.Exec(ctxT(t), e.c.Redis())
	if err != nil {
		t.Fatalf("output of %s: %v", id, err)
	}
	return r
}

// startWorker runs a ResultHandler worker on e's queue until the test
// ends.
func startWorker(t *testing.T, e *workerEnv, h emq.ResultHandler, opt emq.WorkerOptions) {
	t.Helper()
	w, err := emq.NewResultWorker(e.q, h, opt)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Run did not return within 30s of its context's end")
		}
	})
}

// A ResultHandler's results are kept as KeepResults says: the last Count
// completions keep theirs, read back once the row is gone; an older one
// was dropped.
func TestResultWorkerKeepsResults(t *testing.T) {
	e := newWorkerEnv(t)
	ids := make([]emq.ID, 3)
	for i := range ids {
		ids[i] = mint(t, e.c, emq.WorkKind)
		if _, err := e.q.Push(ctxT(t), ids[i], []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	startWorker(t, e, func(ctx context.Context, j emq.Job) ([]byte, error) {
		return []byte("result of " + string(j.Payload)), nil
	}, emq.WorkerOptions{Concurrency: 1, KeepResults: emq.Retention{Count: 2}})
	eventually(t, 10*time.Second, "every job completed", func() bool { return e.tally.Get(emq.Completed) == 3 })
	if r := output(t, e, ids[0]); r.CompletedAtMS != 0 || r.Result != "" {
		t.Errorf("the oldest completion: %+v; want dropped (keep 2)", r)
	}
	for i, id := range ids[1:] {
		r := output(t, e, id)
		want := "result of " + strconv.Itoa(i+1)
		if r.Result != want || r.Attempt != 1 || r.CompletedAtMS == 0 {
			t.Errorf("job %d: %+v; want result %q of attempt 1", i+1, r, want)
		}
	}
	if n, err := do(t, e.c, "ZCARD", e.q.Keys().ResultTimes).AsInt64(); err != nil || n != 2 {
		t.Errorf("retention index holds %d (%v); want 2", n, err)
	}
}

// The default keeps no result (removeOnComplete): a completion writes no
// record.
func TestResultWorkerKeepsNoneByDefault(t *testing.T) {
	e := newWorkerEnv(t)
	id := e.push(1)[0]
	startWorker(t, e, func(context.Context, emq.Job) ([]byte, error) { return []byte("dropped"), nil }, emq.WorkerOptions{Concurrency: 1})
	eventually(t, 10*time.Second, "the job completed", func() bool { return e.tally.Get(emq.Completed) == 1 })
	if r := output(t, e, id); r.CompletedAtMS != 0 || r.Result != "" {
		t.Errorf("output %+v; want none kept", r)
	}
	if n, err := do(t, e.c, "EXISTS", e.q.Keys().Results).AsInt64(); err != nil || n != 0 {
		t.Errorf("results key exists: %d, %v", n, err)
	}
}

// A handler reports progress through its context; the report is read
// while the job runs; once its lease is gone a report is refused with
// ErrStale; a context that is no handler's is refused with ErrArgument.
func TestReportProgress(t *testing.T) {
	e := newWorkerEnv(t)
	id := e.push(1)[0]
	reported, release := make(chan emq.Job), make(chan struct{})
	stale := make(chan error, 1)
	startWorker(t, e, func(ctx context.Context, j emq.Job) ([]byte, error) {
		if err := emq.ReportProgress(ctx, []byte("half")); err != nil {
			return nil, err
		}
		reported <- j
		<-release
		stale <- emq.ReportProgress(ctx, []byte("late"))
		return nil, nil
	}, emq.WorkerOptions{Concurrency: 1})
	var j emq.Job
	select {
	case j = <-reported:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not report within 10s")
	}
	if r := output(t, e, id); r.Progress != "half" {
		t.Errorf("progress %q; want half", r.Progress)
	}
	// Take the lease away: the job goes back to the schedule.
	if _, err := e.q.Retry(ctxT(t), id, j.Token, time.Hour); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-stale; !errors.Is(err, emq.ErrStale) {
		t.Errorf("a report after the lease is gone: %v; want ErrStale", err)
	}
	if r := output(t, e, id); r.Progress != "half" {
		t.Errorf("progress %q after the refused report; want half", r.Progress)
	}
	if err := emq.ReportProgress(ctxT(t), []byte("x")); !errors.Is(err, emq.ErrArgument) {
		t.Errorf("a report outside a handler: %v; want ErrArgument", err)
	}
	if err := e.q.ReportProgress(ctxT(t), id, j.Token, make([]byte, 4097), 0); !errors.Is(err, emq.ErrArgument) {
		t.Errorf("a report over 4096 bytes: %v; want ErrArgument", err)
	}
}

// A job's own attempts replace the worker's MaxAttempts, fewer or more.
func TestWorkerHonoursJobAttempts(t *testing.T) {
	e := newWorkerEnv(t)
	fewer, more := mint(t, e.c, emq.WorkKind), mint(t, e.c, emq.WorkKind)
	for id, n := range map[emq.ID]int{fewer: 2, more: 5} {
		if ok, err := e.q.PushWith(ctxT(t), id, []byte("x"), emq.Attempts(n), emq.WithBackoff(emq.FixedBackoff(5*time.Millisecond))); err != nil || !ok {
			t.Fatalf("Push with attempts %d: %v, %v", n, ok, err)
		}
	}
	var mu sync.Mutex
	runs := map[emq.ID]int{}
	startWorker(t, e, func(_ context.Context, j emq.Job) ([]byte, error) {
		mu.Lock()
		runs[j.ID]++
		mu.Unlock()
		return nil, errors.New("always")
	}, emq.WorkerOptions{Concurrency: 2, MaxAttempts: 3, BackoffPolicy: &emq.BackoffPolicy{Type: emq.BackoffFixed, Delay: time.Hour}})
	eventually(t, 20*time.Second, "both jobs dead", func() bool { return e.sizes()[emq.SetDead] == 2 })
	mu.Lock()
	defer mu.Unlock()
	if runs[fewer] != 2 || runs[more] != 5 {
		t.Errorf("runs %d and %d; want 2 (the job's own attempts, under the worker's 3) and 5 (over them)", runs[fewer], runs[more])
	}
	for _, id := range []emq.ID{fewer, more} {
		as, err := e.q.Failures(ctxT(t), id)
		if err != nil || len(as) == 0 || as[len(as)-1].Worker == "" {
			t.Errorf("failures of %s: %v, %v", id, as, err)
		}
	}
}

// A permanent error, wrapped or made with Permanent, buries at once.
func TestWorkerErrPermanentBuries(t *testing.T) {
	e := newWorkerEnv(t)
	ids := e.push(2)
	var mu sync.Mutex
	runs := 0
	startWorker(t, e, func(_ context.Context, j emq.Job) ([]byte, error) {
		mu.Lock()
		runs++
		mu.Unlock()
		if j.ID == ids[0] {
			return nil, fmt.Errorf("the payload is not JSON: %w", emq.ErrPermanent)
		}
		return nil, emq.Permanent(errors.New("bad"))
	}, emq.WorkerOptions{Concurrency: 2, MaxAttempts: 10})
	eventually(t, 10*time.Second, "both jobs dead", func() bool { return e.sizes()[emq.SetDead] == 2 })
	mu.Lock()
	defer mu.Unlock()
	if runs != 2 {
		t.Errorf("%d runs; want 2, each buried at once", runs)
	}
}

// serverNow is the server's clock.
func serverNow(t *testing.T, e *workerEnv) time.Time {
	t.Helper()
	ts, err := do(t, e.c, "TIME").AsStrSlice()
	if err != nil || len(ts) != 2 {
		t.Fatalf("TIME: %v, %v", ts, err)
	}
	sec, _ := strconv.ParseInt(ts[0], 10, 64)
	usec, _ := strconv.ParseInt(ts[1], 10, 64)
	return time.Unix(sec, usec*1000)
}

// An exponential backoff doubles with each earlier attempt, is bounded by
// its max and shortened by the jitter draw; a job's own policy replaces
// the worker's.
func TestFailExponentialRunAt(t *testing.T) {
	e := newWorkerEnv(t)
	ctx := ctxT(t)
	id := e.push(1)[0]
	// Two lost leases, so that the failure is the third attempt.
	for attempt := int64(1); attempt <= 2; attempt++ {
		js, err := e.q.ClaimIDs(ctx, time.Millisecond, []emq.ID{id})
		if err != nil || len(js) != 1 || js[0].Token != attempt {
			t.Fatalf("claim %d: %v, %v", attempt, js, err)
		}
		eventually(t, 10*time.Second, "the lease reaped", func() bool {
			n, err := e.q.ReapRecordedIDs(ctx, []emq.ID{id}, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			return n == 1
		})
	}
	js, err := e.q.ClaimIDs(ctx, time.Minute, []emq.ID{id})
	if err != nil || len(js) != 1 || js[0].Token != 3 {
		t.Fatalf("claim 3: %v, %v", js, err)
	}
	f := emq.Failure{Class: emq.FailureClassError, Worker: "w", Message: "third"}
	cases := []struct {
		policy emq.BackoffPolicy
		jitter int
		want   time.Duration
	}{
		{emq.ExponentialPolicy(time.Second, 0), 0, 4 * time.Second},             // 1s · 2²
		{emq.ExponentialPolicy(time.Second, 0), 1000, 2 * time.Second},          // halved by the full draw
		{emq.ExponentialPolicy(time.Second, 3*time.Second), 0, 3 * time.Second}, // bounded
		{emq.FixedBackoff(7 * time.Second), 1000, 7 * time.Second},              // a fixed one is not spread
	}
	for _, c := range cases {
		before := serverNow(t, e)
		outcome, at, err := e.q.Fail(ctx, id, js[0].Token, f, emq.FailOptions{Backoff: c.policy, Jitter: c.jitter})
		if err != nil || outcome != emq.EventRetried {
			t.Fatalf("%+v: %v, %v", c, outcome, err)
		}
		if got := at.Sub(before); got < c.want-50*time.Millisecond || got > c.want+2*time.Second {
			t.Errorf("%+v jitter %d: runs %v after the failure; want %v", c.policy, c.jitter, got, c.want)
		}
		// Back to active with the same attempt, for the next case.
		if _, err := do(t, e.c, "ZREM", e.q.Keys().Schedule, id.String()).AsInt64(); err != nil {
			t.Fatal(err)
		}
		row, _ := e.q.Keys().Row(id)
		if err := do(t, e.c, "HSET", row, "state", string(emq.StateActive)).Error(); err != nil {
			t.Fatal(err)
		}
		if err := do(t, e.c, "ZADD", e.q.Keys().Active, strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10), id.String()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := e.q.Fail(ctx, id, js[0].Token, f, emq.FailOptions{Backoff: emq.BackoffPolicy{Type: emq.BackoffInherit}}); !errors.Is(err, emq.ErrArgument) {
		t.Errorf("a worker's inherit backoff: %v; want ErrArgument", err)
	}
	if _, _, err := e.q.Fail(ctx, id, js[0].Token, f, emq.FailOptions{Backoff: emq.FixedBackoff(0), Jitter: 1001}); !errors.Is(err, emq.ErrArgument) {
		t.Errorf("jitter 1001: %v; want ErrArgument", err)
	}
}

// An idle worker starts a delayed job within milliseconds of its run-at:
// it sleeps until the schedule's head and promotes it itself, with
// maintenance off. The latencies are logged; only a generous bound is
// asserted, so that a loaded machine passes.
func TestDelayedJobStartsPromptly(t *testing.T) {
	e := newWorkerEnv(t)
	started := make(chan time.Time, 1)
	startWorker(t, e, func(context.Context, emq.Job) ([]byte, error) {
		started <- time.Now()
		return nil, nil
	}, emq.WorkerOptions{Concurrency: 1, Maintenance: -1})
	const samples = 25
	var lat []time.Duration
	for i := range samples {
		id := mint(t, e.c, emq.WorkKind)
		delay := time.Duration(20+(i*37)%100) * time.Millisecond
		rs, err := e.q.AddMany(ctxT(t), []emq.NewJob{{ID: id, Payload: []byte("later")}}, emq.Delay(delay))
		if err != nil || !rs[0].Enqueued || rs[0].RunAt.IsZero() {
			t.Fatalf("AddMany: %+v, %v", rs, err)
		}
		select {
		case at := <-started:
			if at.Before(rs[0].RunAt.Add(-time.Millisecond)) {
				t.Errorf("job %d started %v before its run-at", i, rs[0].RunAt.Sub(at))
			}
			lat = append(lat, max(at.Sub(rs[0].RunAt), 0))
		case <-time.After(10 * time.Second):
			t.Fatalf("job %d did not start within 10s of its push", i)
		}
	}
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	t.Logf("delayed job start after its run-at, %d samples: p50 %v, p99 %v, max %v", len(lat), p50, p99, lat[len(lat)-1])
	if p99 > time.Second {
		t.Errorf("p99 %v after the run-at; want well under a second (10 ms on an idle machine)", p99)
	}
}

// A push with options is sent with add_many and coalesced only with
// pushes of the same options; a push without keeps push_many.
func TestPushOptionsCoalesceByOptions(t *testing.T) {
	e := newWorkerEnv(t)
	ctx := ctxT(t)
	var wg sync.WaitGroup
	ids := make([]emq.ID, 40)
	for i := range ids {
		ids[i] = mint(t, e.c, emq.WorkKind)
	}
	errs := make([]error, len(ids))
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var opts []emq.PushOption
			switch i % 3 {
			case 1:
				opts = append(opts, emq.Delay(time.Hour))
			case 2:
				opts = append(opts, emq.Attempts(7))
			}
			_, errs[i] = e.q.PushWith(ctx, id, []byte("x"), opts...)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
	}
	s := e.sizes()
	if s[emq.SetSchedule] != 13 || s[emq.SetPending] != 27 {
		t.Errorf("sizes %v; want 13 scheduled (delayed) and 27 pending", s)
	}
	opts := hgetall(t, e.c, e.q.Keys().Options)
	if len(opts) != 13 {
		t.Errorf("%d policies; want 13 (the jobs given attempts)", len(opts))
	}
	for i, id := range ids {
		_, has := opts[id.String()]
		if has != (i%3 == 2) {
			t.Errorf("job %d: policy %t", i, has)
		}
	}
	if _, err := e.q.PushWith(ctx, mint(t, e.c, emq.WorkKind), nil, emq.Attempts(-1)); !errors.Is(err, emq.ErrArgument) {
		t.Errorf("negative attempts: %v; want ErrArgument", err)
	}
	if _, err := e.q.PushBatchWith(ctx, []emq.NewJob{{ID: mint(t, e.c, emq.WorkKind)}}, emq.WithBackoff(emq.BackoffPolicy{Type: "linear"})); !errors.Is(err, emq.ErrArgument) {
		t.Errorf("a backoff outside the vocabulary: %v; want ErrArgument", err)
	}
	out, err := e.q.PushBatchWith(ctx, []emq.NewJob{{ID: ids[0]}, {ID: mint(t, e.c, emq.WorkKind)}}, emq.Delay(time.Minute))
	if err != nil || len(out) != 2 || out[0] || !out[1] {
		t.Errorf("PushBatch with a delay: %v, %v; want a duplicate, then enqueued", out, err)
	}
}

// The orphan sweep forgets the policies and progress a 2.3 client's
// completion leaves behind.
func TestSweepForgetsOrphanedPolicies(t *testing.T) {
	e := newWorkerEnv(t)
	ctx := ctxT(t)
	id := mint(t, e.c, emq.WorkKind)
	if _, err := e.q.PushWith(ctx, id, []byte("x"), emq.Attempts(3)); err != nil {
		t.Fatal(err)
	}
	js, err := e.q.ClaimIDs(ctx, time.Minute, []emq.ID{id})
	if err != nil || len(js) != 1 {
		t.Fatal(js, err)
	}
	if err := e.q.ReportProgress(ctx, id, js[0].Token, []byte("p"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := e.q.CompleteClaimIDs(ctx, id, js[0].Token, time.Minute, nil); err != nil { // 2.3's completion: leaves both
		t.Fatal(err)
	}
	if len(hgetall(t, e.c, e.q.Keys().Options)) != 1 || len(hgetall(t, e.c, e.q.Keys().Progress)) != 1 {
		t.Fatal("the 2.3 completion did not leave the policy and the progress behind")
	}
	startWorker(t, e, func(context.Context, emq.Job) ([]byte, error) { return nil, nil }, emq.WorkerOptions{Maintenance: 20 * time.Millisecond})
	eventually(t, 10*time.Second, "the orphans forgotten", func() bool {
		return len(hgetall(t, e.c, e.q.Keys().Options))+len(hgetall(t, e.c, e.q.Keys().Progress)) == 0
	})
}

// Push and PushBatch without options send exactly the 2.3 scripts (push,
// push_many); with options, add_many and nothing else.
func TestPushWithoutOptionsSendsPushMany(t *testing.T) {
	e := newWorkerEnv(t)
	ctx := ctxT(t)
	scripts := func(f func()) map[string]int {
		t.Helper()
		mon := startMonitor(t, e.srv.Addr())
		calibrate(t, e.srv)
		f()
		seen := map[string]int{}
		for _, call := range monitoredCalls(t, mon.stop(t, e.srv)) {
			if call.script != wire.ScriptFence.Name { // a connection opened meanwhile
				seen[call.script]++
			}
		}
		return seen
	}
	batch := func(n int) []emq.NewJob {
		jobs := make([]emq.NewJob, n)
		for i := range jobs {
			jobs[i] = emq.NewJob{ID: mint(t, e.c, emq.WorkKind), Payload: []byte("x")}
		}
		return jobs
	}
	push := func(opts ...emq.PushOption) {
		var wg sync.WaitGroup
		for _, j := range batch(20) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := e.q.PushWith(ctx, j.ID, j.Payload, opts...); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if _, err := e.q.PushBatchWith(ctx, batch(10), opts...); err != nil {
			t.Error(err)
		}
	}
	plain := scripts(func() { push() })
	if plain[wire.ScriptPushMany.Name] == 0 || plain[wire.ScriptAddMany.Name] != 0 {
		t.Errorf("without options: %v; want push_many (and push), no add_many", plain)
	}
	for name := range plain {
		if name != wire.ScriptPushMany.Name && name != wire.ScriptPush.Name {
			t.Errorf("without options the pushes called %s", name)
		}
	}
	opted := scripts(func() { push(emq.Delay(time.Hour), emq.Attempts(2)) })
	if len(opted) != 1 || opted[wire.ScriptAddMany.Name] == 0 {
		t.Errorf("with options: %v; want add_many only", opted)
	}
}

// The worker's retry delay as the server applies it: a Backoff function
// of 2.3 is a fixed delay of what it returns, and the default is the
// exponential policy from a second, spread over its upper half.
func TestWorkerBackoffRunAt(t *testing.T) {
	for _, c := range []struct {
		name   string
		opt    emq.WorkerOptions
		lo, hi time.Duration
	}{
		{"Backoff function", emq.WorkerOptions{Backoff: func(int64) time.Duration { return 5 * time.Second }}, 5 * time.Second, 5 * time.Second},
		{"default", emq.WorkerOptions{}, 500 * time.Millisecond, time.Second},
		{"BackoffPolicy", emq.WorkerOptions{BackoffPolicy: &emq.BackoffPolicy{Type: emq.BackoffFixed, Delay: 3 * time.Second}}, 3 * time.Second, 3 * time.Second},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			e := newWorkerEnv(t)
			id := e.push(1)[0]
			c.opt.Concurrency = 1
			startWorker(t, e, func(context.Context, emq.Job) ([]byte, error) { return nil, errors.New("once") }, c.opt)
			eventually(t, 10*time.Second, "the job retried", func() bool { return e.tally.Get(emq.Retried) == 1 })
			as, err := e.q.Failures(ctxT(t), id)
			if err != nil || len(as) != 1 {
				t.Fatalf("failures %v, %v", as, err)
			}
			score, err := do(t, e.c, "ZSCORE", e.q.Keys().Schedule, id.String()).AsFloat64()
			if err != nil {
				t.Fatal(err)
			}
			if d := time.UnixMilli(int64(score)).Sub(as[0].At); d < c.lo || d > c.hi {
				t.Errorf("runs %v after its failure; want %v..%v", d, c.lo, c.hi)
			}
		})
	}
}
