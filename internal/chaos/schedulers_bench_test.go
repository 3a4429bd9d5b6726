package chaos

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// schedBurstResult is one side of BenchmarkSchedulersDueBurst.
type schedBurstResult struct {
	runners   int
	took      time.Duration // from the due second to the last run enqueued
	serverCPU float64       // the server's CPU seconds over the burst
}

var (
	schedBurstMu      sync.Mutex
	schedBurstResults = map[int]schedBurstResult{}
)

// BenchmarkSchedulersDueBurst measures a burst: 10,000 interval
// schedulers (echomq 2.6.0) whose first slot is the same second, fired by
// Go scheduler processes running the SDK's runner with its defaults
// (Queue.RunSchedulers: a tick every 250 ms, due pages of 100, a random
// page each), 1 of them, then 3 competing. It reports the time from the
// due second to the moment every run is enqueued (pending), runs per
// second over that time and the server's CPU per run, and checks that each
// scheduler fired exactly one run. After both sides it logs the bench
// table (3 runners against 1). Run it alone, with -benchtime=1x:
//
//	go test ./internal/chaos -run XXX -bench SchedulersDueBurst -benchtime=1x
func BenchmarkSchedulersDueBurst(b *testing.B) {
	const schedulers = 10_000
	for _, runners := range []int{1, 3} {
		b.Run(fmt.Sprintf("runners-%d", runners), func(b *testing.B) {
			srv := redistest.Start(b)
			ctx := context.Background()
			c, err := emq.Connect(ctx, emq.Options{Redis: rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true}, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			q, _ := c.Queue(queueName)
			exe, err := os.Executable()
			if err != nil {
				b.Fatal(err)
			}
			fleet := &schedFleet{exe: exe, dir: b.TempDir(), base: SchedulerConfig{Addrs: []string{srv.Addr()}, Queue: queueName, Poll: emq.DefaultSchedulerPoll}}
			defer fleet.stop(5 * time.Second)
			for range runners {
				if _, err := fleet.spawn(LangGo, 0); err != nil {
					b.Fatal(err)
				}
			}
			var total time.Duration
			var cpu float64
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				if _, err := srv.Do("FLUSHDB"); err != nil {
					b.Fatal(err)
				}
				now, err := c.ServerTime(ctx)
				if err != nil {
					b.Fatal(err)
				}
				// The due second: far enough ahead for the upserts.
				due := time.UnixMilli((now.UnixMilli()/1000 + 8) * 1000)
				upsertMany(b, q, schedulers, due)
				if n, _ := q.Size(ctx, emq.SetPending); n != 0 {
					b.Fatalf("%d runs pending before the due second (the upserts took too long)", n)
				}
				if now, err = c.ServerTime(ctx); err != nil {
					b.Fatal(err)
				}
				time.Sleep(due.Sub(now) - 20*time.Millisecond)
				cpu0 := schedServerCPU(b, srv)
				b.StartTimer()
				var done time.Time
				for {
					n, err := q.Size(ctx, emq.SetPending)
					if err != nil {
						b.Fatal(err)
					}
					if n >= schedulers {
						if done, err = c.ServerTime(ctx); err != nil {
							b.Fatal(err)
						}
						break
					}
					if time.Since(due) > time.Minute {
						b.Fatalf("%d of %d runs enqueued a minute after the due second", n, schedulers)
					}
					time.Sleep(2 * time.Millisecond)
				}
				b.StopTimer()
				cpu1 := schedServerCPU(b, srv)
				total += done.Sub(due)
				cpu += cpu1 - cpu0
				checkBurstOnce(b, q, schedulers)
			}
			took := total / time.Duration(b.N)
			b.ReportMetric(took.Seconds(), "s-to-all-enqueued")
			b.ReportMetric(float64(schedulers)/took.Seconds(), "runs/s")
			b.ReportMetric(cpu/float64(b.N)*1e6/schedulers, "server-µs/run")
			schedBurstMu.Lock()
			schedBurstResults[runners] = schedBurstResult{runners: runners, took: took, serverCPU: cpu / float64(b.N)}
			one, three := schedBurstResults[1], schedBurstResults[3]
			schedBurstMu.Unlock()
			if runners == 3 && one.runners == 1 {
				b.Log("\n" + schedBurstTable(schedulers, one, three))
			}
		})
	}
}

// schedBurstTable is the bench table (bench/README.md's style: scenario,
// unit, better, the figures, their ratio) of the two sides.
func schedBurstTable(n int, one, three schedBurstResult) string {
	var t strings.Builder
	t.WriteString("| scenario | unit | better | 3 runners | 1 runner | 3/1 | note |\n|---|---|---|--:|--:|--:|---|\n")
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	fmt.Fprintf(&t, "| S1. %s schedulers due in the same second: due → every run enqueued | ms | lower | %.0f | %.0f | %.2f× | SDK runner defaults: a tick every %v, due pages of %d |\n",
		thousands(int64(n)), ms(three.took), ms(one.took), ms(three.took)/ms(one.took), emq.DefaultSchedulerPoll, emq.DefaultDuePage)
	r3, r1 := float64(n)/three.took.Seconds(), float64(n)/one.took.Seconds()
	fmt.Fprintf(&t, "| S2. runs enqueued per second over the burst | runs/s | higher | %s | %s | %.2f× | each scheduler fired exactly once (checked) |\n",
		thousands(int64(r3)), thousands(int64(r1)), r3/r1)
	c3, c1 := three.serverCPU*1e6/float64(n), one.serverCPU*1e6/float64(n)
	fmt.Fprintf(&t, "| S3. Redis server CPU per run (INFO cpu, over the burst) | µs/run | lower | %.1f | %.1f | %.2f× | the stale firings of competing runners included |\n", c3, c1, c3/c1)
	return t.String()
}

// upsertMany upserts n hourly schedulers whose first slot is due, from 16
// goroutines.
func upsertMany(b *testing.B, q *emq.Queue, n int, due time.Time) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Go(func() {
			for i := g; i < n; i += 16 {
				if _, err := q.UpsertScheduler(context.Background(), "burst-"+strconv.Itoa(i), emq.Schedule{Every: time.Hour, Start: due},
					emq.WithTemplate([]byte("{scheduler} {slot} {until}"))); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// checkBurstOnce checks that each of the n schedulers fired exactly one
// run: its record counts one, and the pending set holds n runs.
func checkBurstOnce(b *testing.B, q *emq.Queue, n int) {
	b.Helper()
	ctx := context.Background()
	seen := 0
	for off := 0; ; off += emq.MaxSchedulerPage {
		page, err := q.ListSchedulers(ctx, off, emq.MaxSchedulerPage)
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range page {
			if s.Runs != 1 {
				b.Fatalf("scheduler %s fired %d runs; want 1", s.ID, s.Runs)
			}
		}
		seen += len(page)
		if len(page) < emq.MaxSchedulerPage {
			break
		}
	}
	if p, _ := q.Size(ctx, emq.SetPending); seen != n || p != int64(n) {
		b.Fatalf("%d schedulers, %d runs pending; want %d and %d", seen, p, n, n)
	}
}

// schedServerCPU reads the server's CPU seconds (INFO cpu).
func schedServerCPU(b *testing.B, srv *redistest.Server) float64 {
	b.Helper()
	info, err := srv.Do("INFO", "cpu")
	if err != nil {
		b.Fatal(err)
	}
	var cpu float64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (name == "used_cpu_sys" || name == "used_cpu_user") {
			v, _ := strconv.ParseFloat(rest, 64)
			cpu += v
		}
	}
	return cpu
}
