package emq_test

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// BenchmarkDedupPush measures what a deduplication key costs a push
// (echomq 2.5.0), beside the plain push measured in the same run: one job
// per call from 8 goroutines (GOMAXPROCS 2 × parallelism 4), and batches
// of 100 from one; each job with a key of its own (a fresh key is the
// admission's dearest path: it reads the entry, then writes it). It
// reports jobs/s and the server's CPU per job; the target is a dedup push
// at ≥ 0.8× the plain one's jobs/s, per call and batched.
func BenchmarkDedupPush(b *testing.B) {
	pol := emq.WithDedup(emq.DedupPolicy{Mode: emq.DedupUntilDone})
	for _, tc := range []struct {
		name  string
		batch bool
		dedup bool
	}{{"one/plain", false, false}, {"one/dedup", false, true}, {"batch100/plain", true, false}, {"batch100/dedup", true, true}} {
		b.Run(tc.name, func(b *testing.B) {
			srv := redistest.Start(b)
			c, err := emq.Connect(context.Background(), options(srv))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			q, _ := c.Queue("bench")
			_, cpu0 := serverLoad(b, srv)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			if tc.batch {
				jobs := make([]emq.NewJob, 100)
				for i := 0; i < b.N; i += len(jobs) {
					for j := range jobs {
						id, _ := c.Mint(emq.WorkKind)
						jobs[j] = emq.NewJob{ID: id, Payload: []byte("{}")}
						if tc.dedup {
							jobs[j].DedupKey = "k-" + id.String()
						}
					}
					var err error
					if tc.dedup {
						_, err = q.PushBatchDedup(context.Background(), jobs, pol)
					} else {
						_, err = q.PushBatch(context.Background(), jobs)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			} else {
				b.SetParallelism(4)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						id, _ := c.Mint(emq.WorkKind)
						var err error
						if tc.dedup {
							_, err = q.PushDedup(context.Background(), id, []byte("{}"), "k-"+id.String(), pol)
						} else {
							_, err = q.Push(context.Background(), id, []byte("{}"))
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			el := time.Since(start)
			b.StopTimer()
			_, cpu1 := serverLoad(b, srv)
			b.ReportMetric(float64(b.N)/el.Seconds(), "jobs/s")
			b.ReportMetric((cpu1-cpu0)*1e6/float64(b.N), "server-µs/job")
		})
	}
}

// BenchmarkCancelLatency measures, over b.N rounds, the time from a
// cancel_ids call by another client to the running handler's context
// being cancelled with ErrCancelled (the worker hears the queue's cancel
// channel, sharded pub/sub): it reports the median and the p99 in ms
// (target: p99 ≤ 100 ms).
func BenchmarkCancelLatency(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()
	quiet := options(srv)
	quiet.Logger = slog.New(slog.DiscardHandler) // one info line per cancelled job
	c, err := emq.Connect(ctx, quiet)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	other, err := emq.Connect(ctx, options(srv))
	if err != nil {
		b.Fatal(err)
	}
	defer other.Close()
	q, _ := c.Queue("bench")
	oq, _ := other.Queue("bench")
	started := make(chan emq.ID, 1)
	cancelled := make(chan time.Time, 1)
	w, err := emq.NewWorker(q, func(ctx context.Context, j emq.Job) error {
		started <- j.ID
		<-ctx.Done()
		if errors.Is(context.Cause(ctx), emq.ErrCancelled) {
			cancelled <- time.Now()
		}
		return context.Cause(ctx)
	}, emq.WorkerOptions{Lease: 30 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		id, _ := c.Mint(emq.WorkKind)
		if _, err := q.Push(ctx, id, []byte("long")); err != nil {
			b.Fatal(err)
		}
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			b.Fatal("the job did not start within 30s")
		}
		begin := time.Now()
		if states, err := oq.CancelIDs(ctx, []emq.ID{id}, 0); err != nil || len(states) != 1 || states[0] != emq.StateActive {
			b.Fatalf("CancelIDs = %v, %v", states, err)
		}
		select {
		case at := <-cancelled:
			lat = append(lat, at.Sub(begin))
		case <-time.After(30 * time.Second):
			b.Fatal("the handler was not cancelled within 30s")
		}
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[min(len(lat)-1, len(lat)*99/100)]), "p99-ms")
}
