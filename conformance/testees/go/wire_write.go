package main

import (
	"context"
	"encoding/json"
	"maps"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// The wire mode of the echomq 2.4.0 write side: each op runs its script's
// generated call after the contract's argument checks (nothing sent).

func init() {
	maps.Copy(wireOps, map[string]wireOp{
		wire.ScriptAddMany.Name:                wireAddMany,
		wire.ScriptCompleteResultClaimIDs.Name: wireCompleteResult,
		wire.ScriptFail.Name:                   wireFailPolicy,
		wire.ScriptReapRecordedIDs.Name:        wireRecordedIDs,
		wire.ScriptForgetIDs.Name:              wireRecordedIDs,
		wire.ScriptProgress.Name:               wireProgress,
		wire.ScriptReviveRecorded.Name:         wireProgress,
		// echomq 2.7.0: the twins take their 2.4 scripts' arguments.
		wire.ScriptCompletePolicyIDs.Name: wireCompleteResult,
		wire.ScriptFailPolicy.Name:        wireFailPolicy,
		wire.ScriptReapPolicyIDs.Name:     wireRecordedIDs,
		// echomq 2.8.0: complete_policy_ids that honours a rate limit.
		wire.ScriptCompleteRateIDs.Name: wireCompleteResult,
	})
}

// wireRows parses ids and returns their rows of k.
func wireRows(k wire.QueueKeys, texts []string) ([]emq.ID, []string, error) {
	ids, err := parseIDs(texts)
	if err != nil {
		return nil, nil, err
	}
	rows := make([]string, len(ids))
	for i, id := range ids {
		if rows[i], err = k.Row(id); err != nil {
			return nil, nil, err
		}
	}
	return ids, rows, nil
}

func wireAddMany(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[struct {
		jobsArgs
		DelayMS      int64  `json:"delay_ms"`
		Attempts     int64  `json:"attempts"`
		Backoff      string `json:"backoff"`
		BackoffMS    int64  `json:"backoff_ms"`
		BackoffMaxMS int64  `json:"backoff_max_ms"`
	}](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	k := q.Keys()
	c := wire.AddManyCall{Pending: k.Pending, Schedule: k.Schedule, Wake: k.Wake, Options: k.Options,
		DelayMS: a.DelayMS, Attempts: a.Attempts, Backoff: wire.Backoff(a.Backoff), BackoffMS: a.BackoffMS, BackoffMaxMS: a.BackoffMaxMS}
	for _, j := range a.Jobs {
		id, err := emq.ParseID(j.ID)
		if err != nil {
			return nil, err
		}
		p, err := j.bytes()
		if err != nil {
			return nil, err
		}
		if err := t.capped(p); err != nil {
			return nil, err
		}
		row, err := k.Row(id)
		if err != nil {
			return nil, err
		}
		c.Rows = append(c.Rows, row)
		c.Entries = append(c.Entries, wire.AddManyEntry{ID: id, Payload: rueidis.BinaryString(p)})
	}
	if c.Backoff == "" {
		c.Backoff = wire.BackoffInherit
	}
	switch {
	case !c.Backoff.Registered():
		return nil, argument("backoff %q", a.Backoff)
	case a.Attempts < 0 || a.BackoffMS < 0 || a.BackoffMaxMS < 0:
		return nil, argument("attempts %d, backoff %d ms, bound %d ms", a.Attempts, a.BackoffMS, a.BackoffMaxMS)
	}
	results := []any{}
	if len(c.Entries) == 0 {
		return map[string]any{"results": results}, nil
	}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	rs, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		results = append(results, map[string]any{"enqueued": r.Enqueued == 1, "run_at_ms": r.RunAtMS})
	}
	return map[string]any{"results": results}, nil
}

func wireCompleteResult(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[struct {
		idsArgs
		Result    *string `json:"result"`
		ResultB64 *string `json:"result_b64"`
		Keep      int64   `json:"keep"`
		KeepAgeMS int64   `json:"keep_age_ms"`
		EventsMax int64   `json:"events_max"`
	}](req)
	if err != nil {
		return nil, err
	}
	k, id, row, err := t.wireQueueID(queueArgs{Queue: a.Queue, ID: a.ID})
	if err != nil {
		return nil, err
	}
	ids, rows, err := wireRows(k, a.IDs)
	if err != nil {
		return nil, err
	}
	result, err := payload{Text: a.Result, B64: a.ResultB64}.bytes()
	if err != nil {
		return nil, err
	}
	if a.LeaseMS < 1 || a.Keep < 0 || a.KeepAgeMS < 0 || a.EventsMax < 0 {
		return nil, argument("lease %d ms, keep %d, keep age %d ms, events max %d", a.LeaseMS, a.Keep, a.KeepAgeMS, a.EventsMax)
	}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	c := wire.CompleteResultClaimIDsCall{Row: row, Active: k.Active, Pending: k.Pending, Wake: k.Wake, Results: k.Results, ResultTimes: k.ResultTimes,
		Progress: k.Progress, Failures: k.Failures, Options: k.Options, Events: k.Events, Counters: k.Counters, Rows: rows,
		ID: id, Token: a.Token, LeaseMS: a.LeaseMS, Result: rueidis.BinaryString(result), Keep: a.Keep, KeepAgeMS: a.KeepAgeMS, EventsMax: a.EventsMax, IDs: ids}
	if req.Op == wire.ScriptCompleteRateIDs.Name {
		p := wire.CompleteRateIDsCall{Row: row, Active: k.Active, Running: k.Running, Policy: k.Policy, Starts: k.Starts, Pending: k.Pending, Wake: k.Wake, Results: k.Results,
			ResultTimes: k.ResultTimes, Progress: k.Progress, Failures: k.Failures, Options: k.Options, Events: k.Events, Counters: k.Counters, Rows: rows,
			ID: id, Token: a.Token, LeaseMS: a.LeaseMS, Result: c.Result, Keep: a.Keep, KeepAgeMS: a.KeepAgeMS, EventsMax: a.EventsMax, IDs: ids}
		rs, err := p.Exec(ctx, rc)
		if err != nil {
			return nil, err
		}
		return wireJobs(rs, func(r wire.CompleteRateIDsReply) map[string]any {
			return wireJob(r.ID, r.Token, r.Payload, r.DeadlineMS)
		}), nil
	}
	if req.Op == wire.ScriptCompletePolicyIDs.Name {
		p := wire.CompletePolicyIDsCall{Row: row, Active: k.Active, Running: k.Running, Policy: k.Policy, Pending: k.Pending, Wake: k.Wake, Results: k.Results,
			ResultTimes: k.ResultTimes, Progress: k.Progress, Failures: k.Failures, Options: k.Options, Events: k.Events, Counters: k.Counters, Rows: rows,
			ID: id, Token: a.Token, LeaseMS: a.LeaseMS, Result: c.Result, Keep: a.Keep, KeepAgeMS: a.KeepAgeMS, EventsMax: a.EventsMax, IDs: ids}
		rs, err := p.Exec(ctx, rc)
		if err != nil {
			return nil, err
		}
		return wireJobs(rs, func(r wire.CompletePolicyIDsReply) map[string]any {
			return wireJob(r.ID, r.Token, r.Payload, r.DeadlineMS)
		}), nil
	}
	rs, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	return wireJobs(rs, func(r wire.CompleteResultClaimIDsReply) map[string]any {
		return wireJob(r.ID, r.Token, r.Payload, r.DeadlineMS)
	}), nil
}

func wireFailPolicy(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[struct {
		failArgs
		MaxAttempts  int64  `json:"max_attempts"`
		Backoff      string `json:"backoff"`
		BackoffMS    int64  `json:"backoff_ms"`
		BackoffMaxMS int64  `json:"backoff_max_ms"`
		Jitter       int64  `json:"jitter"`
		Bury         bool   `json:"bury"`
		EventsMax    int64  `json:"events_max"`
	}](req)
	if err != nil {
		return nil, err
	}
	k, id, row, err := t.wireQueueID(a.queueArgs)
	if err != nil {
		return nil, err
	}
	b := wire.Backoff(a.Backoff)
	switch {
	case !wire.FailureClass(a.Class).Registered():
		return nil, argument("failure class %q", a.Class)
	case b != wire.BackoffFixed && b != wire.BackoffExponential:
		return nil, argument("backoff %q", a.Backoff)
	case a.Jitter < 0 || a.Jitter > 1000:
		return nil, argument("jitter %d", a.Jitter)
	case a.MaxAttempts < 0 || a.BackoffMS < 0 || a.BackoffMaxMS < 0 || a.EventsMax < 0:
		return nil, argument("a negative number")
	}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	bury := int64(0)
	if a.Bury {
		bury = 1
	}
	c := wire.FailCall{Active: k.Active, Row: row, Schedule: k.Schedule, Dead: k.Dead, Wake: k.Wake, Failures: k.Failures, Options: k.Options,
		Events: k.Events, Counters: k.Counters, ID: id, Token: a.Token, Class: wire.FailureClass(a.Class), Worker: a.Worker, Error: a.Error,
		MaxAttempts: a.MaxAttempts, Backoff: b, BackoffMS: a.BackoffMS, BackoffMaxMS: a.BackoffMaxMS, Jitter: a.Jitter, Bury: bury, EventsMax: a.EventsMax}
	if req.Op == wire.ScriptFailPolicy.Name {
		p := wire.FailPolicyCall{Active: k.Active, Running: k.Running, Policy: k.Policy, Pending: k.Pending, Row: row, Schedule: k.Schedule, Dead: k.Dead, Wake: k.Wake,
			Failures: k.Failures, Options: k.Options, Events: k.Events, Counters: k.Counters, ID: id, Token: a.Token, Class: c.Class, Worker: a.Worker, Error: a.Error,
			MaxAttempts: a.MaxAttempts, Backoff: b, BackoffMS: a.BackoffMS, BackoffMaxMS: a.BackoffMaxMS, Jitter: a.Jitter, Bury: bury, EventsMax: a.EventsMax}
		r, err := p.Exec(ctx, rc)
		if err != nil {
			return nil, err
		}
		return map[string]any{"outcome": string(r.Outcome), "run_at_ms": r.RunAtMS}, nil
	}
	r, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	return map[string]any{"outcome": string(r.Outcome), "run_at_ms": r.RunAtMS}, nil
}

// wireRecordedIDs runs reap_recorded_ids and forget_ids.
func wireRecordedIDs(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[struct {
		idsArgs
		EventsMax int64 `json:"events_max"`
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
	forget := req.Op == wire.ScriptForgetIDs.Name
	if !forget && (a.MaxAttempts < 0 || a.EventsMax < 0) {
		return nil, argument("max attempts %d, events max %d", a.MaxAttempts, a.EventsMax)
	}
	field := "moved"
	if forget {
		field = "forgotten"
	}
	if len(ids) == 0 {
		return map[string]any{field: 0}, nil
	}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	var n int64
	if req.Op == wire.ScriptReapPolicyIDs.Name {
		c := wire.ReapPolicyIDsCall{Active: k.Active, Running: k.Running, Policy: k.Policy, Pending: k.Pending, Dead: k.Dead, Wake: k.Wake, Failures: k.Failures,
			Options: k.Options, Events: k.Events, Counters: k.Counters, Rows: rows, MaxAttempts: a.MaxAttempts, EventsMax: a.EventsMax, IDs: ids}
		n, err = c.Exec(ctx, rc)
	} else if forget {
		c := wire.ForgetIDsCall{Failures: k.Failures, Progress: k.Progress, Options: k.Options, Rows: rows, IDs: ids}
		n, err = c.Exec(ctx, rc)
	} else {
		c := wire.ReapRecordedIDsCall{Active: k.Active, Pending: k.Pending, Dead: k.Dead, Wake: k.Wake, Failures: k.Failures, Options: k.Options,
			Events: k.Events, Counters: k.Counters, Rows: rows, MaxAttempts: a.MaxAttempts, EventsMax: a.EventsMax, IDs: ids}
		n, err = c.Exec(ctx, rc)
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{field: n}, nil
}

// wireProgress runs progress and revive_recorded.
func wireProgress(t *testee, ctx context.Context, req request) (any, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(req.Args, &raw); err != nil {
		return nil, badRequest(err)
	}
	a, err := args[struct {
		queueArgs
		Token     int64 `json:"token"`
		EventsMax int64 `json:"events_max"`
	}](req)
	if err != nil {
		return nil, err
	}
	k, id, row, err := t.wireQueueID(a.queueArgs)
	if err != nil {
		return nil, err
	}
	if a.EventsMax < 0 {
		return nil, argument("events max %d", a.EventsMax)
	}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	if req.Op == wire.ScriptReviveRecorded.Name {
		c := wire.ReviveRecordedCall{Dead: k.Dead, Pending: k.Pending, Row: row, Wake: k.Wake, Events: k.Events, ID: id, EventsMax: a.EventsMax}
		n, err := c.Exec(ctx, rc)
		if err != nil {
			return nil, err
		}
		return map[string]any{"revived": n == wire.ReviveRecordedRevived}, nil
	}
	var p payload
	for name, dst := range map[string]**string{req.Op: &p.Text, req.Op + "_b64": &p.B64} {
		if v, ok := raw[name]; ok {
			*dst = new(string)
			if err := json.Unmarshal(v, *dst); err != nil {
				return nil, badRequest(err)
			}
		}
	}
	b, err := p.bytes()
	if err != nil {
		return nil, err
	}
	if len(b) > 4096 {
		return nil, argument("a progress report of %d bytes", len(b))
	}
	c := wire.ProgressCall{Row: row, ProgressKey: k.Progress, Events: k.Events, ID: id, Token: a.Token, Progress: rueidis.BinaryString(b), EventsMax: a.EventsMax}
	if _, err := c.Exec(ctx, rc); err != nil {
		return nil, err
	}
	return map[string]any{}, nil
}
