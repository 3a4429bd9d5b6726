package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// The wire mode (-wire) runs every op that is a per-queue script of the
// bundle through that script's generated call (package wire's <Script>Call),
// on the client's connection, instead of through the idiomatic call the
// op names by default: the behavioural witness of emqgen check replays the
// baseline's scenarios in both modes, so that every script is exercised
// whether or not the idiomatic layer still runs it (Queue.CompleteClaim
// runs complete_claim_ids, Queue.ClaimMany claim_ids). Arguments are
// checked as the contract says (conformance/README.md: the same kinds,
// nothing sent), and an op the contract composes of two scripts (revive
// rings the doorbell when it revived) runs both generated calls. A script
// of the bundle without an entry here answers unsupported in this mode, so
// the witness fails loudly rather than skipping it (TestWireOpsCoverTheBundle).

// wireOp performs one op through its script's generated call.
type wireOp func(t *testee, ctx context.Context, req request) (any, error)

// wireOps are the wire mode's ops, by script name.
var wireOps = map[string]wireOp{
	wire.ScriptEnqueue.Name:          wireAdmit,
	wire.ScriptPush.Name:             wireAdmit,
	wire.ScriptEnqueueAt.Name:        wireAdmit,
	wire.ScriptClaim.Name:            wireClaim,
	wire.ScriptClaimMany.Name:        wireClaimMany,
	wire.ScriptExtend.Name:           wireSettle,
	wire.ScriptComplete.Name:         wireSettle,
	wire.ScriptRetry.Name:            wireSettle,
	wire.ScriptBury.Name:             wireSettle,
	wire.ScriptCompleteClaim.Name:    wireSettle,
	wire.ScriptRevive.Name:           wireByID,
	wire.ScriptPurge.Name:            wireByID,
	wire.ScriptPromote.Name:          wireMaintain,
	wire.ScriptReap.Name:             wireMaintain,
	wire.ScriptRing.Name:             wireRing,
	wire.ScriptPushMany.Name:         wirePushMany,
	wire.ScriptClaimIDs.Name:         wireIDs,
	wire.ScriptCompleteClaimIDs.Name: wireIDs,
	wire.ScriptPromoteIDs.Name:       wireIDs,
	wire.ScriptReapIDs.Name:          wireIDs,
	wire.ScriptRetryFailed.Name:      wireFail,
	wire.ScriptBuryFailed.Name:       wireFail,
	wire.ScriptReapFailedIDs.Name:    wireIDs,
	wire.ScriptFailures.Name:         wireFailures,
	wire.ScriptForgetFailures.Name:   wireIDs,
	// echomq 2.7.0: the twins take their 2.6 scripts' arguments.
	wire.ScriptClaimPolicyIDs.Name: wireIDs,
	wire.ScriptExtendPolicy.Name:   wireSettle,
	wire.ScriptRetryPolicy.Name:    wireSettle,
	wire.ScriptBuryPolicy.Name:     wireSettle,
	// echomq 2.8.0: claim_policy_ids that honours a rate limit.
	wire.ScriptClaimRateIDs.Name: wireIDs,
}

// wireFail runs the scripts that move an active job and record its failed
// attempt.
func wireFail(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[failArgs](req)
	if err != nil {
		return nil, err
	}
	k, id, row, err := t.wireQueueID(a.queueArgs)
	if err != nil {
		return nil, err
	}
	if a.DelayMS < 0 {
		return nil, argument("delay %d ms", a.DelayMS)
	}
	if class := wire.FailureClass(a.Class); !class.Registered() {
		return nil, argument("failure class %q", a.Class)
	}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	if req.Op == wire.ScriptBuryFailed.Name {
		c := wire.BuryFailedCall{Active: k.Active, Row: row, Dead: k.Dead, Failures: k.Failures, ID: id, Token: a.Token, Class: wire.FailureClass(a.Class), Worker: a.Worker, Error: a.Error}
		_, err = c.Exec(ctx, rc)
		return map[string]any{}, err
	}
	c := wire.RetryFailedCall{Active: k.Active, Row: row, Schedule: k.Schedule, Failures: k.Failures, ID: id, Token: a.Token, DelayMS: a.DelayMS, Class: wire.FailureClass(a.Class), Worker: a.Worker, Error: a.Error}
	at, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	return map[string]any{"run_at_ms": at}, nil
}

// wireFailures reads a job's failure record with the failures script.
func wireFailures(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[queueArgs](req)
	if err != nil {
		return nil, err
	}
	k, id, row, err := t.wireQueueID(a)
	if err != nil {
		return nil, err
	}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	c := wire.FailuresCall{Row: row, Failures: k.Failures, ID: id}
	rs, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	out := make([]any, len(rs))
	for i, r := range rs {
		out[i] = map[string]any{"attempt": r.Attempt, "at_ms": r.AtMS, "class": string(r.Class), "worker": r.Worker, "error": r.Error}
	}
	return map[string]any{"attempts": out}, nil
}

// argument is the contract's kind argument: refused before sending.
func argument(format string, a ...any) error {
	return fmt.Errorf("%w: %s", emq.ErrArgument, fmt.Sprintf(format, a...))
}

// rc is the client's connection, fenced as the SDK fences it (every new
// connection is fenced before it is used).
func (t *testee) rc() (rueidis.Client, error) {
	if t.client == nil {
		return nil, &opError{kind: "connection", err: errors.New("not connected")}
	}
	return t.client.Redis(), nil
}

// capped refuses a payload over connect's max_payload, as the SDK does.
func (t *testee) capped(p []byte) error {
	if t.maxPayload > 0 && int64(len(p)) > t.maxPayload {
		return fmt.Errorf("%w: %d bytes, the cap is %d", emq.ErrPayloadTooLarge, len(p), t.maxPayload)
	}
	return nil
}

// wireQueueID is queueID with the queue's keys and the id's row.
func (t *testee) wireQueueID(a queueArgs) (wire.QueueKeys, emq.ID, string, error) {
	q, id, err := t.queueID(a)
	if err != nil {
		return wire.QueueKeys{}, id, "", err
	}
	k := q.Keys()
	row, err := k.Row(id)
	return k, id, row, err
}

func wireAdmit(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[admitArgs](req)
	if err != nil {
		return nil, err
	}
	k, id, row, err := t.wireQueueID(a.queueArgs)
	if err != nil {
		return nil, err
	}
	p, err := a.bytes()
	if err != nil {
		return nil, err
	}
	if err := t.capped(p); err != nil {
		return nil, err
	}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	var n, enqueued int64
	switch req.Op {
	case wire.ScriptEnqueue.Name:
		c := wire.EnqueueCall{Row: row, Pending: k.Pending, ID: id, Payload: rueidis.BinaryString(p)}
		n, err = c.Exec(ctx, rc)
		enqueued = wire.EnqueueEnqueued
	case wire.ScriptPush.Name:
		c := wire.PushCall{Row: row, Pending: k.Pending, Wake: k.Wake, ID: id, Payload: rueidis.BinaryString(p)}
		n, err = c.Exec(ctx, rc)
		enqueued = wire.PushEnqueued
	default:
		c := wire.EnqueueAtCall{Row: row, Schedule: k.Schedule, ID: id, Payload: rueidis.BinaryString(p), RunAtMS: a.RunAtMS}
		n, err = c.Exec(ctx, rc)
		enqueued = wire.EnqueueAtEnqueued
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"enqueued": n == enqueued}, nil
}

// wireJob is a job of a reply record.
func wireJob(id emq.ID, token int64, payload string, deadline int64) map[string]any {
	return payloadOut(map[string]any{"id": id.String(), "token": token, "deadline_ms": deadline}, []byte(payload))
}

func wireJobs[R any](rs []R, f func(R) map[string]any) map[string]any {
	out := make([]any, len(rs))
	for i, r := range rs {
		out[i] = f(r)
	}
	return map[string]any{"jobs": out}
}

func wireClaim(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[claimArgs](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	if a.LeaseMS < 1 {
		return nil, argument("lease %d ms", a.LeaseMS)
	}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	k := q.Keys()
	c := wire.ClaimCall{Pending: k.Pending, Active: k.Active, Prefix: k.RowPrefix(), LeaseMS: a.LeaseMS}
	r, ok, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	if !ok {
		return map[string]any{"job": nil}, nil
	}
	return map[string]any{"job": wireJob(r.ID, r.Token, r.Payload, r.DeadlineMS)}, nil
}

func wireClaimMany(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[claimArgs](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	if a.LeaseMS < 1 {
		return nil, argument("lease %d ms", a.LeaseMS)
	}
	if a.Count < 1 {
		return nil, argument("claim count %d", a.Count)
	}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	k := q.Keys()
	c := wire.ClaimManyCall{Pending: k.Pending, Active: k.Active, Wake: k.Wake, Prefix: k.RowPrefix(), LeaseMS: a.LeaseMS, Count: a.Count}
	rs, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	return wireJobs(rs, func(r wire.ClaimManyReply) map[string]any { return wireJob(r.ID, r.Token, r.Payload, r.DeadlineMS) }), nil
}

// wireSettle runs the scripts that move an active job by its token.
func wireSettle(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[settleArgs](req)
	if err != nil {
		return nil, err
	}
	k, id, row, err := t.wireQueueID(a.queueArgs)
	if err != nil {
		return nil, err
	}
	switch req.Op {
	case wire.ScriptExtend.Name, wire.ScriptExtendPolicy.Name, wire.ScriptCompleteClaim.Name:
		if a.LeaseMS < 1 {
			return nil, argument("lease %d ms", a.LeaseMS)
		}
	case wire.ScriptRetry.Name, wire.ScriptRetryPolicy.Name:
		if a.DelayMS < 0 {
			return nil, argument("delay %d ms", a.DelayMS)
		}
	}
	if req.Op == wire.ScriptCompleteClaim.Name && a.Count < 0 {
		return nil, argument("claim count %d", a.Count)
	}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	switch req.Op {
	case wire.ScriptComplete.Name:
		c := wire.CompleteCall{Active: k.Active, Row: row, ID: id, Token: a.Token}
		_, err = c.Exec(ctx, rc)
		return map[string]any{}, err
	case wire.ScriptBury.Name:
		c := wire.BuryCall{Active: k.Active, Row: row, Dead: k.Dead, ID: id, Token: a.Token}
		_, err = c.Exec(ctx, rc)
		return map[string]any{}, err
	case wire.ScriptExtend.Name:
		c := wire.ExtendCall{Active: k.Active, Row: row, ID: id, Token: a.Token, LeaseMS: a.LeaseMS}
		d, err := c.Exec(ctx, rc)
		if err != nil {
			return nil, err
		}
		return map[string]any{"deadline_ms": d}, nil
	case wire.ScriptExtendPolicy.Name:
		c := wire.ExtendPolicyCall{Active: k.Active, Running: k.Running, Row: row, ID: id, Token: a.Token, LeaseMS: a.LeaseMS}
		d, err := c.Exec(ctx, rc)
		if err != nil {
			return nil, err
		}
		return map[string]any{"deadline_ms": d}, nil
	case wire.ScriptRetry.Name:
		c := wire.RetryCall{Active: k.Active, Row: row, Schedule: k.Schedule, ID: id, Token: a.Token, DelayMS: a.DelayMS}
		at, err := c.Exec(ctx, rc)
		if err != nil {
			return nil, err
		}
		return map[string]any{"run_at_ms": at}, nil
	case wire.ScriptRetryPolicy.Name:
		c := wire.RetryPolicyCall{Active: k.Active, Running: k.Running, Policy: k.Policy, Pending: k.Pending, Wake: k.Wake, Row: row, Schedule: k.Schedule,
			ID: id, Token: a.Token, DelayMS: a.DelayMS}
		at, err := c.Exec(ctx, rc)
		if err != nil {
			return nil, err
		}
		return map[string]any{"run_at_ms": at}, nil
	case wire.ScriptBuryPolicy.Name:
		c := wire.BuryPolicyCall{Active: k.Active, Running: k.Running, Policy: k.Policy, Pending: k.Pending, Wake: k.Wake, Row: row, Dead: k.Dead, ID: id, Token: a.Token}
		_, err = c.Exec(ctx, rc)
		return map[string]any{}, err
	}
	c := wire.CompleteClaimCall{Row: row, Active: k.Active, Pending: k.Pending, Wake: k.Wake, ID: id, Token: a.Token, Prefix: k.RowPrefix(), LeaseMS: a.LeaseMS, Count: a.Count}
	rs, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	return wireJobs(rs, func(r wire.CompleteClaimReply) map[string]any { return wireJob(r.ID, r.Token, r.Payload, r.DeadlineMS) }), nil
}

// wireByID runs revive (then ring, as the contract's revive does when it
// revived) and purge.
func wireByID(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[queueArgs](req)
	if err != nil {
		return nil, err
	}
	k, id, row, err := t.wireQueueID(a)
	if err != nil {
		return nil, err
	}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	if req.Op == wire.ScriptPurge.Name {
		c := wire.PurgeCall{Dead: k.Dead, Row: row, ID: id}
		n, err := c.Exec(ctx, rc)
		if err != nil {
			return nil, err
		}
		return map[string]any{"purged": n == wire.PurgePurged}, nil
	}
	c := wire.ReviveCall{Dead: k.Dead, Pending: k.Pending, Row: row, ID: id}
	n, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	if n == wire.ReviveRevived {
		ring := wire.RingCall{Wake: k.Wake}
		if _, err := ring.Exec(ctx, rc); err != nil {
			return nil, err
		}
	}
	return map[string]any{"revived": n == wire.ReviveRevived}, nil
}

func wireMaintain(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[maintainArgs](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	if a.Limit < 1 {
		return nil, argument("limit %d", a.Limit)
	}
	if a.MaxAttempts < 0 {
		return nil, argument("max attempts %d", a.MaxAttempts)
	}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	k := q.Keys()
	var n int64
	if req.Op == wire.ScriptPromote.Name {
		c := wire.PromoteCall{Schedule: k.Schedule, Pending: k.Pending, Prefix: k.RowPrefix(), Limit: a.Limit}
		n, err = c.Exec(ctx, rc)
	} else {
		c := wire.ReapCall{Active: k.Active, Pending: k.Pending, Dead: k.Dead, Prefix: k.RowPrefix(), Limit: a.Limit, MaxAttempts: a.MaxAttempts}
		n, err = c.Exec(ctx, rc)
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"moved": n}, nil
}

func wireRing(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[queueArgs](req)
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
	c := wire.RingCall{Wake: q.Keys().Wake}
	n, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	return map[string]any{"rung": n == wire.RingRung}, nil
}

func wirePushMany(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[jobsArgs](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	k := q.Keys()
	c := wire.PushManyCall{Pending: k.Pending, Wake: k.Wake}
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
		c.Entries = append(c.Entries, wire.PushManyEntry{ID: id, Payload: rueidis.BinaryString(p)})
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
		results = append(results, map[string]any{"enqueued": r.Enqueued == 1})
	}
	return map[string]any{"results": results}, nil
}

// wireIDs runs the 2.2.0 scripts that take the ids they handle.
func wireIDs(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[idsArgs](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	k := q.Keys()
	ids := make([]emq.ID, len(a.IDs))
	rows := make([]string, len(a.IDs))
	for i, s := range a.IDs {
		if ids[i], err = emq.ParseID(s); err != nil {
			return nil, err
		}
		if rows[i], err = k.Row(ids[i]); err != nil {
			return nil, err
		}
	}
	var id emq.ID
	var row string
	if req.Op == wire.ScriptCompleteClaimIDs.Name {
		if id, err = emq.ParseID(a.ID); err != nil {
			return nil, err
		}
		if row, err = k.Row(id); err != nil {
			return nil, err
		}
	}
	switch req.Op {
	case wire.ScriptClaimIDs.Name, wire.ScriptClaimPolicyIDs.Name, wire.ScriptClaimRateIDs.Name, wire.ScriptCompleteClaimIDs.Name:
		if a.LeaseMS < 1 {
			return nil, argument("lease %d ms", a.LeaseMS)
		}
	case wire.ScriptReapIDs.Name, wire.ScriptReapFailedIDs.Name:
		if a.MaxAttempts < 0 {
			return nil, argument("max attempts %d", a.MaxAttempts)
		}
	}
	if len(ids) == 0 && req.Op != wire.ScriptCompleteClaimIDs.Name {
		switch req.Op {
		case wire.ScriptClaimIDs.Name, wire.ScriptClaimPolicyIDs.Name, wire.ScriptClaimRateIDs.Name:
			return map[string]any{"jobs": []any{}}, nil
		case wire.ScriptForgetFailures.Name:
			return map[string]any{"forgotten": 0}, nil
		}
		return map[string]any{"moved": 0}, nil
	}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	job := func(id emq.ID, token int64, payload string, deadline int64) map[string]any {
		return wireJob(id, token, payload, deadline)
	}
	switch req.Op {
	case wire.ScriptClaimIDs.Name:
		c := wire.ClaimIDsCall{Pending: k.Pending, Active: k.Active, Wake: k.Wake, Rows: rows, LeaseMS: a.LeaseMS, IDs: ids}
		rs, err := c.Exec(ctx, rc)
		if err != nil {
			return nil, err
		}
		return wireJobs(rs, func(r wire.ClaimIDsReply) map[string]any { return job(r.ID, r.Token, r.Payload, r.DeadlineMS) }), nil
	case wire.ScriptClaimPolicyIDs.Name:
		c := wire.ClaimPolicyIDsCall{Pending: k.Pending, Active: k.Active, Running: k.Running, Policy: k.Policy, Wake: k.Wake, Rows: rows, LeaseMS: a.LeaseMS, IDs: ids}
		rs, err := c.Exec(ctx, rc)
		if err != nil {
			return nil, err
		}
		return wireJobs(rs, func(r wire.ClaimPolicyIDsReply) map[string]any { return job(r.ID, r.Token, r.Payload, r.DeadlineMS) }), nil
	case wire.ScriptClaimRateIDs.Name:
		c := wire.ClaimRateIDsCall{Pending: k.Pending, Active: k.Active, Running: k.Running, Policy: k.Policy, Starts: k.Starts, Wake: k.Wake, Rows: rows, LeaseMS: a.LeaseMS, IDs: ids}
		rs, err := c.Exec(ctx, rc)
		if err != nil {
			return nil, err
		}
		return wireJobs(rs, func(r wire.ClaimRateIDsReply) map[string]any { return job(r.ID, r.Token, r.Payload, r.DeadlineMS) }), nil
	case wire.ScriptCompleteClaimIDs.Name:
		c := wire.CompleteClaimIDsCall{Row: row, Active: k.Active, Pending: k.Pending, Wake: k.Wake, Rows: rows, ID: id, Token: a.Token, LeaseMS: a.LeaseMS, IDs: ids}
		rs, err := c.Exec(ctx, rc)
		if err != nil {
			return nil, err
		}
		return wireJobs(rs, func(r wire.CompleteClaimIDsReply) map[string]any { return job(r.ID, r.Token, r.Payload, r.DeadlineMS) }), nil
	case wire.ScriptPromoteIDs.Name:
		c := wire.PromoteIDsCall{Schedule: k.Schedule, Pending: k.Pending, Wake: k.Wake, Rows: rows, IDs: ids}
		n, err := c.Exec(ctx, rc)
		if err != nil {
			return nil, err
		}
		return map[string]any{"moved": n}, nil
	case wire.ScriptReapFailedIDs.Name:
		c := wire.ReapFailedIDsCall{Active: k.Active, Pending: k.Pending, Dead: k.Dead, Wake: k.Wake, Failures: k.Failures, Rows: rows, MaxAttempts: a.MaxAttempts, IDs: ids}
		n, err := c.Exec(ctx, rc)
		if err != nil {
			return nil, err
		}
		return map[string]any{"moved": n}, nil
	case wire.ScriptForgetFailures.Name:
		c := wire.ForgetFailuresCall{Failures: k.Failures, Rows: rows, IDs: ids}
		n, err := c.Exec(ctx, rc)
		if err != nil {
			return nil, err
		}
		return map[string]any{"forgotten": n}, nil
	}
	c := wire.ReapIDsCall{Active: k.Active, Pending: k.Pending, Dead: k.Dead, Wake: k.Wake, Rows: rows, MaxAttempts: a.MaxAttempts, IDs: ids}
	n, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	return map[string]any{"moved": n}, nil
}

// wireOp answers an op of the wire mode: its script's generated call, or
// unsupported for a per-queue script without one.
func (t *testee) wireOp(req request) (any, bool, error) {
	s := wire.ScriptNamed(req.Op)
	if s == nil {
		return nil, false, nil
	}
	f, ok := wireOps[req.Op]
	if !ok {
		if isReserve(s) {
			return nil, false, nil // fence, lock, unlock: reached through connect, close and run_probes
		}
		return nil, true, &opError{kind: "unsupported", err: fmt.Errorf("the Go testee's wire mode has no generated call for the script %s (add it to wireOps)", req.Op)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := f(t, ctx, req)
	if err != nil {
		err = t.wirePolicy(ctx, req, s, err)
	}
	return res, true, err
}

// wirePolicy answers a WRONGTYPE reply of a script older than 2.7 on a
// queue whose active key holds the tripwire as the SDK does (the typed
// policy error, EMQPOLICY in the contract), so that the wire mode's
// replay of a scenario agrees with the idiomatic SDK's; any other error
// is returned as it is.
func (t *testee) wirePolicy(ctx context.Context, req request, s *wire.Script, err error) error {
	var re *rueidis.RedisError
	if !errors.As(err, &re) || !strings.HasPrefix(re.Error(), "WRONGTYPE") {
		return err
	}
	a, aerr := args[queueArgs](req)
	if aerr != nil {
		return err
	}
	k, kerr := wire.NewQueueKeys(a.Queue)
	rc, rerr := t.rc()
	if kerr != nil || rerr != nil {
		return err
	}
	active := false // the script declares the queue's active key
	for _, kt := range s.KeyTypes {
		if key, ok := k.Key(kt); ok && key == k.Active {
			active = true
		}
	}
	if !active {
		return err
	}
	typ, terr := rc.Do(ctx, rc.B().Type().Key(k.Active).Build()).ToString()
	if terr != nil || typ != wire.ActiveTripwireType {
		return err
	}
	return &emq.PolicyError{Queue: a.Queue, Script: s.Name, Use: "its 2.7 twin", Err: err}
}

// isReserve reports whether a script works on the reserve only (every key
// a reserve member).
func isReserve(s *wire.Script) bool {
	if len(s.KeyTypes) == 0 {
		return false
	}
	for _, k := range s.KeyTypes {
		if len(k) < len(reservePrefix) || k[:len(reservePrefix)] != reservePrefix {
			return false
		}
	}
	return true
}

// reservePrefix starts a reserve member's key type in wire.Script.KeyTypes.
const reservePrefix = "reserve:"
