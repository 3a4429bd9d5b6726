package emq_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// BenchmarkWorkerDrain measures draining a pre-filled queue with no-op
// handlers: b.N jobs pushed in batches, then a worker of concurrency 50
// runs them all. Reports jobs/s and allocations per job in the worker path.
func BenchmarkWorkerDrain(b *testing.B) {
	srv := redistest.Start(b)
	tally := &emq.Tally{}
	opt := options(srv)
	opt.Metrics = tally
	c, err := emq.Connect(context.Background(), opt)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	q, _ := c.Queue("bench")
	ctx := context.Background()
	batch := make([]emq.NewJob, 0, 500)
	for i := 0; i < b.N; i++ {
		id, _ := c.Mint(emq.WorkKind)
		batch = append(batch, emq.NewJob{ID: id, Payload: []byte("{}")})
		if len(batch) == cap(batch) || i == b.N-1 {
			if _, err := q.PushBatch(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	w, _ := emq.NewWorker(q, func(context.Context, emq.Job) error { return nil }, emq.WorkerOptions{Concurrency: 50})
	b.ResetTimer()
	b.ReportAllocs()
	start := time.Now()
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = w.Run(wctx); close(done) }()
	for tally.Get(emq.Completed) < int64(b.N) {
		time.Sleep(time.Millisecond)
	}
	el := time.Since(start)
	b.StopTimer()
	cancel()
	<-done
	b.ReportMetric(float64(b.N)/el.Seconds(), "jobs/s")
}

// BenchmarkPush measures one-job-per-call enqueue from 8 goroutines
// (GOMAXPROCS 2 × parallelism 4), coalesced (the default) and with
// Options.DisableCoalescing. It reports jobs/s, the server's script calls
// per job and its CPU per job (INFO commandstats and INFO cpu).
func BenchmarkPush(b *testing.B) {
	for _, tc := range []struct {
		name string
		off  bool
	}{{"coalesced", false}, {"uncoalesced", true}} {
		b.Run(tc.name, func(b *testing.B) {
			srv := redistest.Start(b)
			opt := options(srv)
			opt.DisableCoalescing = tc.off
			c, err := emq.Connect(context.Background(), opt)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			q, _ := c.Queue("bench")
			calls0, cpu0 := serverLoad(b, srv)
			b.SetParallelism(4)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					id, _ := c.Mint(emq.WorkKind)
					if _, err := q.Push(context.Background(), id, []byte("{}")); err != nil {
						b.Error(err)
						return
					}
				}
			})
			el := time.Since(start)
			b.StopTimer()
			calls1, cpu1 := serverLoad(b, srv)
			b.ReportMetric(float64(b.N)/el.Seconds(), "jobs/s")
			b.ReportMetric(float64(calls1-calls0)/float64(b.N), "calls/job")
			b.ReportMetric((cpu1-cpu0)*1e6/float64(b.N), "server-µs/job")
		})
	}
}

// serverLoad reads the server's script calls so far (INFO commandstats)
// and its CPU seconds (INFO cpu, system and user).
func serverLoad(b *testing.B, srv *redistest.Server) (calls int64, cpu float64) {
	b.Helper()
	info, err := srv.Do("INFO", "all")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		switch {
		case !ok:
		case name == "used_cpu_sys" || name == "used_cpu_user":
			v, _ := strconv.ParseFloat(rest, 64)
			cpu += v
		case name == "cmdstat_eval" || name == "cmdstat_evalsha":
			n, _ := strconv.ParseInt(strings.TrimPrefix(strings.SplitN(rest, ",", 2)[0], "calls="), 10, 64)
			calls += n
		}
	}
	return calls, cpu
}

// BenchmarkPushBatch measures PushBatch of 100 jobs from one goroutine:
// jobs/s, script calls and server CPU per job.
func BenchmarkPushBatch(b *testing.B) {
	srv := redistest.Start(b)
	c, err := emq.Connect(context.Background(), options(srv))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	q, _ := c.Queue("bench")
	jobs := make([]emq.NewJob, 100)
	calls0, cpu0 := serverLoad(b, srv)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i += len(jobs) {
		for j := range jobs {
			id, _ := c.Mint(emq.WorkKind)
			jobs[j] = emq.NewJob{ID: id, Payload: []byte("{}")}
		}
		if _, err := q.PushBatch(context.Background(), jobs); err != nil {
			b.Fatal(err)
		}
	}
	el := time.Since(start)
	b.StopTimer()
	calls1, cpu1 := serverLoad(b, srv)
	b.ReportMetric(float64(b.N)/el.Seconds(), "jobs/s")
	b.ReportMetric(float64(calls1-calls0)/float64(b.N), "calls/job")
	b.ReportMetric((cpu1-cpu0)*1e6/float64(b.N), "server-µs/job")
}
