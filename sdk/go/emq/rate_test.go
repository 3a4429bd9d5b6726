package emq_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// The rate limit of echomq 2.8.0 (configure_policy, claim_rate_ids,
// complete_rate_ids, read_policy), through the SDK's SetRateLimit and its
// worker.

// claimCalls counts the calls of script s a MONITOR feed shows, as clients
// sent them (EVALSHA; not from Lua).
func claimCalls(lines []string, s *wire.Script) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, " lua] ") {
			continue
		}
		if strings.Contains(l, `"EVALSHA" "`+s.SHA1+`"`) || strings.Contains(l, `"evalsha" "`+s.SHA1+`"`) {
			n++
		}
	}
	return n
}

// count is claimCalls of the feed so far, while it runs.
func (m *monitor) count(s *wire.Script) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return claimCalls(m.lines, s)
}

// Under a limit of N per P, several workers never start more than N jobs
// in any window of P, judged by the starts' server times (a lease's
// deadline less the lease: the script leases at the server's now); every
// job runs once, at its first attempt; and the workers claim about once
// per start each, never in a loop.
func TestRateLimitBoundsEveryWindow(t *testing.T) {
	const (
		limit   = 20
		period  = 200 * time.Millisecond
		jobs    = 90
		workers = 3
		lease   = time.Minute
	)
	e := newWorkerEnv(t)
	ctx := ctxT(t)
	p, err := e.q.SetRateLimit(ctx, limit, period)
	if err != nil || p.RateLimit != limit || p.RatePeriod != period || p.Requires != 8 || p.Paused || p.Concurrency != 0 {
		t.Fatalf("SetRateLimit(%d, %v) = %+v, %v", limit, period, p, err)
	}
	if v, err := do(t, e.c, "GET", e.q.Keys().Active).ToString(); err != nil || v != "8 7" {
		t.Errorf("the tripwire under a rate limit = %q, %v; want 8 7 (2.7 claims refused, 2.7 settles served)", v, err)
	}
	ids := e.push(jobs)
	mon := startMonitor(t, e.srv.Addr())
	var mu sync.Mutex
	var starts []int64
	ran := map[emq.ID]int{}
	var retried atomic.Int64
	done := make(chan struct{}, jobs)
	h := func(ctx context.Context, j emq.Job) error {
		mu.Lock()
		starts = append(starts, j.Deadline.UnixMilli()-lease.Milliseconds())
		ran[j.ID]++
		mu.Unlock()
		if j.Token != 1 {
			retried.Add(1)
		}
		done <- struct{}{}
		return nil
	}
	began := time.Now()
	for range workers {
		e.run(h, emq.WorkerOptions{Concurrency: 4, Lease: lease, Wait: 5 * time.Second})
	}
	for range jobs {
		select {
		case <-done:
		case <-ctx.Done():
			t.Fatalf("not every job ran under the rate limit: %d of %d", len(ran), jobs)
		}
	}
	elapsed := time.Since(began)
	claims := mon.count(wire.ScriptClaimRateIDs)
	mon.stop(t, e.srv)

	mu.Lock()
	defer mu.Unlock()
	slices.Sort(starts)
	worst := 0
	for i := range starts {
		n := 0
		for j := i; j < len(starts) && starts[j] < starts[i]+period.Milliseconds(); j++ {
			n++
		}
		worst = max(worst, n)
	}
	t.Logf("%d jobs in %v, at most %d started in a window of %v, %d claim calls", jobs, elapsed.Round(time.Millisecond), worst, period, claims)
	if worst > limit {
		t.Errorf("%d jobs started within one window of %v; the limit is %d", worst, period, limit)
	}
	// The pace spreads the starts: the whole run takes about jobs/limit
	// periods, less the first window's allowance.
	if span := time.Duration(starts[len(starts)-1]-starts[0]) * time.Millisecond; span < time.Duration(jobs/limit-1)*period {
		t.Errorf("the starts span %v; want at least %v at %d per %v", span, time.Duration(jobs/limit-1)*period, limit, period)
	}
	for _, id := range ids {
		if ran[id] != 1 {
			t.Errorf("job %s ran %d times; want once", id, ran[id])
		}
	}
	if n := retried.Load(); n != 0 {
		t.Errorf("%d jobs ran at a later attempt than their first: a job the limit held back was leased or failed", n)
	}
	eventually(t, 20*time.Second, "every job completed", func() bool { return e.tally.Get(emq.Completed) == jobs })
	if n, err := e.q.Size(ctx, emq.SetDead); err != nil || n != 0 {
		t.Errorf("dead = %d, %v; want none", n, err)
	}
	// No busy loop: each worker claims about once per start the limit
	// admits (a timer rings the doorbell then, and one ring wakes one
	// claimer), not thousands of times.
	if bound := workers * (3*int(elapsed/(period/limit)) + 10); claims > bound {
		t.Errorf("%d claim calls in %v; want at most %d (a busy loop?)", claims, elapsed, bound)
	}
}

// A job the limit holds back stays pending with its attempts unchanged,
// the held worker does not claim in a loop (it waits on the doorbell: the
// limit admits the next start only in an hour), and removing the limit
// rings the doorbell, so that the rest run at once.
func TestRateLimitHoldsJobsPendingUntilRemoved(t *testing.T) {
	e := newWorkerEnv(t)
	ctx := ctxT(t)
	if _, err := e.q.SetRateLimit(ctx, 2, time.Hour); err != nil {
		t.Fatal(err)
	}
	ids := e.push(6)
	mon := startMonitor(t, e.srv.Addr())
	ran := make(chan emq.ID, len(ids))
	e.run(func(ctx context.Context, j emq.Job) error {
		ran <- j.ID
		return nil
	}, emq.WorkerOptions{Concurrency: 3, Lease: time.Minute, Wait: time.Minute})
	for range 2 {
		select {
		case <-ran:
		case <-ctx.Done():
			t.Fatal("the limit's first two starts did not run")
		}
	}
	eventually(t, 20*time.Second, "the two admitted jobs completed and the worker blocked on the doorbell", func() bool {
		info, err := do(t, e.c, "INFO", "clients").ToString()
		return err == nil && strings.Contains(info, "blocked_clients:1") && e.tally.Get(emq.Completed) == 2
	})
	held := mon.count(wire.ScriptClaimRateIDs)
	p, err := e.q.Policy(ctx)
	if err != nil || p.RateLimit != 2 || p.RatePeriod != time.Hour || p.AdmitIn < 59*time.Minute || p.AdmitIn > time.Hour {
		t.Errorf("Policy under the spent limit = %+v, %v; want 2 per hour, the next start in about an hour", p, err)
	}
	// Time passes; the worker, blocked on the doorbell for its Wait, does
	// not claim again.
	time.Sleep(300 * time.Millisecond)
	if n := mon.count(wire.ScriptClaimRateIDs); n != held {
		t.Errorf("the held worker claimed %d times more while the limit admitted nothing", n-held)
	}
	if held > 8 {
		t.Errorf("%d claim calls for the two starts the limit admitted; want a few", held)
	}
	select {
	case id := <-ran:
		t.Fatalf("job %s ran beyond the limit", id)
	default:
	}
	for _, id := range ids[2:] {
		info, ok, err := e.q.Get(ctx, id)
		if err != nil || !ok || info.State != emq.StatePending || info.Attempts != 0 || len(info.Failures) != 0 {
			t.Errorf("held job %s: %+v, %v, %v; want pending at attempt 0, no failure", id, info, ok, err)
		}
	}
	mon.stop(t, e.srv)
	p, err = e.q.SetRateLimit(ctx, 0, 0)
	if err != nil || p != (emq.QueuePolicy{Leased: p.Leased}) {
		t.Errorf("SetRateLimit(0) = %+v, %v; want no policy", p, err)
	}
	if got := keyType(t, e.c, e.q.Keys().Active); got == wire.ActiveTripwireType {
		t.Error("the tripwire stayed after the last policy was removed")
	}
	if n, err := do(t, e.c, "EXISTS", e.q.Keys().Starts).AsInt64(); err != nil || n != 0 {
		t.Errorf("the starts log after the limit was removed: %d, %v; want deleted", n, err)
	}
	// The worker waits a minute on the doorbell: only the ring wakes it.
	for range 4 {
		select {
		case <-ran:
		case <-time.After(10 * time.Second):
			t.Fatal("the held jobs did not run once the limit was removed")
		}
	}
	eventually(t, 20*time.Second, "every job completed", func() bool { return e.tally.Get(emq.Completed) == 6 })
}

// A 2.7 claim (claim_policy_ids) and a 2.7 set_policy on a rate-limited
// queue are refused EMQPOLICY and write nothing; a 2.7 completion still
// settles there (leasing nothing next). Pause, Resume and SetConcurrency
// keep the limit.
func TestRateLimitRefusesTheOlderClaimers(t *testing.T) {
	ctx := ctxT(t)
	c, q, ids := policyEnv(t, "rated", 3)
	leased, err := q.ClaimMany(ctx, time.Minute, 1)
	if err != nil || len(leased) != 1 {
		t.Fatal(leased, err)
	}
	if _, err := q.SetRateLimit(ctx, 5, time.Second); err != nil {
		t.Fatal(err)
	}
	before := policyKeyspace(t, c)
	k := q.Keys()
	rows := make([]string, len(ids))
	for i, id := range ids {
		rows[i], _ = k.Row(id)
	}
	claim := wire.ClaimPolicyIDsCall{Pending: k.Pending, Active: k.Active, Running: k.Running, Policy: k.Policy, Wake: k.Wake, Rows: rows[1:], LeaseMS: 60000, IDs: ids[1:]}
	_, err = claim.Exec(ctx, c.Redis())
	var ce *emq.ClassError
	if !errors.Is(err, emq.ErrPolicy) || !errors.As(err, &ce) || ce.Class != wire.ClassPolicy {
		t.Errorf("claim_policy_ids on a rate-limited queue = %v; want EMQPOLICY", err)
	}
	set := wire.SetPolicyCall{Pending: k.Pending, Active: k.Active, Running: k.Running, Policy: k.Policy, Wake: k.Wake, Paused: 1, Concurrency: -1}
	if _, err := set.Exec(ctx, c.Redis()); !errors.Is(err, emq.ErrPolicy) {
		t.Errorf("set_policy on a rate-limited queue = %v; want EMQPOLICY", err)
	}
	if after := policyKeyspace(t, c); !mapsEqual(before, after) {
		t.Errorf("the refused calls changed the keyspace:\nbefore %v\nafter  %v", before, after)
	}
	// A 2.7 worker settles the job it holds, and leases nothing next.
	done := wire.CompletePolicyIDsCall{Row: rows[0], Active: k.Active, Running: k.Running, Policy: k.Policy, Pending: k.Pending, Wake: k.Wake, Results: k.Results,
		ResultTimes: k.ResultTimes, Progress: k.Progress, Failures: k.Failures, Options: k.Options, Events: k.Events, Counters: k.Counters, Rows: rows[1:2],
		ID: leased[0].ID, Token: leased[0].Token, LeaseMS: 60000, IDs: ids[1:2]}
	if rs, err := done.Exec(ctx, c.Redis()); err != nil || len(rs) != 0 {
		t.Errorf("complete_policy_ids on a rate-limited queue = %v, %v; want the completion, nothing leased", rs, err)
	}
	// The SDK's setters keep the limit.
	want := emq.QueuePolicy{Paused: true, Requires: 8, RateLimit: 5, RatePeriod: time.Second}
	if p, err := q.Pause(ctx); err != nil || p != want {
		t.Errorf("Pause on a rate-limited queue = %+v, %v; want %+v", p, err, want)
	}
	if p, err := q.SetConcurrency(ctx, 3); err != nil || !p.Paused || p.Concurrency != 3 || p.RateLimit != 5 || p.RatePeriod != time.Second {
		t.Errorf("SetConcurrency(3) on a paused, rate-limited queue = %+v, %v", p, err)
	}
	want = emq.QueuePolicy{Concurrency: 3, Requires: 8, RateLimit: 5, RatePeriod: time.Second}
	if p, err := q.Resume(ctx); err != nil || p != want {
		t.Errorf("Resume = %+v, %v; want %+v", p, err, want)
	}
	if p, err := q.SetConcurrency(ctx, 0); err != nil || p.Concurrency != 0 || p.RateLimit != 5 || p.Requires != 8 {
		t.Errorf("SetConcurrency(0) = %+v, %v; want the limit kept", p, err)
	}
	if js, err := q.ClaimMany(ctx, time.Minute, 2); err != nil || len(js) != 2 {
		t.Errorf("ClaimMany under 5 per second = %v, %v; want the 2 pending", js, err)
	}
	// Changing the limit keeps the tripwire; removing it, the last policy,
	// restores the classic layout.
	if p, err := q.SetRateLimit(ctx, 7, 250*time.Millisecond); err != nil || p.RateLimit != 7 || p.RatePeriod != 250*time.Millisecond || p.Leased != 2 {
		t.Errorf("SetRateLimit(7, 250ms) = %+v, %v", p, err)
	}
	if p, err := q.SetRateLimit(ctx, 0, 0); err != nil || p != (emq.QueuePolicy{Leased: 2}) {
		t.Errorf("SetRateLimit(0, 0) = %+v, %v; want no policy, 2 leased", p, err)
	}
	if got := keyType(t, c, k.Active); got != "zset" {
		t.Errorf("TYPE active once the limit is removed = %s; want zset", got)
	}
}

// Bad limits are refused before anything is sent; a first limit checks
// the tripwire's floor as Pause does.
func TestSetRateLimitRefusesBadInput(t *testing.T) {
	ctx := ctxT(t)
	c, q, _ := policyEnv(t, "badrate", 1)
	before := policyKeyspace(t, c)
	for _, bad := range []struct {
		n   int
		per time.Duration
	}{{-1, time.Second}, {1000001, time.Second}, {5, 0}, {5, -time.Second}, {5, 1500 * time.Microsecond}, {5, 24*time.Hour + time.Millisecond}, {5, time.Nanosecond}} {
		if _, err := q.SetRateLimit(ctx, bad.n, bad.per); !errors.Is(err, emq.ErrArgument) {
			t.Errorf("SetRateLimit(%d, %v) = %v; want ErrArgument", bad.n, bad.per, err)
		}
	}
	if after := policyKeyspace(t, c); !mapsEqual(before, after) {
		t.Errorf("the refused calls changed the keyspace:\nbefore %v\nafter  %v", before, after)
	}
	for _, ok := range []struct {
		n   int
		per time.Duration
	}{{1000000, 24 * time.Hour}, {1, time.Millisecond}} {
		if p, err := q.SetRateLimit(ctx, ok.n, ok.per); err != nil || p.RateLimit != ok.n || p.RatePeriod != ok.per {
			t.Errorf("SetRateLimit(%d, %v) = %+v, %v", ok.n, ok.per, p, err)
		}
	}
	if _, err := q.SetRateLimit(ctx, 0, 0); err != nil {
		t.Fatal(err)
	}
	do(t, c, "HSET", wire.KeyBundle, "2.1.0", "0000000000000000000000000000000000000000")
	if _, err := q.SetRateLimit(ctx, 5, time.Second); !errors.Is(err, emq.ErrTripwireFloor) {
		t.Errorf("SetRateLimit with a 2.1.0 client recorded = %v; want ErrTripwireFloor", err)
	}
	if p, err := q.SetRateLimit(ctx, 5, time.Second, emq.ForceTripwire()); err != nil || p.RateLimit != 5 {
		t.Errorf("SetRateLimit(ForceTripwire()) = %+v, %v", p, err)
	}
	// Removing it never lays the tripwire: no check.
	if _, err := q.SetRateLimit(ctx, 0, 0); err != nil {
		t.Errorf("SetRateLimit(0) with a 2.1.0 client recorded: %v", err)
	}
}

// A worker on a queue whose tripwire names a later minor to claim (a
// policy this client cannot honour, "99 7") settles the jobs it holds,
// leases nothing, logs the refusal at warn and asks again only after a
// growing pause: it neither stops nor spins; once the policy is one it
// honours, it claims again.
func TestWorkerUnderALaterMinorsClaimTripwire(t *testing.T) {
	e := newWorkerEnv(t)
	ctx := ctxT(t)
	if _, err := e.q.SetConcurrency(ctx, 100); err != nil {
		t.Fatal(err)
	}
	ids := e.push(4)
	release := make(chan struct{})
	started := make(chan emq.ID, len(ids))
	e.run(func(ctx context.Context, j emq.Job) error {
		started <- j.ID
		<-release
		return nil
	}, emq.WorkerOptions{Concurrency: 2, Batch: 1, Lease: time.Minute, Wait: time.Minute})
	for range 2 {
		select {
		case <-started:
		case <-ctx.Done():
			t.Fatal("the worker did not start two jobs")
		}
	}
	k := e.q.Keys()
	do(t, e.c, "SET", k.Active, "99 7")
	mon := startMonitor(t, e.srv.Addr())
	close(release)
	eventually(t, 20*time.Second, "the held jobs completed under the later tripwire", func() bool { return e.tally.Get(emq.Completed) == 2 })
	eventually(t, 20*time.Second, "the refused claim logged at warn", func() bool {
		s := e.log.String()
		return strings.Contains(s, "level=WARN") && strings.Contains(s, "needs a later client to claim")
	})
	time.Sleep(600 * time.Millisecond)
	// 50ms, 100ms, 200ms, 400ms, ...: a handful of claims in the time.
	if n := mon.count(wire.ScriptClaimRateIDs); n == 0 || n > 10 {
		t.Errorf("%d claim calls while the tripwire refused them; want a few, paced by the backoff", n)
	}
	mon.stop(t, e.srv)
	select {
	case id := <-started:
		t.Fatalf("job %s was leased under a tripwire this client cannot honour", id)
	default:
	}
	for _, id := range ids[2:] {
		if info, ok, err := e.q.Get(ctx, id); err != nil || !ok || info.State != emq.StatePending || info.Attempts != 0 {
			t.Errorf("job %s: %+v, %v, %v; want pending at attempt 0", id, info, ok, err)
		}
	}
	// A policy this client honours: the worker claims again.
	do(t, e.c, "SET", k.Active, "7 7")
	for range 2 {
		select {
		case <-started:
		case <-time.After(15 * time.Second):
			t.Fatal("the worker did not claim again once the tripwire named a minor it speaks")
		}
	}
	eventually(t, 20*time.Second, "every job completed", func() bool { return e.tally.Get(emq.Completed) == 4 })
}
