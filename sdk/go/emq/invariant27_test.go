package emq_test

import (
	"errors"
	"strings"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// The invariant's operation of echomq 2.7.0 and 2.8.0: a policy's whole
// life in one operation, so that every other operation meets the classic
// layout the model describes. The queue is paused, or capped at the jobs
// it has leased, or paused under a rate limit too (configure_policy); its
// policy is read back (read_policy) with the leased jobs counted in the
// running set; a claim leases nothing and a 2.6 claim is refused
// WRONGTYPE, writing nothing (under the rate limit a 2.7 claim is refused
// EMQPOLICY too); clearing the policy brings the classic layout back and
// rings the doorbell when jobs are pending. Now and then a later minor's
// tripwire is planted (the leased jobs moved to the running set):
// configure_policy refuses it (EMQPOLICY), and it is taken away again.
func (v *invariant) policyCycle() {
	var active, pending []emq.ID
	for id, j := range v.model.jobs {
		switch j.state {
		case emq.StateActive:
			active = append(active, id)
		case emq.StatePending:
			pending = append(pending, id)
		}
	}
	rc := v.c.Redis()
	if v.rnd.IntN(3) == 0 {
		// A later minor's policy layout: its leased jobs in the running
		// set, its tripwire at active.
		v.note("set_policy under a later minor's tripwire (%d leased)", len(active))
		if len(active) > 0 {
			if err := rc.Do(v.ctx, rc.B().Rename().Key(v.k.Active).Newkey(v.k.Running).Build()).Error(); err != nil {
				v.fail("moving the leased jobs to the running set: %v", err)
			}
		}
		if err := rc.Do(v.ctx, rc.B().Set().Key(v.k.Active).Value("99 99").Build()).Error(); err != nil {
			v.fail("planting a later minor's tripwire: %v", err)
		}
		_, err := v.q.Pause(v.ctx)
		v.count(wire.ScriptConfigurePolicy.Name, false)
		if !errors.Is(err, emq.ErrPolicy) {
			v.fail("Pause under a later minor's tripwire = %v; want ErrPolicy", err)
		}
		if p, err := v.q.Policy(v.ctx); err != nil || p != (emq.QueuePolicy{Requires: 99, Leased: int64(len(active))}) {
			v.fail("Policy under a later minor's tripwire = %+v, %v", p, err)
		}
		v.count(wire.ScriptReadPolicy.Name, len(active) > 0)
		if err := rc.Do(v.ctx, rc.B().Del().Key(v.k.Active).Build()).Error(); err != nil {
			v.fail("lifting the planted tripwire: %v", err)
		}
		if len(active) > 0 {
			if err := rc.Do(v.ctx, rc.B().Rename().Key(v.k.Running).Newkey(v.k.Active).Build()).Error(); err != nil {
				v.fail("moving the leased jobs back to the active set: %v", err)
			}
		}
		return
	}
	paused := len(active) == 0 || v.rnd.IntN(2) == 0
	rated := paused && v.rnd.IntN(2) == 0
	var p emq.QueuePolicy
	var err error
	if paused {
		v.note("pause (%d leased, %d pending)", len(active), len(pending))
		p, err = v.q.Pause(v.ctx)
	} else {
		v.note("set_concurrency %d (as many as are leased; %d pending)", len(active), len(pending))
		p, err = v.q.SetConcurrency(v.ctx, len(active))
	}
	v.count(wire.ScriptConfigurePolicy.Name, err == nil)
	want := emq.QueuePolicy{Paused: paused, Requires: 7, Leased: int64(len(active))}
	if !paused {
		want.Concurrency = len(active)
	}
	if err != nil || p != want {
		v.fail("the policy set = %+v, %v; want %+v", p, err, want)
	}
	if rated {
		// A rate limit on the paused queue: the pause still holds every
		// claim, and the tripwire names minor 8 to claim.
		v.note("set_rate_limit 3 per second (paused)")
		p, err = v.q.SetRateLimit(v.ctx, 3, time.Second)
		want.Requires, want.RateLimit, want.RatePeriod = 8, 3, time.Second
		if err != nil || p != want {
			v.fail("the rate limit set = %+v, %v; want %+v", p, err, want)
		}
	}
	if p, err = v.q.Policy(v.ctx); err != nil || p != want {
		v.fail("Policy = %+v, %v; want %+v", p, err, want)
	}
	v.count(wire.ScriptReadPolicy.Name, p.Leased > 0)
	if len(pending) > 0 {
		got, err := v.q.ClaimMany(v.ctx, time.Minute, len(pending))
		if err != nil || len(got) != 0 {
			v.fail("ClaimMany under %+v = %+v, %v; want nothing leased", p, got, err)
		}
		row, _ := v.k.Row(pending[0])
		old := wire.ClaimIDsCall{Pending: v.k.Pending, Active: v.k.Active, Wake: v.k.Wake, Rows: []string{row}, LeaseMS: 60000, IDs: pending[:1]}
		if _, err := old.Exec(v.ctx, rc); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
			v.fail("claim_ids under a policy = %v; want WRONGTYPE", err)
		}
		if rated {
			older := wire.ClaimPolicyIDsCall{Pending: v.k.Pending, Active: v.k.Active, Running: v.k.Running, Policy: v.k.Policy, Wake: v.k.Wake,
				Rows: []string{row}, LeaseMS: 60000, IDs: pending[:1]}
			if _, err := older.Exec(v.ctx, rc); !errors.Is(err, emq.ErrPolicy) {
				v.fail("claim_policy_ids under a rate limit = %v; want EMQPOLICY", err)
			}
		}
	}
	if rated {
		// Resumed, the limit stays; removing it clears the last policy.
		if p, err = v.q.Resume(v.ctx); err != nil || p.Paused || p.RateLimit != 3 || p.Requires != 8 {
			v.fail("Resume under a rate limit = %+v, %v; want the limit kept", p, err)
		}
		p, err = v.q.SetRateLimit(v.ctx, 0, 0)
	} else if paused {
		p, err = v.q.Resume(v.ctx)
	} else {
		p, err = v.q.SetConcurrency(v.ctx, 0)
	}
	if want := (emq.QueuePolicy{Leased: int64(len(active))}); err != nil || p != want {
		v.fail("the policy cleared = %+v, %v; want %+v", p, err, want)
	}
	// Resuming, or removing the cap, rings the doorbell when jobs are
	// pending.
	v.model.wake = v.model.wake || len(pending) > 0
}

// twinned are the 2.6 scripts the SDK no longer calls: it runs their 2.7
// twins, which serve both layouts (the conformance suite's wire mode
// replays the 2.6 scripts, and policy_test.go shows them refused on a
// queue with a policy); and the 2.7 scripts it no longer calls (2.8.0):
// it claims with their twins that honour a rate limit and sets and reads
// policies with configure_policy and read_policy (the wire mode replays
// them, and rate_test.go shows the claimer and set_policy refused on a
// rate-limited queue).
var twinned = []*wire.Script{wire.ScriptClaimIDs, wire.ScriptCompleteResultClaimIDs, wire.ScriptFail, wire.ScriptReapRecordedIDs, wire.ScriptExtend,
	wire.ScriptCancelIDs, wire.ScriptAddDedup, wire.ScriptReplaceDedup, wire.ScriptDedupEntries, wire.ScriptSweepDedup, wire.ScriptRetry, wire.ScriptBury,
	wire.ScriptClaimPolicyIDs, wire.ScriptCompletePolicyIDs, wire.ScriptSetPolicy, wire.ScriptQueuePolicy}
