package emq_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// policyEnv is a client and a queue with n jobs pending.
func policyEnv(t *testing.T, name string, n int) (*emq.Client, *emq.Queue, []emq.ID) {
	t.Helper()
	c := connect(t, redistest.Start(t))
	q := queue(t, c, name)
	ids := make([]emq.ID, n)
	jobs := make([]emq.NewJob, n)
	for i := range jobs {
		ids[i] = mint(t, c, emq.WorkKind)
		jobs[i] = emq.NewJob{ID: ids[i], Payload: []byte("job")}
	}
	if n > 0 {
		if _, err := q.PushMany(ctxT(t), jobs); err != nil {
			t.Fatal(err)
		}
	}
	return c, q, ids
}

func keyType(t *testing.T, c *emq.Client, key string) string {
	t.Helper()
	s, err := do(t, c, "TYPE", key).ToString()
	if err != nil {
		t.Fatalf("TYPE %s: %v", key, err)
	}
	return s
}

// policyKeyspace is every key with its DUMP, to compare before and after.
func policyKeyspace(t *testing.T, c *emq.Client) map[string]string {
	t.Helper()
	keys, err := do(t, c, "KEYS", "*").AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		if k == wire.KeyLocks {
			continue // the node lease is renewed on its own schedule
		}
		v, err := do(t, c, "DUMP", k).ToString()
		if err != nil {
			t.Fatalf("DUMP %s: %v", k, err)
		}
		out[k] = v
	}
	return out
}

func TestPauseHoldsClaimsAndResumeReleasesThem(t *testing.T) {
	ctx := ctxT(t)
	c, q, ids := policyEnv(t, "paused", 3)
	first, err := q.ClaimMany(ctx, time.Minute, 1)
	if err != nil || len(first) != 1 || first[0].ID != ids[0] {
		t.Fatalf("ClaimMany before the pause = %v, %v", first, err)
	}
	p, err := q.Pause(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (emq.QueuePolicy{Paused: true, Requires: 7, Leased: 1}); p != want {
		t.Errorf("Pause = %+v; want %+v", p, want)
	}
	if got := keyType(t, c, q.Keys().Active); got != wire.ActiveTripwireType {
		t.Errorf("TYPE active under a pause = %s; want the tripwire's string", got)
	}
	// The very next claim leases nothing, in every form.
	if js, err := q.ClaimMany(ctx, time.Minute, 2); err != nil || len(js) != 0 {
		t.Errorf("ClaimMany on a paused queue = %v, %v; want none", js, err)
	}
	if js, err := q.ClaimIDs(ctx, time.Minute, ids[1:]); err != nil || len(js) != 0 {
		t.Errorf("ClaimIDs on a paused queue = %v, %v; want none", js, err)
	}
	// The leased job settles, and its completion leases nothing next.
	js, err := q.CompleteResult(ctx, first[0].ID, first[0].Token, time.Minute, ids[1:2], emq.Completion{})
	if err != nil || len(js) != 0 {
		t.Errorf("CompleteResult with next on a paused queue = %v, %v; want the completion, nothing leased", js, err)
	}
	if n, err := q.Size(ctx, emq.SetPending); err != nil || n != 2 {
		t.Errorf("pending under the pause = %d, %v; want 2", n, err)
	}
	p, err = q.Resume(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (emq.QueuePolicy{}); p != want {
		t.Errorf("Resume = %+v; want %+v (no policy, nothing leased)", p, want)
	}
	if n, err := do(t, c, "LLEN", q.Keys().Wake).AsInt64(); err != nil || n != 1 {
		t.Errorf("the doorbell after Resume with jobs pending = %d, %v; want rung", n, err)
	}
	if js, err := q.ClaimMany(ctx, time.Minute, 2); err != nil || len(js) != 2 {
		t.Errorf("ClaimMany after Resume = %v, %v; want the 2 pending", js, err)
	}
}

func TestPausedWorkerWaitsOnTheDoorbell(t *testing.T) {
	e := newWorkerEnv(t)
	ctx := ctxT(t)
	ids := e.push(4)
	started := make(chan emq.ID, len(ids))
	release := make(chan struct{})
	stop := e.run(func(ctx context.Context, j emq.Job) error {
		started <- j.ID
		if j.ID == ids[0] {
			<-release
		}
		return nil
	}, emq.WorkerOptions{Concurrency: 1, Lease: time.Minute, Wait: time.Minute})
	if got := <-started; got != ids[0] {
		t.Fatalf("first job run = %s; want %s", got, ids[0])
	}
	if _, err := e.q.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	close(release)
	// The worker completes the job it holds, leases nothing more and waits
	// on the doorbell (a client blocked in BLPOP), without claiming again.
	eventually(t, 20*time.Second, "the job completed and the worker blocked on the doorbell", func() bool {
		info, err := do(t, e.c, "INFO", "clients").ToString()
		return err == nil && strings.Contains(info, "blocked_clients:1") && e.tally.Get(emq.Completed) == 1
	})
	if n := e.tally.Get(emq.Claimed); n != 1 {
		t.Errorf("claimed under the pause = %d; want only the first job", n)
	}
	if n, err := e.q.Size(ctx, emq.SetPending); err != nil || n != 3 {
		t.Errorf("pending under the pause = %d, %v; want 3", n, err)
	}
	if _, err := e.q.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		select {
		case <-started:
		case <-ctx.Done():
			t.Fatal("the jobs did not run after Resume")
		}
	}
	stop()
	if n := e.tally.Get(emq.Claimed); n != 4 {
		t.Errorf("claimed = %d; want 4", n)
	}
}

func TestConcurrencyCapBoundsEveryWorker(t *testing.T) {
	const capN, workers, jobs = 2, 3, 24
	e := newWorkerEnv(t)
	ctx := ctxT(t)
	if p, err := e.q.SetConcurrency(ctx, capN); err != nil || p.Concurrency != capN || p.Requires != 7 || p.Paused {
		t.Fatalf("SetConcurrency(%d) = %+v, %v", capN, p, err)
	}
	ids := e.push(jobs)
	var inFlight, maxInFlight atomic.Int64
	var mu sync.Mutex
	ran := map[emq.ID]int{}
	done := make(chan struct{}, jobs)
	h := func(ctx context.Context, j emq.Job) error {
		n := inFlight.Add(1)
		for {
			m := maxInFlight.Load()
			if n <= m || maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond) // the job's work, so that runs overlap
		inFlight.Add(-1)
		mu.Lock()
		ran[j.ID]++
		mu.Unlock()
		done <- struct{}{}
		return nil
	}
	for range workers {
		e.run(h, emq.WorkerOptions{Concurrency: 3, Lease: time.Minute, Wait: 200 * time.Millisecond})
	}
	for range jobs {
		select {
		case <-done:
		case <-ctx.Done():
			t.Fatalf("not every job ran: %d of %d", len(ran), jobs)
		}
	}
	t.Logf("at most %d handlers ran at once", maxInFlight.Load())
	if m := maxInFlight.Load(); m > capN || m < 1 {
		t.Errorf("at most %d handlers ran at once; want 1..%d", m, capN)
	}
	eventually(t, 20*time.Second, "every job completed", func() bool {
		return e.tally.Get(emq.Completed) == jobs
	})
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if ran[id] != 1 {
			t.Errorf("job %s ran %d times; want once", id, ran[id])
		}
	}
}

func TestOlderScriptOnAPolicyQueueIsRefused(t *testing.T) {
	ctx := ctxT(t)
	c, q, ids := policyEnv(t, "older", 2)
	leased, err := q.ClaimMany(ctx, time.Minute, 1)
	if err != nil || len(leased) != 1 {
		t.Fatal(leased, err)
	}
	if _, err := q.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	before := policyKeyspace(t, c)
	k := q.Keys()
	row, _ := k.Row(ids[1])
	// A 2.6 client's claim_ids: WRONGTYPE on the tripwire before any write.
	call := wire.ClaimIDsCall{Pending: k.Pending, Active: k.Active, Wake: k.Wake, Rows: []string{row}, LeaseMS: 60000, IDs: ids[1:]}
	if _, err := call.Exec(ctx, c.Redis()); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Errorf("claim_ids on a paused queue = %v; want WRONGTYPE", err)
	}
	lrow, _ := k.Row(leased[0].ID)
	ext := wire.ExtendCall{Active: k.Active, Row: lrow, ID: leased[0].ID, Token: leased[0].Token, LeaseMS: 60000}
	if _, err := ext.Exec(ctx, c.Redis()); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Errorf("extend on a paused queue = %v; want WRONGTYPE", err)
	}
	// The SDK's own calls of older scripts say what happened.
	_, _, err = q.Claim(ctx, time.Minute)
	var pe *emq.PolicyError
	if !errors.Is(err, emq.ErrPolicy) || !errors.As(err, &pe) || pe.Queue != q.Name() || pe.Script != wire.ScriptClaim.Name {
		t.Errorf("Claim on a paused queue = %v; want a *PolicyError for %s matching ErrPolicy", err, q.Name())
	}
	if err := q.Complete(ctx, leased[0].ID, leased[0].Token); !errors.Is(err, emq.ErrPolicy) {
		t.Errorf("Complete on a paused queue = %v; want ErrPolicy", err)
	}
	if _, err := q.CompleteClaimIDs(ctx, leased[0].ID, leased[0].Token, time.Minute, nil); !errors.Is(err, emq.ErrPolicy) {
		t.Errorf("CompleteClaimIDs on a paused queue = %v; want ErrPolicy", err)
	}
	if after := policyKeyspace(t, c); !mapsEqual(before, after) {
		t.Errorf("the refused calls changed the keyspace:\nbefore %v\nafter  %v", before, after)
	}
	// The 2.7 calls serve the queue: the holder extends and completes.
	if _, err := q.Extend(ctx, leased[0].ID, leased[0].Token, time.Minute); err != nil {
		t.Errorf("Extend on a paused queue: %v", err)
	}
	if _, err := q.CompleteResult(ctx, leased[0].ID, leased[0].Token, time.Minute, nil, emq.Completion{}); err != nil {
		t.Errorf("CompleteResult on a paused queue: %v", err)
	}
	// A WRONGTYPE of another cause stays what it is.
	other := queue(t, c, "foreign")
	do(t, c, "HSET", other.Keys().Active, "x", "y")
	if _, _, err := other.Claim(ctx, time.Minute); err == nil || errors.Is(err, emq.ErrPolicy) {
		t.Errorf("Claim on a foreign active key = %v; want the WRONGTYPE, not ErrPolicy", err)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestClearingTheLastPolicyRestoresTheClassicLayout(t *testing.T) {
	ctx := ctxT(t)
	c, q, _ := policyEnv(t, "layout", 3)
	leased, err := q.ClaimMany(ctx, time.Minute, 1)
	if err != nil || len(leased) != 1 {
		t.Fatal(leased, err)
	}
	k := q.Keys()
	if _, err := q.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if got := keyType(t, c, k.Running); got != "zset" {
		t.Errorf("TYPE running under a policy = %s; want zset", got)
	}
	p, err := q.SetConcurrency(ctx, 2)
	if err != nil || !p.Paused || p.Concurrency != 2 || p.Leased != 1 {
		t.Errorf("SetConcurrency(2) on a paused queue = %+v, %v", p, err)
	}
	if p, err = q.Resume(ctx); err != nil || p.Paused || p.Concurrency != 2 || p.Requires != 7 {
		t.Errorf("Resume under a cap = %+v, %v; want the cap kept, the tripwire laid", p, err)
	}
	if got := keyType(t, c, k.Active); got != wire.ActiveTripwireType {
		t.Errorf("TYPE active with a cap left = %s; want string", got)
	}
	if p, err = q.SetConcurrency(ctx, 0); err != nil || p != (emq.QueuePolicy{Leased: 1}) {
		t.Errorf("SetConcurrency(0), the last policy = %+v, %v; want none, 1 leased", p, err)
	}
	if got := keyType(t, c, k.Active); got != "zset" {
		t.Errorf("TYPE active once the last policy is cleared = %s; want zset", got)
	}
	if n, err := do(t, c, "EXISTS", k.Running, k.Policy).AsInt64(); err != nil || n != 0 {
		t.Errorf("running and policy once the last policy is cleared: %d exist, %v", n, err)
	}
	if sc, err := do(t, c, "ZSCORE", k.Active, leased[0].ID.String()).AsInt64(); err != nil || sc != leased[0].Deadline.UnixMilli() {
		t.Errorf("the leased job's deadline in the active set = %d, %v; want %d", sc, err, leased[0].Deadline.UnixMilli())
	}
	// A 2.6 script serves the queue again.
	row, _ := k.Row(leased[0].ID)
	ext := wire.ExtendCall{Active: k.Active, Row: row, ID: leased[0].ID, Token: leased[0].Token, LeaseMS: 60000}
	if _, err := ext.Exec(ctx, c.Redis()); err != nil {
		t.Errorf("extend in the classic layout: %v", err)
	}
	if _, err := q.SetConcurrency(ctx, -1); !errors.Is(err, emq.ErrArgument) {
		t.Errorf("SetConcurrency(-1) = %v; want ErrArgument", err)
	}
}

func TestInspectionOfAPausedQueue(t *testing.T) {
	ctx := ctxT(t)
	c, q, ids := policyEnv(t, "inspected", 3)
	leased, err := q.ClaimMany(ctx, time.Minute, 2)
	if err != nil || len(leased) != 2 {
		t.Fatal(leased, err)
	}
	if _, err := q.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	sizes, err := q.Sizes(ctx)
	if err != nil || sizes[emq.SetActive] != 2 || sizes[emq.SetPending] != 1 {
		t.Errorf("Sizes = %v, %v; want 2 active, 1 pending", sizes, err)
	}
	if n, err := q.Size(ctx, emq.SetActive); err != nil || n != 2 {
		t.Errorf("Size(active) = %d, %v", n, err)
	}
	want := []emq.ID{leased[0].ID, leased[1].ID}
	sort.Slice(want, func(i, j int) bool { return want[i].String() < want[j].String() })
	sorted := func(got []emq.ID) []emq.ID {
		got = slices.Clone(got)
		sort.Slice(got, func(i, j int) bool { return got[i].String() < got[j].String() })
		return got
	}
	if got, err := q.Browse(ctx, emq.SetActive, 10); err != nil || !slices.Equal(sorted(got), want) {
		t.Errorf("Browse(active) = %v, %v; want %v", got, err, want)
	}
	if got, _, err := q.Page(ctx, emq.SetActive, "", 10); err != nil || !slices.Equal(sorted(got), want) {
		t.Errorf("Page(active) = %v, %v; want %v", got, err, want)
	}
	if got, err := q.Head(ctx, emq.SetActive, 10); err != nil || !slices.Equal(sorted(got), want) {
		t.Errorf("Head(active) = %v, %v; want %v", got, err, want)
	}
	if _, ok, err := q.Oldest(ctx, emq.SetActive); err != nil || !ok {
		t.Errorf("Oldest(active) = %v, %v", ok, err)
	}
	if n, err := q.Due(ctx, emq.SetActive, time.Now().Add(time.Hour)); err != nil || n != 2 {
		t.Errorf("Due(active, in an hour) = %d, %v; want 2", n, err)
	}
	info, ok, err := q.Get(ctx, leased[0].ID)
	if err != nil || !ok || info.State != emq.StateActive || !slices.Equal(info.In, []emq.Set{emq.SetActive}) || info.At.UnixMilli() != leased[0].Deadline.UnixMilli() {
		t.Errorf("Get(a leased job) = %+v, %v, %v; want active, in the active set, at its deadline", info, ok, err)
	}
	if found, err := c.FindJob(ctx, ids[0], []string{"other", q.Name()}); err != nil || !slices.Equal(found, []string{q.Name()}) {
		t.Errorf("FindJob = %v, %v", found, err)
	}
	st, err := c.Stats(ctx, []string{q.Name()})
	if err != nil || len(st) != 1 || !st[0].Paused || st[0].Concurrency != 0 || st[0].Sizes[emq.SetActive] != 2 || st[0].ExpiredLeases != 0 {
		t.Errorf("Stats = %+v, %v; want paused, 2 active", st, err)
	}
	p, err := q.Policy(ctx)
	if err != nil || p != (emq.QueuePolicy{Paused: true, Requires: 7, Leased: 2}) {
		t.Errorf("Policy = %+v, %v", p, err)
	}
}

func TestPolicyOfALaterMinor(t *testing.T) {
	ctx := ctxT(t)
	c, q, ids := policyEnv(t, "later", 1)
	if _, err := q.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	// A later minor's tripwire: a policy this client cannot honour.
	do(t, c, "SET", q.Keys().Active, "99 99")
	_, err := q.ClaimMany(ctx, time.Minute, 1)
	var ce *emq.ClassError
	if !errors.Is(err, emq.ErrPolicy) || !errors.As(err, &ce) || ce.Class != wire.ClassPolicy {
		t.Errorf("ClaimMany under a later minor's tripwire = %v; want EMQPOLICY", err)
	}
	if _, err := q.ClaimIDs(ctx, time.Minute, ids); !errors.Is(err, emq.ErrPolicy) {
		t.Errorf("ClaimIDs under a later minor's tripwire = %v; want ErrPolicy", err)
	}
	if _, err := q.Resume(ctx); !errors.Is(err, emq.ErrPolicy) {
		t.Errorf("Resume under a later minor's tripwire = %v; want ErrPolicy", err)
	}
	if p, err := q.Policy(ctx); err != nil || p.Requires != 99 {
		t.Errorf("Policy under a later minor's tripwire = %+v, %v; want requires 99", p, err)
	}
}

func TestPauseChecksTheTripwireFloor(t *testing.T) {
	ctx := ctxT(t)
	c, q, _ := policyEnv(t, "floor", 1)
	do(t, c, "HSET", wire.KeyBundle, "2.1.0", "0000000000000000000000000000000000000000")
	_, err := q.Pause(ctx)
	var fe *emq.TripwireFloorError
	if !errors.Is(err, emq.ErrTripwireFloor) || !errors.Is(err, emq.ErrArgument) || !errors.As(err, &fe) || !slices.Equal(fe.Versions, []string{"2.1.0"}) {
		t.Errorf("Pause with a 2.1.0 client recorded = %v; want ErrTripwireFloor naming 2.1.0", err)
	}
	if _, err := q.SetConcurrency(ctx, 3); !errors.Is(err, emq.ErrTripwireFloor) {
		t.Errorf("SetConcurrency with a 2.1.0 client recorded = %v; want ErrTripwireFloor", err)
	}
	if got := keyType(t, c, q.Keys().Active); got == wire.ActiveTripwireType {
		t.Error("the refused Pause laid the tripwire")
	}
	if n, err := do(t, c, "EXISTS", q.Keys().Policy).AsInt64(); err != nil || n != 0 {
		t.Errorf("the refused Pause wrote a policy: %d, %v", n, err)
	}
	p, err := q.Pause(ctx, emq.ForceTripwire())
	if err != nil || !p.Paused {
		t.Errorf("Pause(ForceTripwire()) = %+v, %v", p, err)
	}
	// Resume never lays the tripwire: no check.
	if _, err := q.Resume(ctx); err != nil {
		t.Errorf("Resume with a 2.1.0 client recorded: %v", err)
	}
}

// A job whose id the SDK cannot decode is buried on a queue with a policy
// too (the 2.0 bury is refused there; fail_policy buries it), and the
// queue keeps flowing under its cap.
func TestWorkerBuriesUndecodableJobsUnderACap(t *testing.T) {
	e := newWorkerEnv(t)
	if _, err := e.q.SetConcurrency(ctxT(t), 3); err != nil {
		t.Fatal(err)
	}
	bad := "JOB!!!notanid!"
	row := e.q.Keys().RowPrefix() + bad
	for _, cmd := range [][]string{
		{"HSET", row, wire.FieldState, string(emq.StatePending), wire.FieldToken, "0", wire.FieldPayload, "x"},
		{"ZADD", e.q.Keys().Pending, "0", bad},
	} {
		if err := do(t, e.c, cmd...).Error(); err != nil {
			t.Fatal(err)
		}
	}
	e.push(10)
	e.run(func(ctx context.Context, j emq.Job) error { return nil }, emq.WorkerOptions{Concurrency: 4, Wait: 200 * time.Millisecond})
	eventually(t, 20*time.Second, "the good jobs completed and the bad one buried", func() bool {
		return e.tally.Get(emq.Completed) == 10 && e.tally.Get(emq.Buried) == 1
	})
	dead, err := do(t, e.c, "ZRANGE", e.q.Keys().Dead, "0", "-1").AsStrSlice()
	if err != nil || len(dead) != 1 || dead[0] != bad {
		t.Errorf("dead = %v, %v; want the planted id", dead, err)
	}
}

// Retry and Bury run their 2.7 twins (retry_policy, bury_policy): a
// worker's hand-back at shutdown and a burial leave the running set of a
// paused queue instead of being refused.
func TestHandBackAndBuryOnAPausedQueue(t *testing.T) {
	ctx := ctxT(t)
	_, q, _ := policyEnv(t, "handback", 2)
	leased, err := q.ClaimMany(ctx, time.Minute, 2)
	if err != nil || len(leased) != 2 {
		t.Fatal(leased, err)
	}
	if _, err := q.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Retry(ctx, leased[0].ID, leased[0].Token, 0); err != nil {
		t.Errorf("Retry on a paused queue: %v", err)
	}
	if err := q.Bury(ctx, leased[1].ID, leased[1].Token); err != nil {
		t.Errorf("Bury on a paused queue: %v", err)
	}
	if err := q.Bury(ctx, leased[1].ID, leased[1].Token); !errors.Is(err, emq.ErrStale) {
		t.Errorf("Bury of a job no longer held = %v; want ErrStale", err)
	}
	p, err := q.Policy(ctx)
	if err != nil || !p.Paused || p.Leased != 0 {
		t.Errorf("after the hand-back and the burial: %+v, %v; want paused with nothing leased", p, err)
	}
	for i, want := range []emq.State{emq.StateScheduled, emq.StateDead} {
		if info, ok, err := q.Get(ctx, leased[i].ID); err != nil || !ok || info.State != want {
			t.Errorf("job %d: %+v, %v, %v; want %s", i, info, ok, err, want)
		}
	}
}

// A worker reaps a queue with a policy without the maintenance lock: its
// holder may be a worker older than 2.7, whose reaps fail on the tripwire
// while it renews the lock (internal/chaos mixed26policy). Here the lock is
// another owner's for the whole test, a lease has expired under a cap of
// one, and the worker still takes it back and runs the job.
func TestWorkerReapsAPolicyQueueWithoutTheLock(t *testing.T) {
	ctx := ctxT(t)
	c, q, ids := policyEnv(t, "stranded", 1)
	if _, err := q.ClaimMany(ctx, time.Millisecond, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := q.SetConcurrency(ctx, 1); err != nil {
		t.Fatal(err)
	}
	far := time.Now().Add(time.Hour).UnixMilli()
	if _, err := do(t, c, "HSET", wire.KeyLocks, wire.LockMaintenance(q.Name()), fmt.Sprintf("a-2.6-worker %d", far)).AsInt64(); err != nil {
		t.Fatal(err)
	}
	ran := make(chan emq.Job, 1)
	w, err := emq.NewWorker(q, func(_ context.Context, j emq.Job) error {
		select {
		case ran <- j:
		default:
		}
		return nil
	}, emq.WorkerOptions{Maintenance: 20 * time.Millisecond, Wait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	wctx, stop := context.WithCancel(ctx)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()
	select {
	case j := <-ran:
		if j.ID != ids[0] || j.Token != 2 {
			t.Errorf("ran %s with token %d; want %s, taken back and leased again (token 2)", j.ID, j.Token, ids[0])
		}
	case <-ctx.Done():
		t.Fatal("the expired lease was never taken back while another owner held the maintenance lock")
	}
	if owner, _ := do(t, c, "HGET", wire.KeyLocks, wire.LockMaintenance(q.Name())).ToString(); !strings.HasPrefix(owner, "a-2.6-worker ") {
		t.Errorf("the maintenance lock is %q; want it still the other owner's", owner)
	}
}
