package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

func init() { Register(MixedDedup{}) }

// dedupLangs are the sides of the mixed24 scenario: the Go SDK of this
// tree (the new side) and the Go SDK of the frozen release before this
// tree's minor (LangPrev24, 2.4.0).
var dedupLangs = []Lang{LangGo, LangPrev24}

// MixedDedup is the mixed-fleet scenario of 2.5.0 against the previous
// frozen release: producers and worker processes built from the frozen
// 2.4.0 release beside producers and worker processes of this tree's Go
// SDK, on one keyspace, while worker processes of both sides are SIGKILLed
// and frozen past their leases and a canceller cancels pending and active
// jobs (cancel_ids) whichever side holds them. The new side pushes every
// job with a deduplication key of its own (until_done), so that every
// settle of either side must release a key without knowing of it. Every
// job must finish exactly once — completed, dead, or cancelled — none
// lost; a cancelled job's settle is never accepted, by either side (a 2.4
// worker does not listen for cancellation: its handler runs on and its
// settle is refused EMQSTALE); and after the drain the deduplication hash
// holds no key (the new side's maintenance sweeps it).
type MixedDedup struct{}

// Name is "mixed24".
func (MixedDedup) Name() string { return "mixed24" }

func mixedDedupPlan(cfg Config) *plan {
	p := mixedPlan(cfg)
	p.name = "mixed24"
	p.workerLangs, p.producerLangs = dedupLangs, dedupLangs
	p.pushOptions = []emq.PushOption{emq.WithDedup(emq.DedupPolicy{Mode: emq.DedupUntilDone})}
	p.dedupKeys = true
	return p
}

// Run runs the scenario.
func (MixedDedup) Run(ctx context.Context, cfg Config) (Result, error) {
	p := mixedDedupPlan(cfg)
	minKills, minFreezes := int64(2), int64(len(dedupLangs))
	if cfg.Long {
		minKills, minFreezes = 8, 6
	}
	freeze := 2*p.worker.Lease + 500*time.Millisecond
	pairs := langPairs(dedupLangs)
	p.faults = func(ctx context.Context, r *run) error {
		if err := crossStaleChecks(ctx, r, pairs); err != nil {
			return err
		}
		cctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- cancelSome(cctx, r, 150*time.Millisecond) }()
		sleepCtx(ctx, 500*time.Millisecond)
		err := killAndFreeze(ctx, r, dedupLangs, minKills, minFreezes, freeze)
		stop()
		if cerr := <-done; err == nil {
			err = cerr
		}
		return err
	}
	p.afterDrain = func(ctx context.Context, r *run) error {
		return judgeDedupSwept(ctx, r)
	}
	cleanup, err := scratchDir(&cfg)
	if err != nil {
		return Result{}, err
	}
	defer cleanup()
	o, err := execute(ctx, cfg, p)
	if err != nil {
		return Result{}, err
	}
	cross, err := crossLanguage(o.run, dedupLangs)
	if err != nil {
		return Result{}, err
	}
	prev := oldReleases[LangPrev24]
	w := p.worker
	load := fmt.Sprintf("%s jobs at ~%.0f/s from a Go %s producer (each job with a deduplication key of its own) and a Go %s producer; %d worker processes (the two sides in turn) × %d; lease %v; handlers %v–%v, %.0f%% of first attempts fail, %.0f%% of jobs fail on every attempt (buried after %d)",
		thousands(int64(p.jobs)), p.rate, wire.Version, prev, p.workers, w.Concurrency, w.Lease, w.HandlerMin, w.HandlerMax, 100*w.FailRate, 100*w.AlwaysFail, w.MaxAttempts)
	faults := fmt.Sprintf("SIGKILLs of worker processes: %d of the new side, %d of the %s side (each replaced by one of its side); %d SIGSTOPs of a worker process for %v; cancellations: %d of pending jobs, %d of active ones",
		o.run.get("kills_"+string(LangGo)), o.run.get("kills_"+string(LangPrev24)), prev, o.run.get("freezes"), freeze,
		o.run.get("cancelled_"+string(wire.StatePending)), o.run.get("cancelled_"+string(wire.StateActive)))
	res := o.result("mixed fleet ("+prev+" beside "+wire.Version+", deduplication and cancellation)", load, faults)
	for k, v := range cross {
		res.Counts[k] = v
	}
	res.Counts["cancelled"] = o.verdict.Cancelled
	if res.Counts["stale_probes"] != int64(len(pairs)) {
		res.Violations = append(res.Violations, fmt.Sprintf("%d of %d cross-side stale checks ran", res.Counts["stale_probes"], len(pairs)))
	}
	if o.run.get("cancelled_"+string(wire.StateActive)) == 0 {
		res.Violations = append(res.Violations, "no active job was cancelled: the scenario did not exercise a cancellation of a running job")
	}
	c := res.Counts
	res.Notes = fmt.Sprintf("completed across sides: %s pushed by the new side and completed by the old, %s the other way; %s late completions refused with %s across sides; cancelled %s (of them %s while active); deduplication entries held at most %s, at the drain %s, left after the sweep %s; ",
		thousands(cross[string(LangGo)+"_to_"+string(LangPrev24)]), thousands(cross[string(LangPrev24)+"_to_"+string(LangGo)]),
		thousands(cross["stale_cross"]), wire.ClassStale, thousands(c["cancelled"]), thousands(o.run.get("cancelled_"+string(wire.StateActive))),
		thousands(c["dedup_max"]), thousands(c["dedup_at_drain"]), thousands(c["dedup_left"])) + res.Notes
	res.Details = fmt.Sprintf(`**Injected.** %d worker processes work one queue: worker processes of this tree's Go SDK and of the Go SDK of the frozen %s release (built from git history, as in mixed23), in turn, %d handlers each, while a producer of each side pushes %s jobs; the new side's producer gives each job a deduplication key of its own (until_done). Handlers of both sides fail %.0f%% of first attempts and every attempt of %.0f%% of the jobs, which are buried on attempt %d. Worker processes of each side are frozen with SIGSTOP for %v (longer than the %v lease) and SIGKILLed, the sides in turn; every 150 ms a canceller cancels the head of the pending set and a random active job (cancel_ids), whichever side holds it.

**Checked.** Every acknowledged job finished exactly once — completed, dead, or cancelled — none lost; no settle of a cancelled job was accepted (a %s worker, which does not listen for cancellation, is refused %s at its settle, and a %s worker's handler is cancelled); late completions are refused with %s across sides; after the drain the deduplication hash holds no entry once the new side's maintenance swept it (every key's holder is done, whichever side settled it).
%s`, p.workers, prev, w.Concurrency, thousands(int64(p.jobs)), 100*w.FailRate, 100*w.AlwaysFail, w.MaxAttempts, freeze, w.Lease,
		prev, wire.ClassStale, wire.Version, wire.ClassStale, o.problems())
	return res, nil
}

// cancelSome cancels, every every until ctx ends or the load is pushed,
// the head of the queue's pending set and a random active job, in one
// cancel_ids call, recording each job cancelled and the state it was
// cancelled from.
func cancelSome(ctx context.Context, r *run, every time.Duration) error {
	rc := r.chk.Client()
	k := r.queue.Keys()
	for ctx.Err() == nil {
		select {
		case <-r.loadDone:
			return nil
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
		head, err := rc.Do(ctx, rc.B().Zrange().Key(k.Pending).Min("0").Max("0").Build()).AsStrSlice()
		if err != nil {
			continue // the server is busy or down: a fault of the run, not of the canceller
		}
		act, err := rc.Do(ctx, rc.B().Zrandmember().Key(k.Active).Count(1).Build()).AsStrSlice()
		if err != nil {
			continue
		}
		// The deduplication entries the new side's pushes hold while their
		// jobs live (the most seen, "dedup_max"): the scenario's proof that
		// its pushes went through add_dedup.
		if n, err := rc.Do(ctx, rc.B().Hlen().Key(k.Dedup).Build()).AsInt64(); err == nil {
			r.mu.Lock()
			if n > r.counts["dedup_max"] {
				r.counts["dedup_max"] = n
			}
			r.mu.Unlock()
		}
		call := wire.CancelIDsCall{Pending: k.Pending, Schedule: k.Schedule, Active: k.Active, Failures: k.Failures,
			Progress: k.Progress, Options: k.Options, Events: k.Events, Cancel: k.Cancel, EventsMax: 1000}
		for _, s := range append(head, act...) {
			id, err := emq.ParseID(s)
			if err != nil {
				return err
			}
			row, err := k.Row(id)
			if err != nil {
				return err
			}
			call.IDs, call.Rows = append(call.IDs, id), append(call.Rows, row)
		}
		if len(call.IDs) == 0 {
			continue
		}
		out, err := wire.DecodeCancelIDs(wire.ScriptCancelIDs.Lua().Exec(ctx, rc, call.Keys(), call.Args()))
		if err != nil {
			continue
		}
		r.mu.Lock()
		if r.cancelled == nil {
			r.cancelled = map[string]string{}
		}
		for i, rec := range out {
			if rec.State != "" {
				r.cancelled[call.IDs[i].String()] = rec.State
			}
		}
		r.mu.Unlock()
		for _, rec := range out {
			if rec.State != "" {
				r.count("cancelled_"+rec.State, 1)
			}
		}
	}
	return nil
}

// judgeDedupSwept checks, after the drain, that the deduplication hash
// empties: every key's holder is done, so each entry holds nothing, and
// the new side's maintenance deletes it (sweep_dedup) within
// ceil(entries/100) + 5 maintenance ticks.
func judgeDedupSwept(ctx context.Context, r *run) error {
	rc := r.chk.Client()
	key := r.queue.Keys().Dedup
	n, err := rc.Do(ctx, rc.B().Hlen().Key(key).Build()).AsInt64()
	if err != nil {
		return err
	}
	r.count("dedup_at_drain", n)
	tick := r.plan.worker.Maintenance
	deadline := time.Now().Add(time.Duration((n+99)/100+5)*tick + 2*time.Second)
	left := n
	for left > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		sleepCtx(ctx, tick)
		if left, err = rc.Do(ctx, rc.B().Hlen().Key(key).Build()).AsInt64(); err != nil {
			return err
		}
	}
	r.count("dedup_left", left)
	if left > 0 {
		r.violate("%d deduplication entries were left after %d maintenance ticks (of %d at the drain): the new side's maintenance must sweep entries whose holders are done", left, (n+99)/100+5, n)
	}
	return nil
}
