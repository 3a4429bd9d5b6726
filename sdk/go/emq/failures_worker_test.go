package emq_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// hexists reports whether the failures hash of e's queue has a record of id.
func (e *workerEnv) recorded(id emq.ID) bool {
	e.t.Helper()
	n, err := do(e.t, e.c, "HEXISTS", e.q.Keys().Failures, id.String()).AsInt64()
	if err != nil {
		e.t.Fatal(err)
	}
	return n == 1
}

func (e *workerEnv) get(id emq.ID) emq.JobInfo {
	e.t.Helper()
	info, ok, err := e.q.Get(ctxT(e.t), id)
	if err != nil || !ok {
		e.t.Fatalf("Get(%s) = %v, %v, %v", id, info, ok, err)
	}
	return info
}

// The worker records why each attempt failed, with its name: a returned
// error (class error), a recovered panic (panic), a handler that ran past
// JobTimeout (timeout), and a lease maintenance took back (lease_lost, no
// worker). A dead job's Get shows its history and when it died; a job that
// completed after failing leaves no record.
func TestWorkerRecordsFailures(t *testing.T) {
	e := newWorkerEnv(t)
	errored, panicked, timedOut, lost, recovered := mint(t, e.c, emq.WorkKind), mint(t, e.c, emq.WorkKind), mint(t, e.c, emq.WorkKind), mint(t, e.c, emq.WorkKind), mint(t, e.c, emq.WorkKind)

	// lost is leased elsewhere and its lease runs out: the worker's
	// maintenance takes it back and records a lost lease.
	if _, err := e.q.Push(ctxT(t), lost, []byte("lost")); err != nil {
		t.Fatal(err)
	}
	if j, ok, err := e.q.Claim(ctxT(t), time.Millisecond); err != nil || !ok || j.ID != lost {
		t.Fatalf("Claim = %v, %v, %v", j, ok, err)
	}
	const name = "test-worker-7"
	const jobTimeout = time.Second
	e.run(func(ctx context.Context, j emq.Job) error {
		switch j.ID {
		case errored:
			return fmt.Errorf("smtp said no\nsecond line (attempt %d)", j.Token)
		case panicked:
			panic("kaboom")
		case timedOut:
			<-ctx.Done()
			return emq.Permanent(ctx.Err())
		case lost:
			return emq.Permanent(errors.New("gave up after the lost lease"))
		case recovered:
			if j.Token == 1 {
				return errors.New("not yet")
			}
		}
		return nil
	}, emq.WorkerOptions{Concurrency: 4, MaxAttempts: 2, Maintenance: 20 * time.Millisecond, Wait: 50 * time.Millisecond,
		JobTimeout: jobTimeout, WorkerName: name, Backoff: func(int64) time.Duration { return time.Millisecond }})
	for _, id := range []emq.ID{errored, panicked, timedOut, recovered} {
		if _, err := e.q.Push(ctxT(t), id, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "four jobs buried, one completed", func() bool {
		s := e.sizes()
		return s[emq.SetDead] == 4 && e.tally.Get(emq.Completed) == 1
	})

	type want struct {
		attempt int64
		class   emq.FailureClass
		worker  string
		message string // a prefix of the recorded text
	}
	cases := map[emq.ID][]want{
		errored:  {{1, emq.FailureClassError, name, "smtp said no\nsecond line (attempt 1)"}, {2, emq.FailureClassError, name, "smtp said no\nsecond line (attempt 2)"}},
		panicked: {{1, emq.FailureClassPanic, name, "emq: handler panic: kaboom"}, {2, emq.FailureClassPanic, name, "emq: handler panic: kaboom"}},
		timedOut: {{1, emq.FailureClassTimeout, name, "emq: the handler ran past its job timeout of 1s"}},
		lost:     {{1, emq.FailureClassLeaseLost, "", ""}, {2, emq.FailureClassError, name, "permanent: gave up after the lost lease"}},
	}
	for id, ws := range cases {
		info := e.get(id)
		if info.State != emq.StateDead || len(info.Failures) != len(ws) {
			t.Errorf("%s: state %s, failures %v; want dead with %d", id, info.State, info.Failures, len(ws))
			continue
		}
		for i, w := range ws {
			f := info.Failures[i]
			if f.Attempt != w.attempt || f.Class != w.class || f.Worker != w.worker || !strings.HasPrefix(f.Message, w.message) || f.At.IsZero() {
				t.Errorf("%s: attempt %d = %+v; want %+v", id, i, f, w)
			}
		}
		last := info.Failures[len(info.Failures)-1]
		if !info.DiedAt.Equal(last.At) {
			t.Errorf("%s: died at %v; want %v, its last attempt's", id, info.DiedAt, last.At)
		}
	}
	if e.recorded(recovered) {
		t.Errorf("the job that completed on its second attempt still has a failure record")
	}
	if _, ok, err := e.q.Get(ctxT(t), recovered); err != nil || ok {
		t.Errorf("Get(recovered) = %v, %v; want it retired", ok, err)
	}
}

// WorkerName defaults to <hostname>:<pid>.
func TestWorkerNameDefault(t *testing.T) {
	e := newWorkerEnv(t)
	id := e.push(1)[0]
	e.run(func(context.Context, emq.Job) error { return emq.Permanent(errors.New("no")) },
		emq.WorkerOptions{Concurrency: 1, Wait: 50 * time.Millisecond})
	eventually(t, 20*time.Second, "the job buried", func() bool { return e.sizes()[emq.SetDead] == 1 })
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	info := e.get(id)
	if len(info.Failures) != 1 || info.Failures[0].Worker != host+":"+strconv.Itoa(os.Getpid()) {
		t.Errorf("failures %v; want one by %s:%d", info.Failures, host, os.Getpid())
	}
	if _, err := emq.NewWorker(e.q, func(context.Context, emq.Job) error { return nil }, emq.WorkerOptions{JobTimeout: -time.Second}); !errors.Is(err, emq.ErrArgument) {
		t.Errorf("NewWorker with a negative JobTimeout = %v; want ErrArgument", err)
	}
}

// A handler that returns nil after its JobTimeout still failed by timeout:
// its job is not completed.
func TestWorkerLateSuccessIsTimeout(t *testing.T) {
	e := newWorkerEnv(t)
	id := e.push(1)[0]
	e.run(func(ctx context.Context, _ emq.Job) error {
		<-ctx.Done()
		return nil
	}, emq.WorkerOptions{Concurrency: 1, MaxAttempts: 1, JobTimeout: 50 * time.Millisecond, Wait: 50 * time.Millisecond})
	eventually(t, 20*time.Second, "the job buried", func() bool { return e.sizes()[emq.SetDead] == 1 })
	info := e.get(id)
	if len(info.Failures) != 1 || info.Failures[0].Class != emq.FailureClassTimeout || !strings.Contains(info.Failures[0].Message, "returned after its job timeout") {
		t.Errorf("failures %v; want one timeout", info.Failures)
	}
}

// plantOrphans leaves n failure records whose rows are gone, as a 2.2
// client does: each job fails once with a record (RetryFailed), runs again
// and is completed by the 2.2 complete script, which leaves the record.
func (e *workerEnv) plantOrphans(n int) []emq.ID {
	e.t.Helper()
	ctx := ctxT(e.t)
	ids := e.push(n)
	k := e.q.Keys()
	for range ids {
		j, ok, err := e.q.Claim(ctx, time.Minute)
		if err != nil || !ok {
			e.t.Fatalf("Claim = %v, %v", ok, err)
		}
		if _, err := e.q.RetryFailed(ctx, j.ID, j.Token, 0, emq.Failure{Class: emq.FailureClassError, Worker: "w22", Message: "boom"}); err != nil {
			e.t.Fatal(err)
		}
	}
	if moved, err := e.q.Promote(ctx, n); err != nil || moved != n {
		e.t.Fatalf("Promote = %d, %v", moved, err)
	}
	for range ids {
		j, ok, err := e.q.Claim(ctx, time.Minute)
		if err != nil || !ok {
			e.t.Fatalf("Claim = %v, %v", ok, err)
		}
		row, _ := k.Row(j.ID)
		call := wire.CompleteCall{Active: k.Active, Row: row, ID: j.ID, Token: j.Token}
		if _, err := call.Exec(ctx, e.c.Redis()); err != nil {
			e.t.Fatal(err)
		}
	}
	return ids
}

// The records a 2.2 client's complete leaves behind are swept by the
// worker's maintenance, a bounded HSCAN slice a tick; a record whose row
// exists is kept.
func TestWorkerSweepsOrphanedRecords(t *testing.T) {
	e := newWorkerEnv(t)
	orphans := e.plantOrphans(150)
	k := e.q.Keys()
	hlen := func() int64 {
		n, err := do(t, e.c, "HLEN", k.Failures).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// A dead job with a record: its row exists, so the sweep keeps it.
	kept := e.push(1)[0]
	j, ok, err := e.q.Claim(ctxT(t), time.Minute)
	if err != nil || !ok || j.ID != kept {
		t.Fatalf("Claim = %v, %v, %v", j, ok, err)
	}
	if err := e.q.BuryFailed(ctxT(t), j.ID, j.Token, emq.Failure{Class: emq.FailureClassError, Worker: "w", Message: "kept"}); err != nil {
		t.Fatal(err)
	}
	if n := hlen(); n != int64(len(orphans))+1 {
		t.Fatalf("HLEN failures = %d; want %d planted", n, len(orphans)+1)
	}
	for _, id := range orphans[:3] {
		if f, err := e.q.Failures(ctxT(t), id); err != nil || len(f) != 0 {
			t.Errorf("Failures(orphan) = %v, %v; want none (a record whose row is gone is never read)", f, err)
		}
	}
	e.run(func(context.Context, emq.Job) error { return nil }, emq.WorkerOptions{Concurrency: 1, Maintenance: 20 * time.Millisecond, Wait: 50 * time.Millisecond})
	eventually(t, 20*time.Second, "the orphaned records swept", func() bool { return hlen() == 1 })
	if !e.recorded(kept) {
		t.Errorf("the sweep deleted the record of a dead job whose row exists")
	}
}

// Purge deletes the job's failure record with its row.
func TestPurgeForgetsFailures(t *testing.T) {
	e := newWorkerEnv(t)
	id := e.push(1)[0]
	j, ok, err := e.q.Claim(ctxT(t), time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := e.q.BuryFailed(ctxT(t), j.ID, j.Token, emq.Failure{Class: emq.FailureClassError, Message: "x"}); err != nil {
		t.Fatal(err)
	}
	if !e.recorded(id) {
		t.Fatal("BuryFailed recorded nothing")
	}
	if ok, err := e.q.Purge(ctxT(t), id); err != nil || !ok {
		t.Fatalf("Purge = %v, %v", ok, err)
	}
	if e.recorded(id) {
		t.Error("Purge left the failure record")
	}
}

// A well-formed record with a class word this SDK does not know (a later
// minor's) decodes, the word kept as it is: planted by a script of the
// test's own, since retry_failed refuses a word outside the vocabulary.
func TestFailuresKeepUnknownClass(t *testing.T) {
	e := newWorkerEnv(t)
	id := e.push(1)[0]
	k := e.q.Keys()
	const plant = "redis.call('HSET', KEYS[1], ARGV[1], cmsgpack.pack({{1, 1700000000000, 'oom_killed', 'w9', 'out of memory'}, {'bad'}})); return 1"
	if err := do(t, e.c, "EVAL", plant, "1", k.Failures, id.String()).Error(); err != nil {
		t.Fatal(err)
	}
	info := e.get(id)
	if len(info.Failures) != 1 {
		t.Fatalf("failures %v; want the one well-formed entry", info.Failures)
	}
	f := info.Failures[0]
	if f.Class != "oom_killed" || f.Class.Registered() || f.Worker != "w9" || f.Message != "out of memory" || f.At.UnixMilli() != 1700000000000 {
		t.Errorf("decoded %+v", f)
	}
	if !info.DiedAt.IsZero() {
		t.Errorf("a pending job died at %v", info.DiedAt)
	}
}

// The worker forgets the record of a job it completes after a failure in
// the completion's own round trip: with maintenance off (no sweep), the
// record is gone once the job is.
func TestWorkerForgetsOnComplete(t *testing.T) {
	e := newWorkerEnv(t)
	ids := e.push(3)
	e.run(func(_ context.Context, j emq.Job) error {
		if j.Token < 3 {
			return errors.New("not yet")
		}
		return nil
	}, emq.WorkerOptions{Concurrency: 2, Maintenance: -1, Wait: 50 * time.Millisecond, Backoff: func(int64) time.Duration { return time.Millisecond }})
	eventually(t, 20*time.Second, "three jobs completed", func() bool { return e.tally.Get(emq.Completed) == 3 })
	for _, id := range ids {
		if e.recorded(id) {
			t.Errorf("%s completed on its third attempt and still has a failure record", id)
		}
	}
}

// The sweep does not wait for the maintenance lock: with another owner
// holding it (a 2.2 worker, which never sweeps), the worker still sweeps
// the orphaned records.
func TestWorkerSweepsWithoutTheLock(t *testing.T) {
	e := newWorkerEnv(t)
	e.plantOrphans(120)
	lock := wire.LockCall{Locks: wire.KeyLocks, Name: wire.LockMaintenance(e.q.Name()), Owner: "a-2.2-worker", TTLMS: time.Hour.Milliseconds()}
	if _, err := lock.Exec(ctxT(t), e.c.Redis()); err != nil {
		t.Fatal(err)
	}
	hlen := func() int64 {
		n, err := do(t, e.c, "HLEN", e.q.Keys().Failures).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := hlen(); n != 120 {
		t.Fatalf("HLEN failures = %d; want 120 planted", n)
	}
	e.run(func(context.Context, emq.Job) error { return nil }, emq.WorkerOptions{Concurrency: 1, Maintenance: 20 * time.Millisecond, Wait: 50 * time.Millisecond})
	eventually(t, 20*time.Second, "the orphaned records swept while another owner holds the maintenance lock", func() bool { return hlen() == 0 })
}
