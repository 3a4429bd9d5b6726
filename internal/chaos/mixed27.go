package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

func init() { Register(MixedRate{}) }

// rateMixLangs are the sides of the mixed27rate scenario: the Go SDK of
// this tree (the new side) and the Go SDK of the frozen 2.7.0 release
// (LangPrev27).
var rateMixLangs = []Lang{LangGo, LangPrev27}

// rateProbeQueue is the queue of the scenario's deterministic probes.
const rateProbeQueue = "chaos-rate-tripwire"

// MixedRate is the mixed-fleet scenario of 2.8.0's rate limits: worker
// processes built from the frozen 2.7.0 release beside worker processes of
// this tree's Go SDK work one queue, producers of both sides pushing to it,
// while a controller sets a rate limit (Queue.SetRateLimit) whenever a
// 2.7.0 worker holds leases, holds it, and removes it, in cycles; worker
// processes of both sides are SIGKILLed (and, in the long run, frozen past
// their leases). A 2.7.0 client cannot honour a rate limit, so while the
// queue has one its claims are refused (EMQPOLICY: the tripwire names 8 to
// claim) and lease nothing, while its settles (the tripwire names 7 to
// settle) of the jobs it leased before the limit are accepted; the new
// side's starts keep the limit as the rates scenario proves; every job
// finishes exactly once, none lost.
type MixedRate struct{}

// Name is "mixed27rate".
func (MixedRate) Name() string { return "mixed27rate" }

// rateCycle sizes the controller's cycles.
type rateCycle struct {
	limit     rateLimit
	hold      time.Duration // how long a limit holds
	minCycles int
	// heldLimit bounds the wait for the old side to hold leases before a
	// limit is set; resumeLimit the wait for it to lease again once it is
	// removed (the old worker backs off up to 5 s between refused claims).
	heldLimit, resumeLimit time.Duration
	minKills, minFreezes   int64
}

func mixed27Plan(cfg Config) (*plan, rateCycle) {
	p := &plan{
		name: "mixed27rate", jobs: 900, rate: 250, producers: 2, batch: 10, workers: 4,
		worker: WorkerConfig{Concurrency: 16, Lease: time.Second, Maintenance: 200 * time.Millisecond,
			HandlerMin: 40 * time.Millisecond, HandlerMax: 200 * time.Millisecond, FailRate: 0.05, AlwaysFail: 0.02,
			MaxAttempts: 3, Backoff: 50 * time.Millisecond},
		workerLangs: rateMixLangs, producerLangs: rateMixLangs,
		checkEvery: 250 * time.Millisecond, drain: 60 * time.Second,
	}
	rc := rateCycle{limit: rateLimit{N: 50, Period: 500 * time.Millisecond}, hold: 2 * time.Second, minCycles: 1,
		heldLimit: 10 * time.Second, resumeLimit: 10 * time.Second, minKills: 2}
	if cfg.Long {
		p.jobs, p.rate, p.workers, p.drain = 20_000, 300, 8, 5*time.Minute
		p.worker.Concurrency = 16
		rc.limit, rc.hold, rc.minCycles = rateLimit{N: 100, Period: time.Second}, 8*time.Second, 6
		rc.minKills, rc.minFreezes = 16, 4
	}
	if cfg.Jobs > 0 {
		p.jobs = cfg.Jobs
	}
	return p, rc
}

// rateMixRun is the controller side of a run.
type rateMixRun struct {
	r    *run
	ctl  *rateCtl
	tail *tailer
	rc   rateCycle
}

// oldHolding reports whether a worker process of the old side holds a
// lease now, by the records read so far: a handler started and not
// returned, its deadline ahead.
func (mr *rateMixRun) oldHolding(nowMS int64) int {
	n := 0
	for _, l := range mr.tail.tl.leases {
		if l.lang == LangPrev27 && l.startUS > 0 && l.endUS == 0 && l.deadMS > nowMS+200 {
			n++
		}
	}
	return n
}

// cycles runs the controller until the load is pushed and minCycles
// cycles ran, then leaves the queue without a limit. A cycle: wait until
// a worker of the old side holds a lease; set the limit; hold it; remove
// it; wait until the old side leased again.
func (mr *rateMixRun) cycles(ctx context.Context) error {
	r := mr.r
	rc := r.chk.Client()
	for cycle := 1; ctx.Err() == nil; cycle++ {
		if cycle > mr.rc.minCycles && !r.loading() {
			break
		}
		deadline := time.Now().Add(mr.rc.heldLimit)
		held := 0
		for ctx.Err() == nil && time.Now().Before(deadline) {
			if err := mr.tail.read(); err != nil {
				return err
			}
			now, err := serverMicros(ctx, rc)
			if err != nil {
				return err
			}
			if held = mr.oldHolding(now / 1000); held > 0 {
				break
			}
			sleepCtx(ctx, 20*time.Millisecond)
		}
		if held == 0 {
			r.note("cycle %d: no %s worker held a lease within %v; the limit was set anyway", cycle, langName(LangPrev27), mr.rc.heldLimit)
		}
		r.count("held_by_old_at_set", int64(held))
		if err := mr.ctl.set(ctx, mr.rc.limit); err != nil {
			return err
		}
		sleepCtx(ctx, mr.rc.hold)
		if err := mr.ctl.set(ctx, rateLimit{}); err != nil {
			return err
		}
		ch := mr.ctl.last()
		ok, idle := false, false
		for end := time.Now().Add(mr.rc.resumeLimit); ctx.Err() == nil && time.Now().Before(end); sleepCtx(ctx, 50*time.Millisecond) {
			if err := mr.tail.read(); err != nil {
				return err
			}
			if ok = mr.tail.claimedSince(LangPrev27, ch.After); ok {
				break
			}
			if idle = !r.loading() && pendingNow(ctx, r) == 0; idle {
				break
			}
		}
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case ok:
			r.count("resumed_"+string(LangPrev27), 1)
		case idle || pendingNow(ctx, r) == 0:
			r.note("cycle %d: after the limit was removed no %s worker leased within %v: nothing was pending", cycle, langName(LangPrev27), mr.rc.resumeLimit)
		default:
			r.violate("cycle %d: after the limit was removed no %s worker leased anything within %v, with jobs pending", cycle, langName(LangPrev27), mr.rc.resumeLimit)
		}
		r.count("rate_cycles", 1)
	}
	return ctx.Err()
}

// Run runs the scenario.
func (MixedRate) Run(ctx context.Context, cfg Config) (Result, error) {
	p, rcy := mixed27Plan(cfg)
	freeze := 2*p.worker.Lease + 500*time.Millisecond
	var mr *rateMixRun
	var watch *rateWatch
	p.before = func(ctx context.Context, r *run) error {
		every, logEvery := watchEvery(rcy.limit)
		watch = watchRates(r, every, logEvery)
		return nil
	}
	p.faults = func(ctx context.Context, r *run) error {
		if err := rateProbes(ctx, r, rcy.limit); err != nil {
			return err
		}
		mr = &rateMixRun{r: r, ctl: &rateCtl{r: r}, tail: newTailer(r.pool, p.worker.Lease), rc: rcy}
		return both(ctx, mr.cycles, func(ctx context.Context) error {
			// The faults begin with the first limit.
			for ctx.Err() == nil && len(mr.ctl.history()) == 0 {
				sleepCtx(ctx, 20*time.Millisecond)
			}
			return rateFaults(ctx, r, rateMixLangs, rcy.minKills, rcy.minFreezes, freeze, func() bool { return pendingNow(ctx, r) > 0 })
		})
	}
	var samples []pendingSample
	var seen map[string]int64
	var polls []int64
	p.afterDrain = func(ctx context.Context, r *run) error {
		samples, seen, polls = watch.finish()
		return nil
	}
	cleanup, err := scratchDir(&cfg)
	if err != nil {
		return Result{}, err
	}
	defer cleanup()
	o, err := execute(ctx, cfg, p)
	if watch != nil && samples == nil {
		watch.finish()
	}
	if err != nil {
		return Result{}, err
	}
	cross, err := crossLanguage(o.run, rateMixLangs)
	if err != nil {
		return Result{}, err
	}
	prev := oldReleases[LangPrev27]
	w := p.worker
	load := fmt.Sprintf("%s jobs at ~%.0f/s from a Go %s producer and a Go %s producer; %d worker processes (the two sides in turn) × %d; lease %v; handlers %v–%v, %.0f%% of first attempts fail, %.0f%% of jobs fail on every attempt (buried after %d)",
		thousands(int64(p.jobs)), p.rate, wire.Version, prev, p.workers, w.Concurrency, w.Lease, w.HandlerMin, w.HandlerMax, 100*w.FailRate, 100*w.AlwaysFail, w.MaxAttempts)
	c := o.run
	faults := fmt.Sprintf("%d rate-limit cycles (a limit of %s set while a %s worker held leases, held %v, removed); SIGKILLs of worker processes: %d of the new side, %d of the %s side (each replaced by one of its side); %d SIGSTOPs of a worker process for %v",
		c.get("rate_cycles"), rcy.limit, prev, rcy.hold, c.get("kills_"+string(LangGo)), c.get("kills_"+string(LangPrev27)), prev, c.get("freezes"), freeze)
	res := o.result("mixed fleet ("+prev+" beside "+wire.Version+", rate limits)", load, faults)
	for k, v := range cross {
		res.Counts[k] = v
	}
	t := newTailer(o.run.pool, p.worker.Lease)
	if err := t.read(); err != nil {
		return Result{}, err
	}
	isOld := func(l Lang) bool { return l == LangPrev27 }
	changes := mr.ctl.history()
	v := judgeRates(&t.tl, changes, samples, seen, polls, isOld)
	v.judge(&res)
	judgeLogged(&res, &t.tl, isOld, "a claim or a settle was refused on the rate-limited queue")
	n := res.Counts
	// The old side's settles of the leases it held when a limit was set:
	// claimed before the change was sent, the handler returned after it
	// was answered (so the settle ran under the limit), and accepted.
	n["old_held_at_set"], n["old_settled_under_limit"] = 0, 0
	for _, l := range t.tl.leases {
		if !isOld(l.lang) || l.claimMS < 0 {
			continue
		}
		for _, ch := range changes {
			if ch.To.N == 0 || (l.claimMS+1)*1000 > ch.Before || l.deadMS*1000 <= ch.After {
				continue
			}
			n["old_held_at_set"]++
			if l.accepted() && l.endUS > ch.After {
				n["old_settled_under_limit"]++
			}
		}
	}
	old := string(LangPrev27)
	// Every failure the old side logged but its claims' refusals is a
	// settle or a maintenance call refused under the limit: 2.7's settles
	// must go through there.
	var refused []string
	for _, k := range sortedKeys(n) {
		what, ok := strings.CutPrefix(k, "logged_old_")
		if !ok || n[k] == 0 {
			continue
		}
		refused = append(refused, fmt.Sprintf("%s %s", thousands(n[k]), strings.ReplaceAll(what, "_", " ")))
		if strings.HasSuffix(what, "_"+wire.ClassPolicy) && !strings.HasPrefix(what, "claiming_") {
			res.Violations = append(res.Violations, fmt.Sprintf("the %s side logged %d failures %s: a 2.7 settle or maintenance call was refused on the rate-limited queue", prev, n[k], what))
		}
	}
	if len(refused) == 0 {
		refused = []string{"none"}
	}
	n["old_claims_refused"] = n["logged_old_claiming_"+wire.ClassPolicy]
	res.Notes = maintenanceNote(n) + fmt.Sprintf("the %s side's logged failures, by what it was doing and the class: %s; it leased %s jobs while the queue had a rate limit; it held %s leases when a limit was set, of which %s were settled (accepted) under the limit; it leased again after %d of the %d removals; %d probes refused as they must, %d accepted; completed across sides: %s pushed by the new side and completed by the old, %s the other way; ",
		prev, strings.Join(refused, ", "), thousands(v.OldUnderLimit), thousands(n["old_held_at_set"]), thousands(n["old_settled_under_limit"]),
		n["resumed_"+old], n["rate_cycles"], n["probe_refusals"], n["probe_accepted"],
		thousands(cross[string(LangGo)+"_to_"+old]), thousands(cross[old+"_to_"+string(LangGo)])) + rateFigures(v, rcy.limit) + "; " + res.Notes
	res.Details = fmt.Sprintf(`**Injected.** %d worker processes work one queue: worker processes of this tree's Go SDK and of the Go SDK of the frozen %s release (built from git history, as in mixed26policy), in turn, %d handlers each (lease %v), while a producer of each side pushes %s jobs. A controller (the Go SDK's Queue.SetRateLimit) sets a rate limit of %s whenever a %s worker holds a lease (its handler running), holds it %v, and removes it, in cycles; each change is bracketed by the server's TIME. From the first limit on, every 0.3–0.7 s a worker process is SIGKILLed (each replaced by one of its side) or, one fault in four, frozen with SIGSTOP for %v, the sides in turn. Before the load, deterministic probes on a queue of their own with this tree's renderings of the %s scripts (their SHA-1s are the frozen release's bundle record's): a job leased by claim_policy_ids in the classic layout; a rate limit set; then claim_policy_ids and set_policy, each refused with EMQPOLICY, the queue's keys (every key's type and DUMP) unchanged by them; then complete_policy_ids of the held lease, offering the other pending job: the completion accepted, nothing leased.

**Checked.** The probes as said. The load: every worker process records each lease's claim millisecond (from its deadline) and its handler's and settle's times; a watcher reads the queue's starts log and pending set as in the rates scenario. While the queue surely had a limit the %s side leased nothing (its claims are refused with EMQPOLICY: the failures it logged are counted by what it was doing, and none of them may be a settle's or a maintenance call's), and the leases it held when a limit was set were settled under it (accepted); after each removal it leased again. The new side's starts (and the leases only the starts log saw) are judged as in the rates scenario: no window of %v held more than %d starts, none faster than the pace. Every acknowledged job finished exactly once, none lost; this tree's workers logged no claim or settle refused.
%s`, p.workers, prev, w.Concurrency, w.Lease, thousands(int64(p.jobs)), rcy.limit, prev, rcy.hold, freeze, prev, prev, rcy.limit.Period, rcy.limit.N, o.problems())
	return res, nil
}

// rateProbes runs the deterministic probes on rateProbeQueue with this
// tree's wire calls of the 2.7 scripts, which are the frozen 2.7.0
// release's (checked against its bundle record): a job leased by
// claim_policy_ids in the classic layout; a rate limit set; then
// claim_policy_ids and set_policy each refused with EMQPOLICY and the
// queue's keys unchanged by them; then complete_policy_ids of the held
// lease accepted, leasing nothing although a job is pending. Each refusal
// counts in "probe_refusals", the completion in "probe_accepted"; a failed
// probe is a violation.
func rateProbes(ctx context.Context, r *run, lim rateLimit) error {
	if err := sameAsRelease(oldReleases[LangPrev27], wire.ScriptClaimPolicyIDs, wire.ScriptSetPolicy, wire.ScriptCompletePolicyIDs); err != nil {
		return err
	}
	q, err := r.client.Queue(rateProbeQueue)
	if err != nil {
		return err
	}
	var ids []emq.ID
	for range 2 {
		id, err := r.client.Mint(emq.WorkKind)
		if err != nil {
			return err
		}
		if _, err := q.Push(ctx, id, []byte("rate probe")); err != nil {
			return err
		}
		ids = append(ids, id)
	}
	k := q.Keys()
	rows := func(ids ...emq.ID) ([]string, error) {
		var out []string
		for _, id := range ids {
			row, err := k.Row(id)
			if err != nil {
				return nil, err
			}
			out = append(out, row)
		}
		return out, nil
	}
	rc := r.chk.Client()
	claimRows, err := rows(ids[0])
	if err != nil {
		return err
	}
	claim := wire.ClaimPolicyIDsCall{Pending: k.Pending, Active: k.Active, Running: k.Running, Policy: k.Policy, Wake: k.Wake, Rows: claimRows, LeaseMS: time.Minute.Milliseconds(), IDs: ids[:1]}
	got, err := claim.Exec(ctx, rc)
	if err != nil || len(got) != 1 {
		r.violate("rate probe: the %s claim in the classic layout leased %d jobs (%v); want 1", oldReleases[LangPrev27], len(got), err)
		return nil
	}
	held := got[0]
	if _, err := q.SetRateLimit(ctx, int(lim.N), lim.Period); err != nil {
		return err
	}
	before, err := queueDigest(ctx, r, q)
	if err != nil {
		return err
	}
	otherRows, err := rows(ids[1])
	if err != nil {
		return err
	}
	claim.Rows, claim.IDs = otherRows, ids[1:]
	setPolicy := wire.SetPolicyCall{Pending: k.Pending, Active: k.Active, Running: k.Running, Policy: k.Policy, Wake: k.Wake, Paused: 1, Concurrency: -1}
	calls := []struct {
		what string
		do   func() error
	}{
		{"claim_policy_ids", func() error {
			got, err := claim.Exec(ctx, rc)
			if err == nil {
				return fmt.Errorf("leased %d jobs", len(got))
			}
			return err
		}},
		{"set_policy", func() error { _, err := setPolicy.Exec(ctx, rc); return err }},
	}
	for _, c := range calls {
		if err := c.do(); !errors.Is(err, wire.ErrPolicy) {
			r.violate("rate probe: the %s %s on a rate-limited queue answered %v; want an %s refusal", oldReleases[LangPrev27], c.what, err, wire.ClassPolicy)
			continue
		}
		r.count("probe_refusals", 1)
	}
	after, err := queueDigest(ctx, r, q)
	if err != nil {
		return err
	}
	if after != before {
		r.violate("rate probe: the refused %s calls changed the queue's keys", oldReleases[LangPrev27])
	}
	heldRow, err := k.Row(held.ID)
	if err != nil {
		return err
	}
	complete := wire.CompletePolicyIDsCall{Row: heldRow, Active: k.Active, Running: k.Running, Policy: k.Policy, Pending: k.Pending, Wake: k.Wake,
		Results: k.Results, ResultTimes: k.ResultTimes, Progress: k.Progress, Failures: k.Failures, Options: k.Options, Events: k.Events, Counters: k.Counters,
		Rows: otherRows, ID: held.ID, Token: held.Token, LeaseMS: time.Minute.Milliseconds(), IDs: ids[1:]}
	next, err := complete.Exec(ctx, rc)
	switch {
	case err != nil:
		r.violate("rate probe: the %s completion of a lease held from before the limit was refused: %v", oldReleases[LangPrev27], err)
	case len(next) != 0:
		r.violate("rate probe: the %s completion on a rate-limited queue leased %d jobs; want none", oldReleases[LangPrev27], len(next))
	default:
		r.count("probe_accepted", 1)
	}
	if _, err := q.SetRateLimit(ctx, 0, 0); err != nil {
		return err
	}
	r.logf("rate probes: %d of %d %s calls refused on the rate-limited queue, its completion accepted: %d", r.get("probe_refusals"), len(calls), oldReleases[LangPrev27], r.get("probe_accepted"))
	return nil
}

// sameAsRelease checks that scripts are byte for byte those of the frozen
// release (their SHA-1s in golden/releases/<release>.bundle.txt).
func sameAsRelease(release string, scripts ...*wire.Script) error {
	dir, err := sdkDir("EMQCHAOS_GOLDEN_DIR", release+".bundle.txt", "the frozen releases' records are golden/releases", "golden", "releases")
	if err != nil {
		return err
	}
	f, err := os.Open(filepath.Join(dir, release+".bundle.txt"))
	if err != nil {
		return err
	}
	defer f.Close()
	shas := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if w := strings.Fields(sc.Text()); len(w) == 3 && w[0] == "script" {
			shas[w[1]] = w[2]
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	for _, s := range scripts {
		if shas[s.Name] != s.SHA1 {
			return fmt.Errorf("chaos: this tree's %s (SHA-1 %s) is not the %s release's (%q): the probes would not run that release's script", s.Name, s.SHA1, release, shas[s.Name])
		}
	}
	return nil
}
