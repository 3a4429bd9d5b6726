package chaos

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/echomq/sdk/go/emq/wire"
)

func init() { Register(Policies{}) }

// Policies is the claimer-policy scenario of this tree (echomq 2.7.0):
// worker processes of this tree's Go SDK work one queue while a producer
// pushes to it and a controller pauses and resumes the queue and sets,
// raises and removes a concurrency cap, in cycles that lay the tripwire
// and lift it again; meanwhile worker processes are SIGKILLed and frozen
// past their leases. From the workers' records (each lease's claim time,
// from its deadline, and its handler's times) and the server's time of
// each change, the judge proves that no job was leased while the queue was
// paused and that no claim left more leases held than the cap in force
// (policy.go states the rule); the accounting proves every job finished
// exactly once, none lost.
type Policies struct{}

// Name is "policies".
func (Policies) Name() string { return "policies" }

// policyCycle sizes the controller's cycles.
type policyCycle struct {
	caps      [2]int64      // the cap a cycle sets, then raises to
	hold      time.Duration // how long a paused phase holds
	capClaims int           // claims a capped phase waits for (at most capLimit)
	capLimit  time.Duration
	minCycles int
	// sides must each lease again after each resume or clear, within
	// resumeLimit (the old side backs off up to 5 s between failed claims).
	sides       []Lang
	resumeLimit time.Duration
}

func policiesPlan(cfg Config) (*plan, policyCycle) {
	p := &plan{
		name: "policies", jobs: 1500, rate: 90, producers: 2, batch: 10, workers: 3,
		worker: WorkerConfig{Concurrency: 8, Lease: 1500 * time.Millisecond, Maintenance: 300 * time.Millisecond,
			HandlerMin: 20 * time.Millisecond, HandlerMax: 150 * time.Millisecond, FailRate: 0.05, Backoff: 100 * time.Millisecond},
		checkEvery: 250 * time.Millisecond, drain: 60 * time.Second,
	}
	pc := policyCycle{caps: [2]int64{3, 6}, hold: time.Second, capClaims: 30, capLimit: 8 * time.Second, minCycles: 2,
		sides: []Lang{LangGo}, resumeLimit: 10 * time.Second}
	if cfg.Long {
		p.jobs, p.rate, p.drain, p.workers = 30_000, 300, 5*time.Minute, 4
		p.worker.Concurrency = 16
		p.worker.HandlerMin, p.worker.HandlerMax = 10*time.Millisecond, 100*time.Millisecond
		pc.caps, pc.capClaims, pc.minCycles = [2]int64{4, 12}, 200, 10
	}
	if cfg.Jobs > 0 {
		p.jobs = cfg.Jobs
	}
	return p, pc
}

// policyRun is the controller side of a run: the controller, a tailer of
// the records, and the sizes of its cycles.
type policyRun struct {
	r    *run
	ctl  *policyCtl
	tail *tailer
	pc   policyCycle
}

// cycles runs the controller until the load is pushed and minCycles
// cycles ran, then clears every policy. A cycle: a cap on a queue with no
// policy (the tripwire laid), held until capClaims claims are recorded
// under it; a pause on top, held for hold; a resume (the cap stays), until
// the new side leased again; the cap raised, held as the first; the cap
// removed (the last policy: the classic layout back), until every side
// leased again; a pause alone (the tripwire laid again), held; a resume
// (the classic layout), until every side leased again.
func (pr *policyRun) cycles(ctx context.Context) error {
	r, ctl := pr.r, pr.ctl
	capped := func() error {
		ch := ctl.last()
		n, err := pr.waitClaims(ctx, "", ch.After, pr.pc.capClaims, pr.pc.capLimit)
		if err != nil {
			return err
		}
		r.count("capped_phase_claims", int64(n))
		return nil
	}
	paused := func() error {
		sleepCtx(ctx, pr.pc.hold)
		return ctx.Err()
	}
	again := func(sides ...Lang) error {
		ch := ctl.last()
		for _, lang := range sides {
			ok, err := pr.tail.waitClaim(ctx, lang, ch.After, pr.pc.resumeLimit)
			if err != nil {
				return err
			}
			if ok {
				r.count("resumed_"+string(lang), 1)
				continue
			}
			pending, perr := pr.pending(ctx)
			if perr == nil && pending == 0 {
				r.note("after %q no %s worker leased within %v: nothing was pending", ch.What, langName(lang), pr.pc.resumeLimit)
				continue
			}
			r.violate("after %q (%s) no %s worker leased anything within %v, with %d jobs pending%s", ch.What, ch.To, langName(lang), pr.pc.resumeLimit, pending, pr.stall(ctx, ch.After))
		}
		return nil
	}
	steps := []struct {
		do   func() error
		then func() error
	}{
		{func() error { return ctl.setCap(ctx, pr.pc.caps[0]) }, capped},
		{func() error { return ctl.pause(ctx) }, paused},
		{func() error { return ctl.resume(ctx) }, func() error { return again(LangGo) }},
		{func() error { return ctl.setCap(ctx, pr.pc.caps[1]) }, capped},
		{func() error { return ctl.setCap(ctx, 0) }, func() error { return again(pr.pc.sides...) }},
		{func() error { return ctl.pause(ctx) }, paused},
		{func() error { return ctl.resume(ctx) }, func() error { return again(pr.pc.sides...) }},
	}
	for cycle := 1; ctx.Err() == nil; cycle++ {
		if cycle > pr.pc.minCycles && !r.loading() {
			break
		}
		for _, s := range steps {
			if err := s.do(); err != nil {
				return err
			}
			if err := s.then(); err != nil {
				return err
			}
		}
		r.count("policy_cycles", 1)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return ctl.clear(ctx)
}

// waitClaims waits until n leases claimed after server time us are
// recorded (any side when lang is ""), or limit passes; it returns how
// many were.
func (pr *policyRun) waitClaims(ctx context.Context, lang Lang, us int64, n int, limit time.Duration) (int, error) {
	deadline := time.Now().Add(limit)
	for {
		if err := pr.tail.read(); err != nil {
			return 0, err
		}
		got := 0
		for _, l := range pr.tail.tl.leases {
			if (lang == "" || l.lang == lang) && l.claimMS >= 0 && l.claimMS*1000 > us {
				got++
			}
		}
		if got >= n || time.Now().After(deadline) || ctx.Err() != nil {
			return got, ctx.Err()
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
}

// stall describes why claims may lease nothing: the leases past their
// deadlines that no one reaped, and the holder of the queue's maintenance
// lock (only its holder reaps).
func (pr *policyRun) stall(ctx context.Context, since int64) string {
	rc := pr.r.chk.Client()
	k := pr.r.queue.Keys()
	now, err := pr.ctl.serverMicros(ctx)
	if err != nil {
		return ""
	}
	key := k.Active
	if t, err := rc.Do(ctx, rc.B().Type().Key(k.Active).Build()).ToString(); err == nil && t == wire.ActiveTripwireType {
		key = k.Running
	}
	leased, _ := rc.Do(ctx, rc.B().Zcard().Key(key).Build()).AsInt64()
	expired, _ := rc.Do(ctx, rc.B().Zcount().Key(key).Min("-inf").Max(strconv.FormatInt(now/1000-1000, 10)).Build()).AsInt64()
	holder, _ := rc.Do(ctx, rc.B().Hget().Key(wire.KeyLocks).Field(wire.LockMaintenance(pr.r.queue.Name())).Build()).ToString()
	refused := map[Lang]int{}
	for _, lg := range pr.tail.tl.logs {
		if lg.op == "reaping" && lg.class == wrongType && lg.us > since {
			refused[lg.lang]++
		}
	}
	why := ""
	for _, l := range sortedLangs(refused) {
		why += fmt.Sprintf("; %d reaps of %s workers refused on the tripwire since (the lock's holder is one)", refused[l], langName(l))
	}
	return fmt.Sprintf(" (%d leased, %d of them past their deadlines by more than a second: not reaped; the maintenance lock held by %q%s)", leased, expired, holder, why)
}

func sortedLangs(m map[Lang]int) []Lang {
	var out []Lang
	for l := range m {
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}

// pending reads how many jobs are pending.
func (pr *policyRun) pending(ctx context.Context) (int64, error) {
	rc := pr.r.chk.Client()
	return rc.Do(ctx, rc.B().Zcard().Key(pr.r.queue.Keys().Pending).Build()).AsInt64()
}

// startPolicyRun makes the controller side of a run.
func startPolicyRun(r *run, pc policyCycle) *policyRun {
	return &policyRun{r: r, ctl: &policyCtl{r: r}, tail: newTailer(r.pool, r.plan.worker.Lease), pc: pc}
}

// judge reads every record once the worker processes stopped and judges
// the leases against the changes; it adds the verdict's figures to res
// and its breaches to the violations. old says which languages are the
// old side (nil: none).
func (pr *policyRun) judge(res *Result, old func(Lang) bool) (policyVerdict, *timeline, error) {
	t := newTailer(pr.r.pool, pr.r.plan.worker.Lease)
	if err := t.read(); err != nil {
		return policyVerdict{}, nil, err
	}
	changes := pr.ctl.history()
	v := judgePolicy(&t.tl, changes, old)
	c := res.Counts
	c["leases"], c["timed_leases"], c["paused_claims"], c["cap_breaches"] = v.Leases, v.Timed, v.Paused, v.CapBreaches
	c["claims_under_policy"], c["claims_in_brackets"], c["handler_overlap_max"] = v.UnderPolicy, v.InBrackets, v.HandlerOverlap
	for k, n := range v.MaxHeld {
		c[fmt.Sprintf("max_held_cap_%d", k)] = n
	}
	for k, n := range v.Saturated {
		c[fmt.Sprintf("saturated_cap_%d", k)] = n
	}
	for _, cp := range pr.pc.caps {
		c[fmt.Sprintf("max_held_cap_%d", cp)] += 0
		c[fmt.Sprintf("saturated_cap_%d", cp)] += 0
	}
	classic, policy := pr.r.chk.Layouts()
	c["checks_classic"], c["checks_policy"] = classic, policy
	if v.Paused > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("%d leases were claimed while the queue was paused", v.Paused))
	}
	if v.CapBreaches > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("%d claims left more leases held than the cap in force", v.CapBreaches))
	}
	if v.Timed < v.Leases {
		res.Violations = append(res.Violations, fmt.Sprintf("%d of %d leases recorded no claim time (an S line without d=)", v.Leases-v.Timed, v.Leases))
	}
	// Warnings and errors the worker processes' SDKs logged, by side, op
	// and class; this tree's side must never meet the tripwire (every call
	// of its goes to a 2.7 twin, which serves both layouts). A maintenance
	// read that did (reaping, sweeping: the head read of the leased set
	// races a change of layout) is counted, as the next tick does it again.
	judgeLogged(res, &t.tl, old, "a claim or a settle met the tripwire")
	for _, p := range v.Problems {
		res.Violations = append(res.Violations, "policy judge: "+p)
	}
	if v.more > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("policy judge: %d more problems", v.more))
	}
	return v, &t.tl, nil
}

// maintenanceNote says how often this tree's maintenance met the
// tripwire, when it did.
func maintenanceNote(c map[string]int64) string {
	if c["new_maintenance_tripwire"] == 0 {
		return ""
	}
	return fmt.Sprintf("this tree's maintenance met the tripwire %d times (the head read of the leased set racing a change of layout: the read found the tripwire and its retry the classic layout, or the other way; the next tick reads again); ", c["new_maintenance_tripwire"])
}

// capFigures describes the caps' figures for the notes.
func capFigures(c map[string]int64, caps [2]int64) string {
	var parts []string
	for _, cp := range caps {
		parts = append(parts, fmt.Sprintf("under a cap of %d at most %d leases surely held at a claim (exactly %d at %s claims)",
			cp, c[fmt.Sprintf("max_held_cap_%d", cp)], cp, thousands(c[fmt.Sprintf("saturated_cap_%d", cp)])))
	}
	return strings.Join(parts, "; ")
}

// Run runs the scenario.
func (Policies) Run(ctx context.Context, cfg Config) (Result, error) {
	p, pc := policiesPlan(cfg)
	minKills, minFreezes := int64(3), int64(1)
	if cfg.Long {
		minKills, minFreezes = 12, 4
	}
	freeze := 2*p.worker.Lease + 500*time.Millisecond
	var pr *policyRun
	p.faults = func(ctx context.Context, r *run) error {
		pr = startPolicyRun(r, pc)
		sleepCtx(ctx, 500*time.Millisecond)
		return both(ctx, pr.cycles, func(ctx context.Context) error {
			return killAndFreeze(ctx, r, []Lang{LangGo}, minKills, minFreezes, freeze)
		})
	}
	o, err := execute(ctx, cfg, p)
	if err != nil {
		return Result{}, err
	}
	w := p.worker
	load := fmt.Sprintf("%s jobs at ~%.0f/s; %d worker processes of this tree's Go SDK (%s) × %d; lease %v; handlers %v–%v, %.0f%% of first attempts fail",
		thousands(int64(p.jobs)), p.rate, p.workers, wire.Version, w.Concurrency, w.Lease, w.HandlerMin, w.HandlerMax, 100*w.FailRate)
	c := o.run
	faults := fmt.Sprintf("%d policy cycles (%d policy changes: a cap of %d laying the tripwire, a pause on top, resume, the cap raised to %d, removed, a pause alone, resume); %d SIGKILLs of worker processes (each replaced); %d SIGSTOPs of a worker process for %v",
		c.get("policy_cycles"), c.get("policy_changes"), pc.caps[0], pc.caps[1], c.get("kills"), c.get("freezes"), freeze)
	res := o.result("claimer policies ("+wire.Version+": pause, concurrency cap)", load, faults)
	if _, _, err := pr.judge(&res, nil); err != nil {
		return Result{}, err
	}
	n := res.Counts
	res.Notes = maintenanceNote(n) + fmt.Sprintf("%s leases judged (%s with a claim time); %s claimed while the queue had a policy, %s within a change's bracket; no lease claimed while paused (%d); %s; at most %d handlers ran at once (leases lost to the reaper included); the checker read %s batches in the classic layout and %s under the tripwire; ",
		thousands(n["leases"]), thousands(n["timed_leases"]), thousands(n["claims_under_policy"]), thousands(n["claims_in_brackets"]), n["paused_claims"],
		capFigures(n, pc.caps), n["handler_overlap_max"], thousands(n["checks_classic"]), thousands(n["checks_policy"])) + res.Notes
	res.Details = fmt.Sprintf(`**Injected.** %d worker processes of this tree's Go SDK (emq.NewWorker, %d handlers each, lease %v) work one queue while two producers push %s jobs. A controller (the Go SDK's Queue.Pause, Resume and SetConcurrency) changes the queue's policy in cycles: a cap of %d on a queue with no policy (the tripwire laid: the active set renamed to the running set), held until %d claims are recorded under it; a pause on top, held %v; resume, until a worker leased again; the cap raised to %d, held as before; the cap removed (the last policy: the classic layout back), until a worker leased again; a pause alone (the tripwire laid again), held; resume. Each change is bracketed by the server's TIME read before it was sent and after it was answered. Meanwhile worker processes are SIGKILLed (each replaced) and frozen with SIGSTOP for %v (past the lease), so that leases are lost and reaped under a pause and under a cap, and thawed handlers run beside the leases that replaced theirs.

**Checked.** Each worker process records every handler start with the lease's deadline (so its claim script's TIME: the deadline less the lease) and the time, every handler return and settle with the time. A lease is held from its claim until its settle is accepted or the reaper takes it back (what the cap counts: the running set); the records bound it from inside — from the end of its claim's millisecond to its handler's return when its settle was accepted, else to the earlier of that and its first deadline (a lease is reaped only after its deadline). No lease may be claimed in a millisecond in which the queue was surely paused (between the TIME after the pause's reply and the TIME before the resume was sent): %d were. No claim may leave more leases surely held than the cap in force in its millisecond (a cap lowered below the leases held takes none back, so only claims are judged): %d did; %s. A lease lost to the reaper no longer counts — its thawed handler may still run (at most %d handlers ran at once, lost leases included), its settle refused. The accounting of the crashing-workers scenario holds: every acknowledged job finished exactly once, none lost. This tree's workers logged no failure meeting the tripwire (every call goes to a 2.7 twin). The invariant checker reads each batch in either layout and checks the layout itself: the active key a set and no running set or policy record, or the active key the tripwire (a string) with a policy record (%s batches read under the tripwire, %s in the classic layout).
%s`, p.workers, w.Concurrency, w.Lease, thousands(int64(p.jobs)), pc.caps[0], pc.capClaims, pc.hold, pc.caps[1], freeze,
		n["paused_claims"], n["cap_breaches"], capFigures(n, pc.caps), n["handler_overlap_max"], thousands(n["checks_policy"]), thousands(n["checks_classic"]), o.problems())
	return res, nil
}

// both runs a and b at once and returns when both returned: the first
// error, if any (an error of one cancels the other).
func both(ctx context.Context, a, b func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 2)
	for _, f := range []func(context.Context) error{a, b} {
		go func() {
			err := f(ctx)
			if err != nil {
				cancel()
			}
			errs <- err
		}()
	}
	first := <-errs
	second := <-errs
	if first != nil {
		return first
	}
	return second
}
