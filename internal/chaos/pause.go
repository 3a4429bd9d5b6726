package chaos

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

func init() { Register(Pause{}) }

// Pause is the frozen-server scenario: redis-server is SIGSTOPped for
// longer than a lease, then SIGCONTed, several times under load. Clients
// time out and recover; the leases that expired meanwhile are reaped and
// their jobs run again, and finish once.
type Pause struct{}

// Name is "pause".
func (Pause) Name() string { return "pause" }

// pauseFor is how long the server stays frozen: three leases.
const pauseFor = 3 * time.Second

func pausePlan(cfg Config) *plan {
	p := &plan{
		name: "pause", jobs: 3000, rate: 200, producers: 2, batch: 10, workers: 3,
		worker: WorkerConfig{Concurrency: 10, Lease: time.Second, Maintenance: 250 * time.Millisecond,
			HandlerMin: 20 * time.Millisecond, HandlerMax: 200 * time.Millisecond,
			ConnWriteTimeout: pauseTimeout},
		checkEvery: 250 * time.Millisecond, drain: 90 * time.Second,
	}
	if cfg.Long {
		p.jobs, p.rate, p.drain = 20_000, 250, 5*time.Minute
	}
	if cfg.Jobs > 0 {
		p.jobs = cfg.Jobs
	}
	return p
}

// pauseTimeout is the workers' connection timeout (rueidis
// ConnWriteTimeout): shorter than the pause, so their connections time out
// while the server is frozen.
const pauseTimeout = 1500 * time.Millisecond

// Run runs the scenario.
func (Pause) Run(ctx context.Context, cfg Config) (Result, error) {
	p := pausePlan(cfg)
	minPauses := int64(3)
	if cfg.Long {
		minPauses = 8
	}
	p.faults = func(ctx context.Context, r *run) error {
		for ctx.Err() == nil {
			if !r.loading() && r.get("pauses") >= minPauses {
				return nil
			}
			sleepCtx(ctx, 1500*time.Millisecond+time.Duration(r.rng.Int64N(int64(1500*time.Millisecond))))
			if ctx.Err() != nil {
				break
			}
			// A holder that vanishes: the harness leases one pending job
			// and abandons it just before the freeze, so that every pause
			// leaves at least one lease to expire and be reaped, however
			// the workers' own claims fell (on a loaded machine they may all
			// have been answered before their connections timed out).
			if job, ok, err := r.queue.Claim(ctx, p.worker.Lease); err == nil && ok {
				r.count("abandoned", 1)
				r.logf("abandoned the lease of %s (token %d)", job.ID, job.Token)
			}
			if err := r.srv.Signal(syscall.SIGSTOP); err != nil {
				return err
			}
			t := time.NewTimer(pauseFor)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
			if err := r.srv.Signal(syscall.SIGCONT); err != nil {
				return err
			}
			r.count("pauses", 1)
			r.logf("SIGSTOPped redis-server for %v, then SIGCONT", pauseFor)
		}
		return ctx.Err()
	}
	o, err := execute(ctx, cfg, p)
	if err != nil {
		return Result{}, err
	}
	w := p.worker
	load := fmt.Sprintf("%s jobs at ~%.0f/s; %d worker processes × %d; lease %v; handlers %v–%v",
		thousands(int64(p.jobs)), p.rate, p.workers, w.Concurrency, w.Lease, w.HandlerMin, w.HandlerMax)
	pauses := o.run.get("pauses")
	faults := fmt.Sprintf("%d SIGSTOPs of redis-server for %v (%d leases), each followed by SIGCONT; before each, one lease taken and abandoned (%d)", pauses, pauseFor, pauseFor/w.Lease, o.run.get("abandoned"))
	res := o.result("server pauses", load, faults)
	reruns := reruns(o.ledger, o.run.acks.IDs())
	res.Counts["reruns"] = reruns
	res.Counts["unstarted_leases"] = unstarted(o.ledger, o.run.acks.IDs())
	res.Notes = fmt.Sprintf("%s expired leases reaped, %s re-runs implied by the tokens (reaped + retried: %s); %s of the re-run leases no handler ever started (the claim's reply was lost with its timed-out connection); %s completion attempts in doubt (their connection timed out); ",
		thousands(res.Counts["reaped"]), thousands(reruns), thousands(res.Counts["reaped"]+res.Counts["retried"]), thousands(res.Counts["unstarted_leases"]), thousands(res.Counts["in_doubt"])) + res.Notes
	res.Details = fmt.Sprintf(`**Injected.** While two producers push %s jobs and %d worker processes (%d handlers each, lease %v, maintenance every %v) work them (handlers sleep %v–%v and ignore their context), redis-server is frozen with SIGSTOP for %v and thawed with SIGCONT, %d times, 1.5–3 s apart; just before each freeze the harness claims one pending job and abandons its lease (a holder that vanished), so every pause leaves a lease to expire whatever the machine's load did to the workers' own claims. The workers' connection timeout (rueidis ConnWriteTimeout) is %v, shorter than the pause, so their connections time out while the server is frozen and they reconnect after.

**Checked.** Every acknowledged job is finished exactly once, nothing lost; a completion that reaches the server after its lease was reaped must be refused with EMQSTALE (the table counts them; most completions sent during a pause are either dropped with their connection or executed before maintenance reaps, since a complete checks the token, not the deadline). Reaping happens exactly once per expired lease: every claim after the first is a re-run, which only maintenance's reap or a worker's retry makes, so the re-runs the tokens imply (the sum over jobs of the highest token less one) must equal the reaped count the workers' metrics report plus the retries. What expires is mostly leases no handler holds: claims the server executed when it thawed, whose replies were lost with the timed-out connections. Completions and extensions sent during the pause are executed when the server thaws, before maintenance can reap (a complete checks the token, not the deadline), so few completions reach the server after their lease was reaped. The invariant checker runs throughout.
%s`, thousands(int64(p.jobs)), p.workers, w.Concurrency, w.Lease, w.Maintenance, w.HandlerMin, w.HandlerMax, pauseFor, pauses, pauseTimeout, o.problems())
	return res, nil
}

// unstarted returns the leases below each job's highest token that no
// handler started: claims the server executed whose reply never reached a
// worker.
func unstarted(l *Ledger, acked []string) int64 {
	var n int64
	for _, id := range acked {
		leases := l.Jobs[id]
		var top int64
		for tok := range leases {
			top = max(top, tok)
		}
		for tok := int64(1); tok < top; tok++ {
			if ls := leases[tok]; ls == nil || !ls.Started {
				n++
			}
		}
	}
	return n
}

// reruns returns the re-runs the tokens imply: for each job, the highest
// token recorded less one.
func reruns(l *Ledger, acked []string) int64 {
	var n int64
	for _, id := range acked {
		var top int64
		for tok := range l.Jobs[id] {
			top = max(top, tok)
		}
		if top > 1 {
			n += top - 1
		}
	}
	return n
}
