package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/echomq/echomq/sdk/go/emq/wire"
)

func init() { Register(Rates{}) }

// Rates is the rate-limit scenario of this tree (echomq 2.8.0): worker
// processes of this tree's Go SDK work one queue that has a rate limit
// (Queue.SetRateLimit, set before anything is pushed), while producers push
// the whole load at once, so that the limit, not the producers, paces the
// run; meanwhile worker processes are SIGKILLed (each replaced) and frozen
// past their leases. From the workers' records (each lease's claim
// millisecond, from its deadline), the leases only the queue's starts log
// saw (a holder killed before its handler began) and the watcher's samples
// of the pending set, the judge (ratejudge.go) proves that no window of
// the period held more starts than the limit, that the saturated run
// started jobs at the limit's pace (never faster, and within the
// scenario's tolerance below it), and that the jobs the limit held back
// were never failed by it (no attempt spent without a start, nothing
// buried, no claim or settle refused); the accounting proves every job
// finished exactly once, none lost.
type Rates struct{}

// Name is "rates".
func (Rates) Name() string { return "rates" }

// ratesSizing sizes a run's limit and faults.
type ratesSizing struct {
	limit                rateLimit
	minKills, minFreezes int64
	// tolerance is how far below the limit the measured saturated start
	// rate may be (a share of the limit).
	tolerance float64
}

func ratesPlan(cfg Config) (*plan, ratesSizing) {
	p := &plan{
		name: "rates", jobs: 450, rate: 3000, producers: 2, batch: 50, workers: 3,
		worker: WorkerConfig{Concurrency: 8, Lease: time.Second, Maintenance: 200 * time.Millisecond,
			HandlerMin: 5 * time.Millisecond, HandlerMax: 40 * time.Millisecond, FailRate: 0.05, Backoff: 50 * time.Millisecond},
		checkEvery: 250 * time.Millisecond, drain: 60 * time.Second,
	}
	rs := ratesSizing{limit: rateLimit{N: 50, Period: 500 * time.Millisecond}, minKills: 3, minFreezes: 1, tolerance: 0.20}
	if cfg.Long {
		p.jobs, p.rate, p.workers, p.drain = 12_000, 400, 4, 5*time.Minute
		p.worker.Concurrency = 16
		rs.limit = rateLimit{N: 100, Period: time.Second}
		rs.minKills, rs.minFreezes, rs.tolerance = 20, 5, 0.02
	}
	if cfg.Jobs > 0 {
		p.jobs = cfg.Jobs
	}
	return p, rs
}

// rateFaults SIGKILLs worker processes of langs (each replaced, the
// languages in turn) every 0.3–0.7 s and freezes one past its lease every
// fourth fault (every fault once the kills are made and the freezes not),
// until minKills kills and minFreezes freezes were made and the load is
// pushed, or the load is pushed and busy is false (nothing is left to
// start).
func rateFaults(ctx context.Context, r *run, langs []Lang, minKills, minFreezes int64, freeze time.Duration, busy func() bool) error {
	sleepCtx(ctx, 300*time.Millisecond)
	kills, freezes := 0, 0
	for i := 1; ctx.Err() == nil; i++ {
		if r.get("kills") >= minKills && r.get("freezes") >= minFreezes && !r.loading() {
			return nil
		}
		if !busy() && !r.loading() {
			r.note("the faults stopped with %d kills and %d freezes made: nothing was left to start", r.get("kills"), r.get("freezes"))
			return nil
		}
		// Every fourth fault is a freeze, and so is every fault once the
		// kills are made while the freezes are not.
		freezing := i%4 == 0
		if r.get("freezes") < minFreezes && r.get("kills") >= minKills {
			freezing = true
		}
		if freezing {
			lang := langs[freezes%len(langs)]
			freezes++
			proc, err := r.pool.FreezeRandomOf(ctx, r.rng, lang, freeze)
			if err != nil {
				return err
			}
			r.count("freezes", 1)
			r.count("freezes_"+string(proc.Lang), 1)
			r.logf("froze %s worker process %d (pid %d) for %v", proc.Lang, proc.N, proc.Pid(), freeze)
		} else {
			lang := langs[kills%len(langs)]
			kills++
			proc, err := r.pool.KillRandomOf(r.rng, lang)
			if err != nil {
				return err
			}
			r.count("kills", 1)
			r.count("kills_"+string(proc.Lang), 1)
			r.logf("SIGKILLed %s worker process %d (pid %d); a replacement started", proc.Lang, proc.N, proc.Pid())
		}
		sleepCtx(ctx, 300*time.Millisecond+time.Duration(r.rng.Int64N(int64(400*time.Millisecond))))
	}
	return ctx.Err()
}

// pendingNow reads how many jobs are pending.
func pendingNow(ctx context.Context, r *run) int64 {
	rc := r.chk.Client()
	n, err := rc.Do(ctx, rc.B().Zcard().Key(r.queue.Keys().Pending).Build()).AsInt64()
	if err != nil {
		return 1 // unknown: as if some were
	}
	return n
}

// watchEvery is how often the rate watcher samples the pending set, and
// every how many samples it reads the starts log, for a limit: the log at
// least four times a period.
func watchEvery(lim rateLimit) (time.Duration, int) {
	every := 25 * time.Millisecond
	return every, max(1, int(lim.Period/4/every))
}

// Run runs the scenario.
func (Rates) Run(ctx context.Context, cfg Config) (Result, error) {
	p, rs := ratesPlan(cfg)
	freeze := 2*p.worker.Lease + 500*time.Millisecond
	every, logEvery := watchEvery(rs.limit)
	ctl := &rateCtl{}
	var watch *rateWatch
	p.before = func(ctx context.Context, r *run) error {
		ctl.r = r
		watch = watchRates(r, every, logEvery)
		return ctl.set(ctx, rs.limit)
	}
	p.faults = func(ctx context.Context, r *run) error {
		return rateFaults(ctx, r, []Lang{LangGo}, rs.minKills, rs.minFreezes, freeze, func() bool { return pendingNow(ctx, r) > 0 })
	}
	var samples []pendingSample
	var seen map[string]int64
	var polls []int64
	p.afterDrain = func(ctx context.Context, r *run) error {
		samples, seen, polls = watch.finish()
		return nil
	}
	o, err := execute(ctx, cfg, p)
	if watch != nil && samples == nil {
		watch.finish()
	}
	if err != nil {
		return Result{}, err
	}
	w := p.worker
	load := fmt.Sprintf("%s jobs pushed at once (~%.0f/s) to a queue with a rate limit of %s (%s); %d worker processes of this tree's Go SDK × %d; lease %v; handlers %v–%v, %.0f%% of first attempts fail",
		thousands(int64(p.jobs)), p.rate, rs.limit, wire.Version, p.workers, w.Concurrency, w.Lease, w.HandlerMin, w.HandlerMax, 100*w.FailRate)
	c := o.run
	faults := fmt.Sprintf("%d SIGKILLs of worker processes (each replaced); %d SIGSTOPs of a worker process for %v", c.get("kills"), c.get("freezes"), freeze)
	res := o.result("rate limit ("+wire.Version+": "+rs.limit.String()+")", load, faults)
	t := newTailer(o.run.pool, p.worker.Lease)
	if err := t.read(); err != nil {
		return Result{}, err
	}
	v := judgeRates(&t.tl, ctl.history(), samples, seen, polls, nil)
	v.judge(&res)
	judgeLogged(&res, &t.tl, nil, "a claim or a settle was refused on the rate-limited queue")
	n := res.Counts
	ratio := v.satRate() / rs.limit.perSecond()
	n["saturated_rate_permille"] = int64(ratio*1000 + 0.5)
	switch {
	case v.SatSpans == 0:
		res.Violations = append(res.Violations, "no saturated span: the watcher never saw jobs pending for two periods under the limit")
	case ratio < 1-rs.tolerance:
		res.Violations = append(res.Violations, fmt.Sprintf("the saturated run started %.2f jobs per second, %.1f%% of the limit's %.2f: more than %.0f%% below it", v.satRate(), 100*ratio, rs.limit.perSecond(), 100*rs.tolerance))
	}
	if n["buried"] > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("%d jobs were buried: a job the limit held back was failed (no handler fails every attempt here)", n["buried"]))
	}
	res.Notes = maintenanceNote(n) + rateFigures(v, rs.limit) + fmt.Sprintf(" (the scenario's tolerance: %.0f%% below it); %s jobs buried (none may be: only first attempts fail); ", 100*rs.tolerance, thousands(n["buried"])) + res.Notes
	res.Details = fmt.Sprintf(`**Injected.** A rate limit of %s is set on the queue (the Go SDK's Queue.SetRateLimit: the tripwire names 2.8, so every older claim is refused) before anything is pushed; then two producers push %s jobs at once and %d worker processes of this tree's Go SDK (emq.NewWorker, %d handlers each, lease %v) work the queue, so that the limit, not the load, paces the run. Every 0.3–0.7 s a worker process is SIGKILLed (a replacement starts at once) or, one fault in four, frozen with SIGSTOP for %v (past the lease), so that leases are lost, reaped and leased again under the limit, and thawed handlers settle late.

**Checked.** Every worker process records each lease's claim millisecond (its deadline less the lease: the server's TIME in the claim script) and its handler's and settle's times; a watcher reads, in one MULTI with the server's TIME, the pending set's size every %v and the queue's starts log at least four times a period. A job's tokens are its leases in order, so the tokens its records lack are leases whose holder died before its handler began: those are taken from the starts log. No window of %v held more than %d starts; every recorded start the log held was there at its claim's millisecond; over the spans in which jobs were pending at every sample the jobs started at the limit's pace — never faster than one per %v (with the pace's tolerance of two), and within %.0f%% below it; no attempt of a job was spent without a start, nothing was buried, and no claim or settle of the workers was refused. Every acknowledged job finished exactly once, none lost.
%s`, rs.limit, thousands(int64(p.jobs)), p.workers, w.Concurrency, w.Lease, freeze, every, rs.limit.Period, rs.limit.N,
		rs.limit.Period/time.Duration(rs.limit.N), 100*rs.tolerance, o.problems())
	return res, nil
}
