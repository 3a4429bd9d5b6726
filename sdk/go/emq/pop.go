package emq

import (
	"context"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// popper is how a worker leases jobs and maintains its queue. The worker's
// own is declaredPop; each of its methods rings the doorbell itself when
// it leaves jobs pending that a worker should wake for.
type popper interface {
	// claim leases up to n pending jobs. When it leases none because the
	// queue's rate limit admits no start now (echomq 2.8.0), admit is how
	// long until it does: the claimer waits on the doorbell that long at
	// most, rather than its whole Wait.
	claim(ctx context.Context, n int) (jobs []Job, admit time.Duration, err error)
	// completeClaim completes job and leases up to next pending jobs in
	// the same call (next 0: complete only).
	completeClaim(ctx context.Context, job Job, next int, result []byte) ([]Job, error)
	// promote moves due scheduled jobs to pending; reap takes back
	// expired leases. Each returns how many moved.
	promote(ctx context.Context) (int, error)
	reap(ctx context.Context) (int, error)
}

// declaredPop runs a worker on the 2.2.0 scripts that touch only the keys
// they declare: claim_ids, complete_result_claim_ids (complete_claim_ids
// before 2.4.0), promote_ids and reap_recorded_ids, each through its twin
// that serves a queue with a policy (2.7.0: reap_policy_ids; 2.8.0, which
// honour a rate limit too: claim_rate_ids and complete_rate_ids).
// It keeps a pool of the ids at the head of pending, refilled by a ZRANGE
// sent in the same round trip as a claiming call (one pipelined DoMulti),
// so that the steady state stays one script call per job: each call takes
// distinct ids from the pool, and the script skips those another worker
// took meanwhile (the pool is then read again).
type declaredPop struct {
	w    *Worker
	pool headPool
}

func newDeclaredPop(w *Worker) *declaredPop {
	p := &declaredPop{w: w}
	p.pool.size = 2*w.opt.Concurrency + w.opt.Batch
	p.pool.low = w.opt.Concurrency
	return p
}

// headPool is a worker's view of the head of its queue's pending set.
type headPool struct {
	mu      sync.Mutex
	ids     []string        // head ids, oldest first, none handed out
	taken   map[string]bool // ids handed to calls not answered yet
	reads   int             // head reads in flight
	settled map[string]bool // ids answered while a read was in flight: a read sent before cannot know them gone
	stale   bool            // a call skipped ids: read the head again
	size    int             // ids a read asks for
	low     int             // read again when fewer are left
}

// take hands out up to n distinct ids of the pool and says whether the
// call should read the head too: when the pool runs low or went stale and
// no read is on its way already, or always with mustRead.
func (p *headPool) take(n int, mustRead bool) (ids []string, read bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.taken == nil {
		p.taken, p.settled = map[string]bool{}, map[string]bool{}
	}
	n = min(n, len(p.ids))
	ids = append([]string(nil), p.ids[:n]...)
	p.ids = p.ids[n:]
	for _, id := range ids {
		p.taken[id] = true
	}
	read = mustRead || (p.reads == 0 && (p.stale || len(p.ids) < p.low))
	if read {
		p.stale = false
		p.reads++
	}
	return ids, read
}

// done settles a call that took ids: skipped says the script left some of
// them (another worker had them), head is what the call's read found when
// read is set (nil when the read failed).
func (p *headPool) done(ids []string, skipped bool, head []string, read bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		delete(p.taken, id)
		if p.reads > 0 {
			p.settled[id] = true
		}
	}
	if !read {
		p.stale = p.stale || skipped
		return
	}
	p.reads--
	if head != nil {
		fresh := make([]string, 0, len(head))
		for _, id := range head {
			if !p.taken[id] && !p.settled[id] {
				fresh = append(fresh, id)
			}
		}
		p.ids = fresh
	} else {
		p.stale = true
	}
	if p.reads == 0 {
		clear(p.settled)
	}
}

// headRead is the ZRANGE of the pool's refill.
func (p *declaredPop) headRead() rueidis.Completed {
	return p.w.q.headCmd(p.w.q.keys.Pending, p.pool.size)
}

// call runs one script call, with the head read pipelined behind it when
// read is set, and returns the script's reply and the head (nil when not
// read or when the read failed). A script the server does not hold is
// sent again as EVAL.
func (p *declaredPop) call(ctx context.Context, s *wire.Script, keys, args []string, read bool) (rueidis.RedisResult, []string) {
	r, head, _ := p.callThen(ctx, s, keys, args, read, nil)
	return r, head
}

// callThen is call with a second script call, then, pipelined last in the
// same round trip when not nil (its reply is returned; a script the server
// does not hold is sent again as EVAL, like the first).
func (p *declaredPop) callThen(ctx context.Context, s *wire.Script, keys, args []string, read bool, then *scriptExec) (rueidis.RedisResult, []string, rueidis.RedisResult) {
	rc := p.w.q.c.rc
	cmds := rueidis.Commands{rc.B().Evalsha().Sha1(s.SHA1).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()}
	if read {
		cmds = append(cmds, p.headRead())
	}
	if then != nil {
		cmds = append(cmds, rc.B().Evalsha().Sha1(then.s.SHA1).Numkeys(int64(len(then.x.Keys))).Key(then.x.Keys...).Arg(then.x.Args...).Build())
	}
	res := rc.DoMulti(ctx, cmds...)
	r := res[0]
	if e, ok := rueidis.IsRedisErr(r.Error()); ok && e.IsNoScript() {
		r = rc.Do(ctx, rc.B().Eval().Script(s.Source).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build())
	}
	var tr rueidis.RedisResult
	if then != nil {
		tr = res[len(res)-1]
		if e, ok := rueidis.IsRedisErr(tr.Error()); ok && e.IsNoScript() {
			tr = rc.Do(ctx, rc.B().Eval().Script(then.s.Source).Numkeys(int64(len(then.x.Keys))).Key(then.x.Keys...).Arg(then.x.Args...).Build())
		}
	}
	var head []string
	if read {
		h, err := res[1].AsStrSlice()
		if err == nil {
			head = h
			if head == nil {
				head = []string{}
			}
		}
	}
	return r, head, tr
}

// scriptExec is one call of a script.
type scriptExec struct {
	s *wire.Script
	x rueidis.LuaExec
}

func claimIDsJob(arr []rueidis.RedisMessage) (Job, error) {
	r, err := wire.DecodeClaimRateIDsRecord(arr)
	return Job{ID: r.ID, Token: r.Token, Payload: []byte(r.Payload), Deadline: time.UnixMilli(r.DeadlineMS)}, err
}

// claim leases up to n jobs of the pool's ids with claim_rate_ids (claim_ids
// in either layout, under every policy), reading the head first when the
// pool is empty, and again (up to headRetries times) when every id it
// tried was taken while pending is not empty; it returns none at once when
// the queue's policy holds claims back (Queue.held), with how long until
// its rate limit admits a start when that is what holds them.
func (p *declaredPop) claim(ctx context.Context, n int) ([]Job, time.Duration, error) {
	q := p.w.q
	if err := q.c.ensure(ctx); err != nil {
		return nil, 0, err
	}
	checked := false
	for try := 0; try < headRetries; try++ {
		ids, read := p.pool.take(n, false)
		if len(ids) == 0 {
			if !read {
				// Another call's read is on its way; read too rather than wait.
				_, read = p.pool.take(0, true)
			}
			head, err := q.c.rc.Do(ctx, p.headRead()).AsStrSlice()
			if err != nil {
				p.pool.done(nil, false, nil, true)
				return nil, 0, err
			}
			if head == nil {
				head = []string{}
			}
			p.pool.done(nil, false, head, true)
			if len(head) == 0 {
				return nil, 0, nil
			}
			continue
		}
		x := q.claimIDsExec(p.w.opt.Lease, ids)
		r, head := p.call(ctx, wire.ScriptClaimRateIDs, x.Keys, x.Args, read)
		jobs, err := p.w.records(ctx, r, wire.ScriptClaimRateIDs.Name, claimIDsJob)
		p.pool.done(ids, err == nil && len(jobs) < len(ids), head, read)
		if err != nil || len(jobs) > 0 {
			return jobs, 0, err
		}
		if !checked {
			// Nothing leased of ids that were pending: taken by other
			// workers, or held back by the queue's policy (paused, at its
			// concurrency cap, or its rate limit admitting no start now),
			// when the claimer waits on the doorbell as on an empty queue
			// (for a rate limit, until it admits a start): resume, the
			// room a settle frees and a changed limit ring it.
			checked = true
			if held, admit := q.held(ctx); held {
				return nil, admit, nil
			}
		}
	}
	return nil, 0, nil
}

// completeClaim completes job with complete_rate_ids (complete_result_claim_ids
// in either layout, its next leases under every policy), keeping
// result as the worker's KeepResults says, leasing up to next ids of the
// pool in the same call. The script deletes the job's failure record,
// progress report and retry policy itself.
func (p *declaredPop) completeClaim(ctx context.Context, job Job, next int, result []byte) ([]Job, error) {
	q := p.w.q
	if err := q.c.ensure(ctx); err != nil {
		return nil, err
	}
	var ids []string
	read := false
	if next > 0 {
		ids, read = p.pool.take(next, false)
	}
	row, _ := q.keys.Row(job.ID)
	c := Completion{Result: result, Keep: p.w.opt.KeepResults, EventsMax: int(p.w.eventsMax)}
	call := q.completeResultCall(row, job.ID, job.Token, p.w.opt.Lease, q.rawRows(ids), nil, c)
	r, head := p.call(ctx, wire.ScriptCompleteRateIDs, call.Keys(), append(call.Args(), ids...), read)
	jobs, err := p.w.records(ctx, r, wire.ScriptCompleteRateIDs.Name, completeResultJob)
	p.pool.done(ids, err == nil && len(jobs) < len(ids), head, read)
	return jobs, err
}

func completeResultJob(arr []rueidis.RedisMessage) (Job, error) {
	r, err := wire.DecodeCompleteRateIDsRecord(arr)
	return Job{ID: r.ID, Token: r.Token, Payload: []byte(r.Payload), Deadline: time.UnixMilli(r.DeadlineMS)}, err
}

// maintenanceRounds bounds the calls one maintenance pass makes per set.
const maintenanceRounds = 100

// promote promotes the due jobs at the head of the schedule with
// promote_ids, maintenanceBatch ids a call, while a full batch read moved
// some.
func (p *declaredPop) promote(ctx context.Context) (int, error) {
	total := 0
	for range maintenanceRounds {
		n, read, err := p.w.q.promoteHead(ctx, maintenanceBatch)
		total += n
		if err != nil || n == 0 || read < maintenanceBatch {
			return total, err
		}
	}
	return total, nil
}

// reap reaps the expired leases at the head of the active set with
// reap_recorded_ids, recording each as a lost lease and burying by the
// job's own attempts when it has them, maintenanceBatch ids a call, while
// a full batch read moved some.
func (p *declaredPop) reap(ctx context.Context) (int, error) {
	total := 0
	for range maintenanceRounds {
		n, read, err := p.w.q.reapRecordedHead(ctx, maintenanceBatch, int(p.w.opt.MaxAttempts), p.w.eventsMax)
		total += n
		if err != nil || n == 0 || read < maintenanceBatch {
			return total, err
		}
	}
	return total, nil
}
