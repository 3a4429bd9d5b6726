package main

import (
	"context"
	"maps"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// The ops of echomq 2.7.0: set_policy and queue_policy run their scripts'
// generated calls in both modes (the SDK's idiomatic policy calls are the
// ops pause, resume, set_concurrency and policy); the twins of the 2.6
// scripts run their generated calls in the wire mode and, by default, the
// idiomatic call of the op they twin, which runs the twin.

func init() {
	maps.Copy(wireOps, map[string]wireOp{
		wire.ScriptSetPolicy.Name:   wireSetPolicy,
		wire.ScriptQueuePolicy.Name: wireQueuePolicy,
	})
}

// twinOf names, for each 2.7 twin, the op of the 2.6 script it twins: in
// the idiomatic mode the twin's op is that op, whose SDK call runs the
// twin.
var twinOf = map[string]string{
	wire.ScriptClaimPolicyIDs.Name:     wire.ScriptClaimIDs.Name,
	wire.ScriptCompletePolicyIDs.Name:  wire.ScriptCompleteResultClaimIDs.Name,
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

// queuePolicyOut renders the SDK's QueuePolicy.
func queuePolicyOut(p emq.QueuePolicy) map[string]any {
	out := policyOut(p.Paused, int64(p.Concurrency), int64(p.Requires))
	out["leased"] = p.Leased
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

// policyOp answers the idiomatic policy ops (pause, resume,
// set_concurrency, policy) and, in either mode, set_policy and
// queue_policy; ok is false for any other op.
func (t *testee) policyOp(ctx context.Context, req request) (res any, ok bool, err error) {
	switch req.Op {
	case wire.ScriptSetPolicy.Name, wire.ScriptQueuePolicy.Name:
		res, err = wireOps[req.Op](t, ctx, req)
		return res, true, err
	case "pause", "resume", "set_concurrency", "policy":
	default:
		return nil, false, nil
	}
	a, err := args[struct {
		Queue       string `json:"queue"`
		Concurrency int    `json:"concurrency"`
		Force       bool   `json:"force"`
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
	default:
		p, err = q.Policy(ctx)
	}
	if err != nil {
		return nil, true, err
	}
	return queuePolicyOut(p), true, nil
}
