package emq

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// Failure says why an attempt failed, as RetryFailed and BuryFailed
// record it in the job's failure record (echomq 2.3.0).
type Failure struct {
	// Class is why the attempt failed: a word of the failure_class
	// vocabulary (FailureClasses). Any other is refused with ErrArgument
	// before anything is sent.
	Class FailureClass
	// Worker names the worker that ran the attempt; the record keeps its
	// first 128 bytes.
	Worker string
	// Message is the error's text; the record keeps its first 2048 bytes.
	Message string
}

// FailedAttempt is one failed attempt of a job, as its failure record
// holds it.
type FailedAttempt struct {
	Attempt int64        // the attempt that failed: the token its lease held
	At      time.Time    // when it was recorded (server clock)
	Class   FailureClass // why; a word of a later minor's vocabulary is kept as it is
	Worker  string       // the worker that ran it; empty for a lost lease
	Message string       // the error's text
}

// String renders the attempt on one line: "attempt 2 at 2026-…Z: error by
// w1: boom".
func (a FailedAttempt) String() string {
	s := "attempt " + strconv.FormatInt(a.Attempt, 10) + " at " + a.At.UTC().Format(time.RFC3339Nano) + ": " + string(a.Class)
	if a.Worker != "" {
		s += " by " + a.Worker
	}
	if a.Message != "" {
		s += ": " + a.Message
	}
	return s
}

// failureCheck refuses f before anything is sent when its class is not
// a word of the vocabulary.
func failureCheck(f Failure) error {
	if !f.Class.Registered() {
		return errorf("%w: failure class %q is not one of %v", ErrArgument, string(f.Class), FailureClasses())
	}
	return nil
}

// RetryFailed hands an active job back to run again after delay, as Retry
// does, and records the failed attempt in the job's failure record (its
// token, the server time and f) in the same atomic call. It returns the
// run-at. A stale token is refused with ErrStale and nothing is recorded;
// a negative delay or a class outside the vocabulary is refused with
// ErrArgument before anything is sent.
func (q *Queue) RetryFailed(ctx context.Context, id ID, token int64, delay time.Duration, f Failure) (_ time.Time, err error) {
	defer q.c.afterFailure(ctx, &err)
	if delay < 0 {
		return time.Time{}, errorf("%w: negative delay %v", ErrArgument, delay)
	}
	if err := failureCheck(f); err != nil {
		return time.Time{}, err
	}
	row, err := q.row(ctx, id)
	if err != nil {
		return time.Time{}, err
	}
	call := wire.RetryFailedCall{Active: q.keys.Active, Row: row, Schedule: q.keys.Schedule, Failures: q.keys.Failures, ID: id, Token: token, DelayMS: ms(delay), Class: f.Class, Worker: f.Worker, Error: f.Message}
	at, err := call.Exec(ctx, q.c.rc)
	if err != nil {
		return time.Time{}, q.legacy(ctx, err, wire.ScriptRetryFailed, "Fail")
	}
	return time.UnixMilli(at), nil
}

// BuryFailed moves an active job to the dead set, as Bury does, and
// records its last failed attempt in the job's failure record in the same
// atomic call: the job is dead since then (JobInfo.DiedAt). A stale token
// is refused with ErrStale and nothing is recorded; a class outside the
// vocabulary is refused with ErrArgument before anything is sent.
func (q *Queue) BuryFailed(ctx context.Context, id ID, token int64, f Failure) (err error) {
	defer q.c.afterFailure(ctx, &err)
	if err := failureCheck(f); err != nil {
		return err
	}
	row, err := q.row(ctx, id)
	if err != nil {
		return err
	}
	call := wire.BuryFailedCall{Active: q.keys.Active, Row: row, Dead: q.keys.Dead, Failures: q.keys.Failures, ID: id, Token: token, Class: f.Class, Worker: f.Worker, Error: f.Message}
	_, err = call.Exec(ctx, q.c.rc)
	return q.legacy(ctx, err, wire.ScriptBuryFailed, "Fail with FailOptions.Bury")
}

// Failures reads a job's recorded failed attempts, oldest first (at most
// the last 10). It is empty when none was recorded — a 2.2 client records
// nothing — and when the job's row is gone: a record its row left behind
// is never read. Get returns the same history with the row. It only
// reads, and is resent across a reconnect like every read.
func (q *Queue) Failures(ctx context.Context, id ID) (attempts []FailedAttempt, err error) {
	row, err := q.keys.Row(id)
	if err != nil {
		return nil, err
	}
	err = q.c.idempotent(ctx, func(ctx context.Context) error {
		if err := q.c.ensureRead(ctx); err != nil {
			return err
		}
		call := wire.FailuresCall{Row: row, Failures: q.keys.Failures, ID: id}
		res := q.c.execScriptsRO(ctx, []*wire.Script{wire.ScriptFailures}, []rueidis.LuaExec{call.LuaExec()})
		attempts, err = decodeFailures(res[0])
		return err
	})
	return attempts, err
}

// FailuresMany reads the failure records of ids as Failures does, in one
// pipelined round trip (one failures call per id): out[i] are the
// recorded attempts of ids[i], oldest first. A dead-set page reads the
// last failure of each of its jobs so. A malformed id is refused before
// anything is sent; no ids sends nothing. It only reads, and is resent
// across a reconnect like every read.
func (q *Queue) FailuresMany(ctx context.Context, ids []ID) (out [][]FailedAttempt, err error) {
	rows, err := q.rowsOf(ids)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	scripts := make([]*wire.Script, len(ids))
	calls := make([]rueidis.LuaExec, len(ids))
	for i, id := range ids {
		call := wire.FailuresCall{Row: rows[i], Failures: q.keys.Failures, ID: id}
		scripts[i], calls[i] = wire.ScriptFailures, call.LuaExec()
	}
	err = q.c.idempotent(ctx, func(ctx context.Context) error {
		if err := q.c.ensureRead(ctx); err != nil {
			return err
		}
		res := q.c.execScriptsRO(ctx, scripts, calls)
		got := make([][]FailedAttempt, len(ids))
		for i, r := range res {
			var err error
			if got[i], err = decodeFailures(r); err != nil {
				return errorf("emq: failures of %s: %w", ids[i], err)
			}
		}
		out = got
		return nil
	})
	return out, err
}

// decodeFailures turns a reply of the failures script into attempts.
func decodeFailures(r rueidis.RedisResult) ([]FailedAttempt, error) {
	recs, err := wire.DecodeFailures(r)
	if err != nil {
		return nil, err
	}
	out := make([]FailedAttempt, len(recs))
	for i, x := range recs {
		out[i] = FailedAttempt{Attempt: x.Attempt, At: time.UnixMilli(x.AtMS), Class: x.Class, Worker: x.Worker, Message: x.Error}
	}
	return out, nil
}

// diedAt is when a job died, by its failure record: the time of the last
// recorded attempt when that attempt is the row's attempts and the row is
// dead; zero when the record does not say (the last attempt was settled
// by a client that records nothing).
func diedAt(state State, attempts int64, history []FailedAttempt) time.Time {
	if state != StateDead || len(history) == 0 {
		return time.Time{}
	}
	if last := history[len(history)-1]; last.Attempt == attempts {
		return last.At
	}
	return time.Time{}
}

// ForgetFailures deletes the failure records of those of ids whose rows
// are gone (a job completed or purged by a client that leaves its record
// behind) and returns how many it deleted; a job whose row exists keeps
// its record. A malformed id is refused before anything is sent; no ids
// sends nothing.
func (q *Queue) ForgetFailures(ctx context.Context, ids []ID) (_ int, err error) {
	defer q.c.afterFailure(ctx, &err)
	rows, err := q.rowsOf(ids)
	if err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, nil
	}
	if err := q.c.ensure(ctx); err != nil {
		return 0, err
	}
	call := wire.ForgetFailuresCall{Failures: q.keys.Failures, Rows: rows, IDs: ids}
	n, err := call.Exec(ctx, q.c.rc)
	return int(n), err
}

// ReapFailedIDs takes back those of ids whose lease expired, as ReapIDs
// does, and records each as a lost lease (FailureClassLeaseLost, no
// worker) in its failure record. It returns how many moved. A negative
// maxAttempts or a malformed id is refused before anything is sent; no
// ids sends nothing.
func (q *Queue) ReapFailedIDs(ctx context.Context, ids []ID, maxAttempts int) (_ int, err error) {
	defer q.c.afterFailure(ctx, &err)
	if maxAttempts < 0 {
		return 0, errorf("%w: max attempts %d", ErrArgument, maxAttempts)
	}
	rows, err := q.rowsOf(ids)
	if err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, nil
	}
	if err := q.c.ensure(ctx); err != nil {
		return 0, err
	}
	call := wire.ReapFailedIDsCall{Active: q.keys.Active, Pending: q.keys.Pending, Dead: q.keys.Dead, Wake: q.keys.Wake, Failures: q.keys.Failures, Rows: rows, MaxAttempts: int64(maxAttempts), IDs: ids}
	n, err := call.Exec(ctx, q.c.rc)
	return int(n), q.legacy(ctx, err, wire.ScriptReapFailedIDs, "ReapRecordedIDs")
}
