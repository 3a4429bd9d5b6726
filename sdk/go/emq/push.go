package emq

import (
	"context"
	"fmt"
	"slices"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// NewJob is a job to admit: its id (of WorkKind) and payload, and
// (echomq 2.5.0) its deduplication key.
type NewJob struct {
	ID      ID
	Payload []byte
	// DedupKey is the job's deduplication key (any string; empty for
	// none): PushBatchDedup and PushBatchWith admit a batch with any key
	// in add_dedup calls under the batch's WithDedup policy. The other
	// pushes ignore it.
	DedupKey string
}

// Push admits a job like Enqueue and rings the queue's doorbell, so that an
// idle worker blocked on it starts the job within milliseconds. It reports
// false for a duplicate id (the row is left untouched); an id of another
// kind than WorkKind is refused with ErrKind. A malformed id or a payload
// over the cap is refused before anything is sent.
//
// Concurrent pushes to one queue of a client are coalesced: a push that
// meets no batch of its queue in flight is sent at once; pushes arriving
// while one is in flight wait for it to return and then go together in one
// push_many script call, or go after Options.PushLinger (default 1ms), or
// as soon as Options.PushMaxBatch of them wait. Each caller still gets its
// own answer: true, false for a duplicate (a second push of an id inside
// one batch is one), or its own refusal — when push_many refuses a batch
// as a whole (an id of another kind among them), its jobs are pushed one
// by one, so only the offending caller sees ErrKind. A caller whose ctx
// ends before its batch is sent is left out of it and gets ctx.Err(); one
// whose ctx ends after that gets ctx.Err() too, and its job may or may not
// have been admitted. Options.DisableCoalescing makes every Push a call of
// its own.
//
// PushWith (echomq 2.4.0) is Push with options: a relative Delay, the
// job's own Attempts and WithBackoff.
//
// A push is idempotent while the job exists: pushing an id again after an
// error (a timeout, a lost connection) never makes a second job while the
// first is queued, running or dead. Once the job completed its row is
// retired, and the same id admits a new job: retry a failed push soon, not
// after the job may have run.
//
// Push does that itself across a reconnect: a push (or a batch) that
// failed in transport (the server restarted, the connection was killed) is
// sent again on a fresh, re-fenced connection, a few times within a short
// bounded backoff and ctx; an error after that matches ErrConnection. A
// keyspace that came back with another major refuses the resend with a
// *FenceError, and nothing is written. Should the lost attempt have
// admitted the job, the resend reports false (a duplicate).
func (q *Queue) Push(ctx context.Context, id ID, payload []byte) (enqueued bool, err error) {
	return q.PushWith(ctx, id, payload)
}

// PushWith is Push with options (echomq 2.4.0): Delay admits the job to
// run after a delay measured on the server's clock, Attempts and
// WithBackoff give it a retry policy of its own, which the server applies
// instead of the worker's. Such a push goes in an add_many call, coalesced
// only with pushes of equal options (see AddMany); without options (or
// with options that change nothing) it is exactly Push, a push_many call
// through the coalescer. An option out of range is refused with
// ErrArgument before anything is sent.
func (q *Queue) PushWith(ctx context.Context, id ID, payload []byte, opts ...PushOption) (enqueued bool, err error) {
	if len(opts) > 0 {
		o, plain, err := admitOf(opts)
		if err != nil {
			return false, err
		}
		if !plain {
			return q.pushAdmit(ctx, id, payload, o)
		}
	}
	if !q.c.coalesce {
		err = q.c.idempotent(ctx, func(ctx context.Context) (err error) {
			enqueued, err = q.pushOnce(ctx, id, payload)
			return err
		})
		return enqueued, err
	}
	job, err := q.pushJob(id, payload)
	if err != nil {
		return false, err
	}
	return q.p.push(ctx, job, pushMode{})
}

// pushAdmit is Push with admission options: one add_many call of its own,
// or coalesced with pushes of equal options.
func (q *Queue) pushAdmit(ctx context.Context, id ID, payload []byte, o admitOptions) (bool, error) {
	if !q.c.coalesce {
		out, err := q.AddMany(ctx, []NewJob{{ID: id, Payload: payload}}, func(x *admitOptions) { *x = o })
		if err != nil {
			return false, err
		}
		return out[0].Enqueued, nil
	}
	job, err := q.pushJob(id, payload)
	if err != nil {
		return false, err
	}
	return q.p.push(ctx, job, pushMode{admit: true, opts: o})
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
			return nil, errorf("job %d: %w", i, err)
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

// PushBatch admits many jobs in push_many script calls of up to
// Options.PushMaxBatch jobs each (default 128), pipelined in one round
// trip (per cluster node). Malformed ids and payloads over the cap are
// refused before anything is sent. The result tells, per job, whether it
// was enqueued (false: a duplicate, also for a second job of one id in the
// batch); when some jobs fail the error is a *BatchError and the others
// still took effect. A chunk push_many refuses as a whole (an id of
// another kind in it) is pushed again job by job, so that only the
// offending jobs are reported, with ErrKind.
//
// Like Push, it resends across a reconnect: the chunks whose calls failed
// in transport, and only those, are pushed again on a fresh, re-fenced
// connection, a few times within a short backoff and ctx (a resent job the
// lost attempt had admitted reports false, a duplicate). A job still
// failing then is reported in the *BatchError matching ErrConnection. A
// keyspace refused by the fence before anything was written is the error
// itself, with no result.
//
// PushBatchWith (echomq 2.4.0) is PushBatch with options.
func (q *Queue) PushBatch(ctx context.Context, jobs []NewJob) ([]bool, error) {
	return q.PushBatchWith(ctx, jobs)
}

// PushBatchWith is PushBatch with options (echomq 2.4.0; see PushWith):
// the jobs go in add_many calls instead, all with the same options, cut,
// pipelined, resent and reported as PushBatch's push_many calls are.
// Without options it is exactly PushBatch. A batch with a DedupKey on any
// job (echomq 2.5.0) is PushBatchDedup's, under the WithDedup policy, and
// reports true for a job admitted or parked; PushBatchDedup tells more.
func (q *Queue) PushBatchWith(ctx context.Context, jobs []NewJob, opts ...PushOption) ([]bool, error) {
	o, plain, err := admitOf(opts)
	if err != nil {
		return nil, err
	}
	if slices.ContainsFunc(jobs, func(j NewJob) bool { return j.DedupKey != "" }) {
		rs, err := q.PushBatchDedup(ctx, jobs, opts...)
		if rs == nil {
			return nil, err
		}
		out := make([]bool, len(rs))
		for i, r := range rs {
			out[i] = r.Enqueued()
		}
		return out, err
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	pj := make([]pushJob, len(jobs))
	for i, j := range jobs {
		var err error
		if pj[i], err = q.pushJob(j.ID, j.Payload); err != nil {
			return nil, errorf("job %d: %w", i, err)
		}
	}
	var out []bool
	var errs []error
	if plain {
		out, errs, err = q.pushMany(ctx, pj)
	} else {
		out, errs, err = q.addMany(ctx, o, pj)
	}
	if err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return out, &BatchError{Errs: errs}
		}
	}
	return out, nil
}

// pushJob is a job checked for a push: its row, id and payload.
type pushJob struct {
	row     string
	id      ID
	payload string
}

// pushJob checks a job, refusing a malformed id or a payload over the cap
// before anything is sent.
func (q *Queue) pushJob(id ID, payload []byte) (pushJob, error) {
	row, err := q.keys.Row(id)
	if err != nil {
		return pushJob{}, err
	}
	if err := q.c.checkPayload(payload); err != nil {
		return pushJob{}, err
	}
	return pushJob{row: row, id: id, payload: rueidis.BinaryString(payload)}, nil
}

// pushUnit is one script call of pushMany: jobs[lo:hi] in one push_many
// call, or a single job in one push call.
type pushUnit struct {
	lo, hi int
	single bool
}

// chunks cuts jobs into push_many calls of at most c.pushMax jobs and
// maxBatchBytes of payload (a larger job goes alone); a unit of one job is
// a push call.
func (c *Client) chunks(jobs []pushJob) []pushUnit {
	var units []pushUnit
	for lo := 0; lo < len(jobs); {
		hi, size := lo+1, len(jobs[lo].payload)
		for hi < len(jobs) && hi-lo < c.pushMax && size+len(jobs[hi].payload) <= maxBatchBytes {
			size += len(jobs[hi].payload)
			hi++
		}
		units = append(units, pushUnit{lo: lo, hi: hi, single: hi-lo == 1})
		lo = hi
	}
	return units
}

// pushMany admits jobs (checked by pushJob) in push_many calls cut by
// chunks, pipelined, and returns per job whether it was enqueued and its
// error, marked with ErrConnection when it failed in transport. A call
// push_many refuses (any error reply: EMQKIND, WRONGTYPE on a row, ...) is
// replaced at once by one push call per job, so that each job gets its own
// answer (a push is idempotent: nothing of the refused call was written).
// The calls that failed in transport are resent, whole, on a fresh,
// re-fenced connection, up to resendAttempts attempts within ctx. err is
// the fence's refusal when it came before anything was written, with no
// results. The jobs admitted are counted as Enqueued.
func (q *Queue) pushMany(ctx context.Context, jobs []pushJob) (out []bool, errs []error, err error) {
	out = make([]bool, len(jobs))
	errs = make([]error, len(jobs))
	todo := q.c.chunks(jobs)
	err = q.c.ensure(ctx)
	if err != nil && !transient(err) {
		return nil, nil, err
	}
	settled, enqueued := 0, int64(0)
	defer func() { q.c.metrics.Add(Enqueued, q.Name(), enqueued) }()
	fail := func(u pushUnit, err error) {
		for i := u.lo; i < u.hi; i++ {
			errs[i] = err
		}
	}
	for attempt := 0; attempt < resendAttempts && len(todo) > 0; attempt++ {
		if attempt > 0 {
			if d := resendWait(attempt); (d > 0 && !pause(ctx, d)) || ctx.Err() != nil {
				break
			}
			err = q.c.ensure(ctx)
			if err != nil && !transient(err) && settled == 0 {
				return nil, nil, err // the keyspace came back refused: nothing was written
			}
		}
		if err != nil {
			for _, u := range todo {
				fail(u, err)
			}
			if !transient(err) || neverSent(err) {
				break // refused, or no connection came within the policy (sendClient waited)
			}
			continue
		}
		var again []pushUnit
		for round := todo; len(round) > 0; {
			scripts := make([]*wire.Script, len(round))
			calls := make([]rueidis.LuaExec, len(round))
			for j, u := range round {
				scripts[j], calls[j] = q.pushExec(jobs, u)
			}
			var split []pushUnit
			for j, r := range q.c.execScripts(ctx, scripts, calls) {
				u := round[j]
				if u.single {
					n, err := wire.DecodePush(r)
					errs[u.lo] = err
					switch {
					case err == nil:
						settled++
						if out[u.lo] = n == wire.PushEnqueued; out[u.lo] {
							enqueued++
						}
					case transient(err) && !neverSent(err):
						again = append(again, u)
					}
					continue
				}
				recs, err := wire.DecodePushMany(r)
				if err == nil && len(recs) != u.hi-u.lo {
					err = errorf("emq: %s: %d records for %d jobs", wire.ScriptPushMany.Name, len(recs), u.hi-u.lo)
				}
				switch {
				case err == nil:
					for k, rec := range recs {
						i := u.lo + k
						errs[i] = nil
						if out[i] = rec.Enqueued == wire.PushEnqueued; out[i] {
							enqueued++
						}
					}
					settled += len(recs)
				case transient(err):
					fail(u, err)
					if !neverSent(err) { // sendClient already waited for a connection
						again = append(again, u)
					}
				case ctx.Err() != nil:
					fail(u, err)
				default:
					for i := u.lo; i < u.hi; i++ {
						split = append(split, pushUnit{lo: i, hi: i + 1, single: true})
					}
				}
			}
			round = split
		}
		todo = again
	}
	for i, err := range errs {
		errs[i] = connectionError(err)
	}
	return out, errs, nil
}

// pushExec is the script and call of unit u of jobs.
func (q *Queue) pushExec(jobs []pushJob, u pushUnit) (*wire.Script, rueidis.LuaExec) {
	if u.single {
		j := jobs[u.lo]
		call := wire.PushCall{Row: j.row, Pending: q.keys.Pending, Wake: q.keys.Wake, ID: j.id, Payload: j.payload}
		return wire.ScriptPush, call.LuaExec()
	}
	call := wire.PushManyCall{Pending: q.keys.Pending, Wake: q.keys.Wake, Rows: make([]string, 0, u.hi-u.lo), Entries: make([]wire.PushManyEntry, 0, u.hi-u.lo)}
	for _, j := range jobs[u.lo:u.hi] {
		call.Rows = append(call.Rows, j.row)
		call.Entries = append(call.Entries, wire.PushManyEntry{ID: j.id, Payload: j.payload})
	}
	return wire.ScriptPushMany, call.LuaExec()
}

// execMany pipelines many calls of one script with EVALSHA and resends, as
// EVAL, exactly the calls answered NOSCRIPT (a server restarted or failed
// over mid-pipeline), so that each reply stands for its own call.
func (c *Client) execMany(ctx context.Context, s *wire.Script, calls []rueidis.LuaExec) []rueidis.RedisResult {
	scripts := make([]*wire.Script, len(calls))
	for i := range scripts {
		scripts[i] = s
	}
	return c.execScripts(ctx, scripts, calls)
}

// execScripts is execMany with a script per call: calls[i] runs
// scripts[i].
func (c *Client) execScripts(ctx context.Context, scripts []*wire.Script, calls []rueidis.LuaExec) []rueidis.RedisResult {
	cmds := make(rueidis.Commands, len(calls))
	for i, x := range calls {
		cmds[i] = c.rc.B().Evalsha().Sha1(scripts[i].SHA1).Numkeys(int64(len(x.Keys))).Key(x.Keys...).Arg(x.Args...).Build()
	}
	return c.execAgain(ctx, scripts, calls, cmds, false)
}

// execScriptsRO is execScripts for scripts that only read, sent as
// EVALSHA_RO (EVAL_RO when the server does not hold one): the server
// checks their keys for reading only, so a read-only ACL user (an
// observing dashboard's) runs them, and a script that tried to write would
// be refused.
func (c *Client) execScriptsRO(ctx context.Context, scripts []*wire.Script, calls []rueidis.LuaExec) []rueidis.RedisResult {
	cmds := make(rueidis.Commands, len(calls))
	for i, x := range calls {
		cmds[i] = c.evalshaRO(scripts[i], x)
	}
	return c.execAgain(ctx, scripts, calls, cmds, true)
}

// evalshaRO is the EVALSHA_RO of a read-only script's call.
func (c *Client) evalshaRO(s *wire.Script, x rueidis.LuaExec) rueidis.Completed {
	return c.rc.B().EvalshaRo().Sha1(s.SHA1).Numkeys(int64(len(x.Keys))).Key(x.Keys...).Arg(x.Args...).Build()
}

// evalRO is the EVAL_RO of a read-only script's call.
func (c *Client) evalRO(s *wire.Script, x rueidis.LuaExec) rueidis.Completed {
	return c.rc.B().EvalRo().Script(s.Source).Numkeys(int64(len(x.Keys))).Key(x.Keys...).Arg(x.Args...).Build()
}

// execAgain sends cmds, the EVALSHA (EVALSHA_RO with ro) of calls, and
// sends each that met NOSCRIPT again as EVAL (EVAL_RO).
func (c *Client) execAgain(ctx context.Context, scripts []*wire.Script, calls []rueidis.LuaExec, cmds rueidis.Commands, ro bool) []rueidis.RedisResult {
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
		if ro {
			evals[j] = c.evalRO(scripts[i], x)
			continue
		}
		evals[j] = c.rc.B().Eval().Script(scripts[i].Source).Numkeys(int64(len(x.Keys))).Key(x.Keys...).Arg(x.Args...).Build()
	}
	for j, r := range c.rc.DoMulti(ctx, evals...) {
		res[again[j]] = r
	}
	return res
}
