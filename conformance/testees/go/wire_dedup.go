package main

import (
	"context"
	"maps"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// The wire mode of echomq 2.5.0: each op runs its script's generated call
// after the contract's argument checks (nothing sent).

func init() {
	maps.Copy(wireOps, map[string]wireOp{
		wire.ScriptAddDedup.Name:     wireAddDedup,
		wire.ScriptReplaceDedup.Name: wireReplaceDedup,
		wire.ScriptDedupEntries.Name: wireDedupEntries,
		wire.ScriptSweepDedup.Name:   wireSweepDedup,
		wire.ScriptCancelIDs.Name:    wireCancelIDs,
		// echomq 2.7.0: the twins take their 2.6 scripts' arguments.
		wire.ScriptAddDedupPolicy.Name:     wireAddDedup,
		wire.ScriptReplaceDedupPolicy.Name: wireReplaceDedup,
		wire.ScriptDedupPolicyEntries.Name: wireDedupEntries,
		wire.ScriptSweepDedupPolicy.Name:   wireSweepDedup,
		wire.ScriptCancelPolicyIDs.Name:    wireCancelIDs,
	})
}

// wirePolicy checks the arguments add_dedup and replace_dedup share.
func wirePolicy(a dedupArgs) (mode wire.Dedup, backoff wire.Backoff, hold int64, err error) {
	mode, backoff = wire.Dedup(a.Mode), wire.Backoff(a.Backoff)
	if backoff == "" {
		backoff = wire.BackoffInherit
	}
	switch {
	case !mode.Registered():
		return mode, backoff, 0, argument("mode %q", a.Mode)
	case a.TTLMS < 0 || a.Attempts < 0 || a.BackoffMS < 0 || a.BackoffMaxMS < 0 || a.EventsMax < 0:
		return mode, backoff, 0, argument("ttl %d ms, attempts %d, backoff %d ms, bound %d ms, events max %d", a.TTLMS, a.Attempts, a.BackoffMS, a.BackoffMaxMS, a.EventsMax)
	case mode == wire.DedupThrottle && a.TTLMS == 0:
		return mode, backoff, 0, argument("mode %s without a ttl", mode)
	case !backoff.Registered():
		return mode, backoff, 0, argument("backoff %q", a.Backoff)
	}
	if a.HoldDead {
		hold |= 1
	}
	if a.HoldResult {
		hold |= 2
	}
	return mode, backoff, hold, nil
}

func wireDedupOut(outcome wire.Admission, id emq.ID, at int64) map[string]any {
	return map[string]any{"outcome": string(outcome), "id": id.String(), "run_at_ms": at}
}

func wireAddDedup(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[dedupArgs](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	k := q.Keys()
	c := wire.AddDedupCall{Pending: k.Pending, Active: k.Active, Schedule: k.Schedule, Dead: k.Dead, Results: k.Results, Wake: k.Wake,
		Options: k.Options, Dedup: k.Dedup, TTLMS: a.TTLMS, DelayMS: a.DelayMS, Attempts: int64(a.Attempts), BackoffMS: a.BackoffMS, BackoffMaxMS: a.BackoffMaxMS}
	for _, j := range a.Jobs {
		nj, err := j.job()
		if err != nil {
			return nil, err
		}
		if err := t.capped(nj.Payload); err != nil {
			return nil, err
		}
		row, err := k.Row(nj.ID)
		if err != nil {
			return nil, err
		}
		c.Rows = append(c.Rows, row)
		c.Entries = append(c.Entries, wire.AddDedupEntry{ID: nj.ID, Payload: rueidis.BinaryString(nj.Payload), DedupKey: nj.DedupKey})
	}
	if c.Mode, c.Backoff, c.Hold, err = wirePolicy(a); err != nil {
		return nil, err
	}
	results := []any{}
	if len(c.Entries) == 0 {
		return map[string]any{"results": results}, nil
	}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	if req.Op == wire.ScriptAddDedupPolicy.Name {
		p := wire.AddDedupPolicyCall{Pending: c.Pending, Active: c.Active, Running: k.Running, Schedule: c.Schedule, Dead: c.Dead, Results: c.Results, Wake: c.Wake,
			Options: c.Options, Dedup: c.Dedup, Rows: c.Rows, Mode: c.Mode, TTLMS: c.TTLMS, Hold: c.Hold, DelayMS: c.DelayMS, Attempts: c.Attempts,
			Backoff: c.Backoff, BackoffMS: c.BackoffMS, BackoffMaxMS: c.BackoffMaxMS}
		for _, e := range c.Entries {
			p.Entries = append(p.Entries, wire.AddDedupPolicyEntry(e))
		}
		rs, err := p.Exec(ctx, rc)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			results = append(results, wireDedupOut(r.Outcome, r.ID, r.RunAtMS))
		}
		return map[string]any{"results": results}, nil
	}
	rs, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		results = append(results, wireDedupOut(r.Outcome, r.ID, r.RunAtMS))
	}
	return map[string]any{"results": results}, nil
}

func wireReplaceDedup(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[dedupArgs](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	k := q.Keys()
	j, err := a.dedupJobArg.job()
	if err != nil {
		return nil, err
	}
	target, err := emq.ParseID(a.Target)
	if err != nil {
		return nil, err
	}
	if err := t.capped(j.Payload); err != nil {
		return nil, err
	}
	row, err := k.Row(j.ID)
	if err != nil {
		return nil, err
	}
	targetRow, err := k.Row(target)
	if err != nil {
		return nil, err
	}
	c := wire.ReplaceDedupCall{Pending: k.Pending, Active: k.Active, Schedule: k.Schedule, Dead: k.Dead, Results: k.Results, Wake: k.Wake,
		Options: k.Options, Dedup: k.Dedup, Events: k.Events, Row: row, TargetRow: targetRow, TTLMS: a.TTLMS, DelayMS: a.DelayMS,
		Attempts: int64(a.Attempts), BackoffMS: a.BackoffMS, BackoffMaxMS: a.BackoffMaxMS, EventsMax: int64(a.EventsMax),
		ID: j.ID, Payload: rueidis.BinaryString(j.Payload), DedupKey: j.DedupKey, Target: target}
	if c.Mode, c.Backoff, c.Hold, err = wirePolicy(a); err != nil {
		return nil, err
	}
	if j.DedupKey == "" {
		return nil, argument("an empty key")
	}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	if req.Op == wire.ScriptReplaceDedupPolicy.Name {
		p := wire.ReplaceDedupPolicyCall{Pending: c.Pending, Active: c.Active, Running: k.Running, Schedule: c.Schedule, Dead: c.Dead, Results: c.Results, Wake: c.Wake,
			Options: c.Options, Dedup: c.Dedup, Events: c.Events, Row: c.Row, TargetRow: c.TargetRow, Mode: c.Mode, TTLMS: c.TTLMS, Hold: c.Hold, DelayMS: c.DelayMS,
			Attempts: c.Attempts, Backoff: c.Backoff, BackoffMS: c.BackoffMS, BackoffMaxMS: c.BackoffMaxMS, EventsMax: c.EventsMax,
			ID: c.ID, Payload: c.Payload, DedupKey: c.DedupKey, Target: c.Target}
		r, err := p.Exec(ctx, rc)
		if err != nil {
			return nil, err
		}
		return wireDedupOut(r.Outcome, r.ID, r.RunAtMS), nil
	}
	r, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	return wireDedupOut(r.Outcome, r.ID, r.RunAtMS), nil
}

func wireDedupEntries(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[struct {
		Queue string   `json:"queue"`
		Keys  []string `json:"keys"`
	}](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	out := []any{}
	if len(a.Keys) == 0 {
		return map[string]any{"entries": out}, nil
	}
	k := q.Keys()
	c := wire.DedupEntriesCall{Pending: k.Pending, Active: k.Active, Schedule: k.Schedule, Dead: k.Dead, Results: k.Results, Wake: k.Wake, Dedup: k.Dedup, DedupKeys: a.Keys}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	if req.Op == wire.ScriptDedupPolicyEntries.Name {
		p := wire.DedupPolicyEntriesCall{Pending: k.Pending, Active: k.Active, Running: k.Running, Schedule: k.Schedule, Dead: k.Dead, Results: k.Results, Wake: k.Wake, Dedup: k.Dedup, DedupKeys: a.Keys}
		rs, err := p.Exec(ctx, rc)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			out = append(out, map[string]any{"holder": r.Holder, "mode": r.Mode, "expires_ms": r.ExpiresMS, "held": r.Held != 0, "state": r.State, "parked": r.Parked})
		}
		return map[string]any{"entries": out}, nil
	}
	rs, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		out = append(out, map[string]any{"holder": r.Holder, "mode": r.Mode, "expires_ms": r.ExpiresMS, "held": r.Held != 0, "state": r.State, "parked": r.Parked})
	}
	return map[string]any{"entries": out}, nil
}

func wireSweepDedup(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[struct {
		Queue  string `json:"queue"`
		Cursor string `json:"cursor"`
		Count  int64  `json:"count"`
	}](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	if a.Count < 1 || a.Count > emq.MaxDedupSweep {
		return nil, argument("count %d", a.Count)
	}
	if a.Cursor == "" {
		a.Cursor = "0"
	}
	k := q.Keys()
	c := wire.SweepDedupCall{Pending: k.Pending, Active: k.Active, Schedule: k.Schedule, Dead: k.Dead, Results: k.Results, Wake: k.Wake, Dedup: k.Dedup, Cursor: a.Cursor, Count: a.Count}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	if req.Op == wire.ScriptSweepDedupPolicy.Name {
		p := wire.SweepDedupPolicyCall{Pending: k.Pending, Active: k.Active, Running: k.Running, Schedule: k.Schedule, Dead: k.Dead, Results: k.Results, Wake: k.Wake, Dedup: k.Dedup, Cursor: a.Cursor, Count: a.Count}
		r, err := p.Exec(ctx, rc)
		if err != nil {
			return nil, err
		}
		return map[string]any{"cursor": r.Cursor, "dropped": r.Dropped, "released": r.Released}, nil
	}
	r, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	return map[string]any{"cursor": r.Cursor, "dropped": r.Dropped, "released": r.Released}, nil
}

func wireCancelIDs(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[struct {
		Queue     string   `json:"queue"`
		IDs       []string `json:"ids"`
		EventsMax int64    `json:"events_max"`
	}](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	k := q.Keys()
	ids, rows, err := wireRows(k, a.IDs)
	if err != nil {
		return nil, err
	}
	if a.EventsMax < 0 {
		return nil, argument("events max %d", a.EventsMax)
	}
	out := []any{}
	if len(ids) == 0 {
		return map[string]any{"results": out}, nil
	}
	c := wire.CancelIDsCall{Pending: k.Pending, Schedule: k.Schedule, Active: k.Active, Failures: k.Failures, Progress: k.Progress, Options: k.Options,
		Events: k.Events, Cancel: k.Cancel, Rows: rows, EventsMax: a.EventsMax, IDs: ids}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	if req.Op == wire.ScriptCancelPolicyIDs.Name {
		p := wire.CancelPolicyIDsCall{Pending: k.Pending, Schedule: k.Schedule, Active: k.Active, Running: k.Running, Policy: k.Policy, Wake: k.Wake,
			Failures: k.Failures, Progress: k.Progress, Options: k.Options, Events: k.Events, Cancel: k.Cancel, Rows: rows, EventsMax: a.EventsMax, IDs: ids}
		rs, err := p.Exec(ctx, rc)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			out = append(out, map[string]any{"state": r.State})
		}
		return map[string]any{"results": out}, nil
	}
	rs, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		out = append(out, map[string]any{"state": r.State})
	}
	return map[string]any{"results": out}, nil
}
