package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// payloadBytes is the cargo of every no-op job of the throughput
// scenarios, and of the redis-benchmark requests.
var payloadBytes = []byte("no-op-job-payload-0123456789abcd")

// Measure is one side's figure in one scenario, with what the server and
// the client process spent on it.
type Measure struct {
	Jobs       int        `json:"jobs"`
	Seconds    float64    `json:"seconds"`
	JobsPerSec float64    `json:"jobs_per_sec"`
	Server     ServerCost `json:"server"`
	// ClientCPUPerJobUs is this process's user+system CPU per job
	// (getrusage), in microseconds.
	ClientCPUPerJobUs float64 `json:"client_cpu_per_job_us"`
	// AllocsPerJob is runtime.MemStats.Mallocs delta per job (drain only).
	AllocsPerJob float64 `json:"allocs_per_job,omitempty"`
	// Runs is every run's jobs/s when the scenario ran more than once; this
	// Measure is the median run.
	Runs []float64 `json:"runs_jobs_per_sec,omitempty"`
}

// window measures one side's scenario: wall time, the server's cost, this
// process's CPU and (optionally) its allocations.
type window struct {
	srv    *server
	meter  *serverMeter
	start  time.Time
	cpu    time.Duration
	allocs uint64
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

func openWindow(ctx context.Context, srv *server) (*window, error) {
	runtime.GC()
	m, err := srv.meter(ctx)
	if err != nil {
		return nil, err
	}
	w := &window{srv: srv, meter: m, allocs: mallocs(), cpu: processCPU()}
	w.start = time.Now()
	return w, nil
}

// close ends the window after jobs jobs.
func (w *window) close(ctx context.Context, jobs int) (Measure, error) {
	elapsed := time.Since(w.start)
	allocs := mallocs() - w.allocs
	cpu := processCPU() - w.cpu
	cost, err := w.meter.done(ctx, jobs)
	if err != nil {
		return Measure{}, err
	}
	return Measure{
		Jobs:              jobs,
		Seconds:           elapsed.Seconds(),
		JobsPerSec:        float64(jobs) / elapsed.Seconds(),
		Server:            cost,
		ClientCPUPerJobUs: float64(cpu.Microseconds()) / float64(jobs),
		AllocsPerJob:      float64(allocs) / float64(jobs),
	}, nil
}

// produce runs producers goroutines that together call fn for indexes
// [0, n) in chunks of size chunk (fn gets the chunk's start and length).
func produce(ctx context.Context, n, producers, chunk int, fn func(ctx context.Context, start, count int) error) error {
	var next atomic.Int64
	errs := make(chan error, producers)
	var wg sync.WaitGroup
	for range producers {
		wg.Go(func() {
			for {
				start := int(next.Add(int64(chunk))) - chunk
				if start >= n {
					return
				}
				count := min(chunk, n-start)
				if err := fn(ctx, start, count); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// counter counts handled jobs and closes done at the target.
type counter struct {
	n      atomic.Int64
	target int64
	done   chan struct{}
	once   sync.Once
}

func newCounter(target int) *counter {
	return &counter{target: int64(target), done: make(chan struct{})}
}

func (c *counter) handle([]byte) {
	if c.n.Add(1) == c.target {
		c.once.Do(func() { close(c.done) })
	}
}

// wait waits for the target, failing after timeout.
func (c *counter) wait(ctx context.Context, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return fmt.Errorf("only %d of %d jobs processed after %v", c.n.Load(), c.target, timeout)
	}
}

// processTimeout bounds a processing wait: generous, so that only a hung
// worker trips it.
func processTimeout(jobs int) time.Duration {
	return 2*time.Minute + time.Duration(jobs)*time.Millisecond
}

// session opens s on a flushed server for one scenario and closes it
// after fn.
func session(ctx context.Context, srv *server, s side, cfg *config, fn func() error) error {
	if err := srv.Reset(ctx); err != nil {
		return err
	}
	if err := s.Open(ctx, srv.Addr(), cfg.Concurrency); err != nil {
		return fmt.Errorf("%s: open: %w", s.Name(), err)
	}
	defer s.Close()
	if err := fn(); err != nil {
		return fmt.Errorf("%s: %w", s.Name(), err)
	}
	return nil
}

func enqueueFn(s side, batched bool) func(ctx context.Context, start, count int) error {
	if !batched {
		return func(ctx context.Context, start, count int) error {
			for range count {
				if err := s.Enqueue(ctx, payloadBytes); err != nil {
					return err
				}
			}
			return nil
		}
	}
	return func(ctx context.Context, start, count int) error {
		ps := make([][]byte, count)
		for i := range ps {
			ps[i] = payloadBytes
		}
		return s.EnqueueBatch(ctx, ps)
	}
}

// scenarioEnqueue: jobs enqueued by cfg.Producers goroutines, one job per
// call or in batches of cfg.Batch.
func scenarioEnqueue(ctx context.Context, srv *server, s side, cfg *config, batched bool) (m Measure, err error) {
	chunk := 64
	if batched {
		chunk = cfg.Batch
	}
	err = session(ctx, srv, s, cfg, func() error {
		w, err := openWindow(ctx, srv)
		if err != nil {
			return err
		}
		if err := produce(ctx, cfg.Jobs, cfg.Producers, chunk, enqueueFn(s, batched)); err != nil {
			return err
		}
		m, err = w.close(ctx, cfg.Jobs)
		return err
	})
	return m, err
}

// scenarioDrain: a pre-filled queue of cfg.Jobs, from worker start to
// every job processed. Allocations per job are this window's.
func scenarioDrain(ctx context.Context, srv *server, s side, cfg *config) (m Measure, err error) {
	err = session(ctx, srv, s, cfg, func() error {
		// Pre-fill the fastest way each side has.
		chunk := 64
		if s.Batched() {
			chunk = cfg.Batch
		}
		if err := produce(ctx, cfg.Jobs, cfg.Producers, chunk, enqueueFn(s, s.Batched())); err != nil {
			return fmt.Errorf("pre-fill: %w", err)
		}
		c := newCounter(cfg.Jobs)
		w, err := openWindow(ctx, srv)
		if err != nil {
			return err
		}
		stop, err := s.StartWorker(ctx, c.handle)
		if err != nil {
			return err
		}
		werr := c.wait(ctx, processTimeout(cfg.Jobs))
		if werr == nil {
			m, werr = w.close(ctx, cfg.Jobs)
		}
		return errors.Join(werr, stop())
	})
	return m, err
}

// scenarioEnqueueProcess: a worker and cfg.Producers one-per-call
// producers at once, from start to every job processed.
func scenarioEnqueueProcess(ctx context.Context, srv *server, s side, cfg *config, jobs int) (m Measure, err error) {
	err = session(ctx, srv, s, cfg, func() error {
		m, err = scenarioEnqueueProcessOpen(ctx, srv, s, cfg, jobs)
		return err
	})
	return m, err
}

// Latency is enqueue-to-handler-start on an idle worker.
type Latency struct {
	Samples int     `json:"samples"`
	P50Ms   float64 `json:"p50_ms"`
	P99Ms   float64 `json:"p99_ms"`
	MaxMs   float64 `json:"max_ms"`
	MeanMs  float64 `json:"mean_ms"`
	Budget  string  `json:"budget"` // the time budget that bounded the sampling
}

// scenarioLatency enqueues one job at a time, each only once the previous
// one reached its handler and a random 2-8 ms passed, so the worker is
// idle and blocked (or sleeping between polls) when each job arrives. The
// payload carries the enqueue wall time. It stops after cfg.LatencySamples
// samples or cfg.LatencyBudget, whichever comes first.
func scenarioLatency(ctx context.Context, srv *server, s side, cfg *config) (l Latency, err error) {
	err = session(ctx, srv, s, cfg, func() error {
		got := make(chan time.Duration, 1)
		stop, err := s.StartWorker(ctx, func(p []byte) {
			sent, err := strconv.ParseInt(string(p), 10, 64)
			if err != nil {
				return
			}
			select {
			case got <- time.Duration(time.Now().UnixNano() - sent):
			default:
			}
		})
		if err != nil {
			return err
		}
		// Let the worker reach its idle wait.
		serr := sleepCtx(ctx, 300*time.Millisecond)
		var ds []time.Duration
		start := time.Now()
		for serr == nil && len(ds) < cfg.LatencySamples && time.Since(start) < cfg.LatencyBudget {
			if serr = sleepCtx(ctx, time.Duration(2000+rand.IntN(6000))*time.Microsecond); serr != nil {
				break
			}
			p := strconv.AppendInt(nil, time.Now().UnixNano(), 10)
			if serr = s.Enqueue(ctx, p); serr != nil {
				break
			}
			select {
			case d := <-got:
				ds = append(ds, d)
			case <-time.After(30 * time.Second):
				serr = errors.New("a latency sample was not handled within 30s")
			case <-ctx.Done():
				serr = ctx.Err()
			}
		}
		if serr == nil && len(ds) == 0 {
			serr = errors.New("no latency sample")
		}
		if serr == nil {
			l = summarize(ds)
			l.Budget = fmt.Sprintf("%d samples or %v", cfg.LatencySamples, cfg.LatencyBudget)
		}
		return errors.Join(serr, stop())
	})
	return l, err
}

func summarize(ds []time.Duration) Latency {
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	q := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(ds)))) - 1
		return ms(ds[max(0, min(i, len(ds)-1))])
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return Latency{Samples: len(ds), P50Ms: q(0.50), P99Ms: q(0.99), MaxMs: ms(ds[len(ds)-1]), MeanMs: ms(sum / time.Duration(len(ds)))}
}

// Resources is RSS and goroutine count sampled across a long enqueue and
// process run.
type Resources struct {
	Jobs          int     `json:"jobs"`
	Seconds       float64 `json:"seconds"`
	JobsPerSec    float64 `json:"jobs_per_sec"`
	Samples       int     `json:"samples"`
	Every         string  `json:"every"`
	WarmupSamples int     `json:"warmup_samples"`
	RSSMiB        Triple  `json:"rss_mib"`
	Goroutines    Triple  `json:"goroutines"`
}

// Triple is start, peak and end of a sampled series, with the means of the
// first and last 20% of the samples after warm-up and the verdict.
type Triple struct {
	Start   float64 `json:"start"`
	Peak    float64 `json:"peak"`
	End     float64 `json:"end"`
	First20 float64 `json:"first20_mean"`
	Last20  float64 `json:"last20_mean"`
	Grows   bool    `json:"grows"`
}

func vmRSS() (float64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			if err != nil {
				return 0, fmt.Errorf("VmRSS: %w", err)
			}
			return kb / 1024, nil
		}
	}
	return 0, errors.New("no VmRSS in /proc/self/status")
}

// triple computes a series' start, peak, end and its growth: the mean of
// the last 20% of the samples after warm-up against the first 20%. It
// grows when the last is above the first by more than rel and abs.
func triple(xs []float64, warmup int, rel, abs float64) Triple {
	t := Triple{Start: xs[0], End: xs[len(xs)-1], Peak: slices.Max(xs)}
	rest := xs[min(warmup, len(xs)-1):]
	k := max(1, len(rest)/5)
	mean := func(v []float64) float64 {
		s := 0.0
		for _, x := range v {
			s += x
		}
		return s / float64(len(v))
	}
	t.First20, t.Last20 = mean(rest[:k]), mean(rest[len(rest)-k:])
	t.Grows = t.Last20 > t.First20*(1+rel) && t.Last20-t.First20 > abs
	return t
}

// scenarioResources runs the SDK's enqueue and process over jobs jobs while
// sampling RSS and goroutines every cfg.SampleEvery.
func scenarioResources(ctx context.Context, srv *server, s side, cfg *config, jobs int) (r Resources, err error) {
	var rss []float64
	var gor []float64
	sample := func() error {
		v, err := vmRSS()
		if err != nil {
			return err
		}
		rss = append(rss, v)
		gor = append(gor, float64(runtime.NumGoroutine()))
		return nil
	}
	stopSampler := make(chan struct{})
	var samplerDone sync.WaitGroup
	var samplerErr error
	err = session(ctx, srv, s, cfg, func() error {
		if err := sample(); err != nil {
			return err
		}
		samplerDone.Go(func() {
			t := time.NewTicker(cfg.SampleEvery)
			defer t.Stop()
			for {
				select {
				case <-stopSampler:
					return
				case <-t.C:
					if err := sample(); err != nil {
						samplerErr = err
						return
					}
				}
			}
		})
		m, err := scenarioEnqueueProcessOpen(ctx, srv, s, cfg, jobs)
		close(stopSampler)
		samplerDone.Wait()
		if err != nil {
			return err
		}
		if samplerErr != nil {
			return samplerErr
		}
		if err := sample(); err != nil {
			return err
		}
		r.Jobs, r.Seconds, r.JobsPerSec = jobs, m.Seconds, m.JobsPerSec
		return nil
	})
	if err != nil {
		return r, err
	}
	r.Samples, r.Every = len(rss), cfg.SampleEvery.String()
	r.WarmupSamples = len(rss) / 10
	r.RSSMiB = triple(rss, r.WarmupSamples, 0.10, 4)
	r.Goroutines = triple(gor, r.WarmupSamples, 0.05, 2)
	return r, nil
}

// scenarioEnqueueProcessOpen is scenarioEnqueueProcess on a side already
// open.
func scenarioEnqueueProcessOpen(ctx context.Context, srv *server, s side, cfg *config, jobs int) (m Measure, err error) {
	c := newCounter(jobs)
	w, err := openWindow(ctx, srv)
	if err != nil {
		return m, err
	}
	stop, err := s.StartWorker(ctx, c.handle)
	if err != nil {
		return m, err
	}
	perr := produce(ctx, jobs, cfg.Producers, 64, enqueueFn(s, false))
	if perr == nil {
		perr = c.wait(ctx, processTimeout(jobs))
	}
	if perr == nil {
		m, perr = w.close(ctx, jobs)
	}
	return m, errors.Join(perr, stop())
}
