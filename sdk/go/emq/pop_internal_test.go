package emq

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// legacyPop is the worker's 2.1.1 pop path, kept here only to measure the
// declared one against it in the same run: claim_many, complete_claim,
// promote and reap, which reach rows through the row prefix, and the ring
// after maintenance that those scripts do not do themselves.
type legacyPop struct{ w *Worker }

func (p legacyPop) claim(ctx context.Context, n int) ([]Job, time.Duration, error) {
	q := p.w.q
	if err := q.c.ensure(ctx); err != nil {
		return nil, 0, err
	}
	call := wire.ClaimManyCall{Pending: q.keys.Pending, Active: q.keys.Active, Wake: q.keys.Wake, Prefix: q.keys.RowPrefix(), LeaseMS: ms(p.w.opt.Lease), Count: int64(n)}
	jobs, err := p.w.records(ctx, wire.ScriptClaimMany.Lua().Exec(ctx, q.c.rc, call.Keys(), call.Args()), wire.ScriptClaimMany.Name, func(arr []rueidis.RedisMessage) (Job, error) {
		r, err := wire.DecodeClaimManyRecord(arr)
		return Job{ID: r.ID, Token: r.Token, Payload: []byte(r.Payload), Deadline: time.UnixMilli(r.DeadlineMS)}, err
	})
	return jobs, 0, err
}

func (p legacyPop) completeClaim(ctx context.Context, job Job, next int, _ []byte) ([]Job, error) {
	q := p.w.q
	if err := q.c.ensure(ctx); err != nil {
		return nil, err
	}
	row, _ := q.keys.Row(job.ID)
	call := wire.CompleteClaimCall{Row: row, Active: q.keys.Active, Pending: q.keys.Pending, Wake: q.keys.Wake,
		ID: job.ID, Token: job.Token, Prefix: q.keys.RowPrefix(), LeaseMS: ms(p.w.opt.Lease), Count: int64(next)}
	return p.w.records(ctx, wire.ScriptCompleteClaim.Lua().Exec(ctx, q.c.rc, call.Keys(), call.Args()), wire.ScriptCompleteClaim.Name, func(arr []rueidis.RedisMessage) (Job, error) {
		r, err := wire.DecodeCompleteClaimRecord(arr)
		return Job{ID: r.ID, Token: r.Token, Payload: []byte(r.Payload), Deadline: time.UnixMilli(r.DeadlineMS)}, err
	})
}

func (p legacyPop) maintain(ctx context.Context, step func() (int, error)) (int, error) {
	total := 0
	for {
		n, err := step()
		total += n
		if err != nil || n < maintenanceBatch {
			if total > 0 {
				_, _ = (&wire.RingCall{Wake: p.w.q.keys.Wake}).Exec(ctx, p.w.q.c.rc)
			}
			return total, err
		}
	}
}

func (p legacyPop) promote(ctx context.Context) (int, error) {
	return p.maintain(ctx, func() (int, error) { return p.w.q.Promote(ctx, maintenanceBatch) })
}

func (p legacyPop) reap(ctx context.Context) (int, error) {
	return p.maintain(ctx, func() (int, error) { return p.w.q.Reap(ctx, maintenanceBatch, int(p.w.opt.MaxAttempts)) })
}

// The head pool hands out distinct ids, never one a call holds, and a
// read that was sent before a call settled does not bring that call's ids
// back.
func TestHeadPool(t *testing.T) {
	p := headPool{size: 4, low: 2}
	ids, read := p.take(2, false)
	if len(ids) != 0 || !read {
		t.Fatalf("empty pool: take = %v, %v; want nothing and a read", ids, read)
	}
	p.done(nil, false, []string{"a", "b", "c", "d"}, true)
	x, readX := p.take(2, false) // a b; c d left: not below low
	y, readY := p.take(1, false) // c; d left: below low, read
	if fmt.Sprint(x, y) != "[a b] [c]" || readX || !readY {
		t.Fatalf("take = %v %v, %v %v", x, readX, y, readY)
	}
	// x settles while y's read is in flight; y's read ran before x on the
	// server and still lists a and b.
	p.done(x, false, nil, false)
	p.done(y, false, []string{"a", "b", "d", "e"}, true)
	if fmt.Sprint(p.ids) != "[d e]" {
		t.Fatalf("pool after the reads = %v; want [d e]", p.ids)
	}
	p.low = 1
	z, readZ := p.take(1, false) // d; e left
	if fmt.Sprint(z) != "[d]" || readZ {
		t.Fatalf("take = %v, %v; want [d] without a read", z, readZ)
	}
	p.done(z, true, nil, false) // skipped: the pool went stale
	if _, read := p.take(0, false); !read {
		t.Fatal("a call that skipped ids does not make the next call read the head")
	}
}

// BenchmarkPopPaths measures the worker on its declared-key path against
// the 2.1.1 path in the same run, on one server, alternating the two:
// drain (a pre-filled queue of popBenchJobs jobs, one worker of concurrency
// 50) and enqueue-and-process (8 producers pushing one job per call to a
// running worker). Run it with -benchtime=1x; each iteration makes
// popRounds rounds of each path and reports the median jobs/s of each and
// their ratios (declared over 2.1.1).
func BenchmarkPopPaths(b *testing.B) {
	srv := redistest.Start(b)
	for range b.N {
		res := map[string][]float64{}
		for round := range popRounds {
			for _, legacy := range []bool{round%2 == 1, round%2 == 0} {
				name := "declared"
				if legacy {
					name = "2.1.1"
				}
				res[name+"-drain"] = append(res[name+"-drain"], popRun(b, srv, legacy, false, popBenchJobs))
				res[name+"-process"] = append(res[name+"-process"], popRun(b, srv, legacy, true, popBenchJobs))
			}
		}
		med := func(k string) float64 {
			v := res[k]
			sort.Float64s(v)
			return v[len(v)/2]
		}
		for _, k := range []string{"declared-drain", "2.1.1-drain", "declared-process", "2.1.1-process"} {
			b.ReportMetric(med(k), k+"-jobs/s")
			b.Logf("%s: %v jobs/s", k, res[k])
		}
		b.ReportMetric(med("declared-drain")/med("2.1.1-drain"), "drain-ratio")
		b.ReportMetric(med("declared-process")/med("2.1.1-process"), "process-ratio")
	}
}

const (
	popBenchJobs = 30000
	popRounds    = 5
)

// popRun runs one round: a fresh keyspace, a producer client and a worker
// client of their own, jobs jobs pushed before (drain) or while
// (process) the worker runs; it returns jobs/s to the last completion.
func popRun(b testing.TB, srv *redistest.Server, legacy, process bool, jobs int) float64 {
	b.Helper()
	ctx := context.Background()
	if _, err := srv.Do("FLUSHALL"); err != nil {
		b.Fatal(err)
	}
	connect := func() *Client {
		c, err := Connect(ctx, Options{Redis: rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true}})
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	pc := connect()
	defer pc.Close()
	var completed atomic.Int64
	wc := connect()
	defer wc.Close()
	wq, _ := wc.Queue("bench")
	pq, _ := pc.Queue("bench")
	ids := make([]NewJob, jobs)
	for i := range ids {
		id, err := pc.Mint(WorkKind)
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = NewJob{ID: id, Payload: []byte("0123456789abcdef0123456789abcdef")}
	}
	if !process {
		for i := 0; i < len(ids); i += 500 {
			if _, err := pq.PushBatch(ctx, ids[i:min(i+500, len(ids))]); err != nil {
				b.Fatal(err)
			}
		}
	}
	w, err := NewWorker(wq, func(context.Context, Job) error { completed.Add(1); return nil }, WorkerOptions{Concurrency: 50})
	if err != nil {
		b.Fatal(err)
	}
	if legacy {
		w.pop = legacyPop{w}
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- w.Run(wctx) }()
	if process {
		var wg sync.WaitGroup
		var next atomic.Int64
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := next.Add(1) - 1; i < int64(len(ids)); i = next.Add(1) - 1 {
					if _, err := pq.Push(ctx, ids[i].ID, ids[i].Payload); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	for completed.Load() < int64(jobs) {
		time.Sleep(200 * time.Microsecond)
	}
	el := time.Since(start)
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	return float64(jobs) / el.Seconds()
}

// The declared path keeps the steady state at one script call per job: a
// drain of a backlog makes about as many EVALSHA as jobs (a completion
// leases the next head id in the same call) and reads the head (ZRANGE,
// pipelined behind a call) about once per Concurrency jobs.
func TestWorkerOneCallPerJob(t *testing.T) {
	srv := redistest.Start(t)
	const jobs = 5000
	if _, err := srv.Do("CONFIG", "RESETSTAT"); err != nil {
		t.Fatal(err)
	}
	popRun(t, srv, false, false, jobs)
	stats, err := srv.Do("INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	calls := func(cmd string) int {
		_, rest, ok := strings.Cut(stats, "cmdstat_"+cmd+":calls=")
		if !ok {
			return 0
		}
		n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
		return n
	}
	// The pushes are PushBatch's push_many calls, 500 jobs each; the
	// fence, the node lease and the maintenance add a few more.
	scripts, reads := calls("evalsha")+calls("eval"), calls("zrange")
	t.Logf("%d jobs: %d script calls, %d head reads", jobs, scripts, reads)
	if scripts > jobs*105/100+100 {
		t.Errorf("%d script calls for %d jobs; want about one per job", scripts, jobs)
	}
	if reads == 0 || reads > jobs/10 {
		t.Errorf("%d head reads for %d jobs; want some, about one per concurrency's worth of jobs", reads, jobs)
	}
}
