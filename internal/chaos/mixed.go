package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

func init() { Register(Mixed{}) }

// mixedLangs are the sides of the mixed-fleet scenario: the Go SDK of
// this tree (the new side) and the Go SDK of the frozen 2.2.1 release
// (the old side, LangOld).
var mixedLangs = []Lang{LangGo, LangOld}

// newSideRecords says whether the Go SDK's worker of this tree records
// its failures (retry_failed, bury_failed, reap_failed_ids), forgets the
// record of a job it completes and sweeps orphans in maintenance (echomq
// 2.3.0, issue 19: the Go worker's failure recording). While it is false
// the checks that need a recording worker are reported as not run, and a
// run in which the new side recorded a failure of its own anyway fails
// with the hint to set it: the checks never pass vacuously unnoticed.
const newSideRecords = true

// mixedRecordQueue is the queue of the deterministic mixed-record checks.
const mixedRecordQueue = "chaos-mixed-records"

// Mixed is the mixed-fleet scenario: producers and worker processes built
// from the frozen 2.2.1 release (the real Go SDK of that release, built
// from git history: oldFleetBinary) beside producers and worker processes
// of this tree's Go SDK, on one keyspace, while worker processes of both
// sides are SIGKILLed and frozen past their leases. Handlers of both sides
// fail some first attempts, and every attempt of some jobs (alwaysFails),
// so that those are buried — by either side. Every job must finish exactly
// once (completed, or dead), none lost; and the new side must read every
// job right whoever settled it: Get never fails, the failure history
// decodes, a job is dead since the time of its last recorded attempt only
// when that attempt is the row's attempts (a job buried by a 2.2.1 worker,
// which records nothing, reads as "not recorded", never a wrong time), a
// recorded attempt is one a recording script settled, and, after the run
// and a few maintenance ticks, the failures hash holds no record whose row
// is gone (what the old side's completions leave behind is swept).
type Mixed struct{}

// Name is "mixed".
func (Mixed) Name() string { return "mixed" }

func mixedPlan(cfg Config) *plan {
	p := &plan{
		name: "mixed", jobs: 1500, rate: 150, producers: 2, batch: 10, workers: 4,
		worker: WorkerConfig{Concurrency: 8, Lease: 1500 * time.Millisecond, Maintenance: 300 * time.Millisecond,
			HandlerMin: 20 * time.Millisecond, HandlerMax: 150 * time.Millisecond, FailRate: 0.05, AlwaysFail: 0.03,
			MaxAttempts: 3, Backoff: 100 * time.Millisecond},
		workerLangs: mixedLangs, producerLangs: mixedLangs,
		checkEvery: 250 * time.Millisecond, drain: 60 * time.Second,
	}
	if cfg.Long {
		p.jobs, p.rate, p.drain, p.workers = 30_000, 500, 5*time.Minute, 8
		p.worker.Concurrency = 16
		p.worker.HandlerMin, p.worker.HandlerMax = 10*time.Millisecond, 100*time.Millisecond
	}
	if cfg.Jobs > 0 {
		p.jobs = cfg.Jobs
	}
	return p
}

// Run runs the scenario.
func (Mixed) Run(ctx context.Context, cfg Config) (Result, error) {
	p := mixedPlan(cfg)
	minKills, minFreezes := int64(2), int64(len(mixedLangs))
	if cfg.Long {
		minKills, minFreezes = 8, 6
	}
	freeze := 2*p.worker.Lease + 500*time.Millisecond
	pairs := langPairs(mixedLangs)
	start := time.Now()
	p.faults = func(ctx context.Context, r *run) error {
		if err := crossStaleChecks(ctx, r, pairs); err != nil {
			return err
		}
		if err := mixedRecordChecks(ctx, r); err != nil {
			return err
		}
		sleepCtx(ctx, 500*time.Millisecond)
		return killAndFreeze(ctx, r, mixedLangs, minKills, minFreezes, freeze)
	}
	p.afterDrain = func(ctx context.Context, r *run) error {
		if newSideRecords {
			if err := plantOrphans(ctx, r, orphansPlanted); err != nil {
				return err
			}
		}
		if err := sweepOrphans(ctx, r); err != nil {
			return err
		}
		return readMixed(ctx, r, start)
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
	cross, err := crossLanguage(o.run, mixedLangs)
	if err != nil {
		return Result{}, err
	}
	w := p.worker
	load := fmt.Sprintf("%s jobs at ~%.0f/s from a Go %s producer and a Go %s producer; %d worker processes (the two sides in turn) × %d; lease %v; handlers %v–%v, %.0f%% of first attempts fail, %.0f%% of jobs fail on every attempt (buried after %d)",
		thousands(int64(p.jobs)), p.rate, wire.Version, oldRelease, p.workers, w.Concurrency, w.Lease, w.HandlerMin, w.HandlerMax, 100*w.FailRate, 100*w.AlwaysFail, w.MaxAttempts)
	faults := fmt.Sprintf("SIGKILLs of worker processes: %d of the new side, %d of the %s side (each replaced by one of its side); %d SIGSTOPs of a worker process for %v",
		o.run.get("kills_"+string(LangGo)), o.run.get("kills_"+string(LangOld)), oldRelease, o.run.get("freezes"), freeze)
	res := o.result("mixed fleet ("+oldRelease+" beside "+wire.Version+")", load, faults)
	for k, v := range cross {
		res.Counts[k] = v
	}
	if res.Counts["stale_probes"] != int64(len(pairs)) {
		res.Violations = append(res.Violations, fmt.Sprintf("%d of %d cross-side stale checks ran", res.Counts["stale_probes"], len(pairs)))
	}
	if res.Counts["record_probes"] != int64(len(mixedRecordCases)) {
		res.Violations = append(res.Violations, fmt.Sprintf("%d of %d mixed-record checks passed", res.Counts["record_probes"], len(mixedRecordCases)))
	}
	c := res.Counts
	recording := "the new side's worker records its failures (newSideRecords)"
	if !newSideRecords {
		recording = "the new side's worker of this tree records nothing yet (newSideRecords is false): the checks that need a recording worker did not run"
	}
	res.Notes = fmt.Sprintf("completed across sides: %s pushed by the new side and completed by the old, %s the other way; %s late completions refused with %s across sides; the new side read %s jobs: %s dead (%s buried by a %s worker, %s by a new worker, %s by maintenance out of attempts), %s with a time of death, %s \"not recorded\"; %s recorded failed attempts read; %s failure records left by completions swept; %s; ",
		thousands(cross[string(LangGo)+"_to_"+string(LangOld)]), thousands(cross[string(LangOld)+"_to_"+string(LangGo)]),
		thousands(cross["stale_cross"]), wire.ClassStale, thousands(c["read_jobs"]), thousands(c["read_dead_jobs"]), thousands(c["old_burials"]), oldRelease,
		thousands(c["new_burials"]), thousands(c["reap_burials"]), thousands(c["died_at_set"]), thousands(c["died_at_unknown"]),
		thousands(c["records_read"]), thousands(c["orphans_swept"]), recording) + res.Notes
	res.Details = fmt.Sprintf(`**Injected.** %d worker processes work one queue: worker processes of this tree's Go SDK (emq.NewWorker, the harness's worker processes) and worker processes of the Go SDK of the frozen %s release (its emq.NewWorker, in a program built from git history: the commit that added golden/releases/%s.yaml, its sdk/go extracted with git archive, internal/chaos/testdata/oldfleet built against it), in turn, %d handlers each, while a producer of each side pushes %s jobs between them. Handlers of both sides fail %.0f%% of first attempts and every attempt of %.0f%% of the jobs (chosen by the id's hash, so both sides agree), which are buried on attempt %d, by whichever side runs it. Worker processes of each side are frozen with SIGSTOP for %v (longer than the %v lease) and SIGKILLed (each replaced by one of its side), the sides in turn.

**Checked.** The accounting of the crashing-workers scenario holds across the sides: every acknowledged job finished exactly once (completed, or dead), none lost; late completions are refused across sides, and before the load a job claimed by one side, reaped and claimed again by the other is completed late by the first: refused with %s both ways. Deterministic mixed-record checks on a queue of their own: a record the new side wrote, whose job a %s client then completed, reads as nothing and forget_failures deletes it; a job the new side retried and a %s client buried reads dead with its history and no time of death; a job a %s client retried and the new side buried reads dead since the new side's record; a lease the new side reaped as lost, buried by a %s client, reads its lease_lost attempt and no time of death. After the drain, for every acknowledged job, the new side's Get (one round trip) returns no error and the same history as Failures; a job without a row reads no history; a dead job is dead since the time of its last recorded attempt exactly when that attempt is the row's attempts, and a job buried by a %s worker never reads a time of death; every recorded attempt of class error was run by a new-side worker whose handler failed and whose transition was accepted, every lease_lost attempt was not settled by its holder. The failures hash is then scanned while the worker processes' maintenance runs: every record whose row is gone must be swept within ceil(records/100) + 5 ticks.
%s`, p.workers, oldRelease, oldRelease, w.Concurrency, thousands(int64(p.jobs)), 100*w.FailRate, 100*w.AlwaysFail, w.MaxAttempts, freeze, w.Lease,
		wire.ClassStale, oldRelease, oldRelease, oldRelease, oldRelease, oldRelease, o.problems())
	return res, nil
}

// mixedRecordCases names the deterministic mixed-record checks.
var mixedRecordCases = []string{"new retries, old completes", "new retries, old buries", "old retries, new buries", "new reaps a lost lease, old buries"}

// mixedRecordChecks runs the deterministic mixed-record checks on their
// own queue (mixedRecordQueue): each settles one job's attempts with the
// two sides in a set order and reads it with the new side. A check that
// passed counts in "record_probes"; a failed one is a violation.
func mixedRecordChecks(ctx context.Context, r *run) error {
	old, err := r.driver(ctx, LangOld, []string{r.srv.Addr()})
	if err != nil {
		return fmt.Errorf("chaos: the mixed-record checks need the %s driver: %w", langName(LangOld), err)
	}
	q, err := r.client.Queue(mixedRecordQueue)
	if err != nil {
		return err
	}
	m := &mixedRecords{c: r.client, q: q, old: old, rc: r.chk.Client()}
	for i, check := range []func(context.Context) error{m.retriedThenCompleted, m.retriedThenBuried, m.oldRetriedNewBuried, m.lostThenBuried} {
		if err := check(ctx); err != nil {
			r.violate("mixed-record check %q: %v", mixedRecordCases[i], err)
			continue
		}
		r.count("record_probes", 1)
		r.logf("mixed-record check %q passed", mixedRecordCases[i])
	}
	return nil
}

// mixedRecords is the state of the mixed-record checks: the new side's
// client and queue, the old side's driver and a raw connection.
type mixedRecords struct {
	c   *emq.Client
	q   *emq.Queue
	old *sdkDriver
	rc  rueidis.Client
}

// newFailure is the failure the new side records in the checks.
var newFailure = emq.Failure{Class: emq.FailureClassError, Worker: "mixed-check", Message: "a planned failure"}

// fresh pushes a fresh job to the check queue.
func (m *mixedRecords) fresh(ctx context.Context) (emq.ID, error) {
	id, err := m.c.Mint(emq.WorkKind)
	if err != nil {
		return id, err
	}
	_, err = m.q.Push(ctx, id, []byte("mixed-record check"))
	return id, err
}

// errNotClaimed is newClaim's when the queue had nothing to claim.
var errNotClaimed = errors.New("nothing pending")

// newClaim claims the check queue's job id with the new side.
func (m *mixedRecords) newClaim(ctx context.Context, id emq.ID, lease time.Duration) (int64, error) {
	j, ok, err := m.q.Claim(ctx, lease)
	switch {
	case err == nil && !ok:
		err = fmt.Errorf("the new side claimed nothing, not %s: %w", id, errNotClaimed)
	case err == nil && j.ID != id:
		err = fmt.Errorf("the new side claimed %v, not %s", j.ID, id)
	}
	return j.Token, err
}

// oldClaim promotes what is due and claims the check queue's job id with
// the old side, which must lease it with token want.
func (m *mixedRecords) oldClaim(ctx context.Context, id emq.ID, want int64) error {
	if _, err := m.q.Promote(ctx, 10); err != nil {
		return err
	}
	got, tok, ok, err := m.old.Claim(ctx, m.q.Name(), time.Minute)
	if err != nil {
		return fmt.Errorf("the %s claim: %w", oldRelease, err)
	}
	if !ok || got != id.String() || tok != want {
		return fmt.Errorf("the %s claim leased %q token %d (ok %v); want %s token %d", oldRelease, got, tok, ok, id, want)
	}
	return nil
}

// read reads id with the new side: Get and Failures, which must agree.
func (m *mixedRecords) read(ctx context.Context, id emq.ID) (emq.JobInfo, bool, error) {
	info, ok, err := m.q.Get(ctx, id)
	if err != nil {
		return info, ok, fmt.Errorf("the new side's Get: %w", err)
	}
	hist, err := m.q.Failures(ctx, id)
	if err != nil {
		return info, ok, fmt.Errorf("the new side's Failures: %w", err)
	}
	if !sameHistory(hist, info.Failures) {
		return info, ok, fmt.Errorf("Get read the history %v, Failures %v", info.Failures, hist)
	}
	return info, ok, nil
}

// wantDead checks a dead job's history: the attempts, classes, workers
// and messages (an empty message in want: any text the script wrote), and
// a time of death exactly when the last recorded attempt is the row's
// attempts.
func wantDead(info emq.JobInfo, ok bool, attempts int64, want []emq.FailedAttempt, diedAt bool) error {
	if !ok || info.State != emq.StateDead || info.Attempts != attempts {
		return fmt.Errorf("read %v (row %v) at attempts %d; want %s at attempts %d", info.State, ok, info.Attempts, emq.StateDead, attempts)
	}
	if len(info.Failures) != len(want) {
		return fmt.Errorf("read the history %v; want %d attempts", info.Failures, len(want))
	}
	for i, a := range info.Failures {
		w := want[i]
		msg := a.Message == w.Message || (w.Message == "" && a.Message != "")
		if a.Attempt != w.Attempt || a.Class != w.Class || a.Worker != w.Worker || !msg || a.At.IsZero() {
			return fmt.Errorf("attempt %d of the history is %v; want attempt %d, %s by %q: %q at a time", i, a, w.Attempt, w.Class, w.Worker, w.Message)
		}
	}
	switch {
	case diedAt && (info.DiedAt.IsZero() || !info.DiedAt.Equal(info.Failures[len(info.Failures)-1].At)):
		return fmt.Errorf("dead since %v; want the time of the last recorded attempt (%v)", info.DiedAt, info.Failures[len(info.Failures)-1].At)
	case !diedAt && !info.DiedAt.IsZero():
		return fmt.Errorf("dead since %v; want not recorded (zero): the last attempt was settled by a client that records nothing", info.DiedAt)
	}
	return nil
}

// retriedThenCompleted: the new side fails attempt 1 with a record, the
// old side runs attempt 2 and completes it, leaving the record behind its
// row. The new side reads nothing (the row is gone), the record is there,
// and forget_failures deletes it.
func (m *mixedRecords) retriedThenCompleted(ctx context.Context) error {
	id, err := m.fresh(ctx)
	if err != nil {
		return err
	}
	tok, err := m.newClaim(ctx, id, time.Minute)
	if err != nil {
		return err
	}
	if _, err := m.q.RetryFailed(ctx, id, tok, 0, newFailure); err != nil {
		return fmt.Errorf("RetryFailed: %w", err)
	}
	if err := m.oldClaim(ctx, id, tok+1); err != nil {
		return err
	}
	if err := m.old.Complete(ctx, m.q.Name(), id.String(), tok+1); err != nil {
		return fmt.Errorf("the %s completion: %w", oldRelease, err)
	}
	info, ok, err := m.read(ctx, id)
	if err != nil {
		return err
	}
	if ok || len(info.Failures) != 0 || !info.DiedAt.IsZero() {
		return fmt.Errorf("after the %s completion the new side read row %v, history %v, died at %v; want no row and nothing recorded", oldRelease, ok, info.Failures, info.DiedAt)
	}
	n, err := recordsOf(ctx, m.rc, m.q, id)
	if err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("the failures hash holds %d records of the job the %s client completed; want its record left behind (1)", n, oldRelease)
	}
	if forgot, err := m.q.ForgetFailures(ctx, []emq.ID{id}); err != nil || forgot != 1 {
		return fmt.Errorf("ForgetFailures deleted %d records, %v; want 1", forgot, err)
	}
	if n, err := recordsOf(ctx, m.rc, m.q, id); err != nil || n != 0 {
		return fmt.Errorf("after ForgetFailures the failures hash holds %d records of the job, %v; want 0", n, err)
	}
	return nil
}

// retriedThenBuried: the new side fails attempt 1 with a record, the old
// side buries attempt 2 (recording nothing): dead, the history holds
// attempt 1, and the time of death is not recorded.
func (m *mixedRecords) retriedThenBuried(ctx context.Context) error {
	id, err := m.fresh(ctx)
	if err != nil {
		return err
	}
	tok, err := m.newClaim(ctx, id, time.Minute)
	if err != nil {
		return err
	}
	if _, err := m.q.RetryFailed(ctx, id, tok, 0, newFailure); err != nil {
		return fmt.Errorf("RetryFailed: %w", err)
	}
	if err := m.oldClaim(ctx, id, tok+1); err != nil {
		return err
	}
	if err := m.old.Bury(ctx, m.q.Name(), id.String(), tok+1); err != nil {
		return fmt.Errorf("the %s burial: %w", oldRelease, err)
	}
	info, ok, err := m.read(ctx, id)
	if err != nil {
		return err
	}
	return wantDead(info, ok, tok+1, []emq.FailedAttempt{{Attempt: tok, Class: newFailure.Class, Worker: newFailure.Worker, Message: newFailure.Message}}, false)
}

// oldRetriedNewBuried: the old side retries attempt 1 (recording
// nothing), the new side buries attempt 2 with a record: dead since then.
func (m *mixedRecords) oldRetriedNewBuried(ctx context.Context) error {
	id, err := m.fresh(ctx)
	if err != nil {
		return err
	}
	if err := m.oldClaim(ctx, id, 1); err != nil {
		return err
	}
	if err := m.old.Retry(ctx, m.q.Name(), id.String(), 1, 0); err != nil {
		return fmt.Errorf("the %s retry: %w", oldRelease, err)
	}
	if _, err := m.q.Promote(ctx, 10); err != nil {
		return err
	}
	tok, err := m.newClaim(ctx, id, time.Minute)
	if err != nil {
		return err
	}
	if err := m.q.BuryFailed(ctx, id, tok, newFailure); err != nil {
		return fmt.Errorf("BuryFailed: %w", err)
	}
	info, ok, err := m.read(ctx, id)
	if err != nil {
		return err
	}
	return wantDead(info, ok, 2, []emq.FailedAttempt{{Attempt: 2, Class: newFailure.Class, Worker: newFailure.Worker, Message: newFailure.Message}}, true)
}

// lostThenBuried: the new side's lease of attempt 1 expires and the new
// side reaps it as lost (a record of class lease_lost, no worker); the old
// side buries attempt 2: dead, the lost attempt read, no time of death.
func (m *mixedRecords) lostThenBuried(ctx context.Context) error {
	const lease = 150 * time.Millisecond
	id, err := m.fresh(ctx)
	if err != nil {
		return err
	}
	if _, err := m.newClaim(ctx, id, lease); err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := m.q.ReapFailedIDs(ctx, []emq.ID{id}, 0)
		if err != nil {
			return fmt.Errorf("ReapFailedIDs: %w", err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("ReapFailedIDs never took the expired lease back")
		}
		sleepCtx(ctx, lease/3)
	}
	if err := m.oldClaim(ctx, id, 2); err != nil {
		return err
	}
	if err := m.old.Bury(ctx, m.q.Name(), id.String(), 2); err != nil {
		return fmt.Errorf("the %s burial: %w", oldRelease, err)
	}
	info, ok, err := m.read(ctx, id)
	if err != nil {
		return err
	}
	return wantDead(info, ok, 2, []emq.FailedAttempt{{Attempt: 1, Class: emq.FailureClassLeaseLost}}, false)
}

// recordsOf returns whether the failures hash of q holds a record of id
// (1) or not (0), read raw: the record is never parsed.
func recordsOf(ctx context.Context, rc rueidis.Client, q *emq.Queue, id emq.ID) (int64, error) {
	return rc.Do(ctx, rc.B().Hexists().Key(q.Keys().Failures).Field(id.String()).Build()).AsInt64()
}

// sameHistory reports whether two histories are the same attempts.
func sameHistory(a, b []emq.FailedAttempt) bool {
	return slices.EqualFunc(a, b, func(x, y emq.FailedAttempt) bool {
		return x.Attempt == y.Attempt && x.At.Equal(y.At) && x.Class == y.Class && x.Worker == y.Worker && x.Message == y.Message
	})
}

// failureRecords scans the failures hash of the run's queue (HSCAN, the
// fields only: a record is never parsed) and returns how many records it
// holds and the ids of those whose row is gone.
func failureRecords(ctx context.Context, r *run) (records int64, orphans []string, err error) {
	return hashOrphans(ctx, r, r.queue.Keys().Failures)
}

// hashOrphans scans a per-job hash of the run's queue (field = job id) and
// returns how many records it holds and the ids of those whose row is gone.
func hashOrphans(ctx context.Context, r *run, key string) (records int64, orphans []string, err error) {
	rc := r.chk.Client()
	keys := r.queue.Keys()
	var cursor uint64
	for {
		e, err := rc.Do(ctx, rc.B().Hscan().Key(key).Cursor(cursor).Count(500).Build()).AsScanEntry()
		if err != nil {
			return 0, nil, fmt.Errorf("chaos: HSCAN of %s: %w", key, err)
		}
		for i := 0; i+1 < len(e.Elements); i += 2 {
			records++
			id := e.Elements[i]
			n, err := rc.Do(ctx, rc.B().Exists().Key(keys.RowPrefix()+id).Build()).AsInt64()
			if err != nil {
				return 0, nil, err
			}
			if n == 0 {
				orphans = append(orphans, id)
			}
		}
		if cursor = e.Cursor; cursor == 0 {
			break
		}
	}
	sort.Strings(orphans)
	return records, orphans, nil
}

// orphansPlanted is how many orphaned records plantOrphans leaves: more
// than one maintenance tick scans (~100), so the sweep's cursor must carry
// over between ticks.
const orphansPlanted = 150

// plantOrphans leaves n failure records whose rows are gone on the run's
// queue, as a mixed fleet does: with every worker process frozen (the
// queue is drained, so they hold no lease), for each of n fresh jobs the
// new side fails attempt 1 with a record (RetryFailed) and the old side's
// driver claims attempt 2 and completes it, which leaves the record. The
// worker processes are then thawed, and sweepOrphans judges the sweep.
func plantOrphans(ctx context.Context, r *run, n int) (err error) {
	old, err := r.driver(ctx, LangOld, []string{r.srv.Addr()})
	if err != nil {
		return err
	}
	frozen, err := r.pool.FreezeAll()
	if err != nil {
		return err
	}
	defer r.pool.Thaw(frozen)
	m := &mixedRecords{c: r.client, q: r.queue, old: old, rc: r.chk.Client()}
	for range n {
		// A worker process that was just replaced may still have been
		// starting when the others were frozen, and take the fresh job
		// first; its next fresh job is planted instead (at most 5 tries).
		var id emq.ID
		var tok int64
		for try := 0; ; try++ {
			if id, err = m.fresh(ctx); err != nil {
				return err
			}
			if tok, err = m.newClaim(ctx, id, time.Minute); err == nil || try == 4 || !errors.Is(err, errNotClaimed) {
				break
			}
			r.logf("planting an orphan: a worker process took the fresh job %s first; another one", id)
		}
		if err != nil {
			return err
		}
		if _, err := m.q.RetryFailed(ctx, id, tok, 0, newFailure); err != nil {
			return fmt.Errorf("planting an orphan: RetryFailed: %w", err)
		}
		if err := m.oldClaim(ctx, id, tok+1); err != nil {
			return fmt.Errorf("planting an orphan: %w", err)
		}
		if err := old.Complete(ctx, m.q.Name(), id.String(), tok+1); err != nil {
			return fmt.Errorf("planting an orphan: the %s completion: %w", oldRelease, err)
		}
	}
	_, orphans, err := failureRecords(ctx, r)
	if err != nil {
		return err
	}
	if len(orphans) < n {
		r.violate("%d orphaned failure records after planting %d with every worker frozen: a %s completion must leave its record behind", len(orphans), n, oldRelease)
	}
	r.count("orphans_planted", int64(n))
	r.count("orphans_at_plant", int64(len(orphans)))
	r.logf("planted %d failure records whose rows are gone (new RetryFailed, then a %s completion), with every worker process frozen; thawing", n, oldRelease)
	return nil
}

// sweepOrphans waits, while the worker processes' maintenance runs, until
// the failures hash holds no record whose row is gone: the records the old
// side's completions left behind are swept within ceil(records/100) + 5
// maintenance ticks, or each left is a violation.
func sweepOrphans(ctx context.Context, r *run) error {
	records, orphans, err := failureRecords(ctx, r)
	if err != nil {
		return err
	}
	first := int64(len(orphans))
	r.count("records_at_drain", records)
	tick := r.plan.worker.Maintenance
	deadline := time.Now().Add(time.Duration((records+99)/100+5)*tick + 2*time.Second)
	for len(orphans) > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		sleepCtx(ctx, tick)
		if records, orphans, err = failureRecords(ctx, r); err != nil {
			return err
		}
	}
	r.count("orphans_at_drain", first)
	// The workers were thawed once the orphans were planted, so some may
	// be swept before the first scan here: count from the scan taken while
	// they were frozen.
	r.count("orphans_swept", max(first, r.get("orphans_at_plant"))-int64(len(orphans)))
	if len(orphans) > 0 {
		r.violate("%d failure records whose row is gone were left after %d maintenance ticks (of %d records; a %s client's completions leave them, the new side's maintenance must sweep them)%s: %v",
			len(orphans), (records+99)/100+5, records, oldRelease, orphanDiagnosis(ctx, r, records), orphans[:min(5, len(orphans))])
	}
	return nil
}

// orphanDiagnosis says, for a violation of the sweep, whether the new side
// sweeps once the old side is out of the way: the queue's maintenance lock
// is one lock for both sides, and a 2.2.1 worker holding it maintains the
// queue (and renews the lock) without sweeping. It freezes the old side's
// worker processes, waits for the lock to lapse and for the sweep's ticks,
// and thaws them.
func orphanDiagnosis(ctx context.Context, r *run, records int64) string {
	rc := r.chk.Client()
	holder, _ := rc.Do(ctx, rc.B().Hget().Key(wire.KeyLocks).Field(wire.LockMaintenance(queueName)).Build()).ToString()
	frozen, err := r.pool.FreezeAllOf(LangOld)
	if err != nil || len(frozen) == 0 {
		return fmt.Sprintf("; the maintenance lock is held by %q", holder)
	}
	tick := r.plan.worker.Maintenance
	sleepCtx(ctx, 3*tick+time.Duration((records+99)/100+5)*tick+time.Second)
	_, left, err := failureRecords(ctx, r)
	after, _ := rc.Do(ctx, rc.B().Hget().Key(wire.KeyLocks).Field(wire.LockMaintenance(queueName)).Build()).ToString()
	r.pool.Thaw(frozen)
	if err != nil {
		return fmt.Sprintf("; the maintenance lock is held by %q", holder)
	}
	return fmt.Sprintf("; the queue's maintenance lock was held by %q; with the %d %s worker processes frozen (the lock then held by %q), %d were left: %s",
		holder, len(frozen), oldRelease, after, len(left), map[bool]string{true: "the new side sweeps only while it holds the maintenance lock, which a " + oldRelease + " worker may hold for good", false: "the new side does not sweep even so"}[len(left) == 0])
}

// settler is what the worker records say of one lease (id, token): the
// side and process that ran it, whether its handler failed, and the settle
// outcome recorded (a record kind, 0 for none).
type settler struct {
	lang    Lang
	pid     string
	failed  bool
	outcome byte
}

// readSettlers reads every worker process's records: the settler of each
// lease by id and token.
func readSettlers(r *run) (map[string]map[int64]settler, error) {
	out := map[string]map[int64]settler{}
	for _, proc := range r.pool.Procs() {
		f, err := os.Open(proc.Records)
		if err != nil {
			return nil, err
		}
		pid := ""
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			w := strings.Fields(sc.Text())
			if len(w) < 2 || len(w[0]) != 1 {
				continue
			}
			kind := w[0][0]
			if kind == recHello {
				pid = w[1]
				continue
			}
			if len(w) < 3 || !strings.ContainsRune("SECZYTBF", rune(kind)) {
				continue
			}
			tok, err := strconv.ParseInt(w[2], 10, 64)
			if err != nil {
				continue
			}
			m := out[w[1]]
			if m == nil {
				m = map[int64]settler{}
				out[w[1]] = m
			}
			s := m[tok]
			s.lang, s.pid = proc.Lang, pid
			switch kind {
			case recEnd:
				s.failed = len(w) > 3 && w[3] != "ok"
			case recStart:
			default:
				if s.outcome == 0 || kind == recCompleted || kind == recBuried {
					s.outcome = kind
				}
			}
			m[tok] = s
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readMixed reads every acknowledged job with the new side (Get, and
// Failures for a job with a row) and judges what it read against the
// worker records (judgeMixed).
func readMixed(ctx context.Context, r *run, start time.Time) error {
	settlers, err := readSettlers(r)
	if err != nil {
		return err
	}
	ids := r.acks.IDs()
	sort.Strings(ids)
	ids = slices.Compact(ids)
	j := &mixedJudge{recording: newSideRecords, from: start.Add(-time.Minute), to: time.Now().Add(time.Minute), always: func(id string) bool { return alwaysFails(id, r.plan.worker.AlwaysFail) }, counts: map[string]int64{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	work := make(chan string)
	var readErr error
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range work {
				id, err := emq.ParseID(s)
				if err != nil {
					mu.Lock()
					j.problem(s, "the id does not parse: %v", err)
					mu.Unlock()
					continue
				}
				info, ok, gerr := r.queue.Get(ctx, id)
				var hist []emq.FailedAttempt
				var ferr error
				if gerr == nil && ok {
					hist, ferr = r.queue.Failures(ctx, id)
				}
				mu.Lock()
				switch {
				case gerr != nil:
					j.problem(s, "the new side's Get failed: %v", gerr)
				case ferr != nil:
					j.problem(s, "the new side's Failures failed: %v", ferr)
				default:
					j.job(s, info, ok, hist, settlers[s])
				}
				if ctx.Err() != nil && readErr == nil {
					readErr = ctx.Err()
				}
				mu.Unlock()
			}
		}()
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	if readErr != nil {
		return readErr
	}
	j.finish()
	for k, n := range j.counts {
		r.count(k, n)
	}
	for _, p := range j.problems {
		r.violate("the new side's reader: %s", p)
	}
	if j.more > 0 {
		r.violate("the new side's reader: %d more problems", j.more)
	}
	return nil
}

// mixedJudge judges what the new side read of each job of a mixed run.
type mixedJudge struct {
	recording bool              // the new side's worker records failures (newSideRecords)
	from, to  time.Time         // the span a recorded time must fall in
	always    func(string) bool // the jobs whose handlers fail on every attempt
	counts    map[string]int64
	problems  []string
	more      int
	// ownRecords counts recorded attempts of class error run by a new-side
	// worker: with recording false, any is a sign the worker records.
	ownRecords int64
}

func (j *mixedJudge) problem(id, format string, args ...any) {
	if len(j.problems) >= maxProblems {
		j.more++
		return
	}
	j.problems = append(j.problems, "job "+id+": "+fmt.Sprintf(format, args...))
}

// job judges one job: its Get (info, ok), its Failures (hist, read when
// the row exists) and the settlers of its leases.
func (j *mixedJudge) job(id string, info emq.JobInfo, ok bool, hist []emq.FailedAttempt, leases map[int64]settler) {
	j.counts["read_jobs"]++
	if !ok {
		j.counts["read_completed"]++
		if len(info.Failures) > 0 || !info.DiedAt.IsZero() {
			j.problem(id, "the row is gone (completed), yet Get read the history %v, dead since %v: a record whose row is gone must read as nothing", info.Failures, info.DiedAt)
		}
		if j.always(id) {
			j.problem(id, "its handlers fail on every attempt, yet it was completed")
		}
		return
	}
	if info.State != emq.StateDead {
		j.problem(id, "%s after the drain; want %s or completed", info.State, emq.StateDead)
		return
	}
	j.counts["read_dead_jobs"]++
	if !sameHistory(hist, info.Failures) {
		j.problem(id, "Get read the history %v, Failures %v", info.Failures, hist)
	}
	j.counts["records_read"] += int64(len(info.Failures))
	var prev int64
	recorded := map[int64]bool{}
	for _, a := range info.Failures {
		recorded[a.Attempt] = true
		switch {
		case a.Attempt <= prev || a.Attempt > info.Attempts:
			j.problem(id, "recorded attempt %d after %d, of %d attempts: the history must be ascending attempts the job had", a.Attempt, prev, info.Attempts)
		case a.At.Before(j.from) || a.At.After(j.to):
			j.problem(id, "recorded attempt %d at %v, outside the run (%v – %v)", a.Attempt, a.At, j.from, j.to)
		case !a.Class.Registered():
			j.problem(id, "recorded attempt %d of class %q, which no 2.3.0 writer records", a.Attempt, a.Class)
		}
		prev = a.Attempt
		s, known := leases[a.Attempt]
		switch a.Class {
		case emq.FailureClassLeaseLost:
			if known && (s.outcome == recCompleted || s.outcome == recRetried || s.outcome == recBuried) {
				j.problem(id, "attempt %d is recorded as a lost lease, yet its holder (%s, pid %s) settled it (%c)", a.Attempt, s.lang, s.pid, s.outcome)
			}
		default:
			switch {
			case !known:
				j.problem(id, "attempt %d is recorded (%s), yet no worker ran it", a.Attempt, a.Class)
			case s.lang != LangGo:
				j.problem(id, "attempt %d is recorded (%s), yet a %s worker (pid %s) ran it, which records nothing", a.Attempt, a.Class, langName(s.lang), s.pid)
			case !s.failed:
				j.problem(id, "attempt %d is recorded (%s), yet its handler succeeded", a.Attempt, a.Class)
			case s.outcome == recStaleSettle || s.outcome == recCompleted:
				j.problem(id, "attempt %d is recorded (%s), yet its transition was %s", a.Attempt, a.Class, map[byte]string{recStaleSettle: "refused as stale", recCompleted: "a completion"}[s.outcome])
			default:
				j.ownRecords++
				if j.recording && !strings.HasSuffix(a.Worker, ":"+s.pid) {
					j.problem(id, "attempt %d is recorded by worker %q; the worker process that ran it has pid %s", a.Attempt, a.Worker, s.pid)
				}
			}
		}
	}
	var last emq.FailedAttempt
	if n := len(info.Failures); n > 0 {
		last = info.Failures[n-1]
	}
	switch {
	case last.Attempt == info.Attempts && last.Attempt > 0:
		j.counts["died_at_set"]++
		if !info.DiedAt.Equal(last.At) {
			j.problem(id, "its last recorded attempt is its last (%d, at %v), yet Get reads it dead since %v", last.Attempt, last.At, info.DiedAt)
		}
	default:
		j.counts["died_at_unknown"]++
		if !info.DiedAt.IsZero() {
			j.problem(id, "its last attempt (%d) is not recorded (the last recorded is %d), yet Get reads it dead since %v: a time of death is never guessed", info.Attempts, last.Attempt, info.DiedAt)
		}
	}
	s, known := leases[info.Attempts]
	switch {
	case known && s.outcome == recBuried && s.lang == LangOld:
		j.counts["old_burials"]++
		if !info.DiedAt.IsZero() {
			j.problem(id, "a %s worker (pid %s) buried it, recording nothing, yet Get reads it dead since %v", oldRelease, s.pid, info.DiedAt)
		}
	case known && s.outcome == recBuried:
		j.counts["new_burials"]++
		if j.recording && (info.DiedAt.IsZero() || last.Class != emq.FailureClassError) {
			j.problem(id, "a new-side worker (pid %s) buried it after its handler failed, yet Get reads it dead since %v with the last recorded attempt %v", s.pid, info.DiedAt, last)
		}
	default:
		j.counts["reap_burials"]++
	}
	if j.recording {
		for tok, s := range leases {
			if s.lang == LangGo && s.failed && (s.outcome == recRetried || s.outcome == recBuried) && !recorded[tok] {
				j.problem(id, "a new-side worker (pid %s) settled attempt %d after its handler failed (%c), yet it is not recorded", s.pid, tok, s.outcome)
			}
		}
	}
}

// finish judges the run as a whole: with recording false, a new side that
// recorded its own failures anyway means the flag is stale.
func (j *mixedJudge) finish() {
	j.counts["new_side_records"] = j.ownRecords
	if !j.recording && j.ownRecords > 0 {
		j.problems = append(j.problems, fmt.Sprintf("the new side's worker recorded %d failed attempts of its own, yet newSideRecords is false: set it (internal/chaos/mixed.go) so that the checks that need a recording worker run", j.ownRecords))
	}
}
