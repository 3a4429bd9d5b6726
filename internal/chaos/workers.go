package chaos

import (
	"context"
	"fmt"
	"time"
)

func init() { Register(Workers{}) }

// Workers is the crashing-workers scenario: worker processes are SIGKILLed
// at random points (and a replacement started), or frozen with SIGSTOP for
// longer than a lease, while producers push; short leases make
// maintenance reap the leases the dead and the frozen left.
type Workers struct{}

// Name is "workers".
func (Workers) Name() string { return "workers" }

// workersPlan sizes the scenario.
func workersPlan(cfg Config) *plan {
	p := &plan{
		name: "workers", jobs: 5000, rate: 300, producers: 2, batch: 10, workers: 4,
		worker: WorkerConfig{Concurrency: 20, Lease: 2 * time.Second, Maintenance: 500 * time.Millisecond,
			HandlerMin: 20 * time.Millisecond, HandlerMax: 250 * time.Millisecond, FailRate: 0.02, Backoff: 100 * time.Millisecond},
		checkEvery: 250 * time.Millisecond, drain: 90 * time.Second,
	}
	if cfg.Long {
		p.jobs, p.rate, p.drain = 100_000, 1000, 5*time.Minute
		p.worker.HandlerMin, p.worker.HandlerMax = 10*time.Millisecond, 100*time.Millisecond
	}
	if cfg.Jobs > 0 {
		p.jobs = cfg.Jobs
	}
	return p
}

// Run runs the scenario.
func (Workers) Run(ctx context.Context, cfg Config) (Result, error) {
	p := workersPlan(cfg)
	minKills, minFreezes := int64(3), int64(1)
	if cfg.Long {
		minKills, minFreezes = 20, 3
	}
	freeze := 2*p.worker.Lease + 500*time.Millisecond
	p.faults = func(ctx context.Context, r *run) error {
		sleepCtx(ctx, time.Second)
		for ctx.Err() == nil {
			if !r.loading() && r.get("kills") >= minKills && r.get("freezes") >= minFreezes {
				return nil
			}
			// Every fourth fault, or when the freezes fall behind, freezes.
			if r.rng.IntN(4) == 0 || (r.get("kills") >= minKills && r.get("freezes") < minFreezes) {
				proc, err := r.pool.FreezeRandom(ctx, r.rng, freeze)
				if err != nil {
					return err
				}
				r.count("freezes", 1)
				r.logf("froze worker process %d (pid %d) for %v", proc.N, proc.Pid(), freeze)
			} else {
				proc, err := r.pool.KillRandom(r.rng)
				if err != nil {
					return err
				}
				r.count("kills", 1)
				r.logf("SIGKILLed worker process %d (pid %d); replacement started", proc.N, proc.Pid())
			}
			sleepCtx(ctx, 1500*time.Millisecond+time.Duration(r.rng.Int64N(int64(2*time.Second))))
		}
		return ctx.Err()
	}
	o, err := execute(ctx, cfg, p)
	if err != nil {
		return Result{}, err
	}
	w := p.worker
	load := fmt.Sprintf("%s jobs at ~%.0f/s; %d worker processes × %d; lease %v; handlers %v–%v, %.0f%% of first attempts fail",
		thousands(int64(p.jobs)), p.rate, p.workers, w.Concurrency, w.Lease, w.HandlerMin, w.HandlerMax, 100*w.FailRate)
	kills, freezes := o.run.get("kills"), o.run.get("freezes")
	faults := fmt.Sprintf("%d SIGKILLs of worker processes (each replaced); %d SIGSTOPs of a worker process for %v", kills, freezes, freeze)
	res := o.result("crashing workers", load, faults)
	res.Notes = fmt.Sprintf("%s expired leases reaped; %s lease extensions refused after a freeze; %s completion attempts in doubt (the worker died before it saw the reply); ",
		thousands(res.Counts["reaped"]), thousands(res.Counts["lease_lost"]), thousands(res.Counts["in_doubt"])) + res.Notes
	res.Details = fmt.Sprintf(`**Injected.** %d worker processes (real OS processes running emq.NewWorker, %d handlers each) work one queue while two producers push %s jobs. Every 1.5–3.5 s one worker process is picked at random and SIGKILLed — a replacement process starts at once — or, one time in four, frozen with SIGSTOP for %v (longer than the %v lease) and then thawed with SIGCONT. Handlers sleep %v–%v and ignore their context, so a thawed worker still tries to complete what it was running; %.0f%% of first attempts fail and are retried after 100 ms. Maintenance runs every %v.

**Checked.** Each worker process records, one write(2) per line to an append-only file, every handler start (id, token), every handler return, and the settle outcome the SDK counted for it (completed, refused with EMQSTALE, retried, buried). The harness accounts for every acknowledged enqueue: finished exactly once (one accepted completion or burial), never lost, the accepted completion carrying the highest token minted for the job, every other completion refused. While the load runs, the invariant checker reads every id's row and set memberships in one Lua script per batch (%d passes here) and checks the row/set invariant and that attempts never decrease.
%s`, p.workers, w.Concurrency, thousands(int64(p.jobs)), freeze, w.Lease, w.HandlerMin, w.HandlerMax, 100*w.FailRate, w.Maintenance, res.Counts["checker_passes"], o.problems())
	return res, nil
}
