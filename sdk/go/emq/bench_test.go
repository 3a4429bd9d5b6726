package emq_test

import (
	"context"
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

// BenchmarkPush measures one-job-per-call enqueue from 8 goroutines.
func BenchmarkPush(b *testing.B) {
	srv := redistest.Start(b)
	c, err := emq.Connect(context.Background(), options(srv))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	q, _ := c.Queue("bench")
	b.SetParallelism(4)
	b.ReportAllocs()
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
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
}
