package chaos

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

func init() { Register(MixedPolicy{}) }

// policyMixLangs are the sides of the mixed26policy scenario: the Go SDK
// of this tree (the new side) and the Go SDK of the frozen release before
// this tree's minor (LangPrev26, 2.6.1).
var policyMixLangs = []Lang{LangGo, LangPrev26}

// policyProbeQueue is the queue of the scenario's deterministic tripwire
// probes.
const policyProbeQueue = "chaos-tripwire"

// MixedPolicy is the mixed-fleet scenario of 2.7.0's claimer policies:
// worker processes built from the frozen 2.6.1 release beside worker
// processes of this tree's Go SDK work one queue, producers of both sides
// pushing to it, while a controller lays the queue's tripwire (a cap, a
// pause) and lifts it again in cycles, and worker processes of both sides
// are SIGKILLed and frozen past their leases. A 2.6.1 client cannot honour
// a policy, so every script of its that declares the active key must fail
// WRONGTYPE on the tripwire before any write: while the queue has a policy
// the old side leases nothing and settles nothing, the jobs it held when
// the tripwire was laid are leased again only after their leases expired
// (the new side's reaper, or after the policy is cleared), and when the
// last policy is cleared the old side leases again. The new side keeps
// the policies as the policies scenario proves; every job finishes exactly
// once, none lost.
type MixedPolicy struct{}

// Name is "mixed26policy".
func (MixedPolicy) Name() string { return "mixed26policy" }

func mixed26Plan(cfg Config) (*plan, policyCycle) {
	p := mixedPlan(cfg)
	p.name = "mixed26policy"
	p.workerLangs, p.producerLangs = policyMixLangs, policyMixLangs
	p.worker.AlwaysFail = 0.02
	pc := policyCycle{caps: [2]int64{3, 6}, hold: time.Second, capClaims: 30, capLimit: 8 * time.Second, minCycles: 2,
		sides: policyMixLangs, resumeLimit: 15 * time.Second}
	if !cfg.Long && cfg.Jobs == 0 {
		p.jobs, p.rate = 1800, 90
	}
	if cfg.Long {
		pc.caps, pc.capClaims, pc.minCycles = [2]int64{4, 12}, 200, 8
	}
	return p, pc
}

// Run runs the scenario.
func (MixedPolicy) Run(ctx context.Context, cfg Config) (Result, error) {
	p, pc := mixed26Plan(cfg)
	minKills, minFreezes := int64(2), int64(len(policyMixLangs))
	if cfg.Long {
		minKills, minFreezes = 8, 6
	}
	freeze := 2*p.worker.Lease + 500*time.Millisecond
	var pr *policyRun
	p.faults = func(ctx context.Context, r *run) error {
		if err := tripwireProbes(ctx, r); err != nil {
			return err
		}
		pr = startPolicyRun(r, pc)
		sleepCtx(ctx, 500*time.Millisecond)
		return both(ctx, pr.cycles, func(ctx context.Context) error {
			return killAndFreeze(ctx, r, policyMixLangs, minKills, minFreezes, freeze)
		})
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
	cross, err := crossLanguage(o.run, policyMixLangs)
	if err != nil {
		return Result{}, err
	}
	prev := oldReleases[LangPrev26]
	w := p.worker
	load := fmt.Sprintf("%s jobs at ~%.0f/s from a Go %s producer and a Go %s producer; %d worker processes (the two sides in turn) × %d; lease %v; handlers %v–%v, %.0f%% of first attempts fail, %.0f%% of jobs fail on every attempt (buried after %d)",
		thousands(int64(p.jobs)), p.rate, wire.Version, prev, p.workers, w.Concurrency, w.Lease, w.HandlerMin, w.HandlerMax, 100*w.FailRate, 100*w.AlwaysFail, w.MaxAttempts)
	c := o.run
	faults := fmt.Sprintf("%d policy cycles (%d policy changes: a cap of %d laying the tripwire, a pause on top, resume, the cap raised to %d, removed, a pause alone, resume); SIGKILLs of worker processes: %d of the new side, %d of the %s side (each replaced by one of its side); %d SIGSTOPs of a worker process for %v",
		c.get("policy_cycles"), c.get("policy_changes"), pc.caps[0], pc.caps[1], c.get("kills_"+string(LangGo)), c.get("kills_"+string(LangPrev26)), prev, c.get("freezes"), freeze)
	res := o.result("mixed fleet ("+prev+" beside "+wire.Version+", claimer policies)", load, faults)
	for k, v := range cross {
		res.Counts[k] = v
	}
	v, _, err := pr.judge(&res, func(l Lang) bool { return l == LangPrev26 })
	if err != nil {
		return Result{}, err
	}
	n := res.Counts
	n["old_claims_under_policy"], n["old_settles_under_policy"] = v.OldUnderPolicy, v.OldSettledUnder
	n["old_stranded"], n["old_taken_under_policy"], n["old_taken_after_clear"], n["old_released_early"] = v.OldStranded, v.OldTakenUnder, v.OldTakenAfter, v.OldReleasedTooSoon
	if v.OldUnderPolicy > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("the %s side leased %d jobs while the queue had a policy", prev, v.OldUnderPolicy))
	}
	if v.OldSettledUnder > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("the %s side's settles of %d leases were accepted while the queue had a policy", prev, v.OldSettledUnder))
	}
	if v.OldReleasedTooSoon > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("%d jobs the %s side held when a tripwire was laid were leased again before their leases expired", v.OldReleasedTooSoon, prev))
	}
	old := string(LangPrev26)
	var refused []string
	for _, k := range sortedKeys(n) {
		if op, ok := strings.CutPrefix(k, "logged_old_"); ok && strings.HasSuffix(op, "_"+wrongType) {
			refused = append(refused, fmt.Sprintf("%s %s", thousands(n[k]), strings.TrimSuffix(op, "_"+wrongType)))
		}
	}
	if len(refused) == 0 {
		refused = []string{"none"}
	}
	// A 2.6.1 worker holding the queue's maintenance lock under a policy
	// keeps it (its lock script does not read the active key) while its
	// reaps fail on the tripwire, and the new side reaps only under the
	// lock: expired leases then wait for the policy to be cleared. Counted,
	// and said, not judged: it is the SDK's choice, not a breach of safety.
	n["old_reaps_refused"] = 0
	for _, k := range sortedKeys(n) {
		if strings.HasPrefix(k, "logged_old_reaping_") {
			n["old_reaps_refused"] += n[k]
		}
	}
	lock := ""
	if n["old_reaps_refused"] > 0 {
		lock = fmt.Sprintf("the %s side held the queue's maintenance lock while the queue had a policy (%s of its reaps refused): meanwhile nothing reaped, as this tree's workers reap only under the lock, so the leases that expired then (%s of the stranded ones among them) waited for the policy to be cleared; ",
			prev, thousands(n["old_reaps_refused"]), thousands(v.OldTakenAfter))
	}
	res.Notes = lock + maintenanceNote(n) + fmt.Sprintf("the %s side's logged failures on the tripwire (WRONGTYPE), by what it was doing: %s; it leased %s jobs while the queue had a policy and had %s settles accepted then; it leased again after %d of the %d clears; %s of its leases were held when a tripwire was laid: %s leased again while the policy stood (the new side's reaper took them back), %s only once it was cleared, %s before their leases expired; %s tripwire probes refused as they must; completed across sides: %s pushed by the new side and completed by the old, %s the other way; %s leases judged (%s claimed while the queue had a policy); no lease claimed while paused (%d); %s; ",
		prev, strings.Join(refused, ", "), thousands(v.OldUnderPolicy), thousands(v.OldSettledUnder), n["resumed_"+old], 2*n["policy_cycles"],
		thousands(v.OldStranded), thousands(v.OldTakenUnder), thousands(v.OldTakenAfter), thousands(v.OldReleasedTooSoon), thousands(n["probe_refusals"]),
		thousands(cross[string(LangGo)+"_to_"+old]), thousands(cross[old+"_to_"+string(LangGo)]),
		thousands(n["leases"]), thousands(n["claims_under_policy"]), n["paused_claims"], capFigures(n, pc.caps)) + res.Notes
	res.Details = fmt.Sprintf(`**Injected.** %d worker processes work one queue: worker processes of this tree's Go SDK and of the Go SDK of the frozen %s release (built from git history, as in mixed23), in turn, %d handlers each (lease %v), while a producer of each side pushes %s jobs. A controller (the Go SDK's Queue.Pause, Resume and SetConcurrency) changes the queue's policy in cycles, as in the policies scenario: a cap of %d laying the tripwire (the active set renamed to the running set, the active key a string), held until %d claims are recorded under it; a pause on top; resume; the cap raised to %d; the cap removed (the last policy: the classic layout back), until a worker of each side leased again; a pause alone; resume, until each side leased again. Worker processes of each side are SIGKILLed (each replaced by one of its side) and frozen with SIGSTOP for %v, the sides in turn. Before the load, deterministic probes on a queue of their own: a job leased by a %s client in the classic layout, then the queue paused, then that client's completion, retry, burial, a claim and a reap.

**Checked.** The probes: each of the five %s calls is refused WRONGTYPE and the queue's keys (every key's type and DUMP) are unchanged by them; once the queue is resumed the %s completion of its lease is accepted. The load: every worker process records each lease's claim time (from its deadline) and its handler's and settle's times; each change is bracketed by the server's TIME. While the queue surely had a policy the %s side leased nothing and none of its settles was accepted (its claims and settles fail on the tripwire: the failures it logged are counted by what it was doing); a lease it held when a tripwire was laid was leased again only after its deadline — by the new side while the policy stood (the new side's reaper took it back), or once the policy was cleared (a %s worker that holds the queue's maintenance lock keeps it under a policy while its reaps fail on the tripwire, and this tree's workers reap only under the lock, so what expires meanwhile waits for the clear; the figures count both) — and the job finished once; after each clear of the last policy both sides leased again. The new side's claims are judged as in the policies scenario: none while paused, none leaving more leases surely held than the cap (the %s side's stranded leases count, since they sit in the running set). Every acknowledged job finished exactly once, none lost; this tree's workers logged no failure meeting the tripwire.
%s`, p.workers, prev, w.Concurrency, w.Lease, thousands(int64(p.jobs)), pc.caps[0], pc.capClaims, pc.caps[1], freeze, prev, prev, prev, prev, prev, prev, o.problems())
	return res, nil
}

// tripwireProbes runs the deterministic probes on policyProbeQueue: a job
// leased by the old side's driver in the classic layout; the queue paused
// (the tripwire laid); the old side's completion, retry and burial of that
// lease, a claim and a reap each refused WRONGTYPE, the queue's keys
// unchanged by them; resumed, the old side's completion accepted. Each
// refusal counts in "probe_refusals"; a failed probe is a violation.
func tripwireProbes(ctx context.Context, r *run) error {
	old, err := r.driver(ctx, LangPrev26, []string{r.srv.Addr()})
	if err != nil {
		return fmt.Errorf("chaos: the tripwire probes need the %s driver: %w", langName(LangPrev26), err)
	}
	q, err := r.client.Queue(policyProbeQueue)
	if err != nil {
		return err
	}
	for range 2 {
		id, err := r.client.Mint(emq.WorkKind)
		if err != nil {
			return err
		}
		if _, err := q.Push(ctx, id, []byte("tripwire probe")); err != nil {
			return err
		}
	}
	id, tok, ok, err := old.Claim(ctx, q.Name(), time.Minute)
	if err != nil || !ok {
		r.violate("tripwire probe: the %s claim in the classic layout leased nothing (%v)", oldReleases[LangPrev26], err)
		return nil
	}
	ctl := &policyCtl{r: &run{chk: r.chk, queue: q, counts: map[string]int64{}, plan: r.plan, cfg: r.cfg}}
	if err := ctl.pause(ctx); err != nil {
		return err
	}
	before, err := queueDigest(ctx, r, q)
	if err != nil {
		return err
	}
	calls := []struct {
		what string
		do   func() error
	}{
		{"complete", func() error { return old.Complete(ctx, q.Name(), id, tok) }},
		{"retry", func() error { return old.Retry(ctx, q.Name(), id, tok, 0) }},
		{"bury", func() error { return old.Bury(ctx, q.Name(), id, tok) }},
		{"claim", func() error {
			got, _, ok, err := old.Claim(ctx, q.Name(), time.Minute)
			if err == nil && ok {
				return fmt.Errorf("leased %s", got)
			}
			if err == nil {
				return errors.New("answered nothing leased, not a refusal")
			}
			return err
		}},
		{"reap", func() error { _, err := old.Reap(ctx, q.Name()); return err }},
	}
	for _, c := range calls {
		err := c.do()
		if err == nil || !strings.Contains(err.Error(), wrongType) {
			r.violate("tripwire probe: the %s %s on a paused queue answered %v; want a WRONGTYPE refusal", oldReleases[LangPrev26], c.what, err)
			continue
		}
		r.count("probe_refusals", 1)
	}
	after, err := queueDigest(ctx, r, q)
	if err != nil {
		return err
	}
	if after != before {
		r.violate("tripwire probe: the refused %s calls changed the queue's keys", oldReleases[LangPrev26])
	}
	for _, vv := range ctl.r.violations {
		r.violate("tripwire probe: %s", vv)
	}
	if err := ctl.resume(ctx); err != nil {
		return err
	}
	if err := old.Complete(ctx, q.Name(), id, tok); err != nil {
		r.violate("tripwire probe: once the queue was resumed the %s completion was refused: %v", oldReleases[LangPrev26], err)
	} else {
		r.count("probe_accepted", 1)
	}
	r.logf("tripwire probes: %d of %d %s calls refused on the paused queue", r.get("probe_refusals"), len(calls), oldReleases[LangPrev26])
	return nil
}

// queueDigest hashes every key of q (the keys sharing its hash tag): each
// key's name, type and DUMP, in name order.
func queueDigest(ctx context.Context, r *run, q *emq.Queue) (string, error) {
	rc := r.chk.Client()
	tag, _, ok := strings.Cut(q.Keys().Pending, "}")
	if !ok {
		return "", fmt.Errorf("chaos: the queue's key %q has no hash tag", q.Keys().Pending)
	}
	var keys []string
	var cursor uint64
	for {
		e, err := rc.Do(ctx, rc.B().Scan().Cursor(cursor).Match(tag+"}*").Count(1000).Build()).AsScanEntry()
		if err != nil {
			return "", err
		}
		keys = append(keys, e.Elements...)
		if cursor = e.Cursor; cursor == 0 {
			break
		}
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		t, err := rc.Do(ctx, rc.B().Type().Key(k).Build()).ToString()
		if err != nil {
			return "", err
		}
		d, err := rc.Do(ctx, rc.B().Dump().Key(k).Build()).ToString()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%s\x00%d\x00%s\x00", k, t, len(d), d)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
