package emq_test

// A randomized model-based test of the job lifecycle against a real
// redis-server. It drives a long random sequence of queue operations, with
// current and stale tokens, short and long leases, past, near and future
// run-ats, and after every step:
//
//   - scans the keyspace and asserts the spec's invariant on what it finds
//     (section 3 and 4): every row is a hash of exactly the three fields,
//     its state names exactly the one set holding its id, no set holds an id
//     without a row, pending and dead scores are 0, the queue's doorbell
//     (the wake key of 2.1.0) is a list holding at most one marker and
//     nothing else, and no other key exists (but the reserve's and a
//     bystander queue's);
//   - asserts that no row's attempts ever decreased and that a completed id
//     never comes back;
//   - compares the whole keyspace with an in-memory model, and every reply
//     with the model's expectation (a transition with the current token of
//     an active job succeeds, anything else is EMQSTALE, and so on), the
//     doorbell included: which calls ring it, and what ring answers.
//
// Time enters through claim deadlines and run-ats; the test reads the
// server's TIME before and after each call, and accepts exactly the
// outcomes of a script clock inside that window.
//
// Reproduce a run with its logged seed:
//
//	go test ./sdk/go/emq -run TestInvariant -invariant.seed=N [-invariant.ops=M]
//
// or EMQ_INVARIANT_SEED=N (and EMQ_INVARIANT_OPS=M) in the environment.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

var (
	invariantSeed = flag.Uint64("invariant.seed", 0, "seed of TestInvariant; 0 takes EMQ_INVARIANT_SEED or a fresh one")
	invariantOps  = flag.Int("invariant.ops", 0, "operations TestInvariant runs; 0 takes EMQ_INVARIANT_OPS or 3000")
)

const invariantPool = 40 // live job ids at any time

// invJob is the model of one row and its set membership.
type invJob struct {
	state    emq.State
	attempts int64
	payload  string
	score    int64 // the score in its set: 0, a lease deadline or a run-at
}

// invModel is what the keyspace must hold.
type invModel struct {
	jobs    map[emq.ID]*invJob
	retired map[emq.ID]bool    // completed: must never come back
	tokens  map[emq.ID][]int64 // every token a claim minted for the id
	wake    bool               // the doorbell holds its marker
	// records are the failure records the failures hash must hold, by
	// id: a record outlives its row (complete and purge leave it) until
	// forget_failures deletes it.
	records map[emq.ID][]emq.FailedAttempt
	// 2.4.0 (invariant24_test.go): the retry policies add_many recorded,
	// the progress reports, the kept completion records, the events
	// written and the settle counters' totals.
	options  map[emq.ID]invPolicy
	progress map[emq.ID]string
	results  map[emq.ID]invResult
	events   int64
	counters [4]int64 // completed, failed, retried, dead
	// 2.5.0 (invariant25_test.go): each deduplication key's holder.
	dedup map[string]emq.ID
	// 2.6.0 (invariant26_test.go): the schedulers' records, and the runs
	// each fired since its schedule last changed.
	sched     map[string]*invSched
	schedRuns map[string][][2]int64
}

// invRecordCap is how many failed attempts a record keeps (the manifest's
// failures key type).
const invRecordCap = 10

// invSnap is the keyspace as a scan found it.
type invSnap struct {
	rows map[emq.ID]map[string]string
	sets map[emq.Set]map[emq.ID]int64
	wake []string // the doorbell's elements (none when the key is absent)
	// failures are the ids the failures hash holds a record of.
	failures map[emq.ID]bool
	// 2.4.0: the ids of the options hash, the progress reports, the ids of
	// the results hash, the retention index, the events' count and the
	// counters' totals.
	options     map[emq.ID]bool
	progress    map[emq.ID]string
	results     map[emq.ID]bool
	resultTimes map[emq.ID]int64
	events      int64
	counters    [4]int64
	dedup       map[string]string // 2.5.0: the dedup hash's entries
	// 2.6.0: the schedulers hash's fields and the due index's scores.
	schedulers map[string]bool
	schedNext  map[string]int64
}

type invariant struct {
	t       *testing.T
	ctx     context.Context
	c       *emq.Client
	q       *emq.Queue
	k       wire.QueueKeys
	rnd     *rand.Rand
	seed    uint64
	model   invModel
	by      wire.QueueKeys   // the bystander queue, which nothing touches
	pool    []emq.ID         // ids to enqueue and act on
	floor   map[emq.ID]int64 // the highest attempts seen per id
	step    int
	trail   []string // the last operations, for a failure report
	stats   map[string]*[2]int
	never   int64 // the due index's score of a paused or ended scheduler
	removes int   // remove_schedulers calls so far (removeSchedulers alternates its answers)
}

func invSettings(t *testing.T) (seed uint64, ops int) {
	seed, ops = *invariantSeed, *invariantOps
	if seed == 0 {
		if s := os.Getenv("EMQ_INVARIANT_SEED"); s != "" {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				t.Fatalf("EMQ_INVARIANT_SEED=%q: %v", s, err)
			}
			seed = v
		}
	}
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	if ops == 0 {
		if s := os.Getenv("EMQ_INVARIANT_OPS"); s != "" {
			v, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("EMQ_INVARIANT_OPS=%q: %v", s, err)
			}
			ops = v
		}
	}
	if ops <= 0 {
		ops = 3000
	}
	return seed, ops
}

// TestInvariant's calls run under the test's own context, not ctxT's
// 60 s: 3000 operations, each followed by a full check, outlast a minute
// on a loaded machine (load 15 in CI), and a hang is go test's -timeout's
// to report, with every goroutine's stack.
func TestInvariant(t *testing.T) {
	seed, ops := invSettings(t)
	t.Logf("seed %d, %d operations; reproduce with -invariant.seed=%d -invariant.ops=%d", seed, ops, seed, ops)
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "invariant")
	v := &invariant{
		t: t, ctx: t.Context(), c: c, q: q, k: q.Keys(), seed: seed,
		rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		model: invModel{jobs: map[emq.ID]*invJob{}, retired: map[emq.ID]bool{}, tokens: map[emq.ID][]int64{}, records: map[emq.ID][]emq.FailedAttempt{},
			options: map[emq.ID]invPolicy{}, progress: map[emq.ID]string{}, results: map[emq.ID]invResult{}, dedup: map[string]emq.ID{},
			sched: map[string]*invSched{}, schedRuns: map[string][][2]int64{}},
		floor: map[emq.ID]int64{},
		stats: map[string]*[2]int{},
	}
	for i := 0; i < invariantPool; i++ {
		v.pool = append(v.pool, mint(t, c, emq.WorkKind))
	}
	learnNever(v)
	// Another queue holds a job throughout: nothing done to the first may
	// touch it.
	bystander := queue(t, c, "bystander")
	by := mint(t, c, emq.WorkKind)
	v.by = bystander.Keys()
	if ok, err := bystander.Enqueue(v.ctx, by, []byte("untouched")); err != nil || !ok {
		t.Fatalf("bystander Enqueue = %v, %v", ok, err)
	}

	type op struct {
		name   string
		weight int
		run    func()
	}
	table := []op{
		{wire.ScriptEnqueue.Name, 10, v.enqueue},
		{wire.ScriptEnqueueAt.Name, 8, v.enqueueAt},
		{"foreign kind", 1, v.enqueueKind},
		{wire.ScriptClaim.Name, 14, v.claim},
		{wire.ScriptExtendPolicy.Name, 5, v.extend},
		{wire.ScriptComplete.Name, 6, v.complete},
		{wire.ScriptRetryPolicy.Name, 6, v.retry},
		{wire.ScriptBuryPolicy.Name, 4, v.bury},
		{wire.ScriptPromote.Name, 7, v.promote},
		{wire.ScriptReap.Name, 7, v.reap},
		{wire.ScriptRevive.Name, 4, v.revive},
		{wire.ScriptPush.Name, 9, v.push},
		{wire.ScriptClaimMany.Name, 7, v.claimMany},
		{wire.ScriptCompleteClaim.Name, 7, v.completeClaim},
		{wire.ScriptRing.Name, 3, v.ring},
		{"answer the doorbell", 4, v.answer},
		{wire.ScriptPurge.Name, 2, v.purge},
		{wire.ScriptPushMany.Name, 6, v.pushMany},
		{wire.ScriptClaimRateIDs.Name, 7, v.claimIDs},
		{wire.ScriptCompleteClaimIDs.Name, 7, v.completeClaimIDs},
		{wire.ScriptPromoteIDs.Name, 6, v.promoteIDs},
		{wire.ScriptReapIDs.Name, 6, v.reapIDs},
		{wire.ScriptRetryFailed.Name, 6, v.retryFailed},
		{wire.ScriptBuryFailed.Name, 4, v.buryFailed},
		{wire.ScriptReapFailedIDs.Name, 6, v.reapFailedIDs},
		{wire.ScriptFailures.Name, 5, v.failures},
		{wire.ScriptForgetFailures.Name, 4, v.forgetFailures},
		{wire.ScriptAddMany.Name, 7, v.addMany},
		{wire.ScriptCompleteRateIDs.Name, 7, v.completeResult},
		{wire.ScriptFailPolicy.Name, 7, v.failPolicy},
		{wire.ScriptReapPolicyIDs.Name, 6, v.reapRecordedIDs},
		{wire.ScriptProgress.Name, 5, v.reportProgress},
		{wire.ScriptReviveRecorded.Name, 4, v.reviveRecorded},
		{wire.ScriptForgetIDs.Name, 4, v.forgetIDs},
		{wire.ScriptOutput.Name, 4, v.output},
		{wire.ScriptCounters.Name, 2, v.readCounters},
		{wire.ScriptEvents.Name, 2, v.readEvents},
		{wire.ScriptAddDedupPolicy.Name, 5, v.addDedup},
		{wire.ScriptReplaceDedupPolicy.Name, 4, v.replaceDedup},
		{wire.ScriptDedupPolicyEntries.Name, 2, v.dedupEntries},
		{wire.ScriptSweepDedupPolicy.Name, 2, v.sweepDedup},
		{wire.ScriptCancelPolicyIDs.Name, 4, v.cancelIDs},
		{wire.ScriptUpsertScheduler.Name, 5, v.upsertScheduler},
		{wire.ScriptRemoveSchedulers.Name, 3, v.removeSchedulers},
		{wire.ScriptPauseSchedulers.Name, 3, v.pauseSchedulers},
		{wire.ScriptSchedulerEntries.Name, 2, v.schedulerEntries},
		{wire.ScriptListSchedulers.Name, 2, v.listSchedulers},
		{wire.ScriptDueSchedulers.Name, 3, v.dueSchedulers},
		{wire.ScriptFireSchedulers.Name, 7, v.fireSchedulers},
		{"racing fire", 2, v.raceFire},
		{wire.ScriptConfigurePolicy.Name, 4, v.policyCycle},
		{"sleep", 1, func() { v.note("sleep 2ms"); time.Sleep(2 * time.Millisecond) }},
	}
	total := 0
	for _, o := range table {
		total += o.weight
	}
	start := time.Now()
	for v.step = 1; v.step <= ops; v.step++ {
		n := v.rnd.IntN(total)
		for _, o := range table {
			if n < o.weight {
				o.run()
				break
			}
			n -= o.weight
		}
		v.check()
	}
	elapsed := time.Since(start)

	if got := hgetall(t, c, mustRow(t, bystander, by)); got[wire.FieldState] != string(emq.StatePending) || got[wire.FieldPayload] != "untouched" {
		t.Errorf("the bystander queue's job changed: %v", got)
	}
	names := make([]string, 0, len(v.stats))
	for name := range v.stats {
		names = append(names, name)
	}
	sort.Strings(names)
	var summary strings.Builder
	for _, name := range names {
		fmt.Fprintf(&summary, " %s %d/%d", name, v.stats[name][0], v.stats[name][1])
	}
	t.Logf("seed %d: %d operations in %v (succeeded/refused or empty):%s", seed, ops, elapsed.Round(time.Millisecond), summary.String())
	// The run must have exercised both sides of every operation.
	if ops >= 3000 {
		for _, sc := range wire.Scripts() {
			if sc == wire.ScriptFence || sc == wire.ScriptLock || sc == wire.ScriptUnlock {
				continue // not queue operations
			}
			if slices.Contains(twinned, sc) {
				continue // the SDK runs its 2.7 twin, which the run exercises instead
			}
			name := sc.Name
			if s := v.stats[name]; s == nil || s[0] == 0 || s[1] == 0 {
				t.Errorf("%s was not exercised both ways: %v (seed %d)", name, s, seed)
			}
		}
		if s := v.stats["reap buried"]; s == nil || s[0] == 0 {
			t.Errorf("reap never buried a job out of attempts (seed %d)", seed)
		}
	}
}

func mustRow(t *testing.T, q *emq.Queue, id emq.ID) string {
	t.Helper()
	r, err := q.Keys().Row(id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// note records an operation for the failure report.
func (v *invariant) note(format string, args ...any) {
	v.trail = append(v.trail, fmt.Sprintf("%4d ", v.step)+fmt.Sprintf(format, args...))
	if len(v.trail) > 25 {
		v.trail = v.trail[1:]
	}
}

func (v *invariant) count(name string, ok bool) {
	s := v.stats[name]
	if s == nil {
		s = &[2]int{}
		v.stats[name] = s
	}
	if ok {
		s[0]++
	} else {
		s[1]++
	}
}

func (v *invariant) fail(format string, args ...any) {
	v.t.Helper()
	v.t.Fatalf("step %d (seed %d): %s\nlast operations:\n%s", v.step, v.seed, fmt.Sprintf(format, args...), strings.Join(v.trail, "\n"))
}

func (v *invariant) now() int64 { v.t.Helper(); return wireNow(v.t, v.ctx, v.c.Redis()) }

// pick returns a random id of the pool.
func (v *invariant) pick() emq.ID { return v.pool[v.rnd.IntN(len(v.pool))] }

// pickIn returns a random id whose model state is st, or a random pool id
// when there is none.
func (v *invariant) pickIn(st emq.State) emq.ID {
	var ids []emq.ID
	for id, j := range v.model.jobs {
		if j.state == st {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return v.pick()
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].String() < ids[j].String() })
	return ids[v.rnd.IntN(len(ids))]
}

// target picks the id of a transition on an active job: mostly an active
// one, sometimes any id of the pool, sometimes a completed one.
func (v *invariant) target() emq.ID {
	switch r := v.rnd.IntN(10); {
	case r < 7:
		return v.pickIn(emq.StateActive)
	case r < 9 || len(v.model.retired) == 0:
		return v.pick()
	default:
		ids := make([]emq.ID, 0, len(v.model.retired))
		for id := range v.model.retired {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i].String() < ids[j].String() })
		return ids[v.rnd.IntN(len(ids))]
	}
}

// token picks the token presented for id: mostly the row's current one,
// otherwise a stale one (an older claim's, or off by one).
func (v *invariant) token(id emq.ID) int64 {
	j := v.model.jobs[id]
	if j != nil && v.rnd.IntN(10) < 7 {
		return j.attempts
	}
	if old := v.model.tokens[id]; len(old) > 0 && v.rnd.IntN(2) == 0 {
		return old[v.rnd.IntN(len(old))]
	}
	if j != nil {
		return j.attempts + 1 - 2*int64(v.rnd.IntN(2))
	}
	return int64(v.rnd.IntN(4))
}

// current reports whether a transition on id with token must succeed.
func (v *invariant) current(id emq.ID, token int64) bool {
	j := v.model.jobs[id]
	return j != nil && j.state == emq.StateActive && j.attempts == token
}

// wantStale checks a refused transition.
func (v *invariant) wantStale(err error, script string) {
	v.t.Helper()
	var ce *emq.ClassError
	if !errors.Is(err, emq.ErrStale) || !errors.As(err, &ce) || ce.Script != script || ce.Message == "" {
		v.fail("%s: err = %v; want EMQSTALE from %s", script, err, script)
	}
}

func (v *invariant) within(what string, got, lo, hi int64) {
	v.t.Helper()
	if got < lo || got > hi {
		v.fail("%s = %d; want within [%d, %d]", what, got, lo, hi)
	}
}

func (v *invariant) payload() string { return "p" + strconv.Itoa(v.step) }

func (v *invariant) enqueue() {
	id, p := v.pick(), v.payload()
	v.note("enqueue %v", id)
	ok, err := v.q.Enqueue(v.ctx, id, []byte(p))
	_, exists := v.model.jobs[id]
	if err != nil || ok == exists {
		v.fail("Enqueue(%v) = %v, %v; the row exists: %v", id, ok, err, exists)
	}
	v.count(wire.ScriptEnqueue.Name, ok)
	if ok {
		v.model.jobs[id] = &invJob{state: emq.StatePending, payload: p}
	}
}

func (v *invariant) enqueueAt() {
	id, p := v.pick(), v.payload()
	var off time.Duration
	switch v.rnd.IntN(3) {
	case 0:
		off = -time.Duration(1+v.rnd.IntN(5000)) * time.Millisecond // past
	case 1:
		off = time.Duration(v.rnd.IntN(4)) * time.Millisecond // now, or near
	default:
		off = time.Duration(20+v.rnd.IntN(300)) * time.Millisecond // future
	}
	at := time.UnixMilli(v.now()).Add(off)
	v.note("enqueue_at %v %+v", id, off)
	ok, err := v.q.EnqueueAt(v.ctx, id, []byte(p), at)
	_, exists := v.model.jobs[id]
	if err != nil || ok == exists {
		v.fail("EnqueueAt(%v) = %v, %v; the row exists: %v", id, ok, err, exists)
	}
	v.count(wire.ScriptEnqueueAt.Name, ok)
	if ok {
		v.model.jobs[id] = &invJob{state: emq.StateScheduled, payload: p, score: at.UnixMilli()}
	}
}

func (v *invariant) enqueueKind() {
	k := emq.KindORD
	if v.rnd.IntN(2) == 0 {
		k = emq.KindARC
	}
	id := mint(v.t, v.c, k)
	var ce *emq.ClassError
	if v.rnd.IntN(2) == 0 {
		// push refuses it the same way, and rings nothing (the model's
		// doorbell is unchanged, and check holds the keyspace to it).
		v.note("push %v", id)
		n, err := v.pushCall(id, v.payload()).Exec(v.ctx, v.c.Redis())
		if n != 0 || !errors.Is(err, emq.ErrKind) || !errors.As(err, &ce) || ce.Script != wire.ScriptPush.Name {
			v.fail("push(%v) = %d, %v; want EMQKIND", id, n, err)
		}
		v.count("foreign kind", false)
		return
	}
	v.note("enqueue %v", id)
	ok, err := v.q.Enqueue(v.ctx, id, []byte(v.payload()))
	if ok || !errors.Is(err, emq.ErrKind) || !errors.As(err, &ce) || ce.Script != wire.ScriptEnqueue.Name {
		v.fail("Enqueue(%v) = %v, %v; want EMQKIND", id, ok, err)
	}
	v.count("foreign kind", false)
}

func (v *invariant) lease() time.Duration {
	if v.rnd.IntN(2) == 0 {
		return time.Millisecond
	}
	return time.Hour
}

func (v *invariant) claim() {
	lease := v.lease()
	v.note("claim %v", lease)
	var head emq.ID
	for id, j := range v.model.jobs {
		if j.state == emq.StatePending && (head.IsZero() || id.String() < head.String()) {
			head = id
		}
	}
	t0 := v.now()
	job, ok, err := v.q.Claim(v.ctx, lease)
	t1 := v.now()
	if err != nil {
		v.fail("Claim: %v", err)
	}
	v.count(wire.ScriptClaim.Name, ok)
	if head.IsZero() {
		if ok {
			v.fail("Claim = %v; the model has nothing pending", job.ID)
		}
		return
	}
	j := v.model.jobs[head]
	if !ok || job.ID != head || job.Token != j.attempts+1 || string(job.Payload) != j.payload {
		v.fail("Claim = %+v, %v; want %v token %d payload %q", job, ok, head, j.attempts+1, j.payload)
	}
	v.within("claim deadline", job.Deadline.UnixMilli(), t0+lease.Milliseconds(), t1+lease.Milliseconds())
	j.state, j.attempts, j.score = emq.StateActive, job.Token, job.Deadline.UnixMilli()
	v.model.tokens[head] = append(v.model.tokens[head], job.Token)
}

func (v *invariant) extend() {
	id := v.target()
	tok, lease := v.token(id), v.lease()
	v.note("extend %v token %d %v", id, tok, lease)
	t0 := v.now()
	until, err := v.q.Extend(v.ctx, id, tok, lease)
	t1 := v.now()
	v.count(wire.ScriptExtendPolicy.Name, err == nil)
	if !v.current(id, tok) {
		v.wantStale(err, wire.ScriptExtendPolicy.Name)
		return
	}
	if err != nil {
		v.fail("Extend(%v, %d) with the current token: %v", id, tok, err)
	}
	v.within("extend deadline", until.UnixMilli(), t0+lease.Milliseconds(), t1+lease.Milliseconds())
	v.model.jobs[id].score = until.UnixMilli()
}

func (v *invariant) complete() {
	id := v.target()
	tok := v.token(id)
	v.note("complete %v token %d", id, tok)
	err := v.q.Complete(v.ctx, id, tok)
	v.count(wire.ScriptComplete.Name, err == nil)
	if !v.current(id, tok) {
		v.wantStale(err, wire.ScriptComplete.Name)
		return
	}
	if err != nil {
		v.fail("Complete(%v, %d) with the current token: %v", id, tok, err)
	}
	v.retire(id)
}

// retire takes a completed id out of the model.
func (v *invariant) retire(id emq.ID) {
	delete(v.model.jobs, id)
	v.model.retired[id] = true
	// Ids are never reused: a fresh one takes the completed one's place.
	for i, p := range v.pool {
		if p == id {
			v.pool[i] = mint(v.t, v.c, emq.WorkKind)
		}
	}
}

func (v *invariant) retry() {
	id := v.target()
	tok := v.token(id)
	var delay time.Duration
	switch v.rnd.IntN(3) {
	case 0: // due at once
	case 1:
		delay = time.Duration(1+v.rnd.IntN(3)) * time.Millisecond
	default:
		delay = time.Duration(20+v.rnd.IntN(300)) * time.Millisecond
	}
	v.note("retry %v token %d %v", id, tok, delay)
	t0 := v.now()
	at, err := v.q.Retry(v.ctx, id, tok, delay)
	t1 := v.now()
	v.count(wire.ScriptRetryPolicy.Name, err == nil)
	if !v.current(id, tok) {
		v.wantStale(err, wire.ScriptRetryPolicy.Name)
		return
	}
	if err != nil {
		v.fail("Retry(%v, %d) with the current token: %v", id, tok, err)
	}
	v.within("retry run-at", at.UnixMilli(), t0+delay.Milliseconds(), t1+delay.Milliseconds())
	j := v.model.jobs[id]
	j.state, j.score = emq.StateScheduled, at.UnixMilli()
}

func (v *invariant) bury() {
	id := v.target()
	tok := v.token(id)
	v.note("bury %v token %d", id, tok)
	err := v.q.Bury(v.ctx, id, tok)
	v.count(wire.ScriptBuryPolicy.Name, err == nil)
	if !v.current(id, tok) {
		v.wantStale(err, wire.ScriptBuryPolicy.Name)
		return
	}
	if err != nil {
		v.fail("Bury(%v, %d) with the current token: %v", id, tok, err)
	}
	j := v.model.jobs[id]
	j.state, j.score = emq.StateDead, 0
}

func (v *invariant) revive() {
	id := v.pickIn(emq.StateDead)
	if v.rnd.IntN(4) == 0 {
		id = v.pick()
	}
	v.note("revive %v", id)
	// As a 2.1 client revives (Queue.Revive runs revive_recorded since
	// 2.4.0, reviveRecorded below): revive, then ring when it revived.
	n, err := (&wire.ReviveCall{Dead: v.k.Dead, Pending: v.k.Pending, Row: mustRow(v.t, v.q, id), ID: id}).Exec(v.ctx, v.c.Redis())
	ok := n == wire.ReviveRevived
	if ok && err == nil {
		_, err = (&wire.RingCall{Wake: v.k.Wake}).Exec(v.ctx, v.c.Redis())
	}
	j := v.model.jobs[id]
	want := j != nil && j.state == emq.StateDead
	if err != nil || ok != want {
		v.fail("Revive(%v) = %v, %v; want %v", id, ok, err, want)
	}
	v.count(wire.ScriptRevive.Name, ok)
	if ok {
		j.state, j.score = emq.StatePending, 0
		v.model.wake = true // Queue.Revive rings after a revive
	}
}

// purge deletes a dead job for good; anything else is left alone.
func (v *invariant) purge() {
	id := v.pickIn(emq.StateDead)
	if v.rnd.IntN(4) == 0 {
		id = v.target()
	}
	v.note("purge %v", id)
	n, err := (&wire.PurgeCall{Dead: v.k.Dead, Row: mustRow(v.t, v.q, id), ID: id}).Exec(v.ctx, v.c.Redis())
	j := v.model.jobs[id]
	want := wire.PurgeNotDead
	if j != nil && j.state == emq.StateDead {
		want = wire.PurgePurged
	}
	if err != nil || n != want {
		v.fail("purge(%v) = %d, %v; want %d", id, n, err, want)
	}
	v.count(wire.ScriptPurge.Name, n == wire.PurgePurged)
	if n == wire.PurgePurged {
		v.retire(id)
	}
}

func (v *invariant) pushCall(id emq.ID, payload string) *wire.PushCall {
	return &wire.PushCall{Row: mustRow(v.t, v.q, id), Pending: v.k.Pending, Wake: v.k.Wake, ID: id, Payload: payload}
}

// push admits like enqueue and rings the doorbell when it admits a job to a
// silent doorbell; a duplicate rings nothing.
func (v *invariant) push() {
	id, p := v.pick(), v.payload()
	v.note("push %v", id)
	n, err := v.pushCall(id, p).Exec(v.ctx, v.c.Redis())
	_, exists := v.model.jobs[id]
	want := wire.PushEnqueued
	if exists {
		want = wire.PushDuplicate
	}
	if err != nil || n != want {
		v.fail("push(%v) = %d, %v; want %d (the row exists: %v)", id, n, err, want, exists)
	}
	v.count(wire.ScriptPush.Name, n == wire.PushEnqueued)
	if n == wire.PushEnqueued {
		v.model.jobs[id] = &invJob{state: emq.StatePending, payload: p}
		v.model.wake = true
	}
}

// batch returns a count for the batch scripts: mostly a few, sometimes
// more than the pool holds (all there is), sometimes the least allowed.
func (v *invariant) batch(least int) int {
	switch r := v.rnd.IntN(10); {
	case r < 8:
		return least + v.rnd.IntN(5)
	case r < 9:
		return 2 * invariantPool
	default:
		return least
	}
}

// pendingOrder is the model's pending ids in claim order (lex-min first).
func (v *invariant) pendingOrder() []emq.ID {
	var ids []emq.ID
	for id, j := range v.model.jobs {
		if j.state == emq.StatePending {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a].String() < ids[b].String() })
	return ids
}

// leased checks a batch reply against the model — the count oldest pending
// jobs, in order, each with its next token and payload, one deadline inside
// the call's window — and moves them to active in the model. A batch that
// leased something and left jobs pending rings the doorbell.
func (v *invariant) leased(what string, got []wire.ClaimManyReply, count int, lease time.Duration, t0, t1 int64) {
	v.t.Helper()
	order := v.pendingOrder()
	want := order[:min(count, len(order))]
	if len(got) != len(want) {
		v.fail("%s count %d leased %d jobs %+v; want %v", what, count, len(got), got, want)
	}
	for i, r := range got {
		j := v.model.jobs[want[i]]
		if r.ID != want[i] || r.Token != j.attempts+1 || r.Payload != j.payload {
			v.fail("%s record %d = %+v; want %v token %d payload %q", what, i, r, want[i], j.attempts+1, j.payload)
		}
		if r.DeadlineMS != got[0].DeadlineMS {
			v.fail("%s record %d deadline %d; the batch's is %d", what, i, r.DeadlineMS, got[0].DeadlineMS)
		}
		v.within(what+" deadline", r.DeadlineMS, t0+lease.Milliseconds(), t1+lease.Milliseconds())
		j.state, j.attempts, j.score = emq.StateActive, r.Token, r.DeadlineMS
		v.model.tokens[r.ID] = append(v.model.tokens[r.ID], r.Token)
	}
	if len(got) > 0 && len(order) > len(got) {
		v.model.wake = true
	}
}

func (v *invariant) claimMany() {
	count, lease := v.batch(1), v.lease()
	v.note("claim_many %d %v", count, lease)
	call := wire.ClaimManyCall{Pending: v.k.Pending, Active: v.k.Active, Wake: v.k.Wake, Prefix: v.k.RowPrefix(), LeaseMS: lease.Milliseconds(), Count: int64(count)}
	t0 := v.now()
	got, err := call.Exec(v.ctx, v.c.Redis())
	t1 := v.now()
	if err != nil || got == nil {
		v.fail("claim_many: %#v, %v; want a (possibly empty) slice", got, err)
	}
	v.count(wire.ScriptClaimMany.Name, len(got) > 0)
	v.leased(wire.ScriptClaimMany.Name, got, count, lease, t0, t1)
}

func (v *invariant) completeClaim() {
	id := v.target()
	tok, count, lease := v.token(id), v.batch(0), v.lease()
	v.note("complete_claim %v token %d count %d %v", id, tok, count, lease)
	call := wire.CompleteClaimCall{Row: mustRow(v.t, v.q, id), Active: v.k.Active, Pending: v.k.Pending, Wake: v.k.Wake, ID: id, Token: tok, Prefix: v.k.RowPrefix(), LeaseMS: lease.Milliseconds(), Count: int64(count)}
	t0 := v.now()
	got, err := call.Exec(v.ctx, v.c.Redis())
	t1 := v.now()
	v.count(wire.ScriptCompleteClaim.Name, err == nil)
	if !v.current(id, tok) {
		// Refused: nothing completed, nothing leased, nothing rung — the
		// unchanged model says so, and check holds the keyspace to it.
		v.wantStale(err, wire.ScriptCompleteClaim.Name)
		if got != nil {
			v.fail("the refused complete_claim leased %+v", got)
		}
		return
	}
	if err != nil || got == nil {
		v.fail("complete_claim(%v, %d) with the current token: %#v, %v", id, tok, got, err)
	}
	v.retire(id)
	recs := make([]wire.ClaimManyReply, len(got))
	for i, r := range got {
		recs[i] = wire.ClaimManyReply(r)
	}
	v.leased(wire.ScriptCompleteClaim.Name, recs, count, lease, t0, t1)
}

// ring answers rung on a silent doorbell and already rung otherwise.
func (v *invariant) ring() {
	v.note("ring")
	n, err := (&wire.RingCall{Wake: v.k.Wake}).Exec(v.ctx, v.c.Redis())
	want := wire.RingAlreadyRung
	if !v.model.wake {
		want = wire.RingRung
	}
	if err != nil || n != want {
		v.fail("ring = %d, %v; want %d (rung before: %v)", n, err, want, v.model.wake)
	}
	v.count(wire.ScriptRing.Name, n == wire.RingRung)
	v.model.wake = true
}

// answer takes the doorbell's marker as an idle worker does (LPOP standing
// in for BLPOP), so that it can be rung again.
func (v *invariant) answer() {
	v.note("answer the doorbell")
	rc := v.c.Redis()
	got, err := rc.Do(v.ctx, rc.B().Lpop().Key(v.k.Wake).Build()).ToString()
	switch {
	case rueidis.IsRedisNil(err):
		if v.model.wake {
			v.fail("LPOP of the doorbell found nothing; the model says it was rung")
		}
	case err != nil:
		v.fail("LPOP of the doorbell: %v", err)
	case !v.model.wake:
		v.fail("LPOP of the doorbell found %q; the model says it was silent", got)
	case got != wakeMarker:
		v.fail("LPOP of the doorbell found %q; want the marker %q", got, wakeMarker)
	}
	v.count("answer the doorbell", v.model.wake)
	v.model.wake = false
}

// due returns the ids of state st in the order a script scanning its set
// BYSCORE meets them, and how many are due by t0 and by t1.
func (v *invariant) due(st emq.State, t0, t1 int64) (order []emq.ID, by0, by1 int) {
	for id, j := range v.model.jobs {
		if j.state == st {
			order = append(order, id)
		}
	}
	sort.Slice(order, func(a, b int) bool {
		ja, jb := v.model.jobs[order[a]], v.model.jobs[order[b]]
		if ja.score != jb.score {
			return ja.score < jb.score
		}
		return order[a].String() < order[b].String()
	})
	for _, id := range order {
		s := v.model.jobs[id].score
		if s <= t0 {
			by0++
		}
		if s <= t1 {
			by1++
		}
	}
	return order, by0, by1
}

// moved checks a promote or reap reply n against the due window: n jobs,
// exactly the first n in set order, as many as a script clock between t0
// and t1 could have found due, capped at limit.
func (v *invariant) moved(what string, n, limit int, order []emq.ID, by0, by1 int) []emq.ID {
	v.t.Helper()
	if lo, hi := min(limit, by0), min(limit, by1); n < lo || n > hi {
		v.fail("%s moved %d; want %d..%d (limit %d, due %d..%d of %d)", what, n, lo, hi, limit, by0, by1, len(order))
	}
	return order[:n]
}

func (v *invariant) promote() {
	limit := 1 + v.rnd.IntN(8)
	v.note("promote %d", limit)
	t0 := v.now()
	n, err := v.q.Promote(v.ctx, limit)
	t1 := v.now()
	if err != nil {
		v.fail("Promote: %v", err)
	}
	v.count(wire.ScriptPromote.Name, n > 0)
	order, by0, by1 := v.due(emq.StateScheduled, t0, t1)
	for _, id := range v.moved(wire.ScriptPromote.Name, n, limit, order, by0, by1) {
		j := v.model.jobs[id]
		j.state, j.score = emq.StatePending, 0
	}
}

func (v *invariant) reap() {
	limit, maxAttempts := 1+v.rnd.IntN(8), 0
	if v.rnd.IntN(2) == 0 {
		maxAttempts = 1 + v.rnd.IntN(4)
	}
	v.note("reap %d max %d", limit, maxAttempts)
	t0 := v.now()
	n, err := v.q.Reap(v.ctx, limit, maxAttempts)
	t1 := v.now()
	if err != nil {
		v.fail("Reap: %v", err)
	}
	v.count(wire.ScriptReap.Name, n > 0)
	order, by0, by1 := v.due(emq.StateActive, t0, t1)
	for _, id := range v.moved(wire.ScriptReap.Name, n, limit, order, by0, by1) {
		j := v.model.jobs[id]
		if maxAttempts > 0 && j.attempts >= int64(maxAttempts) {
			j.state = emq.StateDead
			v.count("reap buried", true)
		} else {
			j.state = emq.StatePending
		}
		j.score = 0
	}
}

// other reports whether key is none of the queue's business: a reserve
// member, or a key of the bystander queue.
func (v *invariant) other(key string) bool {
	switch key {
	case wire.KeyVersion, wire.KeyBundle, wire.KeyLocks:
		return true
	}
	for _, s := range wire.Sets() {
		if key == v.by.Set(s) {
			return true
		}
	}
	return key == v.by.Wake || strings.HasPrefix(key, v.by.RowPrefix())
}

// scan reads the queue's keyspace: every key of the server but the reserve
// and the bystander's, its type, and the row or set it holds.
func (v *invariant) scan() invSnap {
	v.t.Helper()
	rc := v.c.Redis()
	keys, err := rc.Do(v.ctx, rc.B().Keys().Pattern("*").Build()).AsStrSlice()
	if err != nil {
		v.fail("KEYS: %v", err)
	}
	snap := invSnap{rows: map[emq.ID]map[string]string{}, sets: map[emq.Set]map[emq.ID]int64{}, failures: map[emq.ID]bool{},
		options: map[emq.ID]bool{}, progress: map[emq.ID]string{}, results: map[emq.ID]bool{}, resultTimes: map[emq.ID]int64{},
		schedulers: map[string]bool{}, schedNext: map[string]int64{}}
	setOf := map[string]emq.Set{}
	for _, s := range wire.Sets() {
		setOf[v.k.Set(s)] = s
	}
	var cmds rueidis.Commands
	var mine []string
	for _, key := range keys {
		if v.other(key) {
			continue
		}
		mine = append(mine, key)
		cmds = append(cmds, rc.B().Type().Key(key).Build())
		if cmd, ok := v.scan26Cmd(key); ok {
			cmds = append(cmds, cmd)
		} else if _, ok := setOf[key]; ok {
			cmds = append(cmds, rc.B().Zrange().Key(key).Min("0").Max("-1").Withscores().Build())
		} else if key == v.k.Wake {
			cmds = append(cmds, rc.B().Lrange().Key(key).Start(0).Stop(-1).Build())
		} else if key == v.k.Failures || key == v.k.Options || key == v.k.Results {
			cmds = append(cmds, rc.B().Hkeys().Key(key).Build())
		} else if key == v.k.ResultTimes {
			cmds = append(cmds, rc.B().Zrange().Key(key).Min("0").Max("-1").Withscores().Build())
		} else if key == v.k.Events {
			cmds = append(cmds, rc.B().Xlen().Key(key).Build())
		} else if key == v.k.Counters {
			// The totals are the folded ones plus the buckets left, as the
			// counters script reads them (minutes 0: the totals alone).
			cmds = append(cmds, rc.B().Eval().Script(wire.ScriptCounters.Source).Numkeys(1).Key(key).Arg("0").Build())
		} else {
			cmds = append(cmds, rc.B().Hgetall().Key(key).Build())
		}
	}
	res := rc.DoMulti(v.ctx, cmds...)
	for i, key := range mine {
		typ, err := res[2*i].ToString()
		if err != nil {
			v.fail("TYPE %s: %v", key, err)
		}
		if s, ok := setOf[key]; ok {
			if typ != "zset" {
				v.fail("set %s is a %s", key, typ)
			}
			zs, err := res[2*i+1].AsZScores()
			if err != nil {
				v.fail("ZRANGE %s: %v", key, err)
			}
			members := map[emq.ID]int64{}
			for _, z := range zs {
				id, err := emq.ParseID(z.Member)
				if err != nil {
					v.fail("set %s holds %q, not an id: %v", s, z.Member, err)
				}
				if z.Score != float64(int64(z.Score)) {
					v.fail("set %s scores %v at %f, not a whole millisecond", s, id, z.Score)
				}
				members[id] = int64(z.Score)
			}
			snap.sets[s] = members
			continue
		}
		if key == v.k.Wake {
			if typ != "list" {
				v.fail("the doorbell %s is a %s", key, typ)
			}
			snap.wake, err = res[2*i+1].AsStrSlice()
			if err != nil {
				v.fail("LRANGE %s: %v", key, err)
			}
			continue
		}
		if key == v.k.Dedup {
			if typ != "hash" {
				v.fail("the dedup hash %s is a %s", key, typ)
			}
			if snap.dedup, err = res[2*i+1].AsStrMap(); err != nil {
				v.fail("HGETALL %s: %v", key, err)
			}
			continue
		}
		if v.scan24(&snap, key, typ, res[2*i+1]) || v.scan26(&snap, key, typ, res[2*i+1]) {
			continue
		}
		if key == v.k.Failures {
			if typ != "hash" {
				v.fail("the failure records %s are a %s", key, typ)
			}
			fields, err := res[2*i+1].AsStrSlice()
			if err != nil {
				v.fail("HKEYS %s: %v", key, err)
			}
			for _, f := range fields {
				id, err := emq.ParseID(f)
				if err != nil {
					v.fail("the failure records hold %q, not an id: %v", f, err)
				}
				snap.failures[id] = true
			}
			continue
		}
		idText, ok := strings.CutPrefix(key, v.k.RowPrefix())
		if !ok {
			v.fail("unknown key %q: neither a row nor a set of the queue", key)
		}
		id, err := emq.ParseID(idText)
		if err != nil {
			v.fail("row key %q does not end in an id: %v", key, err)
		}
		if typ != "hash" {
			v.fail("row %s is a %s", key, typ)
		}
		row, err := res[2*i+1].AsStrMap()
		if err != nil {
			v.fail("HGETALL %s: %v", key, err)
		}
		snap.rows[id] = row
	}
	return snap
}

// invariantHolds asserts the spec's invariant on a snapshot alone.
func (v *invariant) invariantHolds(s invSnap) {
	v.t.Helper()
	for id, row := range s.rows {
		if len(row) != len(wire.RowFields()) {
			v.fail("row %v has %d fields, want exactly %v: %v", id, len(row), wire.RowFields(), row)
		}
		for _, f := range wire.RowFields() {
			if _, ok := row[f]; !ok {
				v.fail("row %v lacks %s: %v", id, f, row)
			}
		}
		st, ok := wire.ParseState(row[wire.FieldState])
		if !ok {
			v.fail("row %v has state %q", id, row[wire.FieldState])
		}
		if a, err := strconv.ParseInt(row[wire.FieldToken], 10, 64); err != nil || a < 0 || strconv.FormatInt(a, 10) != row[wire.FieldToken] {
			v.fail("row %v has %s %q, not a decimal count", id, wire.FieldToken, row[wire.FieldToken])
		}
		for _, set := range wire.Sets() {
			_, in := s.sets[set][id]
			if want := set == st.Set(); in != want {
				v.fail("row %v is %s but membership in %s is %v", id, st, set, in)
			}
		}
	}
	for set, members := range s.sets {
		for id, score := range members {
			if _, ok := s.rows[id]; !ok {
				v.fail("%s holds %v without a row", set, id)
			}
			if set.Lex() && score != 0 {
				v.fail("%s scores %v at %d, want 0", set, id, score)
			}
		}
	}
	// The doorbell: at most one marker, never any other value.
	if len(s.wake) > 1 {
		v.fail("the doorbell holds %d elements %q; want at most one", len(s.wake), s.wake)
	}
	for _, m := range s.wake {
		if m != wakeMarker {
			v.fail("the doorbell holds %q; want only the marker %q", m, wakeMarker)
		}
	}
}

// check scans the keyspace after a step and holds it against the invariant,
// the attempts floor and the model.
func (v *invariant) check() {
	v.t.Helper()
	s := v.scan()
	v.invariantHolds(s)
	for id, row := range s.rows {
		a, _ := strconv.ParseInt(row[wire.FieldToken], 10, 64)
		if a < v.floor[id] {
			v.fail("the attempts of %v went down from %d to %d", id, v.floor[id], a)
		}
		v.floor[id] = a
		if v.model.retired[id] {
			v.fail("completed %v came back: %v", id, row)
		}
	}
	if len(s.rows) != len(v.model.jobs) {
		v.fail("%d rows; the model has %d", len(s.rows), len(v.model.jobs))
	}
	for id := range s.failures {
		if len(v.model.records[id]) == 0 {
			v.fail("the failure records hold %v; the model has none", id)
		}
	}
	for id := range v.model.records {
		if !s.failures[id] {
			v.fail("the failure records lack %v; the model has %d attempts", id, len(v.model.records[id]))
		}
	}
	v.check24(s)
	v.checkDedup(s.dedup)
	v.check26(s)
	if rung := len(s.wake) == 1; rung != v.model.wake {
		v.fail("the doorbell holds %q; the model says rung: %v", s.wake, v.model.wake)
	}
	for id, j := range v.model.jobs {
		row, ok := s.rows[id]
		want := map[string]string{wire.FieldState: string(j.state), wire.FieldToken: strconv.FormatInt(j.attempts, 10), wire.FieldPayload: j.payload}
		if !ok || !maps.Equal(row, want) {
			v.fail("row %v = %v; the model says %v", id, row, want)
		}
		if got, in := s.sets[j.state.Set()][id]; !in || got != j.score {
			v.fail("%v scores %d in %s (in %v); the model says %d", id, got, j.state.Set(), in, j.score)
		}
	}
}

// The 2.2.0 calls, through the SDK's Queue methods.

// someIDs returns a few ids for a call that takes ids: mostly ids of state
// st (the head a caller would read, in model order, then shuffled a
// little), some of any state, sometimes a repeat, sometimes none.
func (v *invariant) someIDs(st emq.State) []emq.ID {
	var ids []emq.ID
	for n := v.rnd.IntN(5); len(ids) < n; {
		switch r := v.rnd.IntN(10); {
		case r < 6:
			ids = append(ids, v.pickIn(st))
		case r < 8 || len(ids) == 0:
			ids = append(ids, v.pick())
		default:
			ids = append(ids, ids[v.rnd.IntN(len(ids))])
		}
	}
	return ids
}

// pushMany admits the jobs in order like push, a repeat inside the call a
// duplicate, and rings the doorbell once when any was admitted; a foreign
// kind anywhere refuses the call and nothing is written.
func (v *invariant) pushMany() {
	var jobs []emq.NewJob
	for n := v.rnd.IntN(5); len(jobs) < n; {
		jobs = append(jobs, emq.NewJob{ID: v.pick(), Payload: []byte(v.payload() + "." + strconv.Itoa(len(jobs)))})
	}
	foreign := v.rnd.IntN(8) == 0
	if foreign {
		jobs = append(jobs, emq.NewJob{ID: mint(v.t, v.c, emq.KindORD), Payload: []byte("order")})
		jobs[0], jobs[len(jobs)-1] = jobs[len(jobs)-1], jobs[0]
	}
	v.note("push_many %d jobs (foreign %v)", len(jobs), foreign)
	got, err := v.q.PushMany(v.ctx, jobs)
	if foreign {
		var ce *emq.ClassError
		if got != nil || !errors.Is(err, emq.ErrKind) || !errors.As(err, &ce) || ce.Script != wire.ScriptPushMany.Name {
			v.fail("PushMany with a foreign kind = %v, %v; want EMQKIND from %s", got, err, wire.ScriptPushMany.Name)
		}
		v.count(wire.ScriptPushMany.Name, false)
		return
	}
	if err != nil || len(got) != len(jobs) {
		v.fail("PushMany(%d jobs) = %v, %v", len(jobs), got, err)
	}
	added := 0
	for i, j := range jobs {
		_, exists := v.model.jobs[j.ID]
		if got[i] == exists {
			v.fail("PushMany job %d (%v) enqueued %v; the row exists: %v", i, j.ID, got[i], exists)
		}
		if got[i] {
			v.model.jobs[j.ID] = &invJob{state: emq.StatePending, payload: string(j.Payload)}
			added++
		}
	}
	if added > 0 {
		v.model.wake = true
	}
	v.count(wire.ScriptPushMany.Name, added > 0)
}

// leasedIDs checks a claim_ids-shaped reply against the model: exactly the
// ids asked for that the model has pending, in the order asked (a repeat
// once), each with its next token and payload and the call's one deadline
// inside its window; it moves them to active, and a call that leased some
// and left jobs pending rings the doorbell.
func (v *invariant) leasedIDs(what string, got []emq.Job, ids []emq.ID, lease time.Duration, t0, t1 int64) {
	v.t.Helper()
	var want []emq.ID
	seen := map[emq.ID]bool{}
	for _, id := range ids {
		if j := v.model.jobs[id]; j != nil && j.state == emq.StatePending && !seen[id] {
			want = append(want, id)
			seen[id] = true
		}
	}
	if len(got) != len(want) {
		v.fail("%s of %v leased %d jobs %+v; want %v", what, ids, len(got), got, want)
	}
	for i, r := range got {
		j := v.model.jobs[want[i]]
		if r.ID != want[i] || r.Token != j.attempts+1 || string(r.Payload) != j.payload {
			v.fail("%s record %d = %+v; want %v token %d payload %q", what, i, r, want[i], j.attempts+1, j.payload)
		}
		if !r.Deadline.Equal(got[0].Deadline) {
			v.fail("%s record %d deadline %v; the call's is %v", what, i, r.Deadline, got[0].Deadline)
		}
		v.within(what+" deadline", r.Deadline.UnixMilli(), t0+lease.Milliseconds(), t1+lease.Milliseconds())
		j.state, j.attempts, j.score = emq.StateActive, r.Token, r.Deadline.UnixMilli()
		v.model.tokens[r.ID] = append(v.model.tokens[r.ID], r.Token)
	}
	if len(got) > 0 && len(v.pendingOrder()) > 0 {
		v.model.wake = true
	}
}

func (v *invariant) claimIDs() {
	ids, lease := v.someIDs(emq.StatePending), v.lease()
	v.note("claim_ids %v %v", ids, lease)
	t0 := v.now()
	got, err := v.q.ClaimIDs(v.ctx, lease, ids)
	t1 := v.now()
	if err != nil {
		v.fail("ClaimIDs(%v): %v", ids, err)
	}
	v.count(wire.ScriptClaimRateIDs.Name, len(got) > 0)
	v.leasedIDs(wire.ScriptClaimRateIDs.Name, got, ids, lease, t0, t1)
}

func (v *invariant) completeClaimIDs() {
	id := v.target()
	tok, ids, lease := v.token(id), v.someIDs(emq.StatePending), v.lease()
	v.note("complete_claim_ids %v token %d %v %v", id, tok, ids, lease)
	t0 := v.now()
	got, err := v.q.CompleteClaimIDs(v.ctx, id, tok, lease, ids)
	t1 := v.now()
	v.count(wire.ScriptCompleteClaimIDs.Name, err == nil)
	if !v.current(id, tok) {
		v.wantStale(err, wire.ScriptCompleteClaimIDs.Name)
		if got != nil {
			v.fail("the refused complete_claim_ids leased %+v", got)
		}
		return
	}
	if err != nil {
		v.fail("CompleteClaimIDs(%v, %d) with the current token: %v", id, tok, err)
	}
	v.retire(id)
	v.leasedIDs(wire.ScriptCompleteClaimIDs.Name, got, ids, lease, t0, t1)
}

// movedIDs checks a promote_ids or reap_ids reply n: of the ids asked for
// (a repeat once) that the model has in state st, those due by t0 moved,
// those not due by t1 did not, and those due in between are read back
// from their rows; the count must match. It returns the ids that moved.
func (v *invariant) movedIDs(what string, n int, ids []emq.ID, st emq.State, t0, t1 int64) []emq.ID {
	v.t.Helper()
	var out []emq.ID
	seen := map[emq.ID]bool{}
	for _, id := range ids {
		j := v.model.jobs[id]
		if j == nil || j.state != st || seen[id] {
			continue
		}
		seen[id] = true
		switch {
		case j.score <= t0:
			out = append(out, id)
		case j.score <= t1:
			if hgetall(v.t, v.c, mustRow(v.t, v.q, id))[wire.FieldState] != string(st) {
				out = append(out, id)
			}
		}
	}
	if n != len(out) {
		v.fail("%s of %v moved %d; the model says %v", what, ids, n, out)
	}
	return out
}

func (v *invariant) promoteIDs() {
	ids := v.someIDs(emq.StateScheduled)
	v.note("promote_ids %v", ids)
	t0 := v.now()
	n, err := v.q.PromoteIDs(v.ctx, ids)
	t1 := v.now()
	if err != nil {
		v.fail("PromoteIDs(%v): %v", ids, err)
	}
	v.count(wire.ScriptPromoteIDs.Name, n > 0)
	for _, id := range v.movedIDs(wire.ScriptPromoteIDs.Name, n, ids, emq.StateScheduled, t0, t1) {
		j := v.model.jobs[id]
		j.state, j.score = emq.StatePending, 0
	}
	if n > 0 {
		v.model.wake = true
	}
}

func (v *invariant) reapIDs() {
	ids, maxAttempts := v.someIDs(emq.StateActive), 0
	if v.rnd.IntN(2) == 0 {
		maxAttempts = 1 + v.rnd.IntN(4)
	}
	v.note("reap_ids %v max %d", ids, maxAttempts)
	t0 := v.now()
	n, err := v.q.ReapIDs(v.ctx, ids, maxAttempts)
	t1 := v.now()
	if err != nil {
		v.fail("ReapIDs(%v): %v", ids, err)
	}
	v.count(wire.ScriptReapIDs.Name, n > 0)
	for _, id := range v.movedIDs(wire.ScriptReapIDs.Name, n, ids, emq.StateActive, t0, t1) {
		j := v.model.jobs[id]
		if maxAttempts > 0 && j.attempts >= int64(maxAttempts) {
			j.state = emq.StateDead
			v.count("reap buried", true)
		} else {
			j.state = emq.StatePending
			v.model.wake = true
		}
		j.score = 0
	}
}

// The 2.3.0 calls: failure records.

// record appends a failed attempt to id's model record, keeping the last
// invRecordCap.
func (v *invariant) record(id emq.ID, a emq.FailedAttempt) {
	r := append(v.model.records[id], a)
	if len(r) > invRecordCap {
		r = r[len(r)-invRecordCap:]
	}
	v.model.records[id] = r
}

// recorded returns the ids the model holds a record of, in id order (so
// that a seed reproduces a run).
func (v *invariant) recorded() []emq.ID {
	ids := make([]emq.ID, 0, len(v.model.records))
	for id := range v.model.records {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].String() < ids[j].String() })
	return ids
}

// failure picks a class and a message for a failed attempt.
func (v *invariant) failure() emq.Failure {
	classes := []emq.FailureClass{emq.FailureClassError, emq.FailureClassPanic, emq.FailureClassTimeout}
	return emq.Failure{Class: classes[v.rnd.IntN(len(classes))], Worker: "w" + strconv.Itoa(v.rnd.IntN(3)), Message: "failed at step " + strconv.Itoa(v.step)}
}

// retryFailed moves like retry and records the attempt; a stale token
// records nothing.
func (v *invariant) retryFailed() {
	id := v.target()
	tok := v.token(id)
	delay := time.Duration(v.rnd.IntN(3)) * time.Millisecond
	f := v.failure()
	v.note("retry_failed %v token %d %v %s", id, tok, delay, f.Class)
	t0 := v.now()
	at, err := v.q.RetryFailed(v.ctx, id, tok, delay, f)
	t1 := v.now()
	v.count(wire.ScriptRetryFailed.Name, err == nil)
	if !v.current(id, tok) {
		v.wantStale(err, wire.ScriptRetryFailed.Name)
		return
	}
	if err != nil {
		v.fail("RetryFailed(%v, %d) with the current token: %v", id, tok, err)
	}
	v.within("retry_failed run-at", at.UnixMilli(), t0+delay.Milliseconds(), t1+delay.Milliseconds())
	j := v.model.jobs[id]
	j.state, j.score = emq.StateScheduled, at.UnixMilli()
	v.record(id, emq.FailedAttempt{Attempt: tok, At: time.UnixMilli(at.UnixMilli() - delay.Milliseconds()), Class: f.Class, Worker: f.Worker, Message: f.Message})
}

// buryFailed moves like bury and records the attempt.
func (v *invariant) buryFailed() {
	id := v.target()
	tok := v.token(id)
	f := v.failure()
	v.note("bury_failed %v token %d %s", id, tok, f.Class)
	t0 := v.now()
	err := v.q.BuryFailed(v.ctx, id, tok, f)
	t1 := v.now()
	v.count(wire.ScriptBuryFailed.Name, err == nil)
	if !v.current(id, tok) {
		v.wantStale(err, wire.ScriptBuryFailed.Name)
		return
	}
	if err != nil {
		v.fail("BuryFailed(%v, %d) with the current token: %v", id, tok, err)
	}
	j := v.model.jobs[id]
	j.state, j.score = emq.StateDead, 0
	// The time is checked when the record is read: between t0 and t1.
	v.record(id, emq.FailedAttempt{Attempt: tok, At: time.UnixMilli(-(t0 + t1)), Class: f.Class, Worker: f.Worker, Message: f.Message})
}

// reapFailedIDs moves like reap_ids and records each lease it took back
// as lost.
func (v *invariant) reapFailedIDs() {
	ids, maxAttempts := v.someIDs(emq.StateActive), 0
	if v.rnd.IntN(2) == 0 {
		maxAttempts = 1 + v.rnd.IntN(4)
	}
	v.note("reap_failed_ids %v max %d", ids, maxAttempts)
	t0 := v.now()
	n, err := v.q.ReapFailedIDs(v.ctx, ids, maxAttempts)
	t1 := v.now()
	if err != nil {
		v.fail("ReapFailedIDs(%v): %v", ids, err)
	}
	v.count(wire.ScriptReapFailedIDs.Name, n > 0)
	for _, id := range v.movedIDs(wire.ScriptReapFailedIDs.Name, n, ids, emq.StateActive, t0, t1) {
		j := v.model.jobs[id]
		v.record(id, emq.FailedAttempt{Attempt: j.attempts, At: time.UnixMilli(-(t0 + t1)), Class: emq.FailureClassLeaseLost})
		if maxAttempts > 0 && j.attempts >= int64(maxAttempts) {
			j.state = emq.StateDead
			v.count("reap buried", true)
		} else {
			j.state = emq.StatePending
			v.model.wake = true
		}
		j.score = 0
	}
}

// failures reads a record: the model's attempts while the row exists,
// nothing once it is gone. A recorded time the model could only bound
// (At before the epoch: -(t0+t1)) is checked against that window and then
// kept as read.
func (v *invariant) failures() {
	id := v.pick()
	if r := v.recorded(); len(r) > 0 && v.rnd.IntN(3) == 0 {
		id = r[v.rnd.IntN(len(r))]
	}
	v.note("failures %v", id)
	got, err := v.q.Failures(v.ctx, id)
	if err != nil {
		v.fail("Failures(%v): %v", id, err)
	}
	v.count(wire.ScriptFailures.Name, len(got) > 0)
	var want []emq.FailedAttempt
	if v.model.jobs[id] != nil {
		want = v.model.records[id]
	}
	if len(got) != len(want) {
		v.fail("Failures(%v) = %d attempts %v; the model has %d: %v", id, len(got), got, len(want), want)
	}
	for i, w := range want {
		g := got[i]
		if w.At.UnixMilli() < 0 {
			// Bounded by the call's window: t0 <= at <= t1, both from -(t0+t1).
			sum := -w.At.UnixMilli()
			if at := g.At.UnixMilli(); at < sum/2-5000 || at > sum/2+5000 {
				v.fail("Failures(%v)[%d] at %d; the call ran near %d", id, i, at, sum/2)
			}
			w.At = g.At
			want[i].At = g.At
		}
		if g.Attempt != w.Attempt || !g.At.Equal(w.At) || g.Class != w.Class || g.Worker != w.Worker || (w.Class != emq.FailureClassLeaseLost && g.Message != w.Message) {
			v.fail("Failures(%v)[%d] = %+v; the model says %+v", id, i, g, w)
		}
	}
}

// forgetFailures deletes the records of rows that are gone, and keeps
// the others.
func (v *invariant) forgetFailures() {
	ids := v.someIDs(emq.StateDead)
	for _, r := range v.recorded() {
		if v.rnd.IntN(2) == 0 {
			ids = append(ids, r)
		}
		if len(ids) > 6 {
			break
		}
	}
	v.note("forget_failures %v", ids)
	n, err := v.q.ForgetFailures(v.ctx, ids)
	if err != nil {
		v.fail("ForgetFailures(%v): %v", ids, err)
	}
	v.count(wire.ScriptForgetFailures.Name, n > 0)
	want := 0
	for _, id := range ids {
		if v.model.jobs[id] == nil && len(v.model.records[id]) > 0 {
			delete(v.model.records, id)
			want++
		}
	}
	if n != want {
		v.fail("ForgetFailures(%v) = %d; the model deletes %d", ids, n, want)
	}
}
