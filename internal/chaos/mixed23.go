package chaos

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

func init() { Register(MixedPrev{}) }

// prevLangs are the sides of the mixed23 scenario: the Go SDK of this tree
// (the new side) and the Go SDK of the frozen release before this tree's
// minor (LangPrev, 2.3.0).
var prevLangs = []Lang{LangGo, LangPrev}

// MixedPrev is the mixed-fleet scenario against the previous frozen
// release: producers and worker processes built from the frozen 2.3.0
// release (its real Go SDK, built from git history) beside producers and
// worker processes of this tree's Go SDK, on one keyspace, while worker
// processes of both sides are SIGKILLed and frozen past their leases, and
// handlers of both sides fail some first attempts and every attempt of some
// jobs. Every job must finish exactly once (completed, or dead), none lost;
// late completions are refused across sides; and what 2.4.0 added reads
// right whoever settled a job: the settle counters count exactly what the
// new side settled (a 2.3 worker counts nothing), and after the drain the
// per-job records a 2.3 completion leaves behind (a retry policy, a
// progress report) are swept.
type MixedPrev struct{}

// Name is "mixed23".
func (MixedPrev) Name() string { return "mixed23" }

func mixedPrevPlan(cfg Config) *plan {
	p := mixedPlan(cfg)
	p.name = "mixed23"
	p.workerLangs, p.producerLangs = prevLangs, prevLangs
	// The new side's jobs carry their own retry policy (the worker's
	// attempts, so that both sides bury alike): each leaves a record in
	// the options hash, which a 2.3 completion leaves behind. The new
	// side's workers keep every completion record.
	p.pushOptions = []emq.PushOption{emq.Attempts(int(p.worker.MaxAttempts))}
	p.worker.KeepResults = 1 << 30
	return p
}

// Run runs the scenario.
func (MixedPrev) Run(ctx context.Context, cfg Config) (Result, error) {
	p := mixedPrevPlan(cfg)
	minKills, minFreezes := int64(2), int64(len(prevLangs))
	if cfg.Long {
		minKills, minFreezes = 8, 6
	}
	freeze := 2*p.worker.Lease + 500*time.Millisecond
	pairs := langPairs(prevLangs)
	p.faults = func(ctx context.Context, r *run) error {
		if err := crossStaleChecks(ctx, r, pairs); err != nil {
			return err
		}
		sleepCtx(ctx, 500*time.Millisecond)
		return killAndFreeze(ctx, r, prevLangs, minKills, minFreezes, freeze)
	}
	p.afterDrain = func(ctx context.Context, r *run) error {
		return judgePrev(ctx, r)
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
	cross, err := crossLanguage(o.run, prevLangs)
	if err != nil {
		return Result{}, err
	}
	prev := oldReleases[LangPrev]
	w := p.worker
	load := fmt.Sprintf("%s jobs at ~%.0f/s from a Go %s producer and a Go %s producer; %d worker processes (the two sides in turn) × %d; lease %v; handlers %v–%v, %.0f%% of first attempts fail, %.0f%% of jobs fail on every attempt (buried after %d)",
		thousands(int64(p.jobs)), p.rate, wire.Version, prev, p.workers, w.Concurrency, w.Lease, w.HandlerMin, w.HandlerMax, 100*w.FailRate, 100*w.AlwaysFail, w.MaxAttempts)
	faults := fmt.Sprintf("SIGKILLs of worker processes: %d of the new side, %d of the %s side (each replaced by one of its side); %d SIGSTOPs of a worker process for %v",
		o.run.get("kills_"+string(LangGo)), o.run.get("kills_"+string(LangPrev)), prev, o.run.get("freezes"), freeze)
	res := o.result("mixed fleet ("+prev+" beside "+wire.Version+")", load, faults)
	for k, v := range cross {
		res.Counts[k] = v
	}
	if res.Counts["stale_probes"] != int64(len(pairs)) {
		res.Violations = append(res.Violations, fmt.Sprintf("%d of %d cross-side stale checks ran", res.Counts["stale_probes"], len(pairs)))
	}
	c := res.Counts
	res.Notes = fmt.Sprintf("completed across sides: %s pushed by the new side and completed by the old, %s the other way; %s late completions refused with %s across sides; completions counted by the queue's counters %s, of them by new-side workers %s; completion records read %s; retry policies left by old completions swept %s; ",
		thousands(cross[string(LangGo)+"_to_"+string(LangPrev)]), thousands(cross[string(LangPrev)+"_to_"+string(LangGo)]),
		thousands(cross["stale_cross"]), wire.ClassStale, thousands(c["counted_completed"]), thousands(c["new_completions"]),
		thousands(c["completion_records"]), thousands(c["policies_swept"])) + res.Notes
	res.Details = fmt.Sprintf(`**Injected.** %d worker processes work one queue: worker processes of this tree's Go SDK and of the Go SDK of the frozen %s release (built from git history: the commit that added golden/releases/%s.yaml, its sdk/go extracted with git archive, internal/chaos/testdata/oldfleet built against it), in turn, %d handlers each, while a producer of each side pushes %s jobs. Handlers of both sides fail %.0f%% of first attempts and every attempt of %.0f%% of the jobs, which are buried on attempt %d by whichever side runs it. Worker processes of each side are frozen with SIGSTOP for %v (longer than the %v lease) and SIGKILLed, the sides in turn.

**Checked.** Every acknowledged job finished exactly once (completed, or dead), none lost; late completions are refused with %s across sides. The queue's settle counters (the counters script) count exactly the completions of new-side workers: a %s worker's completion is not counted, and a count the new side did not make is a violation. Every job a new-side worker completed has its completion record (the output script), of the attempt that completed it; none a %s worker completed has one. The new side's jobs carry their own retry policy (the options hash): after the drain, every policy whose row is gone (a %s completion leaves it) must be swept by the new side's maintenance within ceil(records/100) + 5 ticks.
%s`, p.workers, prev, prev, w.Concurrency, thousands(int64(p.jobs)), 100*w.FailRate, 100*w.AlwaysFail, w.MaxAttempts, freeze, w.Lease,
		wire.ClassStale, prev, prev, prev, o.problems())
	return res, nil
}

// judgePrev checks, after the drain, what 2.4.0 added against what the
// worker processes recorded: the counters' completed total is the number of
// jobs whose completing lease a new-side worker settled.
func judgePrev(ctx context.Context, r *run) error {
	settlers, err := readSettlers(r)
	if err != nil {
		return err
	}
	var mine, theirs int64
	for _, leases := range settlers {
		for _, s := range leases {
			if s.outcome != recCompleted {
				continue
			}
			if s.lang == LangGo {
				mine++
			} else {
				theirs++
			}
		}
	}
	rc := r.chk.Client()
	call := wire.CountersCall{Counters: r.queue.Keys().Counters, Minutes: 0}
	recs, err := wire.DecodeCounters(wire.ScriptCounters.Lua().Exec(ctx, rc, call.Keys(), call.Args()))
	if err != nil {
		return fmt.Errorf("chaos: reading the counters: %w", err)
	}
	if len(recs) == 0 {
		return fmt.Errorf("chaos: the counters script answered no totals")
	}
	got := recs[0].Completed
	r.count("counted_completed", got)
	r.count("new_completions", mine)
	r.count("old_completions", theirs)
	if got != mine {
		r.violate("the counters count %d completions; new-side workers completed %d (and %s workers %d, which count nothing)", got, mine, oldReleases[LangPrev], theirs)
	}
	if err := judgeCompletionRecords(ctx, r, settlers); err != nil {
		return err
	}
	return sweepPolicies(ctx, r)
}

// judgeCompletionRecords reads, with the output script, every job whose
// completing lease a worker process recorded: a new-side completion has
// its record, of the attempt that completed it; an old-side one has none.
func judgeCompletionRecords(ctx context.Context, r *run, settlers map[string]map[int64]settler) error {
	rc := r.chk.Client()
	k := r.queue.Keys()
	ids := make([]string, 0, len(settlers))
	for id := range settlers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	bad := 0
	for _, s := range ids {
		var tok int64
		var by Lang
		for t, l := range settlers[s] {
			if l.outcome == recCompleted {
				tok, by = t, l.lang
			}
		}
		if tok == 0 {
			continue
		}
		id, err := emq.ParseID(s)
		if err != nil {
			return err
		}
		row, err := k.Row(id)
		if err != nil {
			return err
		}
		call := wire.OutputCall{Row: row, Results: k.Results, Progress: k.Progress, ID: id}
		out, err := call.Exec(ctx, rc)
		if err != nil {
			return fmt.Errorf("chaos: reading the output of %s: %w", s, err)
		}
		switch {
		case by == LangGo && (out.CompletedAtMS == 0 || out.Attempt != tok):
			bad++
			if bad <= maxProblems {
				r.violate("job %s: a new-side worker completed attempt %d, yet its completion record reads attempt %d at %d", s, tok, out.Attempt, out.CompletedAtMS)
			}
		case by == LangGo:
			r.count("completion_records", 1)
		case out.CompletedAtMS != 0:
			bad++
			if bad <= maxProblems {
				r.violate("job %s: a %s worker completed it, which keeps nothing, yet it has a completion record (attempt %d)", s, langName(by), out.Attempt)
			}
		}
	}
	return nil
}

// sweepPolicies waits, while the worker processes' maintenance runs, until
// the options hash holds no retry policy whose row is gone: a 2.3
// completion leaves the policy of the job it completes, which the new
// side's sweep forgets.
func sweepPolicies(ctx context.Context, r *run) error {
	key := r.queue.Keys().Options
	records, orphans, err := hashOrphans(ctx, r, key)
	if err != nil {
		return err
	}
	first := int64(len(orphans))
	r.count("policies_at_drain", records)
	tick := r.plan.worker.Maintenance
	deadline := time.Now().Add(time.Duration((records+99)/100+5)*tick + 2*time.Second)
	for len(orphans) > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		sleepCtx(ctx, tick)
		if records, orphans, err = hashOrphans(ctx, r, key); err != nil {
			return err
		}
	}
	r.count("policies_orphaned_at_drain", first)
	r.count("policies_swept", first-int64(len(orphans)))
	if len(orphans) > 0 {
		r.violate("%d retry policies whose row is gone were left after %d maintenance ticks (of %d): %v", len(orphans), (records+99)/100+5, records, orphans[:min(5, len(orphans))])
	}
	return nil
}
