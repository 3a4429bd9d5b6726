package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/redis/rueidis"
)

// The scheduler scenario (issue 20's target for echomq 2.6.0's job
// schedulers): N interval schedulers due in the same server second, every
// run enqueued once within 1 s, with three scheduler runners — the Go
// SDK's, the TypeScript SDK's and the Python SDK's, one process each —
// competing; and the same with the Go runner alone, as the baseline.

// schedQueue is the queue the scheduler scenario's schedulers live on.
const schedQueue = "bench-sched"

// Runner names, as the report lists them.
const (
	runnerGo     = "go"
	runnerTS     = "ts"
	runnerPython = "python"
)

// runnerLabel is a runner's name in the tables.
var runnerLabel = map[string]string{runnerGo: "Go", runnerTS: "TS", runnerPython: "Python"}

// schedEvery is every scheduler's interval: one slot in the window.
const schedEvery = time.Hour

// schedSampleEvery is the pause between two samples of the pending set.
const schedSampleEvery = 2 * time.Millisecond

// schedUpserters is how many goroutines upsert the schedulers (one client,
// auto-pipelined).
const schedUpserters = 16

// SchedulersReport is the scheduler scenario: every run of the Go runner
// alone and of the competing runners, the rows built from their medians,
// and where, when and how it was measured (a -scenario schedulers run
// merges it into an existing report, so it carries its own date).
type SchedulersReport struct {
	Date       string            `json:"date"`
	Command    string            `json:"command"`
	Redis      string            `json:"redis"`
	LoadAvg    string            `json:"loadavg_start"` // uptime's 1, 5 and 15 minute load averages
	Schedulers int               `json:"schedulers"`
	EveryMs    int64             `json:"every_ms"`
	PollMs     int64             `json:"poll_ms"`
	HorizonMs  int64             `json:"horizon_ms"`
	SampleMs   float64           `json:"sample_every_ms"`
	Runners    []string          `json:"runners"` // of the competing runs
	Versions   map[string]string `json:"versions"`
	Runs       int               `json:"runs"`
	Alone      []SchedRun        `json:"alone"`
	Competing  []SchedRun        `json:"competing"`
	Rows       []SchedRow        `json:"rows"`
	Notes      []string          `json:"notes"`
}

// SchedRun is one run of the scenario.
type SchedRun struct {
	Runners    []string `json:"runners"`
	Schedulers int      `json:"schedulers"`
	TMs        int64    `json:"t_ms"` // the slot every scheduler starts at (server clock)
	// LeadMs is how far ahead of T the schedulers were chosen to start;
	// ReadyBeforeTMs how long before T the runners were all started.
	LeadMs         int64   `json:"lead_ms"`
	ReadyBeforeTMs int64   `json:"ready_before_t_ms"`
	UpsertSeconds  float64 `json:"upsert_seconds"`
	// FirstMs and AllMs: from T to the first sample of the pending set
	// holding one run, and all of them (server clock, TIME pipelined after
	// ZCARD); Seconds is AllMs in seconds.
	FirstMs float64 `json:"first_ms"`
	AllMs   float64 `json:"all_ms"`
	Seconds float64 `json:"seconds"`
	Met     bool    `json:"met"` // Seconds ≤ 1
	// At1s is how many runs existed at the last sample within 1 s of T.
	At1s    int `json:"at_1s"`
	Samples int `json:"samples"`
	// What the queue and the schedulers' records hold once the runners
	// stopped.
	Pending       int   `json:"pending"`
	Scheduled     int   `json:"scheduled"`
	SchedulerRuns int64 `json:"scheduler_runs"` // Σ of the records' run counts
	Duplicates    int   `json:"duplicates"`
	Missing       int   `json:"missing"`
	// Fired is each runner's count of the runs it fired, as it reported
	// them (Go OnFire, TypeScript onFired, Python fire_due's return);
	// ByNode counts the pending runs by the snowflake node of their ids,
	// each runner's client's node.
	Fired  map[string]int `json:"fired"`
	Ticks  map[string]int `json:"ticks_that_fired"`
	ByNode map[string]int `json:"by_node"`
	// ServerCPUSeconds is the server's CPU from the end of the upserts to
	// the last run (the runners' due reads, the firings, the sampling).
	ServerCPUSeconds float64 `json:"server_cpu_seconds"`
	LoadAvg          string  `json:"loadavg"` // at the run's start
	// WindowSeconds is the wall time from the upserts' end to the runners'
	// stop; OtherCPUSeconds what processes other than the benchmark, its
	// runners and its redis-server used meanwhile (all cores).
	WindowSeconds   float64 `json:"window_seconds"`
	OtherCPUSeconds float64 `json:"other_processes_cpu_seconds"`
	OtherCPUShare   float64 `json:"other_processes_cpu_share"` // of the machine's cores over the window
}

// SchedRow is one line of the scheduler table: the competing runners'
// figure beside the Go runner's alone.
type SchedRow struct {
	Key           string  `json:"key"`
	Scenario      string  `json:"scenario"`
	Unit          string  `json:"unit"`
	Better        string  `json:"better"`
	Competing     float64 `json:"competing"`
	CompetingText string  `json:"competing_text,omitempty"`
	Alone         float64 `json:"alone"`
	AloneText     string  `json:"alone_text,omitempty"`
	Ratio         float64 `json:"ratio,omitempty"` // competing ÷ alone
	Target        string  `json:"target,omitempty"`
	Met           *bool   `json:"met,omitempty"`
	Load          string  `json:"load"` // the 1-minute load average at the two median runs
	Note          string  `json:"note,omitempty"`
}

// loadAvg3 is uptime's load average: the 1, 5 and 15 minute figures.
func loadAvg3() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], ", ")
}

// schedRunners are the competing runners of the configuration: Go always,
// TypeScript with the Node half, Python with the Python SDK's side.
func schedRunners(cfg *config) []string {
	rs := []string{runnerGo}
	if cfg.Node {
		rs = append(rs, runnerTS)
	}
	if cfg.Python && contains(cfg.PythonSides, "emq") {
		rs = append(rs, runnerPython)
	}
	return rs
}

// scenarioSchedulers runs cfg.Runs rounds, each the Go runner alone and
// then the competing runners, on the server, flushed before each run. A
// run with a duplicate or a missing run fails the scenario; one slower
// than 1 s is reported as missed.
func scenarioSchedulers(ctx context.Context, srv *server, cfg *config, cmdline string, log io.Writer) (*SchedulersReport, error) {
	log = &lockedWriter{w: log} // the runner processes' stderr and this log, at once
	logf := func(format string, a ...any) { fmt.Fprintf(log, format+"\n", a...) }
	rep := &SchedulersReport{
		Date: time.Now().UTC().Format(time.RFC3339), Command: cmdline, LoadAvg: loadAvg3(),
		Schedulers: cfg.Schedulers, EveryMs: schedEvery.Milliseconds(), PollMs: emq.DefaultSchedulerPoll.Milliseconds(),
		SampleMs: float64(schedSampleEvery) / float64(time.Millisecond), Runners: schedRunners(cfg),
		Versions: map[string]string{}, Runs: cfg.Runs,
	}
	var err error
	if rep.Redis, err = srv.Version(ctx); err != nil {
		return nil, err
	}
	logf("== S. schedulers: %d interval schedulers due in one server second, the Go runner alone, then %s competing; %d round(s)",
		cfg.Schedulers, strings.Join(labels(rep.Runners), " + "), cfg.Runs)
	for i := range cfg.Runs {
		for _, runners := range [][]string{{runnerGo}, rep.Runners} {
			r, err := schedRun(ctx, srv, cfg, runners, rep.Versions, log, logf)
			if err != nil {
				return nil, fmt.Errorf("S. schedulers, round %d, %s: %w", i+1, strings.Join(labels(runners), " + "), err)
			}
			if len(runners) == 1 {
				rep.Alone = append(rep.Alone, r)
			} else {
				rep.Competing = append(rep.Competing, r)
			}
		}
	}
	rep.Rows = schedRows(rep)
	rep.Notes = schedNotes(rep)
	return rep, nil
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func labels(runners []string) []string {
	out := make([]string, len(runners))
	for i, r := range runners {
		out[i] = runnerLabel[r]
	}
	return out
}

// errLead means the upserts ended too close to the slot they were given:
// the run is made again, further ahead.
var errLead = errors.New("the upserts ended too close to T")

// schedRun makes one run, again with twice the lead when the upserts did
// not end well before T (a loaded machine), up to 3 times.
func schedRun(ctx context.Context, srv *server, cfg *config, runners []string, versions map[string]string, log io.Writer, logf func(string, ...any)) (SchedRun, error) {
	lead := 1500*time.Millisecond + time.Duration(cfg.Schedulers)*250*time.Microsecond
	for attempt := 1; ; attempt++ {
		r, err := schedAttempt(ctx, srv, cfg, runners, lead, versions, log, logf)
		if errors.Is(err, errLead) && attempt < 3 {
			logf("   %v; again with a lead of %v", err, 2*lead)
			lead *= 2
			continue
		}
		return r, err
	}
}

// schedRunner is one started runner.
type schedRunner interface {
	Name() string
	// Node is the snowflake node of the runner's client.
	Node() int
	// Pid is the runner's process, 0 for one in this process.
	Pid() int
	// Stop stops the runner and returns how many runs it fired, in how
	// many ticks.
	Stop() (fired, ticks int, err error)
}

// schedAttempt is one run: flush, start the runners, upsert the
// schedulers at a slot T ahead, sample the pending set until it holds
// every run, let the runners go on a little (a late duplicate would show),
// stop them and check what the queue and the records hold.
func schedAttempt(ctx context.Context, srv *server, cfg *config, runnerNames []string, lead time.Duration, versions map[string]string, log io.Writer, logf func(string, ...any)) (r SchedRun, err error) {
	n := cfg.Schedulers
	r = SchedRun{Runners: runnerNames, Schedulers: n, LeadMs: lead.Milliseconds(), LoadAvg: loadAvg3()}
	if err := srv.Reset(ctx); err != nil {
		return r, err
	}
	c, q, err := connectQueue(ctx, srv.Addr(), schedQueue)
	if err != nil {
		return r, err
	}
	defer c.Close()
	keys := q.Keys()

	// The runners, each ready (its client connected, its runner started)
	// before T is chosen.
	var runners []schedRunner
	stopAll := func() error {
		var errs []error
		for _, rn := range runners {
			if _, _, err := rn.Stop(); err != nil {
				errs = append(errs, err)
			}
		}
		runners = nil
		return errors.Join(errs...)
	}
	defer func() {
		if len(runners) > 0 {
			err = errors.Join(err, stopAll())
		}
	}()
	starts := make([]func() (schedRunner, error), 0, len(runnerNames))
	for _, name := range runnerNames {
		switch name {
		case runnerGo:
			starts = append(starts, func() (schedRunner, error) { return startGoRunner(ctx, srv.Addr(), versions) })
		case runnerTS:
			starts = append(starts, func() (schedRunner, error) { return startNodeRunner(ctx, cfg, srv.Addr(), versions, log) })
		case runnerPython:
			starts = append(starts, func() (schedRunner, error) { return startPythonRunner(ctx, cfg, srv.Addr(), versions, log) })
		}
	}
	started := make([]schedRunner, len(starts))
	errs := make([]error, len(starts))
	var wg sync.WaitGroup
	for i, start := range starts {
		wg.Go(func() { started[i], errs[i] = start() })
	}
	wg.Wait()
	for _, rn := range started {
		if rn != nil {
			runners = append(runners, rn)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return r, err
	}
	nodes := map[int]string{}
	for _, rn := range runners {
		if prev, dup := nodes[rn.Node()]; dup || rn.Node() < 0 {
			return r, fmt.Errorf("runners %s and %s hold node %d", prev, rn.Name(), rn.Node())
		}
		nodes[rn.Node()] = rn.Name()
	}

	ready, err := serverMs(ctx, srv)
	if err != nil {
		return r, err
	}
	t := (ready+lead.Milliseconds())/1000*1000 + 1000 // a whole server second at least lead ahead
	r.TMs = t
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("s%05d", i)
	}
	u0 := time.Now()
	sched := emq.Schedule{Every: schedEvery, Start: time.UnixMilli(t)}
	err = produce(ctx, n, schedUpserters, 50, func(ctx context.Context, start, count int) error {
		for i := start; i < start+count; i++ {
			up, err := q.UpsertScheduler(ctx, ids[i], sched, emq.WithMissed(emq.MissedRunOnce))
			if err != nil {
				return err
			}
			if !up.Created || up.Next.UnixMilli() != t {
				return fmt.Errorf("upsert %s: %+v, want created with next %d", ids[i], up, t)
			}
		}
		return nil
	})
	if err != nil {
		return r, fmt.Errorf("upserting the schedulers: %w", err)
	}
	r.UpsertSeconds = time.Since(u0).Seconds()
	upserted, err := serverMs(ctx, srv)
	if err != nil {
		return r, err
	}
	r.ReadyBeforeTMs = t - ready
	if t-upserted < 250 {
		return r, fmt.Errorf("%w (%d schedulers upserted in %.2fs, %d ms before T)", errLead, n, r.UpsertSeconds, t-upserted)
	}
	meter, err := srv.meter(ctx)
	if err != nil {
		return r, err
	}
	snap0 := takeRunSnap(srv, runners)

	// Sample the pending set (its key from the generated key builder) and
	// the server's clock, in one round trip, until it holds every run.
	deadline := t + 60_000 + int64(n)
	for {
		count, now, err := sampleZCard(ctx, srv, keys.Pending)
		if err != nil {
			return r, err
		}
		r.Samples++
		if count > 0 && r.FirstMs == 0 {
			if now < float64(t) {
				return r, fmt.Errorf("%d runs pending %.1f ms before T: a runner with horizon 0 fired early", count, float64(t)-now)
			}
			r.FirstMs = now - float64(t)
		}
		if now <= float64(t)+1000 {
			r.At1s = count
		}
		if count >= n {
			r.AllMs = now - float64(t)
			break
		}
		if now > float64(deadline) {
			r.AllMs = now - float64(t)
			logf("   only %d of %d runs pending %.1f s after T", count, n, r.AllMs/1000)
			break
		}
		if err := sleepCtx(ctx, schedSampleEvery); err != nil {
			return r, err
		}
	}
	cost, err := meter.done(ctx, n)
	if err != nil {
		return r, err
	}
	r.ServerCPUSeconds = cost.CPUSeconds
	r.Seconds = r.AllMs / 1000
	r.Met = r.Seconds <= 1

	// The runners go on for three polls (a late firing would show), then
	// stop and report.
	if err := sleepCtx(ctx, 3*emq.DefaultSchedulerPoll); err != nil {
		return r, err
	}
	snap1 := takeRunSnap(srv, runners)
	r.WindowSeconds = snap1.at.Sub(snap0.at).Seconds()
	r.OtherCPUSeconds = max(snap1.busy-snap0.busy-(snap1.ours-snap0.ours), 0).Seconds()
	if r.WindowSeconds > 0 {
		r.OtherCPUShare = r.OtherCPUSeconds / (r.WindowSeconds * float64(runtime.NumCPU()))
	}
	r.Fired, r.Ticks = map[string]int{}, map[string]int{}
	for _, rn := range runners {
		fired, ticks, err := rn.Stop()
		if err != nil {
			return r, fmt.Errorf("%s runner: %w", rn.Name(), err)
		}
		r.Fired[rn.Name()], r.Ticks[rn.Name()] = fired, ticks
	}
	runners = nil
	if err := checkSchedRun(ctx, srv, q, ids, nodes, &r); err != nil {
		return r, err
	}
	fired := make([]string, 0, len(runnerNames))
	for _, name := range runnerNames {
		fired = append(fired, fmt.Sprintf("%s %d", runnerLabel[name], r.Fired[name]))
	}
	verdict := "within 1 s"
	if !r.Met {
		verdict = "MISSED the 1 s target"
	}
	logf("== S. schedulers %-19s T → all %d runs %.3f s (%s; first %.0f ms, %d at 1 s); fired %s; 0 duplicates, 0 missing; Redis CPU %.2fs; load %s, other processes %.0f%% of the CPU",
		strings.Join(labels(runnerNames), "+"), n, r.Seconds, verdict, r.FirstMs, r.At1s, strings.Join(fired, ", "), r.ServerCPUSeconds, r.LoadAvg, 100*otherShare(r))
	return r, nil
}

// runSnap is the machine's busy CPU time and the share of it the run's
// own processes account for: this one, the runner processes, the server.
type runSnap struct {
	at   time.Time
	busy time.Duration
	ours time.Duration
}

func takeRunSnap(srv *server, runners []schedRunner) runSnap {
	s := runSnap{at: time.Now(), busy: machineBusy(), ours: processCPU() + pidCPU(srv.cmd.Process.Pid)}
	for _, rn := range runners {
		if pid := rn.Pid(); pid > 0 {
			s.ours += pidCPU(pid)
		}
	}
	return s
}

// otherShare is the share of the machine's CPU other processes used in a
// run's window.
func otherShare(r SchedRun) float64 { return r.OtherCPUShare }

// checkSchedRun reads what the run left: every run pending (none
// scheduled), one per scheduler, each scheduler's record fired once at T
// with its last run among the pending ones, the runners' counts adding up
// and matching the nodes of the run ids. A duplicate or a missing run is
// an error.
func checkSchedRun(ctx context.Context, srv *server, q *emq.Queue, ids []string, nodes map[int]string, r *SchedRun) error {
	n := len(ids)
	keys := q.Keys()
	members, err := srv.admin.Do(ctx, srv.admin.B().Zrange().Key(keys.Pending).Min("0").Max("-1").Build()).AsStrSlice()
	if err != nil {
		return err
	}
	scheduled, err := srv.admin.Do(ctx, srv.admin.B().Zcard().Key(keys.Schedule).Build()).AsInt64()
	if err != nil {
		return err
	}
	r.Pending, r.Scheduled = len(members), int(scheduled)
	pending := make(map[string]bool, len(members))
	r.ByNode = map[string]int{}
	for _, m := range members {
		pending[m] = true
		id, err := emq.ParseID(m)
		if err != nil {
			return fmt.Errorf("pending member %q: %w", m, err)
		}
		name, ok := nodes[id.Node()]
		if !ok {
			return fmt.Errorf("run %s was minted on node %d, no runner's", m, id.Node())
		}
		r.ByNode[name]++
	}
	var dupScheds, missScheds int
	var problems []string
	for i := 0; i < n; i += 1000 {
		recs, err := q.Schedulers(ctx, ids[i:min(i+1000, n)]...)
		if err != nil {
			return err
		}
		for j, rec := range recs {
			id := ids[i+j]
			switch {
			case !rec.Found() || rec.Runs == 0:
				missScheds++
				continue
			case rec.Runs > 1:
				dupScheds += int(rec.Runs - 1)
			}
			r.SchedulerRuns += rec.Runs
			if rec.LastSlot.UnixMilli() != r.TMs || rec.Next.UnixMilli() != r.TMs+schedEvery.Milliseconds() || !pending[rec.LastID.String()] {
				if len(problems) < 5 {
					problems = append(problems, fmt.Sprintf("%s: last slot %d, next %d, last run %s (pending %v)", id, rec.LastSlot.UnixMilli(), rec.Next.UnixMilli(), rec.LastID, pending[rec.LastID.String()]))
				}
			}
		}
	}
	jobs := r.Pending + r.Scheduled
	r.Duplicates = max(dupScheds, jobs-n, 0)
	r.Missing = max(missScheds, n-jobs, 0)
	total := 0
	for name, f := range r.Fired {
		total += f
		if r.ByNode[name] != f {
			problems = append(problems, fmt.Sprintf("the %s runner reported %d runs fired, %d pending runs carry its node", name, f, r.ByNode[name]))
		}
	}
	if total != n {
		problems = append(problems, fmt.Sprintf("the runners reported %d runs fired in all", total))
	}
	if r.Scheduled != 0 {
		problems = append(problems, fmt.Sprintf("%d runs scheduled, not pending", r.Scheduled))
	}
	if r.Duplicates > 0 || r.Missing > 0 || len(problems) > 0 {
		return fmt.Errorf("%d schedulers, %d runs (%d pending, %d scheduled), Σ runs of the records %d: %d duplicates, %d missing; %s",
			n, jobs, r.Pending, r.Scheduled, r.SchedulerRuns, r.Duplicates, r.Missing, strings.Join(problems, "; "))
	}
	return nil
}

// connectQueue connects a client of its own and opens queue on it.
func connectQueue(ctx context.Context, addr, queue string) (*emq.Client, *emq.Queue, error) {
	c, _, err := sdkConnect(ctx, addr)
	if err != nil {
		return nil, nil, err
	}
	q, err := c.Queue(queue)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, q, nil
}

// serverMs is the server's clock (TIME) in milliseconds.
func serverMs(ctx context.Context, srv *server) (int64, error) {
	_, now, err := sampleZCard(ctx, srv, "")
	return int64(now), err
}

// sampleZCard reads ZCARD key (unless key is "") and TIME in one round
// trip: the count and the server's clock just after it, in milliseconds.
func sampleZCard(ctx context.Context, srv *server, key string) (int, float64, error) {
	a := srv.admin
	cmds := []rueidis.Completed{a.B().Time().Build()}
	if key != "" {
		cmds = []rueidis.Completed{a.B().Zcard().Key(key).Build(), a.B().Time().Build()}
	}
	res := a.DoMulti(ctx, cmds...)
	count := int64(0)
	if key != "" {
		var err error
		if count, err = res[0].AsInt64(); err != nil {
			return 0, 0, err
		}
	}
	tm, err := res[len(res)-1].AsStrSlice()
	if err != nil {
		return 0, 0, err
	}
	if len(tm) != 2 {
		return 0, 0, fmt.Errorf("TIME answered %q", tm)
	}
	var sec, usec int64
	if _, err := fmt.Sscan(tm[0], &sec); err != nil {
		return 0, 0, fmt.Errorf("TIME: %w", err)
	}
	if _, err := fmt.Sscan(tm[1], &usec); err != nil {
		return 0, 0, fmt.Errorf("TIME: %w", err)
	}
	return int(count), float64(sec*1000) + float64(usec)/1000, nil
}

// goRunner is the Go SDK's Queue.RunSchedulers in this process, on a
// client of its own, with the default options but OnFire.
type goRunner struct {
	c      *emq.Client
	node   int
	cancel context.CancelFunc
	done   chan error
	fired  atomic.Int64
	ticks  atomic.Int64
	once   sync.Once
	res    [2]int
	err    error
}

func startGoRunner(ctx context.Context, addr string, versions map[string]string) (schedRunner, error) {
	c, q, err := connectQueue(ctx, addr, schedQueue)
	if err != nil {
		return nil, err
	}
	g := &goRunner{c: c, node: c.Node(), done: make(chan error, 1)}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	g.cancel = cancel
	go func() {
		g.done <- q.RunSchedulers(rctx, emq.SchedulerOptions{OnFire: func(runs []emq.FiredRun) {
			g.fired.Add(int64(len(runs)))
			g.ticks.Add(1)
		}})
	}()
	versions[runnerGo] = fmt.Sprintf("github.com/echomq/echomq/sdk/go/emq (protocol %s), Queue.RunSchedulers in the benchmark process", emq.Version)
	return g, nil
}

func (g *goRunner) Name() string { return runnerGo }
func (g *goRunner) Node() int    { return g.node }
func (g *goRunner) Pid() int     { return 0 }

func (g *goRunner) Stop() (int, int, error) {
	g.once.Do(func() {
		g.cancel()
		g.err = <-g.done
		g.c.Close()
		g.res = [2]int{int(g.fired.Load()), int(g.ticks.Load())}
	})
	return g.res[0], g.res[1], g.err
}

// procRunner is a runner in a process of its own (bench/node's
// scheduler-side.mjs, bench/python's scheduler_side.py): it prints a JSON
// line when started, and another with its counts once its stdin ends.
type procRunner struct {
	name  string
	node  int
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines *bufio.Scanner
	once  sync.Once
	res   [2]int
	err   error
}

// procReady and procDone are the two lines a runner process prints.
type procReady struct {
	Ready   bool   `json:"ready"`
	Node    int    `json:"node"`
	Version string `json:"version"`
}

type procDone struct {
	Fired *int `json:"fired"`
	Ticks int  `json:"ticks"`
}

// startProc starts cmd, its stderr to log, and waits (30 s at most) for
// its ready line.
func startProc(name string, cmd *exec.Cmd, versions map[string]string, log io.Writer) (schedRunner, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s runner: %w", name, err)
	}
	p := &procRunner{name: name, cmd: cmd, stdin: stdin, lines: bufio.NewScanner(stdout)}
	got := make(chan error, 1)
	var ready procReady
	go func() {
		if !p.lines.Scan() {
			got <- fmt.Errorf("%s runner ended before it was ready: %v", name, p.lines.Err())
			return
		}
		if err := json.Unmarshal(p.lines.Bytes(), &ready); err != nil || !ready.Ready {
			got <- fmt.Errorf("%s runner printed %q, not its ready line", name, p.lines.Text())
			return
		}
		got <- nil
	}()
	select {
	case err = <-got:
	case <-time.After(30 * time.Second):
		err = fmt.Errorf("%s runner not ready within 30 s", name)
	}
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	p.node = ready.Node
	versions[name] = ready.Version
	return p, nil
}

func (p *procRunner) Name() string { return p.name }
func (p *procRunner) Node() int    { return p.node }
func (p *procRunner) Pid() int     { return p.cmd.Process.Pid }

func (p *procRunner) Stop() (int, int, error) {
	p.once.Do(func() {
		p.stdin.Close()
		got := make(chan error, 1)
		var done procDone
		go func() {
			if !p.lines.Scan() {
				got <- fmt.Errorf("%s runner ended without its counts: %v", p.name, p.lines.Err())
				return
			}
			if err := json.Unmarshal(p.lines.Bytes(), &done); err != nil || done.Fired == nil {
				got <- fmt.Errorf("%s runner printed %q, not its counts", p.name, p.lines.Text())
				return
			}
			got <- nil
		}()
		select {
		case p.err = <-got:
		case <-time.After(30 * time.Second):
			p.err = fmt.Errorf("%s runner did not stop within 30 s", p.name)
			_ = p.cmd.Process.Kill()
		}
		if err := p.cmd.Wait(); err != nil && p.err == nil {
			p.err = fmt.Errorf("%s runner: %w", p.name, err)
		}
		if p.err == nil {
			p.res = [2]int{*done.Fired, done.Ticks}
		}
	})
	return p.res[0], p.res[1], p.err
}

// startNodeRunner starts the TypeScript SDK's runner (bench/node).
func startNodeRunner(ctx context.Context, cfg *config, addr string, versions map[string]string, log io.Writer) (schedRunner, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, errors.New(hintNode)
	}
	if need := filepath.Join(cfg.NodeDir, "node_modules", "@echomq", "sdk"); !exists(need) {
		return nil, fmt.Errorf("%s is missing: %s", need, hintNode)
	}
	cmd := exec.CommandContext(ctx, node, "scheduler-side.mjs", "--addr", addr, "--queue", schedQueue)
	cmd.Dir = cfg.NodeDir
	return startProc(runnerTS, cmd, versions, log)
}

// startPythonRunner starts the Python SDK's runner (bench/python, in the
// SDK's virtualenv, the SDK from its source tree as the bench's SDK side
// runs it).
func startPythonRunner(ctx context.Context, cfg *config, addr string, versions map[string]string, log io.Writer) (schedRunner, error) {
	py, err := filepath.Abs(pyInterpreter(cfg, "emq"))
	if err != nil {
		return nil, err
	}
	if !exists(py) {
		return nil, fmt.Errorf("%s is missing: %s", py, hintPython)
	}
	src, err := filepath.Abs(filepath.Join(cfg.PythonSDKDir, "src"))
	if err != nil {
		return nil, err
	}
	if !exists(filepath.Join(src, "echomq", "__init__.py")) {
		return nil, fmt.Errorf("%s has no echomq package: %s", src, hintPython)
	}
	cmd := exec.CommandContext(ctx, py, "scheduler_side.py", "--addr", addr, "--queue", schedQueue)
	cmd.Dir = cfg.PythonDir
	cmd.Env = append(os.Environ(), "PYTHONPATH="+src)
	return startProc(runnerPython, cmd, versions, log)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// medianRun is the run of median time.
func medianRun(runs []SchedRun) SchedRun {
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, func(a, b SchedRun) int { return cmp.Compare(a.Seconds, b.Seconds) })
	return sorted[len(sorted)/2]
}

func firstLoad(s string) string {
	f, _, _ := strings.Cut(s, ",")
	return f
}

// firedText is "Go 4,120 · TS 3,050 · Python 2,830".
func firedText(r SchedRun) string {
	parts := make([]string, len(r.Runners))
	for i, name := range r.Runners {
		parts[i] = runnerLabel[name] + " " + commas(int64(r.Fired[name]))
	}
	return strings.Join(parts, " · ")
}

func metCount(runs []SchedRun) int {
	n := 0
	for _, r := range runs {
		if r.Met {
			n++
		}
	}
	return n
}

func secondsList(runs []SchedRun) string {
	parts := make([]string, len(runs))
	for i, r := range runs {
		parts[i] = fmt.Sprintf("%.3f", r.Seconds)
	}
	return strings.Join(parts, ", ")
}

// schedRows builds the table from the median runs.
func schedRows(rep *SchedulersReport) []SchedRow {
	if len(rep.Alone) == 0 || len(rep.Competing) == 0 {
		return nil
	}
	a, c := medianRun(rep.Alone), medianRun(rep.Competing)
	load := fmt.Sprintf("%s / %s", firstLoad(c.LoadAvg), firstLoad(a.LoadAvg))
	if oc, oa := otherShare(c), otherShare(a); oc > 0.05 || oa > 0.05 {
		load += fmt.Sprintf(" (other processes %.0f%% / %.0f%% of the CPU)", 100*oc, 100*oa)
	}
	n := commas(int64(rep.Schedulers))
	var rows []SchedRow
	all := SchedRow{Key: "sched_all", Scenario: fmt.Sprintf("S1. %s schedulers due in one second: T → every run enqueued", n), Unit: "s", Better: "lower",
		Competing: c.Seconds, Alone: a.Seconds, Target: "≤ 1 s, competing", Met: met(c.Met), Load: load,
		Note: fmt.Sprintf("server clock, the pending set sampled every %.0f ms; every run, in round order: competing %s, alone %s; within 1 s: %d of %d competing runs, %d of %d alone",
			rep.SampleMs, secondsList(rep.Competing), secondsList(rep.Alone), metCount(rep.Competing), len(rep.Competing), metCount(rep.Alone), len(rep.Alone))}
	all.Ratio = ratio(all.Competing, all.Alone)
	rows = append(rows, all)
	first := SchedRow{Key: "sched_first", Scenario: "S2. T → the first run enqueued", Unit: "ms", Better: "lower",
		Competing: c.FirstMs, Alone: a.FirstMs, Load: load, Note: fmt.Sprintf("the runners poll every %d ms, each at its own phase", rep.PollMs)}
	first.Ratio = ratio(first.Competing, first.Alone)
	rows = append(rows, first)
	firing := SchedRow{Key: "sched_firing", Scenario: "S2b. the first run → every run enqueued", Unit: "ms", Better: "lower",
		Competing: c.AllMs - c.FirstMs, Alone: a.AllMs - a.FirstMs, Load: load, Note: "S1 less S2: the firing itself, without the wait for a poll"}
	firing.Ratio = ratio(firing.Competing, firing.Alone)
	rows = append(rows, firing)
	at1 := SchedRow{Key: "sched_at_1s", Scenario: "S3. runs enqueued 1 s after T", Unit: "runs", Better: "higher",
		Competing: float64(c.At1s), Alone: float64(a.At1s), Load: load}
	at1.Ratio = ratio(at1.Competing, at1.Alone)
	rows = append(rows, at1)
	exact := func(runs []SchedRun) string {
		var dup, miss, jobs int
		for _, r := range runs {
			dup, miss = dup+r.Duplicates, miss+r.Missing
			jobs = max(jobs, r.Pending+r.Scheduled)
		}
		return fmt.Sprintf("%s / %d / %d", commas(int64(jobs)), dup, miss)
	}
	rows = append(rows, SchedRow{Key: "sched_exact", Scenario: "S4. runs enqueued / duplicates / missing, every run", Unit: "runs", Better: "none",
		CompetingText: exact(rep.Competing), AloneText: exact(rep.Alone), Target: n + " / 0 / 0", Met: met(true), Load: load,
		Note: "ZCARD of the pending set, every scheduler's record (Queue.Schedulers: 1 run, at T, next T + 1 h, its last run pending), the runners' counts and the run ids' nodes agree; a duplicate or a missing run fails the benchmark"})
	rows = append(rows, SchedRow{Key: "sched_fired", Scenario: "S5. runs fired by each runner", Unit: "runs", Better: "none",
		CompetingText: firedText(c), AloneText: firedText(a), Load: load,
		Note: "as each runner reported them (Go OnFire, TS onFired, Python fire_due's return), equal to the pending runs minted on its client's node"})
	cpu := SchedRow{Key: "sched_server_cpu", Scenario: "S6. Redis CPU per run, from the upserts' end to the last run", Unit: "µs/run", Better: "lower",
		Competing: c.ServerCPUSeconds * 1e6 / float64(rep.Schedulers), Alone: a.ServerCPUSeconds * 1e6 / float64(rep.Schedulers), Load: load,
		Note: "INFO cpu: the runners' due reads before and after T, the firings, the sampling"}
	cpu.Ratio = ratio(cpu.Competing, cpu.Alone)
	rows = append(rows, cpu)
	return rows
}

func schedNotes(rep *SchedulersReport) []string {
	return []string{
		fmt.Sprintf("Each run: FLUSHALL; the runners started (each its own client, its runner with the defaults: poll %d ms, horizon 0, pages of 100) and ready; then T, a whole second of the server's clock (TIME) at least 1.5 s + 0.25 ms per scheduler ahead, and %s interval schedulers upserted on queue %s (every %s ms from start T, missed run_once) by %d goroutines of one Go client; the run is made again further ahead if the upserts end less than 250 ms before T.",
			rep.PollMs, commas(int64(rep.Schedulers)), schedQueue, commas(rep.EveryMs), schedUpserters),
		fmt.Sprintf("Timed on the server's clock: ZCARD of the queue's pending set (the key from the generated key builder) and TIME in one round trip every %.0f ms, from T to the first sample holding every run. The runners then go on for three polls, are stopped (Go: the context; TS: AbortSignal; Python: the stop Event) and report their counts; nothing consumes the runs.", rep.SampleMs),
		fmt.Sprintf("Runners: Go Queue.RunSchedulers in the benchmark process; TS Queue.runSchedulers in node (bench/node/scheduler-side.mjs); Python Queue.run_schedulers in the Python SDK's virtualenv (bench/python/scheduler_side.py; run_schedulers has no on-fire callback, so the side counts through the queue's fire_due, which the runner calls each tick). %d round(s), each the Go runner alone, then %s competing; the table gives the run of median time of each, the JSON every run.",
			rep.Runs, strings.Join(labels(rep.Runners), " + ")),
		"A run slower than 1 s is reported as missed (met: missed), not failed; a duplicate or a missing run fails the benchmark. The load column is the 1-minute load average at the start of the median competing / alone run (the runners, Redis and the sampler themselves load the machine's cores), with the share of the CPU other processes used in those runs when it is over 5%; every run's is in the table above.",
	}
}

func (r SchedRow) competingCell() string {
	if r.CompetingText != "" {
		return r.CompetingText
	}
	return fmtNum(r.Competing)
}

func (r SchedRow) aloneCell() string {
	if r.AloneText != "" {
		return r.AloneText
	}
	return fmtNum(r.Alone)
}

// schedMetCell says "missed" for the time target, as the scenario reports
// a slow run: missed, not failed.
func schedMetCell(m *bool) string {
	switch {
	case m == nil:
		return ""
	case *m:
		return "yes"
	default:
		return "**missed**"
	}
}

// writeSchedTable prints the scheduler scenario's rows.
func writeSchedTable(w io.Writer, s *SchedulersReport) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "\nJob schedulers: %s due in the same second, %s competing vs the Go runner alone (load average %s at the start):\n",
		commas(int64(s.Schedulers)), strings.Join(labels(s.Runners), " + "), s.LoadAvg)
	for _, r := range s.Rows {
		fmt.Fprintf(w, "  %-62s %-6s competing %22s  alone %12s  %8s  %s %s  load %s\n", r.Scenario, r.Unit, r.competingCell(), r.aloneCell(),
			fmtRatio(r.Ratio), r.Target, strings.Trim(schedMetCell(r.Met), "*"), r.Load)
	}
}

// writeSchedMarkdown renders the scheduler scenario's section.
func writeSchedMarkdown(w io.Writer, s *SchedulersReport) {
	if s == nil {
		fmt.Fprintf(w, "\nThe scheduler scenario was not run (-schedulers 0).\n")
		return
	}
	fmt.Fprintf(w, "\n## Job schedulers: %s due in the same second (echomq 2.6.0)\n\n", commas(int64(s.Schedulers)))
	fmt.Fprintf(w, "Measured by `%s` on %s, on a redis-server %s of its own; load average %s (1, 5, 15 min) at the start. ", s.Command, s.Date, s.Redis, s.LoadAvg)
	fmt.Fprintf(w, "Target (issue 20): every run enqueued once within 1 s of the slot, with %s competing, one process each; the Go runner alone is the baseline, in the same run. Competing/alone is the competing figure ÷ the alone one.\n\n", strings.Join(labels(s.Runners), " + "))
	fmt.Fprintf(w, "| scenario | unit | better | %s competing | Go alone | competing/alone | target | met | load (1 min, competing / alone) | note |\n", strings.Join(labels(s.Runners), " + "))
	fmt.Fprintf(w, "|---|---|---|--:|--:|--:|---|---|---|---|\n")
	for _, r := range s.Rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Scenario, r.Unit, r.Better, r.competingCell(), r.aloneCell(),
			fmtRatio(r.Ratio), r.Target, schedMetCell(r.Met), r.Load, r.Note)
	}
	fmt.Fprintf(w, "\nEvery run, the Go runner alone first (the rounds alternated: alone, competing, alone, …):\n\n| runners | T → all runs, s | T → first, ms | at T + 1 s | runs | duplicates | missing | fired | upserts, s | ready before T, ms | Redis CPU, s | load | other processes' CPU |\n")
	fmt.Fprintf(w, "|---|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|---|--:|\n")
	for _, runs := range [][]SchedRun{s.Alone, s.Competing} {
		for _, r := range runs {
			fmt.Fprintf(w, "| %s | %.3f | %.1f | %s | %s | %d | %d | %s | %.2f | %d | %.2f | %s | %.0f%% |\n", strings.Join(labels(r.Runners), " + "), r.Seconds, r.FirstMs,
				commas(int64(r.At1s)), commas(int64(r.Pending+r.Scheduled)), r.Duplicates, r.Missing, firedText(r), r.UpsertSeconds, r.ReadyBeforeTMs, r.ServerCPUSeconds, r.LoadAvg, 100*otherShare(r))
		}
	}
	fmt.Fprintf(w, "\n")
	for _, name := range []string{runnerGo, runnerTS, runnerPython} {
		if v, ok := s.Versions[name]; ok {
			fmt.Fprintf(w, "- %s runner: %s\n", runnerLabel[name], v)
		}
	}
	for _, n := range s.Notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
}
