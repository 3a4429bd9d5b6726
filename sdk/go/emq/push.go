package emq

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// NewJob is a job to admit: its id (of WorkKind) and payload.
type NewJob struct {
	ID      ID
	Payload []byte
}

// Push admits a job like Enqueue and rings the queue's doorbell, so that an
// idle worker blocked on it starts the job within milliseconds. It reports
// false for a duplicate id (the row is left untouched); an id of another
// kind than WorkKind is refused with ErrKind.
//
// A push is idempotent while the job exists: pushing an id again after an
// error (a timeout, a lost connection) never makes a second job while the
// first is queued, running or dead. Once the job completed its row is
// retired, and the same id admits a new job: retry a failed push soon, not
// after the job may have run.
//
// Push does that itself across a reconnect: a push that failed in
// transport (the server restarted, the connection was killed) is sent
// again on a fresh, re-fenced connection, a few times within a short
// bounded backoff and ctx; an error after that matches ErrConnection. A
// keyspace that came back with another major refuses the resend with a
// *FenceError, and nothing is written. Should the lost attempt have
// admitted the job, the resend reports false (a duplicate).
func (q *Queue) Push(ctx context.Context, id ID, payload []byte) (enqueued bool, err error) {
	err = q.c.idempotent(ctx, func(ctx context.Context) (err error) {
		enqueued, err = q.pushOnce(ctx, id, payload)
		return err
	})
	return enqueued, err
}

// pushOnce is one attempt of Push.
func (q *Queue) pushOnce(ctx context.Context, id ID, payload []byte) (bool, error) {
	call, err := q.pushCall(id, payload)
	if err != nil {
		return false, err
	}
	if err := q.c.ensure(ctx); err != nil {
		return false, err
	}
	n, err := call.Exec(ctx, q.c.rc)
	if n == wire.PushEnqueued {
		q.c.metrics.Add(Enqueued, q.Name(), 1)
	}
	return n == wire.PushEnqueued, err
}

func (q *Queue) pushCall(id ID, payload []byte) (wire.PushCall, error) {
	row, err := q.keys.Row(id)
	if err != nil {
		return wire.PushCall{}, err
	}
	if err := q.c.checkPayload(payload); err != nil {
		return wire.PushCall{}, err
	}
	return wire.PushCall{Row: row, Pending: q.keys.Pending, Wake: q.keys.Wake, ID: id, Payload: rueidis.BinaryString(payload)}, nil
}

// pushExecs builds a batch's push calls, refusing a malformed job before
// anything is sent, and fences the keyspace if needed.
func (q *Queue) pushExecs(ctx context.Context, jobs []NewJob) ([]rueidis.LuaExec, error) {
	execs := make([]rueidis.LuaExec, len(jobs))
	for i, j := range jobs {
		call, err := q.pushCall(j.ID, j.Payload)
		if err != nil {
			return nil, fmt.Errorf("job %d: %w", i, err)
		}
		execs[i] = call.LuaExec()
	}
	if err := q.c.ensure(ctx); err != nil {
		return nil, err
	}
	return execs, nil
}

// BatchError reports the jobs of a batch that failed; the others were
// admitted (or were duplicates). Errs is indexed like the batch, nil where
// the job succeeded.
type BatchError struct {
	Errs []error
}

// Error counts the failures and shows the first.
func (e *BatchError) Error() string {
	n, first := 0, error(nil)
	for _, err := range e.Errs {
		if err != nil {
			if first == nil {
				first = err
			}
			n++
		}
	}
	return fmt.Sprintf("emq: %d of %d jobs of the batch failed; first: %v", n, len(e.Errs), first)
}

// Unwrap returns every failure, so errors.Is(err, ErrKind) finds a refusal
// anywhere in the batch.
func (e *BatchError) Unwrap() []error {
	var out []error
	for _, err := range e.Errs {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

// PushBatch admits many jobs in one pipelined round trip (per cluster
// node). Malformed ids are refused before anything is sent. The result
// tells, per job, whether it was enqueued (false: a duplicate); when some
// jobs fail the error is a *BatchError and the others still took effect.
//
// Like Push, it resends across a reconnect: the jobs whose calls failed in
// transport, and only those, are pushed again on a fresh, re-fenced
// connection, a few times within a short backoff and ctx (a resent job the
// lost attempt had admitted reports false, a duplicate). A job still
// failing then is reported in the *BatchError matching ErrConnection.
func (q *Queue) PushBatch(ctx context.Context, jobs []NewJob) ([]bool, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	execs := make([]rueidis.LuaExec, len(jobs))
	for i, j := range jobs {
		call, err := q.pushCall(j.ID, j.Payload)
		if err != nil {
			return nil, fmt.Errorf("job %d: %w", i, err)
		}
		execs[i] = call.LuaExec()
	}
	err := q.c.ensure(ctx)
	if err != nil && !transient(err) {
		return nil, err
	}
	out := make([]bool, len(jobs))
	errs := make([]error, len(jobs))
	todo := make([]int, len(jobs))
	for i := range todo {
		todo[i], errs[i] = i, err // err: nil, or the fence failed in transport
	}
	enqueued, settled := int64(0), 0
	for attempt := 0; attempt < resendAttempts && len(todo) > 0; attempt++ {
		if attempt > 0 {
			if d := resendWait(attempt); (d > 0 && !pause(ctx, d)) || ctx.Err() != nil {
				break
			}
			err = q.c.ensure(ctx)
			if err != nil && !transient(err) && settled == 0 {
				return nil, err // the keyspace came back refused: nothing was written
			}
		}
		if err != nil {
			for _, i := range todo {
				errs[i] = err
			}
			if !transient(err) {
				break
			}
			continue
		}
		calls := make([]rueidis.LuaExec, len(todo))
		for j, i := range todo {
			calls[j] = execs[i]
		}
		var again []int
		for j, r := range q.c.execMany(ctx, wire.ScriptPush, calls) {
			i := todo[j]
			n, err := wire.DecodePush(r)
			errs[i] = err
			switch {
			case err == nil:
				settled++
				out[i] = n == wire.PushEnqueued
				if out[i] {
					enqueued++
				}
			case transient(err):
				again = append(again, i)
			}
		}
		todo = again
	}
	q.c.metrics.Add(Enqueued, q.Name(), enqueued)
	failed := false
	for i, err := range errs {
		if err != nil {
			errs[i], failed = connectionError(err), true
		}
	}
	if failed {
		return out, &BatchError{Errs: errs}
	}
	return out, nil
}

// execMany pipelines many calls of one script with EVALSHA and resends, as
// EVAL, exactly the calls answered NOSCRIPT (a server restarted or failed
// over mid-pipeline), so that each reply stands for its own call.
func (c *Client) execMany(ctx context.Context, s *wire.Script, calls []rueidis.LuaExec) []rueidis.RedisResult {
	cmds := make(rueidis.Commands, len(calls))
	for i, x := range calls {
		cmds[i] = c.rc.B().Evalsha().Sha1(s.SHA1).Numkeys(int64(len(x.Keys))).Key(x.Keys...).Arg(x.Args...).Build()
	}
	res := c.rc.DoMulti(ctx, cmds...)
	var again []int
	for i, r := range res {
		if e, ok := rueidis.IsRedisErr(r.Error()); ok && e.IsNoScript() {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return res
	}
	evals := make(rueidis.Commands, len(again))
	for j, i := range again {
		x := calls[i]
		evals[j] = c.rc.B().Eval().Script(s.Source).Numkeys(int64(len(x.Keys))).Key(x.Keys...).Arg(x.Args...).Build()
	}
	for j, r := range c.rc.DoMulti(ctx, evals...) {
		res[again[j]] = r
	}
	return res
}
