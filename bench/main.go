// Command bench measures the EchoMQ Go SDK against github.com/hibiken/asynq
// in one run, on one redis-server it starts itself:
//
//	cd bench && go run . [-quick] [-jobs N]
//
// It prints a table and writes results/latest.md, results/latest.json and
// ../docs/bench.svg (with -quick: results/quick.md, results/quick.json and
// results/quick.svg). See README.md.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
)

// config is one run's shape.
type config struct {
	Quick          bool
	Jobs           int
	Producers      int
	Concurrency    int
	Batch          int
	LatencySamples int
	LatencyBudget  time.Duration
	RSSJobs        int
	SampleEvery    time.Duration
	BenchRequests  int
	BenchClients   int
	Out            string // results directory
	Name           string // results base name: latest or quick
	Chart          string // SVG path
	Script         string // the generated push.lua
	SharedClient   bool   // the SDK worker shares the producers' client
	Runs           int    // runs of each throughput scenario per side
	Node           bool   // run the Node half (TypeScript SDK vs BullMQ) too
	NodeDir        string // bench/node
	NodeJobs       int    // jobs per throughput scenario of the Node half
	// The Python half: the Python SDK vs arq and RQ (bench/python).
	Python               bool
	PythonDir            string   // bench/python
	PythonSDKDir         string   // sdk/python, whose .venv runs the SDK side
	PythonSides          []string // of emq, arq, rq
	PythonJobs           int      // jobs per throughput scenario of the Python half
	PythonLatencySamples int
	PythonLatencyBudget  time.Duration
	RQWorkers            int // RQ worker processes
	// Schedulers is how many schedulers the scheduler scenario upserts (0:
	// the scenario is left out); SchedulersOnly runs it alone (-scenario
	// schedulers).
	Schedulers     int
	SchedulersOnly bool
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// run parses args, runs every scenario and writes the results. The
// redis-server it starts is stopped whatever happens.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "a small run for CI smoke use: 5,000 jobs, a 200,000-job resource run, well under a minute")
	jobs := fs.Int("jobs", 0, "jobs per throughput scenario (default 50,000; 5,000 with -quick)")
	producers := fs.Int("producers", 8, "producer goroutines")
	concurrency := fs.Int("concurrency", 50, "worker concurrency")
	batch := fs.Int("batch", 100, "jobs per PushBatch call")
	runs := fs.Int("runs", 0, "runs of each throughput scenario per side; the median run is reported (default 3; 1 with -quick)")
	rssJobs := fs.Int("rss-jobs", 0, "jobs of the RSS and goroutine run (default 1,000,000; 200,000 with -quick)")
	shared := fs.Bool("sdk-shared-client", false, "run the SDK's worker on its producers' client (default: a client of its own, as asynq's Server has)")
	out := fs.String("out", "results", "directory of the results files")
	chart := fs.String("chart", "", "path of the SVG chart (default ../docs/bench.svg; with -quick, <out>/quick.svg)")
	script := fs.String("script", filepath.Join("..", "sdk", "lua", "push.lua"), "the generated push.lua that redis-benchmark runs")
	nodeHalf := fs.Bool("node", true, "run the Node half too: the TypeScript SDK vs BullMQ on the same server (bench/node; -node=false measures Go only, and the report says so)")
	nodeJobs := fs.Int("node-jobs", 0, "jobs per throughput scenario of the Node half (default 20,000; 2,000 with -quick)")
	pythonHalf := fs.Bool("python", true, "run the Python half too: the Python SDK vs arq and RQ on the same server (bench/python; -python=false leaves it out, and the report says so)")
	pythonSides := fs.String("python-sides", "emq,arq,rq", "the sides of the Python half, of emq (the Python SDK, in sdk/python/.venv), arq, rq (in bench/python/.venv)")
	pythonJobs := fs.Int("python-jobs", 0, "jobs per throughput scenario of the Python half (default 10,000; 500 with -quick)")
	rqWorkers := fs.Int("rq-workers", 4, "RQ SimpleWorker processes in the Python half")
	render := fs.String("render", "", "render the Markdown file and the chart again from this results JSON, measuring nothing")
	schedulers := fs.Int("schedulers", -1, "schedulers of the scheduler scenario, due in the same second (default 10,000; 1,000 with -quick; 0 leaves the scenario out)")
	scenario := fs.String("scenario", "all", "all: every scenario; schedulers: only the scheduler scenario, its figures merged into the existing <out>/<name>.json (the other figures kept as measured) and the Markdown file rendered again")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg := &config{
		Quick: *quick, Jobs: 50_000, Producers: *producers, Concurrency: *concurrency, Batch: *batch,
		LatencySamples: 500, LatencyBudget: 60 * time.Second, RSSJobs: 1_000_000, SampleEvery: 100 * time.Millisecond,
		BenchRequests: 200_000, BenchClients: 50, Out: *out, Name: "latest", Chart: *chart, Script: *script,
		SharedClient: *shared, Runs: 3, Node: *nodeHalf, NodeDir: "node", NodeJobs: 20_000,
		Python: *pythonHalf, PythonDir: "python", PythonSDKDir: filepath.Join("..", "sdk", "python"), PythonJobs: 10_000,
		PythonLatencySamples: 500, PythonLatencyBudget: 20 * time.Second, RQWorkers: *rqWorkers,
		Schedulers: 10_000,
	}
	if cfg.Quick {
		cfg.Jobs, cfg.LatencySamples, cfg.LatencyBudget, cfg.RSSJobs, cfg.SampleEvery = 5_000, 100, 4*time.Second, 200_000, 50*time.Millisecond
		cfg.BenchRequests, cfg.Name, cfg.Runs, cfg.NodeJobs = 50_000, "quick", 1, 2_000
		cfg.PythonJobs, cfg.PythonLatencySamples, cfg.PythonLatencyBudget = 500, 30, 2*time.Second
		cfg.Schedulers = 1_000
	}
	if *schedulers >= 0 {
		cfg.Schedulers = *schedulers
	}
	switch *scenario {
	case "all":
	case "schedulers":
		cfg.SchedulersOnly = true
		if cfg.Schedulers == 0 {
			return errors.New("-scenario schedulers needs -schedulers above 0")
		}
	default:
		return fmt.Errorf("-scenario %q: all or schedulers", *scenario)
	}
	if *pythonJobs > 0 {
		cfg.PythonJobs = *pythonJobs
	}
	var err error
	if cfg.PythonSides, err = parsePySides(*pythonSides); err != nil {
		return err
	}
	if *nodeJobs > 0 {
		cfg.NodeJobs = *nodeJobs
	}
	if *runs > 0 {
		cfg.Runs = *runs
	}
	if *jobs > 0 {
		cfg.Jobs = *jobs
	}
	if *rssJobs > 0 {
		cfg.RSSJobs = *rssJobs
	}
	if cfg.Chart == "" {
		if cfg.Quick {
			cfg.Chart = filepath.Join(cfg.Out, "quick.svg")
		} else {
			cfg.Chart = filepath.Join("..", "docs", "bench.svg")
		}
	}
	if cfg.Producers < 1 || cfg.Concurrency < 1 || cfg.Batch < 1 || cfg.Jobs < cfg.Producers || cfg.RQWorkers < 1 {
		return errors.New("-producers, -concurrency, -batch and -rq-workers must be positive, and -jobs at least -producers")
	}
	if *render != "" {
		b, err := os.ReadFile(*render)
		if err != nil {
			return err
		}
		rep := new(Report)
		if err := json.Unmarshal(b, rep); err != nil {
			return fmt.Errorf("%s: %w", *render, err)
		}
		if s := rep.Schedulers; s != nil {
			// The scheduler rows and notes are built from its runs alone.
			s.Rows, s.Notes = schedRows(s), schedNotes(s)
		}
		if rep.Meta.Quick {
			cfg.Name = "quick"
			if *chart == "" {
				cfg.Chart = filepath.Join(cfg.Out, "quick.svg")
			}
		}
		writeTable(stdout, rep)
		return writeResults(cfg, rep, stdout)
	}
	cmdline := "cd bench && go run ."
	if len(args) > 0 {
		cmdline += " " + strings.Join(args, " ")
	}
	if cfg.SchedulersOnly {
		return runSchedulersOnly(ctx, cfg, cmdline, stdout, stderr)
	}
	rep, err := measure(ctx, cfg, cmdline, stderr)
	if err != nil {
		return err
	}
	writeTable(stdout, rep)
	return writeResults(cfg, rep, stdout)
}

// writeResults writes <out>/<name>.md, <out>/<name>.json and the chart.
func writeResults(cfg *config, rep *Report, stdout io.Writer) error {
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(cfg.Chart), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(cfg.Chart, []byte(renderChart(rep)), 0o644); err != nil {
		return err
	}
	mdPath := filepath.Join(cfg.Out, cfg.Name+".md")
	rel, err := filepath.Rel(cfg.Out, cfg.Chart)
	if err != nil {
		rel = cfg.Chart
	}
	f, err := os.Create(mdPath)
	if err != nil {
		return err
	}
	if err := writeMarkdown(f, rep, filepath.ToSlash(rel)); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	jsonPath := filepath.Join(cfg.Out, cfg.Name+".json")
	if err := writeJSON(jsonPath, rep); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nwrote %s, %s and %s\n", mdPath, jsonPath, cfg.Chart)
	return nil
}

// runSchedulersOnly is -scenario schedulers: the scheduler scenario alone,
// on a server of its own, printed, and merged into <out>/<name>.json when
// there is one (its other figures as they were measured; the Markdown file
// and the chart rendered again from it).
func runSchedulersOnly(ctx context.Context, cfg *config, cmdline string, stdout, stderr io.Writer) error {
	serverBin, _, err := lookBinaries()
	if err != nil {
		return err
	}
	srv, err := startServer(ctx, serverBin)
	if err != nil {
		return err
	}
	s, err := scenarioSchedulers(ctx, srv, cfg, cmdline, stderr)
	srv.Stop()
	if err != nil {
		return err
	}
	writeSchedTable(stdout, s)
	path := filepath.Join(cfg.Out, cfg.Name+".json")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(stdout, "\nno %s to merge the figures into (a full run writes it): printed only\n", path)
		return nil
	}
	if err != nil {
		return err
	}
	rep := new(Report)
	if err := json.Unmarshal(b, rep); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	rep.Schedulers = s
	return writeResults(cfg, rep, stdout)
}

// measures are the per-side figures of the throughput scenarios.
type measures struct {
	enqueueOne, enqueueBatch, drain, enqProc SidePair[Measure]
}

// measure starts the server, runs every scenario, and stops the server.
func measure(ctx context.Context, cfg *config, cmdline string, log io.Writer) (*Report, error) {
	serverBin, benchBin, err := lookBinaries()
	if err != nil {
		return nil, err
	}
	script, err := os.ReadFile(cfg.Script)
	if err != nil {
		return nil, fmt.Errorf("reading the generated push.lua (run from bench/, or pass -script): %w", err)
	}
	srv, err := startServer(ctx, serverBin)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	logf := func(format string, a ...any) { fmt.Fprintf(log, format+"\n", a...) }
	load := loadAvg()
	cpu0 := takeCPUSnap(srv.cmd.Process.Pid)

	rep := &Report{Meta: Meta{
		Date: time.Now().UTC().Format(time.RFC3339), Command: cmdline, Quick: cfg.Quick,
		Runs: cfg.Runs, Jobs: cfg.Jobs, Producers: cfg.Producers, Concurrency: cfg.Concurrency, Batch: cfg.Batch, RSSJobs: cfg.RSSJobs,
		RedisBenchmark: benchmarkVersion(benchBin), SDKVersion: emq.Version, SDKSharedClient: cfg.SharedClient,
	}}
	collectMeta(&rep.Meta)
	if rep.Meta.Redis, err = srv.Version(ctx); err != nil {
		return nil, err
	}
	logf("bench: redis-server %s on %s; %d jobs, %d producers, concurrency %d, GOMAXPROCS %d",
		rep.Meta.Redis, srv.Addr(), cfg.Jobs, cfg.Producers, cfg.Concurrency, runtime.GOMAXPROCS(0))

	// 9. The server's ceiling first, on a fresh server.
	rep.Ceiling = Ceiling{Requests: cfg.BenchRequests, Clients: cfg.BenchClients}
	for _, p := range []int{1, 16} {
		rps, cost, err := srv.evalshaCeiling(ctx, benchBin, string(script), cfg.BenchRequests, cfg.BenchClients, p)
		if err != nil {
			return nil, err
		}
		if p == 1 {
			rep.Ceiling.P1, rep.Ceiling.P1Cost = rps, cost
		} else {
			rep.Ceiling.P16, rep.Ceiling.P16Cost = rps, cost
		}
		logf("== redis-benchmark EVALSHA push.lua -c %d -P %d: %.0f req/s (Redis CPU %.2fs)", cfg.BenchClients, p, rps, cost.CPUSeconds)
	}

	sides := []side{&sdkSide{shared: cfg.SharedClient}, &asynqSide{}}
	var ms measures
	pair := func(name string, dst *SidePair[Measure], fn func(s side) (Measure, error)) error {
		for _, s := range sides {
			var runs []Measure
			for range cfg.Runs {
				m, err := fn(s)
				if err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
				runs = append(runs, m)
			}
			m := median(runs)
			if s.Name() == "sdk" {
				dst.SDK = m
			} else {
				dst.Asynq = m
			}
			logf("== %-26s %-5s %9.0f jobs/s  %6.2fs  Redis CPU %.2fs, %.1f µs/job, Σ %.1f usec/job; client %.1f µs/job, %.1f allocs/job; runs %s",
				name, s.Name(), m.JobsPerSec, m.Seconds, m.Server.CPUSeconds, m.Server.CPUPerJobUs, m.Server.UsecPerJob, m.ClientCPUPerJobUs, m.AllocsPerJob, fmtRuns(m.Runs))
		}
		rep.Costs = append(rep.Costs, CostRow{Scenario: name, SDK: &dst.SDK, Asynq: &dst.Asynq})
		return nil
	}
	steps := []struct {
		name string
		dst  *SidePair[Measure]
		fn   func(s side) (Measure, error)
	}{
		{"1. enqueue, one per call", &ms.enqueueOne, func(s side) (Measure, error) { return scenarioEnqueue(ctx, srv, s, cfg, false) }},
		{"2. enqueue, batched", &ms.enqueueBatch, func(s side) (Measure, error) { return scenarioEnqueue(ctx, srv, s, cfg, true) }},
		{"3. drain", &ms.drain, func(s side) (Measure, error) { return scenarioDrain(ctx, srv, s, cfg) }},
		{"4. enqueue and process", &ms.enqProc, func(s side) (Measure, error) { return scenarioEnqueueProcess(ctx, srv, s, cfg, cfg.Jobs) }},
	}
	for _, st := range steps {
		if err := pair(st.name, st.dst, st.fn); err != nil {
			return nil, err
		}
	}

	for _, s := range sides {
		l, err := scenarioLatency(ctx, srv, s, cfg)
		if err != nil {
			return nil, fmt.Errorf("5. latency: %w", err)
		}
		if s.Name() == "sdk" {
			rep.Latency.SDK = l
		} else {
			rep.Latency.Asynq = l
		}
		logf("== 5. idle latency            %-5s p50 %.2f ms, p99 %.2f ms, max %.2f ms over %d samples", s.Name(), l.P50Ms, l.P99Ms, l.MaxMs, l.Samples)
	}

	logf("== 8. resource run: %d jobs through the SDK, sampling RSS and goroutines every %v", cfg.RSSJobs, cfg.SampleEvery)
	if rep.Resources, err = scenarioResources(ctx, srv, &sdkSide{shared: cfg.SharedClient}, cfg, cfg.RSSJobs); err != nil {
		return nil, fmt.Errorf("8. resources: %w", err)
	}
	r := rep.Resources
	logf("== 8. resource run: %.0f jobs/s; RSS %.1f/%.1f/%.1f MiB (grows: %v); goroutines %.0f/%.0f/%.0f (grows: %v)",
		r.JobsPerSec, r.RSSMiB.Start, r.RSSMiB.Peak, r.RSSMiB.End, r.RSSMiB.Grows, r.Goroutines.Start, r.Goroutines.Peak, r.Goroutines.End, r.Goroutines.Grows)

	if cfg.Node {
		logf("== Node half: the TypeScript SDK vs BullMQ, %d jobs per scenario (bench/node)", cfg.NodeJobs)
		if err := srv.Reset(ctx); err != nil {
			return nil, err
		}
		if rep.Node, err = runNode(ctx, cfg, srv.Addr(), log); err != nil {
			return nil, err
		}
	}

	if cfg.Python {
		logf("== Python half: the Python SDK vs arq and RQ, %d jobs per scenario (bench/python; sides %s)", cfg.PythonJobs, strings.Join(cfg.PythonSides, ", "))
		if rep.Python, err = runPython(ctx, cfg, srv.Addr(), srv.Reset, log); err != nil {
			return nil, err
		}
	}

	if cfg.Schedulers > 0 {
		if rep.Schedulers, err = scenarioSchedulers(ctx, srv, cfg, cmdline, log); err != nil {
			return nil, err
		}
	}

	cpu1 := takeCPUSnap(srv.cmd.Process.Pid)
	rep.Meta.LoadAvgStart = load
	rep.Meta.WallSeconds = cpu1.at.Sub(cpu0.at).Seconds()
	rep.Meta.OtherCPUSeconds = others(cpu0, cpu1).Seconds()
	if share := rep.Meta.OtherCPUSeconds / (rep.Meta.WallSeconds * float64(rep.Meta.Cores)); share > 0.05 {
		logf("bench: warning: other processes used %.0f%% of the machine's CPU during the run; the figures are disturbed", 100*share)
	}

	rep.Rows = buildRows(rep, ms)
	rep.Notes = notes(cfg, rep)
	return rep, nil
}

func sharedNote(shared bool) string {
	if shared {
		return "With -sdk-shared-client the SDK's worker runs on its producers' emq.Client, while asynq's Server has its own connections."
	}
	return "Each side's worker has connections of its own, apart from its producers': asynq's Server its own pool, the SDK's worker its own emq.Client."
}

// median returns the run of median throughput, with every run's figure.
func median(runs []Measure) Measure {
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, func(a, b Measure) int { return cmp.Compare(a.JobsPerSec, b.JobsPerSec) })
	m := sorted[len(sorted)/2]
	m.Runs = nil
	for _, r := range runs {
		m.Runs = append(m.Runs, r.JobsPerSec)
	}
	return m
}

func fmtRuns(rs []float64) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%.0f", r)
	}
	return strings.Join(parts, ", ")
}

// notes explain how to read the figures.
func notes(cfg *config, rep *Report) []string {
	n := []string{
		fmt.Sprintf("Throughput scenarios (1-4) run %d time(s) per side; the table gives the run of median throughput, and the JSON every run's figure.", cfg.Runs),
		"Both sides run in this one process, one after the other, against the same redis-server with the same GOMAXPROCS; before each side of each scenario the server is flushed (FLUSHALL), the side connects afresh, and CONFIG RESETSTAT zeroes the command statistics.",
		fmt.Sprintf("Producers: %d goroutines sharing one client per side (SDK: one emq.Client, rueidis auto-pipelined; asynq: one asynq.Client on its go-redis pool). Workers: SDK emq.NewWorker, asynq asynq.Server, both at concurrency %d; handlers do nothing. %s", cfg.Producers, cfg.Concurrency, sharedNote(cfg.SharedClient)),
		"Enqueue one per call: SDK Queue.Push (admits and rings the doorbell), asynq Client.Enqueue. The SDK's pushes are coalesced, its default: concurrent Push calls on the client go out as push_many script calls, a batch sent as soon as none of the queue is in flight (linger 1 ms, at most 128 jobs), each caller answered on its own; rows 1 and 4 and the idle latency measure that path. The EVALSHA ceiling is redis-benchmark running the same generated push.lua with -c 50: the unpipelined (-P 1) figure for one per call, -P 16 for batched.",
		fmt.Sprintf("Batched: SDK Queue.PushBatch of %d jobs (push_many calls of up to 128 jobs, pipelined in one round trip); asynq has no batched enqueue, so its figure is one Enqueue per job, measured again.", cfg.Batch),
		"Drain: the queue is pre-filled (SDK PushBatch, asynq Enqueue), then timed from starting the worker to the last job handled; allocations per job are runtime.MemStats.Mallocs over that window divided by the jobs.",
		"Enqueue and process: the worker starts, then the producers enqueue one job per call; timed until the last job is handled. Redis server time per job is Σ usec over INFO commandstats divided by the jobs; Redis counts a script's nested commands both inside the script's usec and on their own, on both sides alike, so the INFO cpu figure (used_cpu_sys+used_cpu_user delta) is given too.",
		fmt.Sprintf("Idle latency: one job at a time, each enqueued 2-8 ms after the previous one was handled, carrying its enqueue wall time; up to %d samples or %v per side. asynq polls an empty queue every 0.5-1.5 s (TaskCheckInterval 1 s, its default), so it takes fewer samples in the budget; the SDK's worker blocks on the queue's doorbell.", cfg.LatencySamples, cfg.LatencyBudget),
		"Resources (SDK only): RSS (VmRSS) and runtime.NumGoroutine sampled through a long enqueue+process run; after a 10% warm-up, the mean of the last 20% of samples against the first 20%: RSS grows when it is over 10% and 4 MiB higher, goroutines when over 5% and 2 higher.",
		fmt.Sprintf("Redis shares the machine's %d cores with the benchmark process: the Redis CPU per job and the client CPU per job in the cost table bound what either side can reach.", rep.Meta.Cores),
	}
	if cfg.Node {
		n = append(n, fmt.Sprintf("Node half (TypeScript SDK vs BullMQ): node bench/node/bench.mjs against this same redis-server after the Go scenarios, flushed before each side of each scenario; %d jobs per throughput scenario, %d producers as concurrent async loops on one connection per side (TS: one connect() client, node-redis; BullMQ: one Queue on ioredis), workers at concurrency %d on connections of their own (TS: a Worker on its own client; BullMQ: a Worker with removeOnComplete), the same 64-byte payload, the same median-of-runs rule. Batched: queue.pushBatch vs Queue.addBulk of %d. Redis CPU per job is the INFO cpu delta over the enqueue+process window.", cfg.NodeJobs, cfg.Producers, cfg.Concurrency, cfg.Batch))
	}
	if cfg.Python {
		n = append(n, fmt.Sprintf("Python half (Python SDK vs arq and RQ): bench/python/bench.py, one process per scenario and side, the three sides of a scenario one after the other so that a load that drifts over the run disturbs them alike (each side in its own virtualenv: the SDK in sdk/python/.venv, the peers in bench/python/.venv from the hashed lock bench/python/requirements.lock), against this same redis-server after the Node half, flushed before each side of each scenario; %d jobs per throughput scenario, %d producers (asyncio tasks on one client for the SDK and arq, threads on one connection pool for RQ, which is synchronous), the same 64-byte payload, the same median-of-runs rule. Drain: the queue is pre-filled, the worker prepared (RQ: its processes started and connected), then timed from starting it to the last job handled.", cfg.PythonJobs, cfg.Producers))
	}
	if cfg.Quick {
		n = append(n, "This is a -quick run (CI smoke): too small for conclusions.")
	}
	return n
}
