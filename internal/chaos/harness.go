package chaos

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// queueName is the queue every single-node scenario loads.
const queueName = "chaos"

// plan is one single-node load with faults: a redis-server, producers in
// the harness process, worker processes, the invariant checker, and a
// fault injector.
type plan struct {
	name      string  // the scenario's name (its directory)
	jobs      int     // jobs to push
	rate      float64 // pushes per second, in all
	producers int
	batch     int
	workers   int // worker processes
	worker    WorkerConfig
	// workerLangs are the languages of the worker processes, in turn
	// (none: all Go).
	workerLangs []Lang
	// producerLangs, when set, runs one producer per language, each with
	// an even share of the jobs, the rate and the producer goroutines;
	// none runs one Go producer.
	producerLangs []Lang
	serverArgs    []string
	// cluster runs the load on a Redis Cluster of three primaries
	// (redistest.NewCluster) instead of one redis-server; serverArgs then
	// go to every node.
	cluster    bool
	checkEvery time.Duration
	drain      time.Duration // the longest wait for the queue to drain once the load is pushed
	// faults injects faults while the load runs. It returns once the
	// producers are done (r.loadDone) and it injected what it must; it
	// must leave the server and the workers running.
	faults func(ctx context.Context, r *run) error
	// before, when set, runs once the worker processes started and before
	// the producers push anything: a scenario's setup of the queue (a
	// policy the whole load runs under, say). An error ends the run.
	before func(ctx context.Context, r *run) error
	// afterDrain, when set, runs once the queue drained, while the worker
	// processes still run (their maintenance too) and before they are
	// stopped: a scenario's own end-of-run checks. An error ends the run.
	afterDrain func(ctx context.Context, r *run) error
	// pushOptions, when set, are the options of the Go producer's pushes
	// (Queue.PushBatchWith): a job's own retry policy, say.
	pushOptions []emq.PushOption
	// dedupKeys, when set, gives each job of the Go producer a
	// deduplication key of its own (Producer.DedupKeys).
	dedupKeys bool
}

// run is the state of one plan's run, shared with its fault injector.
type run struct {
	cfg    Config
	plan   *plan
	seed   uint64
	rng    *rand.Rand
	dir    string
	srv    *redistest.Server  // the server; nil on a cluster
	cl     *redistest.Cluster // the cluster of a plan with cluster set; nil otherwise
	client *emq.Client
	queue  *emq.Queue
	tally  *emq.Tally
	acks   *AckLog
	chk    *Checker
	pool   *Pool
	// drivers are the other languages' SDK clients (driver processes) of
	// a plan with producers of those languages, by language.
	drivers map[Lang]*sdkDriver
	// loadDone is closed when the producers are done.
	loadDone chan struct{}

	mu         sync.Mutex
	origin     map[string]Lang   // the language of the producer that pushed each id, with producerLangs
	cancelled  map[string]string // ids cancel_ids cancelled, to the state each was cancelled from
	counts     map[string]int64
	violations []string
	notes      []string
}

// logf reports progress.
func (r *run) logf(format string, args ...any) {
	if r.cfg.Log != nil {
		r.cfg.Log("%s: "+format, append([]any{r.plan.name}, args...)...)
	}
}

// count adds n to the harness count name.
func (r *run) count(name string, n int64) {
	r.mu.Lock()
	r.counts[name] += n
	r.mu.Unlock()
}

// get returns the harness count name.
func (r *run) get(name string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[name]
}

// violate records a breach the harness itself found.
func (r *run) violate(format string, args ...any) {
	r.mu.Lock()
	r.violations = append(r.violations, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// note adds a line to the result's notes.
func (r *run) note(format string, args ...any) {
	r.mu.Lock()
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// loading reports whether the producers are still pushing.
func (r *run) loading() bool {
	select {
	case <-r.loadDone:
		return false
	default:
		return true
	}
}

// pickSeed returns cfg.Seed, or a fresh seed when it is 0.
func pickSeed(cfg Config) uint64 {
	if cfg.Seed != 0 {
		return cfg.Seed
	}
	return rand.Uint64()>>1 | 1
}

// streamSeed derives a scenario's random stream from the run's seed, so
// that each scenario's schedule depends only on the seed and its name.
func streamSeed(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// outcome is what a plan's run hands its scenario to write the Result.
type outcome struct {
	run     *run
	verdict Verdict
	ledger  *Ledger
	stats   ProducerStats
	took    time.Duration
}

// execute runs p to completion: load, faults, drain, verdict. Every
// process it starts is killed before it returns, on every path.
func execute(ctx context.Context, cfg Config, p *plan) (*outcome, error) {
	start := time.Now()
	r := &run{cfg: cfg, plan: p, seed: pickSeed(cfg), counts: map[string]int64{}, origin: map[string]Lang{}, loadDone: make(chan struct{})}
	r.rng = rand.New(rand.NewPCG(r.seed, streamSeed(p.name)))
	base := cfg.Dir
	if base == "" {
		d, err := os.MkdirTemp("", "emqchaos-")
		if err != nil {
			return nil, err
		}
		base = d
		defer os.RemoveAll(d)
	}
	r.dir = filepath.Join(base, p.name)
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return nil, err
	}
	r.logf("seed %d, scratch %s", r.seed, r.dir)

	var addrs []string
	if p.cluster {
		cl, err := redistest.NewCluster(filepath.Join(r.dir, "cluster"), redistest.WithNodeArgs(p.serverArgs...))
		if err != nil {
			return nil, err
		}
		r.cl = cl
		defer cl.Close()
		addrs = cl.Addrs()
	} else {
		srv, err := redistest.StartServer(redistest.WithDir(filepath.Join(r.dir, "redis")), redistest.WithArgs(p.serverArgs...))
		if err != nil {
			return nil, err
		}
		r.srv = srv
		defer srv.Close()
		addrs = []string{srv.Addr()}
	}

	logf, err := os.Create(filepath.Join(r.dir, "harness.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	r.tally = &emq.Tally{}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	r.client, err = emq.Connect(cctx, emq.Options{
		Redis:   rueidis.ClientOption{InitAddress: addrs, DisableCache: true},
		Metrics: r.tally,
		Logger:  slog.New(slog.NewTextHandler(logf, nil)),
	})
	cancel()
	if err != nil {
		return nil, err
	}
	defer r.client.Close()
	if r.queue, err = r.client.Queue(queueName); err != nil {
		return nil, err
	}
	if r.acks, err = NewAckLog(filepath.Join(r.dir, "acked.log")); err != nil {
		return nil, err
	}
	defer r.acks.Close()

	if r.chk, err = NewChecker(addrs, r.queue.Keys()); err != nil {
		return nil, err
	}
	defer r.chk.Close()
	r.chk.Annotate = func(id string) string {
		if r.acks.RePushed(id) {
			return "a producer pushed this id again after a failed push"
		}
		return ""
	}
	chkCtx, stopChk := context.WithCancel(ctx)
	var chkDone sync.WaitGroup
	chkDone.Add(1)
	go func() {
		defer chkDone.Done()
		r.chk.Run(chkCtx, p.checkEvery)
	}()
	defer func() { stopChk(); chkDone.Wait() }()

	wcfg := p.worker
	wcfg.Addrs, wcfg.Queue, wcfg.Seed, wcfg.Classes = addrs, queueName, r.seed, wire.Classes()
	if r.pool, err = NewPool(wcfg, filepath.Join(r.dir, "workers"), r.logf); err != nil {
		return nil, err
	}
	defer r.pool.Close()
	if len(p.workerLangs) > 0 {
		if err := r.pool.SetLangs(p.workerLangs...); err != nil {
			return nil, err
		}
	}
	if err := r.pool.Start(p.workers); err != nil {
		return nil, err
	}
	if p.before != nil {
		if err := p.before(ctx, r); err != nil {
			return nil, fmt.Errorf("chaos: %s: before the load: %w", p.name, err)
		}
	}
	prods, err := r.producers(ctx, addrs)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, d := range r.drivers {
			d.Close()
		}
	}()

	// The producers and the fault injector use the server and the pool:
	// they are stopped and waited for before anything is closed.
	loadCtx, stopLoad := context.WithCancel(ctx)
	var loaders sync.WaitGroup
	defer func() { stopLoad(); loaders.Wait() }()
	var stats ProducerStats
	loaders.Add(2)
	go func() {
		defer loaders.Done()
		defer close(r.loadDone)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, prod := range prods {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := prod.Run(loadCtx)
				mu.Lock()
				stats.Pushed, stats.Retries, stats.GaveUp = stats.Pushed+s.Pushed, stats.Retries+s.Retries, stats.GaveUp+s.GaveUp
				mu.Unlock()
			}()
		}
		wg.Wait()
	}()
	faultErr := make(chan error, 1)
	go func() {
		defer loaders.Done()
		faultErr <- p.faults(loadCtx, r)
	}()
	progressCtx, stopProgress := context.WithCancel(ctx)
	defer stopProgress()
	go r.progress(progressCtx)

	select {
	case <-r.loadDone:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var ferr error
	select {
	case ferr = <-faultErr:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if ferr != nil {
		return nil, fmt.Errorf("chaos: %s: injecting faults: %w", p.name, ferr)
	}
	r.logf("load pushed: %d acknowledged; draining", r.acks.Len())
	if err := r.drain(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		r.violate("the queue did not drain: %v", err)
	}
	if p.afterDrain != nil {
		if err := p.afterDrain(ctx, r); err != nil {
			return nil, fmt.Errorf("chaos: %s: after the drain: %w", p.name, err)
		}
	}
	stopProgress()
	if killed := r.pool.Stop(15 * time.Second); killed > 0 {
		r.note("%d worker processes did not drain within 15s and were killed", killed)
	}
	stopChk()
	chkDone.Wait()
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := r.chk.Pass(fctx); err != nil {
		return nil, fmt.Errorf("chaos: %s: the final check: %w", p.name, err)
	}
	final, err := r.chk.Final(fctx)
	if err != nil {
		return nil, err
	}
	ledger, err := ReadLedger(r.pool.Records())
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	for id, from := range r.cancelled {
		ledger.Cancelled[id] = from
	}
	r.mu.Unlock()
	v := Judge(r.acks.IDs(), ledger, final, r.chk.MaxAttempts())
	return &outcome{run: r, verdict: v, ledger: ledger, stats: stats, took: time.Since(start)}, nil
}

// producers makes the plan's producers: one Go producer, or one per
// language of producerLangs (a TypeScript or Python one pushes through a
// driver process of its language, started here and kept in r.drivers).
func (r *run) producers(ctx context.Context, addrs []string) ([]*Producer, error) {
	p := r.plan
	if len(p.producerLangs) == 0 {
		return []*Producer{{Queue: r.queue, Client: r.client, Acks: r.acks, Jobs: p.jobs, Rate: p.rate,
			Producers: p.producers, Batch: p.batch, Log: r.logf}}, nil
	}
	n := len(p.producerLangs)
	var out []*Producer
	for i, lang := range p.producerLangs {
		jobs := p.jobs / n
		if i < p.jobs%n {
			jobs++
		}
		prod := &Producer{Queue: r.queue, Client: r.client, Acks: r.acks, Jobs: jobs, Rate: p.rate / float64(n), Options: p.pushOptions, DedupKeys: p.dedupKeys,
			Producers: max(1, p.producers/n), Batch: p.batch, Log: r.logf}
		prod.OnAck = func(id string) {
			r.mu.Lock()
			r.origin[id] = lang
			r.mu.Unlock()
		}
		switch lang {
		case LangGo:
		case LangTS, LangPy, LangOld, LangPrev, LangPrev24, LangPrev25, LangPrev26, LangPrev27:
			d, err := r.driver(ctx, lang, addrs)
			if err != nil {
				return nil, err
			}
			prod.MintIDs = d.Mint
			prod.PushBatch = func(ctx context.Context, jobs []emq.NewJob) error {
				return d.PushBatch(ctx, queueName, jobs)
			}
		default:
			return nil, fmt.Errorf("chaos: no producer for language %q", lang)
		}
		out = append(out, prod)
	}
	return out, nil
}

// driver returns the run's driver of lang, starting it (connected to addr,
// its stderr in <lang>-driver.log) on first use.
func (r *run) driver(ctx context.Context, lang Lang, addrs []string) (*sdkDriver, error) {
	if d := r.drivers[lang]; d != nil {
		return d, nil
	}
	d, err := startDriver(ctx, lang, addrs, filepath.Join(r.dir, string(lang)+"-driver.log"))
	if err != nil {
		return nil, err
	}
	if r.drivers == nil {
		r.drivers = map[Lang]*sdkDriver{}
	}
	r.drivers[lang] = d
	return d, nil
}

// progress logs the run's figures every few seconds.
func (r *run) progress(ctx context.Context) {
	t := time.NewTicker(3 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		sizes, err := r.queue.Sizes(sctx)
		cancel()
		s := "sizes unavailable"
		if err == nil {
			s = fmt.Sprintf("pending %d, active %d, schedule %d, dead %d",
				sizes[emq.SetPending], sizes[emq.SetActive], sizes[emq.SetSchedule], sizes[emq.SetDead])
		}
		r.mu.Lock()
		var faults []string
		for _, k := range sortedKeys(r.counts) {
			faults = append(faults, fmt.Sprintf("%s %d", k, r.counts[k]))
		}
		r.mu.Unlock()
		r.logf("acknowledged %d/%d; %s; %s", r.acks.Len(), r.plan.jobs, s, strings.Join(faults, ", "))
	}
}

// drain waits until nothing is pending, active or scheduled, twice in a
// row, for up to the plan's drain time.
func (r *run) drain(ctx context.Context) error {
	deadline := time.Now().Add(r.plan.drain)
	empty := 0
	var last error
	for time.Now().Before(deadline) {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		sizes, err := r.queue.Sizes(sctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			last, empty = err, 0
		case sizes[emq.SetPending]+sizes[emq.SetActive]+sizes[emq.SetSchedule] == 0:
			empty++
			if empty == 2 {
				return nil
			}
		default:
			last = fmt.Errorf("pending %d, active %d, schedule %d", sizes[emq.SetPending], sizes[emq.SetActive], sizes[emq.SetSchedule])
			empty = 0
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
	if last == nil {
		last = errors.New("timed out")
	}
	return fmt.Errorf("after %v: %w", r.plan.drain, last)
}

// result fills the figures every scenario shares.
func (o *outcome) result(scenario, load, faults string) Result {
	r, v := o.run, o.verdict
	res := Result{
		Scenario:     scenario,
		Load:         load,
		Faults:       faults,
		Acknowledged: v.Acknowledged,
		Finished:     v.Finished,
		Lost:         v.Lost,
		Twice:        v.Twice,
		StaleRefused: v.StaleRefused,
		Promised:     true,
		Seed:         r.seed,
		Took:         o.took,
	}
	r.mu.Lock()
	res.Counts = map[string]int64{}
	for k, n := range r.counts {
		res.Counts[k] = n
	}
	res.Violations = append(res.Violations, r.violations...)
	notes := append([]string(nil), r.notes...)
	r.mu.Unlock()
	res.Violations = append(res.Violations, r.chk.Violations()...)
	passes, checked, failed, last := r.chk.Stats()
	l := o.ledger
	for k, n := range map[string]int64{
		"reaped": l.Reaped, "lease_lost": l.LeaseLost, "in_doubt": v.InDoubt, "inferred": v.Inferred,
		"completion_attempts": v.CompletionAttempts, "stale_accepted": v.StaleAccepted, "double_leases": v.DoubleLeases,
		"resurrected": v.Resurrected, "unacknowledged": v.Unacknowledged, "queued": v.Queued,
		"completed": v.Completed, "buried": v.Buried, "retried": l.Outcomes()[recRetried],
		"checker_passes": passes, "checker_ids": checked, "checker_failed_passes": failed,
		"producer_retries": o.stats.Retries, "gave_up": o.stats.GaveUp, "worker_processes": int64(l.Processes),
	} {
		res.Counts[k] = n
	}
	if v.StaleAccepted > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("%d completions accepted from a lease holder that was not the current one", v.StaleAccepted))
	}
	if v.DoubleLeases > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("%d leases (id, token) delivered or settled twice", v.DoubleLeases))
	}
	if v.Unexplained > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("%d completion attempts neither accepted, refused with EMQSTALE nor in doubt", v.Unexplained))
	}
	if v.Resurrected > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("%d completed jobs are queued again at the end", v.Resurrected))
	}
	if len(l.Other) > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("settle outcomes the harness could not attribute to a job: %v (the worker's handler and settle no longer share a goroutine?)", l.Other))
	}
	if l.Malformed > 0 {
		notes = append(notes, fmt.Sprintf("%d record lines did not parse", l.Malformed))
	}
	if o.stats.GaveUp > 0 {
		notes = append(notes, fmt.Sprintf("%d pushes were never acknowledged and are not counted", o.stats.GaveUp))
	}
	if v.Inferred > 0 {
		notes = append(notes, fmt.Sprintf("%s jobs finished by a completion whose reply the worker never saw (the row is gone and only a completion deletes one)", thousands(v.Inferred)))
	}
	if failed > 0 {
		notes = append(notes, fmt.Sprintf("the checker made %s passes (%s id checks); %d passes failed while the server was unreachable (last: %v)", thousands(passes), thousands(checked), failed, last))
	} else {
		notes = append(notes, fmt.Sprintf("the checker made %s passes (%s id checks)", thousands(passes), thousands(checked)))
	}
	res.Notes = strings.Join(notes, "; ")
	return res
}

// problems lists the verdict's examples for a Details section.
func (o *outcome) problems() string {
	if len(o.verdict.Problems) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nExamples of what the accounting found:\n\n")
	for _, p := range o.verdict.Problems {
		fmt.Fprintf(&b, "- %s\n", p)
	}
	return b.String()
}

func sortedKeys(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// waitUntil polls cond every 20ms until it holds or d passes.
func waitUntil(ctx context.Context, d time.Duration, cond func(context.Context) bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if cond(ctx) {
			return true
		}
		sleepCtx(ctx, 20*time.Millisecond)
	}
	return false
}

// thousands formats n with thousands separators.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// scratchDir gives a run without a directory of its own (cfg.Dir empty) a
// scratch one, which the returned cleanup removes: the worker processes'
// records are read after execute returns, so a scenario keeps them until
// it has judged them. With cfg.Dir set, cleanup does nothing.
func scratchDir(cfg *Config) (cleanup func(), err error) {
	if cfg.Dir != "" {
		return func() {}, nil
	}
	d, err := os.MkdirTemp("", "emqchaos-")
	if err != nil {
		return nil, err
	}
	cfg.Dir = d
	return func() { os.RemoveAll(d) }, nil
}
