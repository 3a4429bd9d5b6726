package emq

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"
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
func (q *Queue) Push(ctx context.Context, id ID, payload []byte) (bool, error) {
	call, err := q.pushCall(id, payload)
	if err != nil {
		return false, err
	}
	if err := q.c.ensure(ctx); err != nil {
		return false, err
	}
	n, err := call.Exec(ctx, q.c.rc)
	if n == PushEnqueued {
		q.c.metrics.Add(Enqueued, q.Name(), 1)
	}
	return n == PushEnqueued, err
}

func (q *Queue) pushCall(id ID, payload []byte) (PushCall, error) {
	row, err := q.keys.Row(id)
	if err != nil {
		return PushCall{}, err
	}
	if err := q.c.checkPayload(payload); err != nil {
		return PushCall{}, err
	}
	return PushCall{Row: row, Pending: q.keys.Pending, Wake: q.keys.Wake, ID: id, Payload: rueidis.BinaryString(payload)}, nil
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
func (q *Queue) PushBatch(ctx context.Context, jobs []NewJob) ([]bool, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	execs, err := q.pushExecs(ctx, jobs)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(jobs))
	var errs []error
	enqueued := int64(0)
	for i, r := range q.c.execMany(ctx, ScriptPush, execs) {
		n, err := DecodePush(r)
		if err != nil {
			if errs == nil {
				errs = make([]error, len(jobs))
			}
			errs[i] = err
			continue
		}
		out[i] = n == PushEnqueued
		if out[i] {
			enqueued++
		}
	}
	q.c.metrics.Add(Enqueued, q.Name(), enqueued)
	if errs != nil {
		return out, &BatchError{Errs: errs}
	}
	return out, nil
}

// execMany pipelines many calls of one script with EVALSHA and resends, as
// EVAL, exactly the calls answered NOSCRIPT (a server restarted or failed
// over mid-pipeline), so that each reply stands for its own call.
func (c *Client) execMany(ctx context.Context, s *Script, calls []rueidis.LuaExec) []rueidis.RedisResult {
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
