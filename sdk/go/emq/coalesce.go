package emq

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// pusher coalesces the concurrent pushes of one queue of a client into
// push_many calls (see Queue.Push), those with admission options into
// add_many calls, and those with a deduplication key into add_dedup
// calls (see Queue.PushDedup), each batch of one mode: a push that meets no batch in flight
// is sent at once; the pushes that arrive while one is in flight wait, and
// are sent together when no batch is in flight any more, when the linger
// expires, or when a full batch waits.
type pusher struct {
	q *Queue

	mu     sync.Mutex
	wait   []*pushReq  // the pushes not yet taken into a batch, oldest first
	flying int         // batches taken and not yet answered
	armed  bool        // timer runs: the linger of the pushes waiting
	timer  *time.Timer // fires the linger, when the client has one
}

// pushReq is one caller's push waiting in a pusher.
type pushReq struct {
	ctx   context.Context
	job   pushJob
	key   string // the deduplication key, with mode.dedup
	mode  pushMode
	state atomic.Int32 // reqWaiting, then reqTaken (by a batch) or reqAbandoned (by its caller)
	done  chan struct{}
	ok    bool                     // set before done is closed
	rec   wire.AddDedupPolicyReply // with mode.dedup, set before done is closed
	err   error                    // set before done is closed
}

// pushMode is how a push is sent: with dedup set, in add_dedup calls
// under opts (its policy and options); with admit set, in add_many calls
// with opts; otherwise in push_many calls, as a push without options.
type pushMode struct {
	admit bool
	dedup bool
	opts  admitOptions
}

// The states of a pushReq.
const (
	reqWaiting int32 = iota
	reqTaken
	reqAbandoned
)

// pusher returns the client's coalescer of q's queue, made on first use
// and shared by every handle of that queue.
func (c *Client) pusher(q *Queue) *pusher {
	if p, ok := c.pushers.Load(q.Name()); ok {
		return p.(*pusher)
	}
	p := &pusher{q: q}
	if c.pushLinger > 0 {
		p.timer = time.AfterFunc(time.Hour, p.linger)
		p.timer.Stop()
	}
	got, _ := c.pushers.LoadOrStore(q.Name(), p)
	return got.(*pusher)
}

// push queues job, starts a batch when one is due, and waits for the
// job's answer or the end of ctx.
func (p *pusher) push(ctx context.Context, job pushJob, mode pushMode) (bool, error) {
	r := &pushReq{ctx: ctx, job: job, mode: mode, done: make(chan struct{})}
	if !p.await(r) {
		return false, ctx.Err()
	}
	return r.ok, r.err
}

// pushDedup queues job for an add_dedup call under o with other
// admissions of equal o, and waits for its record (deferred included: the
// caller resolves it) or the end of ctx.
func (p *pusher) pushDedup(ctx context.Context, job dedupJob, o admitOptions) (wire.AddDedupPolicyReply, error) {
	r := &pushReq{ctx: ctx, job: job.pushJob, key: job.key, mode: pushMode{dedup: true, opts: o}, done: make(chan struct{})}
	if !p.await(r) {
		return wire.AddDedupPolicyReply{}, ctx.Err()
	}
	return r.rec, r.err
}

// await queues r, starts a batch when one is due, and waits for r's answer
// or the end of r.ctx: it reports whether r was answered (its fields may
// be read), false when the caller gives up (with r.ctx.Err()) first.
func (p *pusher) await(r *pushReq) bool {
	ctx := r.ctx
	if ctx.Err() != nil {
		return false
	}
	p.mu.Lock()
	p.wait = append(p.wait, r)
	var batch []*pushReq
	switch {
	case p.flying == 0 || len(p.wait) >= p.q.c.pushMax:
		batch = p.takeLocked()
	case !p.armed && p.timer != nil:
		p.armed = true
		p.timer.Reset(p.q.c.pushLinger)
	}
	p.mu.Unlock()
	if batch != nil {
		go p.send(batch)
	}
	select {
	case <-r.done:
		return true
	case <-ctx.Done():
	}
	if r.state.CompareAndSwap(reqWaiting, reqAbandoned) {
		return false // never sent: left out of every batch
	}
	select {
	case <-r.done:
		return true
	default:
		return false // sent, or being sent: the answer is not awaited
	}
}

// linger sends what waits when the linger of the oldest waiting push
// expired while a batch was in flight.
func (p *pusher) linger() {
	p.mu.Lock()
	p.armed = false
	batch := p.takeLocked()
	p.mu.Unlock()
	if batch != nil {
		go p.send(batch)
	}
}

// takeLocked takes the next batch off the waiting pushes: up to pushMax of
// them and maxBatchBytes of payload (at least one), oldest first, all of
// the oldest one's mode (pushes with admission options go only with
// pushes of equal options), leaving out those whose callers gave up. It
// counts the batch as in flight, and returns nil when nothing live
// waited. p.mu is held.
func (p *pusher) takeLocked() []*pushReq {
	max := p.q.c.pushMax
	var batch []*pushReq
	size, full := 0, false
	keep := p.wait[:0]
	for _, r := range p.wait {
		switch {
		case full:
			keep = append(keep, r)
			continue
		case len(batch) > 0 && r.mode != batch[0].mode:
			keep = append(keep, r) // another mode's: a later batch
			continue
		case len(batch) > 0 && size+len(r.job.payload)+len(r.key) > maxBatchBytes:
			full = true
			keep = append(keep, r)
			continue
		}
		if r.ctx.Err() != nil || !r.state.CompareAndSwap(reqWaiting, reqTaken) {
			continue // its caller returns ctx.Err()
		}
		batch = append(batch, r)
		size += len(r.job.payload) + len(r.key)
		full = len(batch) >= max
	}
	clear(p.wait[len(keep):])
	p.wait = keep
	if len(batch) == 0 {
		return nil
	}
	p.flying++
	return batch
}

// send runs batches: it pushes batch in one push_many call (see pushMany),
// answers each caller, yields once (so that callers pushing again at once
// join what waits), and goes on with the pushes that waited meanwhile once
// no batch is in flight.
func (p *pusher) send(batch []*pushReq) {
	for batch != nil {
		p.run(batch)
		// Let the callers just answered run first: those that push again
		// at once join the next batch rather than wait behind it.
		runtime.Gosched()
		p.mu.Lock()
		p.flying--
		batch = nil
		if p.flying == 0 && len(p.wait) > 0 {
			batch = p.takeLocked()
		}
		p.mu.Unlock()
	}
}

// run sends one batch (of one mode) and answers its callers. A caller whose ctx ended
// before the call is built is left out (it returned ctx.Err()). The call
// runs under a context that ends when every caller's has ended, and keeps
// the first caller's values.
func (p *pusher) run(batch []*pushReq) {
	live := batch[:0]
	for _, r := range batch {
		if r.ctx.Err() == nil {
			live = append(live, r)
		}
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := batchContext(live)
	if mode := live[0].mode; mode.dedup {
		p.runDedup(ctx, cancel, mode.opts, live)
		return
	}
	jobs := make([]pushJob, len(live))
	for i, r := range live {
		jobs[i] = r.job
	}
	var out []bool
	var errs []error
	var err error
	if mode := live[0].mode; mode.admit {
		out, errs, err = p.q.addMany(ctx, mode.opts, jobs)
	} else {
		out, errs, err = p.q.pushMany(ctx, jobs)
	}
	ended := ctx.Err() != nil // every caller's ctx ended first
	cancel()
	answer(live, err, ended, func(i int, r *pushReq) { r.ok, r.err = out[i], errs[i] })
}

// answer answers each caller of a batch and releases it: with the call's
// error when the call failed as a whole, else with its own result (set);
// a caller whose answer is an error after every caller's ctx ended (ended)
// gets its own ctx's error, not the batch's.
func answer(live []*pushReq, err error, ended bool, set func(i int, r *pushReq)) {
	for i, r := range live {
		if err != nil {
			r.err = err
		} else {
			set(i, r)
		}
		if r.err != nil && ended {
			r.ok, r.err = false, r.ctx.Err() // the caller's own, not the batch's
		}
		close(r.done)
	}
}

// runDedup sends live, a batch of admissions with deduplication keys
// under o, in one add_dedup call (see Queue.addDedupEach) under ctx, and
// answers each caller with its record, cancel once the call returned.
func (p *pusher) runDedup(ctx context.Context, cancel context.CancelFunc, o admitOptions, live []*pushReq) {
	jobs := make([]dedupJob, len(live))
	for i, r := range live {
		jobs[i] = dedupJob{pushJob: r.job, key: r.key}
	}
	recs, errs, err := p.q.addDedupEach(ctx, o, jobs)
	ended := ctx.Err() != nil // every caller's ctx ended first
	cancel()
	answer(live, err, ended, func(i int, r *pushReq) { r.rec, r.err = recs[i], errs[i] })
}

// batchContext returns a context that ends once the context of every
// request of batch has ended (never, when one of them never ends), with
// the values of the first one's.
func batchContext(batch []*pushReq) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(batch[0].ctx))
	for _, r := range batch {
		if r.ctx.Done() == nil {
			return ctx, cancel
		}
	}
	var left atomic.Int64
	left.Store(int64(len(batch)))
	stops := make([]func() bool, len(batch))
	for i, r := range batch {
		stops[i] = context.AfterFunc(r.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}
