package main

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// The ops of echomq 2.7.0 and 2.8.0: set_policy, queue_policy,
// configure_policy and read_policy run their scripts' generated calls in
// both modes (the SDK's idiomatic policy calls are the ops pause, resume,
// set_concurrency, set_rate_limit and policy), and so do claim_policy_ids
// and complete_policy_ids, which the SDK no longer calls (it claims with
// their 2.8 twins, which honour a rate limit); the twins of the 2.6
// scripts run their generated calls in the wire mode and, by default, the
// idiomatic call of the op they twin, which runs the twin.

func init() {
	maps.Copy(wireOps, map[string]wireOp{
		wire.ScriptSetPolicy.Name:       wireSetPolicy,
		wire.ScriptQueuePolicy.Name:     wireQueuePolicy,
		wire.ScriptConfigurePolicy.Name: wireConfigurePolicy,
		wire.ScriptReadPolicy.Name:      wireReadPolicy,
	})
}

// scriptOnly are the ops that run their scripts' generated calls in the
// idiomatic mode too: no SDK call runs those scripts.
var scriptOnly = []string{wire.ScriptSetPolicy.Name, wire.ScriptQueuePolicy.Name, wire.ScriptConfigurePolicy.Name, wire.ScriptReadPolicy.Name,
	wire.ScriptClaimPolicyIDs.Name, wire.ScriptCompletePolicyIDs.Name}

// twinOf names, for each twin, the op of the 2.6 script it twins: in the
// idiomatic mode the twin's op is that op, whose SDK call runs the twin
// (claim_rate_ids and complete_rate_ids, of 2.8.0, twin claim_ids and
// complete_result_claim_ids as claim_policy_ids and complete_policy_ids
// did).
var twinOf = map[string]string{
	wire.ScriptClaimRateIDs.Name:       wire.ScriptClaimIDs.Name,
	wire.ScriptCompleteRateIDs.Name:    wire.ScriptCompleteResultClaimIDs.Name,
	wire.ScriptFailPolicy.Name:         wire.ScriptFail.Name,
	wire.ScriptReapPolicyIDs.Name:      wire.ScriptReapRecordedIDs.Name,
	wire.ScriptExtendPolicy.Name:       wire.ScriptExtend.Name,
	wire.ScriptCancelPolicyIDs.Name:    wire.ScriptCancelIDs.Name,
	wire.ScriptAddDedupPolicy.Name:     wire.ScriptAddDedup.Name,
	wire.ScriptReplaceDedupPolicy.Name: wire.ScriptReplaceDedup.Name,
	wire.ScriptDedupPolicyEntries.Name: wire.ScriptDedupEntries.Name,
	wire.ScriptSweepDedupPolicy.Name:   wire.ScriptSweepDedup.Name,
	wire.ScriptRetryPolicy.Name:        wire.ScriptRetry.Name,
	wire.ScriptBuryPolicy.Name:         wire.ScriptBury.Name,
}

// policyOut renders a queue's policy as the policy ops answer it: paused
// 1 or 0, as the scripts reply.
func policyOut(paused bool, concurrency, requires int64) map[string]any {
	p := 0
	if paused {
		p = 1
	}
	return map[string]any{"paused": p, "concurrency": concurrency, "requires": requires}
}

// queuePolicyOut renders the SDK's QueuePolicy as the idiomatic policy
// ops answer it (echomq 2.8.0: read_policy's seven fields).
func queuePolicyOut(p emq.QueuePolicy) map[string]any {
	out := policyOut(p.Paused, int64(p.Concurrency), int64(p.Requires))
	out["leased"] = p.Leased
	out["rate_limit"] = p.RateLimit
	out["rate_period_ms"] = p.RatePeriod.Milliseconds()
	out["admit_in_ms"] = p.AdmitIn.Milliseconds()
	return out
}

func wireSetPolicy(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[struct {
		Queue       string `json:"queue"`
		Paused      int64  `json:"paused"`
		Concurrency int64  `json:"concurrency"`
	}](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	if a.Paused < -1 || a.Paused > 1 || a.Concurrency < -1 {
		return nil, argument("paused %d, concurrency %d", a.Paused, a.Concurrency)
	}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	k := q.Keys()
	c := wire.SetPolicyCall{Pending: k.Pending, Active: k.Active, Running: k.Running, Policy: k.Policy, Wake: k.Wake, Paused: a.Paused, Concurrency: a.Concurrency}
	r, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	return policyOut(r.Paused == 1, r.Concurrency, r.Requires), nil
}

func wireQueuePolicy(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[struct {
		Queue string `json:"queue"`
	}](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	k := q.Keys()
	c := wire.QueuePolicyCall{Active: k.Active, Running: k.Running, Policy: k.Policy}
	r, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	out := policyOut(r.Paused == 1, r.Concurrency, r.Requires)
	out["leased"] = r.Leased
	return out, nil
}

// The rate limit's bounds, as configure_policy checks its ARGV.
const (
	maxRateLimit    = wire.ConfigurePolicyRateLimitMax
	maxRatePeriodMS = wire.ConfigurePolicyRatePeriodMSMax
)

func wireConfigurePolicy(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[struct {
		Queue        string `json:"queue"`
		Paused       int64  `json:"paused"`
		Concurrency  int64  `json:"concurrency"`
		RateLimit    int64  `json:"rate_limit"`
		RatePeriodMS int64  `json:"rate_period_ms"`
	}](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	if a.Paused < -1 || a.Paused > 1 || a.Concurrency < -1 || a.RateLimit < -1 || a.RateLimit > maxRateLimit ||
		a.RateLimit > 0 && (a.RatePeriodMS < 1 || a.RatePeriodMS > maxRatePeriodMS) {
		return nil, argument("paused %d, concurrency %d, rate limit %d per %d ms", a.Paused, a.Concurrency, a.RateLimit, a.RatePeriodMS)
	}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	k := q.Keys()
	c := wire.ConfigurePolicyCall{Pending: k.Pending, Active: k.Active, Running: k.Running, Policy: k.Policy, Starts: k.Starts, Wake: k.Wake,
		Paused: a.Paused, Concurrency: a.Concurrency, RateLimit: a.RateLimit, RatePeriodMS: a.RatePeriodMS}
	r, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	out := policyOut(r.Paused == 1, r.Concurrency, r.Requires)
	out["rate_limit"], out["rate_period_ms"] = r.RateLimit, r.RatePeriodMS
	return out, nil
}

func wireReadPolicy(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[struct {
		Queue string `json:"queue"`
	}](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	k := q.Keys()
	c := wire.ReadPolicyCall{Active: k.Active, Running: k.Running, Policy: k.Policy, Starts: k.Starts}
	r, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	out := policyOut(r.Paused == 1, r.Concurrency, r.Requires)
	out["leased"], out["rate_limit"], out["rate_period_ms"], out["admit_in_ms"] = r.Leased, r.RateLimit, r.RatePeriodMS, r.AdmitInMS
	return out, nil
}

// policyOp answers the idiomatic policy ops (pause, resume,
// set_concurrency, set_rate_limit, policy) and, in either mode, the ops
// of scriptOnly; ok is false for any other op.
func (t *testee) policyOp(ctx context.Context, req request) (res any, ok bool, err error) {
	switch {
	case slices.Contains(scriptOnly, req.Op):
		res, err = wireOps[req.Op](t, ctx, req)
		if err != nil {
			err = t.wirePolicy(ctx, req, wire.ScriptNamed(req.Op), err)
		}
		return res, true, err
	case slices.Contains([]string{"pause", "resume", "set_concurrency", "set_rate_limit", "policy"}, req.Op):
	default:
		return nil, false, nil
	}
	a, err := args[struct {
		Queue        string `json:"queue"`
		Concurrency  int    `json:"concurrency"`
		RateLimit    int    `json:"rate_limit"`
		RatePeriodMS int64  `json:"rate_period_ms"`
		Force        bool   `json:"force"`
	}](req)
	if err != nil {
		return nil, true, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, true, err
	}
	var opts []emq.PolicyOption
	if a.Force {
		opts = append(opts, emq.ForceTripwire())
	}
	var p emq.QueuePolicy
	switch req.Op {
	case "pause":
		p, err = q.Pause(ctx, opts...)
	case "resume":
		p, err = q.Resume(ctx)
	case "set_concurrency":
		p, err = q.SetConcurrency(ctx, a.Concurrency, opts...)
	case "set_rate_limit":
		p, err = q.SetRateLimit(ctx, a.RateLimit, time.Duration(a.RatePeriodMS)*time.Millisecond, opts...)
	default:
		p, err = q.Policy(ctx)
	}
	if err != nil {
		return nil, true, err
	}
	return queuePolicyOut(p), true, nil
}
