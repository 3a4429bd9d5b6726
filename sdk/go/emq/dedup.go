package emq

import (
	"context"
	"errors"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// echomq 2.5.0, the producer's and the operator's side: admission under a
// caller's deduplication key (add_dedup, replace_dedup), the keys' entries
// (dedup_entries), their sweep (sweep_dedup) and cancellation (cancel_ids).
// The worker's side is in worker_cancel.go.

// DedupPolicy says how an admission with a deduplication key treats the
// key's holder, the job an earlier admission of the key left holding it
// (echomq 2.5.0). WithDedup gives it to PushDedup, PushBatchDedup and
// PushBatchWith; the zero DedupPolicy is until_done, unbounded, released
// as soon as the holder leaves pending, scheduled and active.
type DedupPolicy struct {
	// Mode is a word of the dedup vocabulary (DedupUntilDone,
	// DedupThrottle, DedupDebounce, DedupKeepLast); empty is
	// DedupUntilDone.
	Mode Dedup
	// TTL bounds how long the key is held after the admission that took
	// it, on the server's clock, at millisecond precision (a positive TTL
	// under a millisecond is one): sub-second bounds are fine. 0 is no
	// bound; DedupThrottle needs one.
	TTL time.Duration
	// HoldWhileDead keeps the key held while its holder is dead (hold bit
	// 1): no new job until the dead one is revived or purged.
	HoldWhileDead bool
	// HoldWhileResultKept keeps the key held while its holder's
	// completion record is kept (hold bit 2; see WorkerOptions.KeepResults).
	HoldWhileResultKept bool
	// EventsMax bounds the events stream when an admission replaces a
	// waiting job and reports it (EventReplaced): 0 is the client's
	// Options.EventsMax, negative writes no event.
	EventsMax int
}

// mode is the policy's mode, until_done when empty.
func (p DedupPolicy) mode() Dedup {
	if p.Mode == "" {
		return DedupUntilDone
	}
	return p.Mode
}

// ttlMS is the policy's TTL in milliseconds, rounded up.
func (p DedupPolicy) ttlMS() int64 {
	return int64((p.TTL + time.Millisecond - 1) / time.Millisecond)
}

// hold is the policy's hold bits.
func (p DedupPolicy) hold() int64 {
	h := int64(0)
	if p.HoldWhileDead {
		h |= 1
	}
	if p.HoldWhileResultKept {
		h |= 2
	}
	return h
}

// check refuses, before anything is sent, what add_dedup refuses.
func (p DedupPolicy) check() error {
	m := p.mode()
	switch {
	case !m.Registered():
		return errorf("%w: dedup mode %q is not one of %v", ErrArgument, string(m), Dedups())
	case p.TTL < 0:
		return errorf("%w: negative dedup TTL %v", ErrArgument, p.TTL)
	case m == DedupThrottle && p.TTL == 0:
		return errorf("%w: dedup mode %s needs a TTL above 0", ErrArgument, DedupThrottle)
	}
	return nil
}

// WithDedup sets the deduplication policy of the jobs a push admits with
// a deduplication key (echomq 2.5.0): PushDedup's key, or the DedupKey of
// each job of PushBatchDedup and PushBatchWith. A push without a key
// ignores it. A mode outside the vocabulary, a negative TTL or throttle
// without a TTL is refused with ErrArgument before anything is sent.
func WithDedup(p DedupPolicy) PushOption {
	return func(o *admitOptions) { o.dedup = p }
}

// DedupResult is what an admission with a deduplication key did (echomq
// 2.5.0).
type DedupResult struct {
	// Outcome is AdmissionAdmitted (the job holds the key),
	// AdmissionDuplicate (the key is held, or the job's row exists:
	// nothing was admitted), AdmissionReplaced (the waiting holder, or
	// the parked job, took the payload) or AdmissionParked (keep_last: the
	// job waits behind the key's active holder). Never
	// AdmissionDeferred: the SDK resolves it with replace_dedup.
	Outcome Admission
	// ID is the job admitted or parked; the holder (or the job itself,
	// when its row exists) of a duplicate; the job replaced.
	ID ID
	// RunAt is the run-at of a job admitted (or, debounce, replaced) with
	// a delay, on the server's clock; zero when it is pending, parked or
	// nothing was admitted.
	RunAt time.Time
}

// Enqueued reports whether the admission wrote a new job (admitted or
// parked).
func (r DedupResult) Enqueued() bool {
	return r.Outcome == AdmissionAdmitted || r.Outcome == AdmissionParked
}

// dedupResolveTries bounds the replace_dedup calls that resolve one
// deferred admission: each answers deferred again only when the key's
// holder changed in between.
const dedupResolveTries = 5

// ErrDedupContended means that an admission kept meeting another waiting
// job to replace under its key: the key's holder changed between each of
// the replace_dedup calls that resolve it (dedupResolveTries of them).
// Nothing of that job was written; push it again.
var ErrDedupContended = errors.New("emq: the deduplication key's holder kept changing")

// dedupJob is a job checked for an admission with a key.
type dedupJob struct {
	pushJob
	key string
}

// PushDedup admits a job under the deduplication key key (echomq 2.5.0)
// and tells what it did: admitted and holding the key, a duplicate of the
// key's holder (whose id it returns), the replacement of a waiting job's
// payload (debounce, keep_last: that job's id), or parked behind an active
// holder (keep_last). WithDedup sets the policy (default until_done), and
// Delay, Attempts and WithBackoff apply as for PushWith. Whether a key is
// held is judged on the server from the holder's state at each admission,
// so any completion, burial, purge, cancellation or reap releases it.
//
// The admission is one add_dedup call, or, when it replaces a waiting job,
// a replace_dedup call that names it (again, a few times, should the
// key's holder change in between; then ErrDedupContended). Concurrent
// PushDedup calls of one queue of a client with an equal policy and
// options are coalesced as Push is (Options.PushLinger,
// Options.PushMaxBatch, Options.DisableCoalescing): they go together in
// one add_dedup call, in which a job whose key an earlier job of the call
// took meets it as a later admission would; each caller gets its own
// answer, resolves its own replacement, and is left out of the call when
// its ctx ends before it is sent. An id of another kind refuses only its
// own caller with ErrKind (the call is sent again job by job). An empty key
// admits the job as AddMany does. A malformed id, a payload over the cap
// or an option out of range is refused before anything is sent; an id of
// another kind than WorkKind is refused with ErrKind. It is resent across
// a reconnect: a resend the lost attempt admitted reports a duplicate of
// the job itself.
func (q *Queue) PushDedup(ctx context.Context, id ID, payload []byte, key string, opts ...PushOption) (DedupResult, error) {
	out, err := q.PushBatchDedup(ctx, []NewJob{{ID: id, Payload: payload, DedupKey: key}}, opts...)
	var be *BatchError
	if errors.As(err, &be) && len(be.Errs) == 1 {
		return DedupResult{}, be.Errs[0]
	}
	if err != nil {
		return DedupResult{}, err
	}
	return out[0], nil
}

// PushBatchDedup admits jobs, each under its DedupKey (or none), in
// add_dedup calls of up to Options.PushMaxBatch jobs under one policy
// (WithDedup; Delay, Attempts and WithBackoff as for PushBatchWith), and
// tells per job, in order, what its admission did (see PushDedup). A job
// whose key an earlier job of the batch took meets it as any later
// admission would. A job that replaces a waiting job goes again through
// replace_dedup; a job whose replacement failed (ErrDedupContended, a
// transport error) is reported in a *BatchError, the others took effect.
// An id of another kind than WorkKind refuses its call as a whole with
// ErrKind (the error itself; nothing of that call is written). Malformed
// ids, payloads over the cap and options out of range are refused before
// anything is sent; no jobs sends nothing. A batch of one job is
// PushDedup's, coalesced with the queue's concurrent admissions.
func (q *Queue) PushBatchDedup(ctx context.Context, jobs []NewJob, opts ...PushOption) ([]DedupResult, error) {
	o, dj, err := q.dedupJobs(jobs, opts)
	if err != nil || len(jobs) == 0 {
		return nil, err
	}
	if len(dj) == 1 && q.c.coalesce {
		return q.pushDedupOne(ctx, o, dj[0])
	}
	pj := make([]pushJob, len(dj))
	for i, j := range dj {
		pj[i] = j.pushJob
	}
	out := make([]DedupResult, len(jobs))
	errs := make([]error, len(jobs))
	failed := false
	for _, u := range q.c.chunks(pj) {
		rs, err := q.addDedupOnce(ctx, o, dj[u.lo:u.hi])
		if err != nil {
			if u.lo == 0 {
				return nil, err // nothing was written
			}
			for i := u.lo; i < u.hi; i++ {
				errs[i] = connectionError(err)
			}
			failed = true
			continue
		}
		for k, r := range rs {
			i := u.lo + k
			if r.Outcome == AdmissionDeferred {
				out[i], errs[i] = q.resolveDedup(ctx, o, dj[i], r.ID)
				failed = failed || errs[i] != nil
				continue
			}
			out[i] = dedupResultOf(r.Outcome, r.ID, r.RunAtMS)
		}
	}
	n := int64(0)
	for _, r := range out {
		if r.Enqueued() {
			n++
		}
	}
	q.c.metrics.Add(Enqueued, q.Name(), n)
	if failed {
		return out, &BatchError{Errs: errs}
	}
	return out, nil
}

// pushDedupOne is PushBatchDedup of one job through the client's
// coalescer: its add_dedup call carries the concurrent single-job
// admissions of the queue under an equal policy and options, and a
// deferred record is resolved by this caller's own replace_dedup calls.
func (q *Queue) pushDedupOne(ctx context.Context, o admitOptions, job dedupJob) ([]DedupResult, error) {
	r, err := q.p.pushDedup(ctx, job, o)
	if err != nil {
		return nil, err // nothing of it was written, or the caller gave up
	}
	out := []DedupResult{dedupResultOf(r.Outcome, r.ID, r.RunAtMS)}
	if r.Outcome == AdmissionDeferred {
		if out[0], err = q.resolveDedup(ctx, o, job, r.ID); err != nil {
			return out, &BatchError{Errs: []error{err}}
		}
	}
	if out[0].Enqueued() {
		q.c.metrics.Add(Enqueued, q.Name(), 1)
	}
	return out, nil
}

// addDedupOnce admits jobs under o in exactly one add_dedup call, resent
// across a reconnect, and returns its records as they are.
func (q *Queue) addDedupOnce(ctx context.Context, o admitOptions, jobs []dedupJob) ([]wire.AddDedupPolicyReply, error) {
	call := q.addDedupCall(o, jobs)
	var rs []wire.AddDedupPolicyReply
	err := q.c.idempotent(ctx, func(ctx context.Context) error {
		if err := q.c.ensure(ctx); err != nil {
			return err
		}
		var err error
		rs, err = call.Exec(ctx, q.c.rc)
		if err == nil && len(rs) != len(jobs) {
			err = errorf("emq: %s: %d records for %d jobs", wire.ScriptAddDedupPolicy.Name, len(rs), len(jobs))
		}
		return err
	})
	return rs, err
}

// addDedupEach admits a coalesced batch of jobs under o in one add_dedup
// call (addDedupOnce) and returns each job's record and error. A call
// refused as a whole (an id of another kind among them; nothing of it was
// written) is replaced by one call per job, so that each gets its own
// answer; err is a failure of the call itself (transport, fence), for
// every job.
func (q *Queue) addDedupEach(ctx context.Context, o admitOptions, jobs []dedupJob) (recs []wire.AddDedupPolicyReply, errs []error, err error) {
	recs, err = q.addDedupOnce(ctx, o, jobs)
	errs = make([]error, len(jobs))
	switch {
	case err == nil:
		return recs, errs, nil
	case len(jobs) == 1 || transient(err) || ctx.Err() != nil:
		return nil, nil, err
	}
	recs = make([]wire.AddDedupPolicyReply, len(jobs))
	for i := range jobs {
		rs, err := q.addDedupOnce(ctx, o, jobs[i:i+1])
		if err != nil {
			errs[i] = err
			continue
		}
		recs[i] = rs[0]
	}
	return recs, errs, nil
}

func dedupResultOf(outcome Admission, id ID, runAtMS int64) DedupResult {
	r := DedupResult{Outcome: outcome, ID: id}
	if runAtMS > 0 {
		r.RunAt = time.UnixMilli(runAtMS)
	}
	return r
}

// addDedupCall is the add_dedup call of jobs with o.
func (q *Queue) addDedupCall(o admitOptions, jobs []dedupJob) wire.AddDedupPolicyCall {
	k := q.keys
	call := wire.AddDedupPolicyCall{Pending: k.Pending, Active: k.Active, Running: k.Running, Schedule: k.Schedule, Dead: k.Dead, Results: k.Results, Wake: k.Wake,
		Options: k.Options, Dedup: k.Dedup, Rows: make([]string, len(jobs)), Entries: make([]wire.AddDedupPolicyEntry, len(jobs)),
		Mode: o.dedup.mode(), TTLMS: o.dedup.ttlMS(), Hold: o.dedup.hold(), DelayMS: ms(o.delay), Attempts: int64(o.attempts),
		Backoff: o.backoff.kind(), BackoffMS: ms(o.backoff.Delay), BackoffMaxMS: ms(o.backoff.Max)}
	for i, j := range jobs {
		call.Rows[i] = j.row
		call.Entries[i] = wire.AddDedupPolicyEntry{ID: j.id, Payload: j.payload, DedupKey: j.key}
	}
	return call
}

// resolveDedup sends job, whose add_dedup answered deferred naming target,
// through replace_dedup naming target, again while the answer is deferred
// (the key's holder changed), up to dedupResolveTries calls.
func (q *Queue) resolveDedup(ctx context.Context, o admitOptions, job dedupJob, target ID) (DedupResult, error) {
	for try := 0; try < dedupResolveTries; try++ {
		r, err := q.replaceDedup(ctx, o, job, target)
		if err != nil {
			return DedupResult{}, err
		}
		if r.Outcome != AdmissionDeferred {
			return dedupResultOf(r.Outcome, r.ID, r.RunAtMS), nil
		}
		target = r.ID
	}
	return DedupResult{}, errorf("%w: job %s under its key after %d replace_dedup calls (last holder %s)", ErrDedupContended, job.id, dedupResolveTries, target)
}

// replaceDedup is one replace_dedup call of job naming target, resent
// across a reconnect.
func (q *Queue) replaceDedup(ctx context.Context, o admitOptions, job dedupJob, target ID) (r wire.ReplaceDedupPolicyReply, err error) {
	targetRow, err := q.keys.Row(target)
	if err != nil {
		return r, err
	}
	events := q.c.eventsMax
	switch {
	case o.dedup.EventsMax > 0:
		events = int64(o.dedup.EventsMax)
	case o.dedup.EventsMax < 0:
		events = 0
	}
	k := q.keys
	call := wire.ReplaceDedupPolicyCall{Pending: k.Pending, Active: k.Active, Running: k.Running, Schedule: k.Schedule, Dead: k.Dead, Results: k.Results, Wake: k.Wake,
		Options: k.Options, Dedup: k.Dedup, Events: k.Events, Row: job.row, TargetRow: targetRow,
		Mode: o.dedup.mode(), TTLMS: o.dedup.ttlMS(), Hold: o.dedup.hold(), DelayMS: ms(o.delay), Attempts: int64(o.attempts),
		Backoff: o.backoff.kind(), BackoffMS: ms(o.backoff.Delay), BackoffMaxMS: ms(o.backoff.Max), EventsMax: events,
		ID: job.id, Payload: job.payload, DedupKey: job.key, Target: target}
	err = q.c.idempotent(ctx, func(ctx context.Context) error {
		if err := q.c.ensure(ctx); err != nil {
			return err
		}
		var err error
		r, err = call.Exec(ctx, q.c.rc)
		return err
	})
	return r, err
}

// ReplaceDedup admits one job under the non-empty deduplication key key
// in one replace_dedup call (echomq 2.5.0), declaring target as the job
// it expects to replace (a debounce or keep_last admission whose key's
// holder waits; give the job's own id when expecting none). It answers
// AdmissionDeferred, naming the job to replace, when that is not target;
// PushDedup resolves that itself. eventsMax bounds the events stream of a
// replacement's event; 0 writes none. Refusals are PushDedup's, and an
// empty key or a negative eventsMax is refused with ErrArgument.
func (q *Queue) ReplaceDedup(ctx context.Context, id ID, payload []byte, key string, target ID, eventsMax int, opts ...PushOption) (DedupResult, error) {
	o, _, err := admitOf(opts)
	if err != nil {
		return DedupResult{}, err
	}
	if err := o.dedup.check(); err != nil {
		return DedupResult{}, err
	}
	switch {
	case key == "":
		return DedupResult{}, errorf("%w: an empty deduplication key", ErrArgument)
	case eventsMax < 0:
		return DedupResult{}, errorf("%w: negative events max %d", ErrArgument, eventsMax)
	}
	pj, err := q.pushJob(id, payload)
	if err != nil {
		return DedupResult{}, err
	}
	o.dedup.EventsMax = eventsMax
	if eventsMax == 0 {
		o.dedup.EventsMax = -1
	}
	r, err := q.replaceDedup(ctx, o, dedupJob{pushJob: pj, key: key}, target)
	if err != nil {
		return DedupResult{}, err
	}
	if r.Outcome == AdmissionAdmitted || r.Outcome == AdmissionParked {
		q.c.metrics.Add(Enqueued, q.Name(), 1)
	}
	return dedupResultOf(r.Outcome, r.ID, r.RunAtMS), nil
}

// dedupJobs checks a dedup batch before anything is sent: its options
// (the policy in range), and each job's id and payload.
func (q *Queue) dedupJobs(jobs []NewJob, opts []PushOption) (admitOptions, []dedupJob, error) {
	o, _, err := admitOf(opts)
	if err != nil {
		return o, nil, err
	}
	if err := o.dedup.check(); err != nil {
		return o, nil, err
	}
	dj := make([]dedupJob, len(jobs))
	for i, j := range jobs {
		pj, err := q.pushJob(j.ID, j.Payload)
		if err != nil {
			return o, nil, errorf("job %d: %w", i, err)
		}
		dj[i] = dedupJob{pushJob: pj, key: j.DedupKey}
	}
	return o, dj, nil
}

// AddDedup admits jobs, each under its DedupKey (or none), in exactly one
// add_dedup call (echomq 2.5.0) and returns its records as they are,
// AdmissionDeferred included (the id is the waiting job an admission
// would replace: send it again with ReplaceDedup naming it). PushBatchDedup
// is the call that resolves them. Refusals are PushBatchDedup's; no jobs
// sends nothing.
func (q *Queue) AddDedup(ctx context.Context, jobs []NewJob, opts ...PushOption) ([]DedupResult, error) {
	o, dj, err := q.dedupJobs(jobs, opts)
	if err != nil || len(jobs) == 0 {
		return nil, err
	}
	call := q.addDedupCall(o, dj)
	var out []DedupResult
	err = q.c.idempotent(ctx, func(ctx context.Context) error {
		if err := q.c.ensure(ctx); err != nil {
			return err
		}
		rs, err := call.Exec(ctx, q.c.rc)
		if err != nil {
			return err
		}
		if len(rs) != len(jobs) {
			return errorf("emq: %s: %d records for %d jobs", wire.ScriptAddDedupPolicy.Name, len(rs), len(jobs))
		}
		out = make([]DedupResult, len(rs))
		for i, r := range rs {
			out[i] = dedupResultOf(r.Outcome, r.ID, r.RunAtMS)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	n := int64(0)
	for _, r := range out {
		if r.Enqueued() {
			n++
		}
	}
	q.c.metrics.Add(Enqueued, q.Name(), n)
	return out, nil
}

// DedupEntry is a deduplication key's entry as DedupEntries reads it
// (echomq 2.5.0), judged as an admission would judge it now.
type DedupEntry struct {
	// Holder is the job holding the key (a parked job whose holder is done
	// counts as the holder); zero when the key has no entry.
	Holder ID
	// Mode is the mode of the admission that took the key; empty when
	// none.
	Mode Dedup
	// Expires is when the key's hold ends at the latest (server clock);
	// zero when unbounded.
	Expires time.Time
	// Held reports whether an admission now would meet the holder (false:
	// it would take the key).
	Held bool
	// State is the set holding the holder; empty when it is in none
	// (completed, cancelled or purged).
	State State
	// Parked is the job parked behind an active holder (keep_last); zero
	// when none.
	Parked ID
}

// DedupEntries reads the entries of keys, in order, in one read-only
// dedup_entries call (echomq 2.5.0): a key without an entry reads as the
// zero DedupEntry. It only reads (EVALSHA_RO), also on an observing
// client, and is resent across a reconnect like every read. No keys sends
// nothing.
func (q *Queue) DedupEntries(ctx context.Context, keys ...string) (entries []DedupEntry, err error) {
	if len(keys) == 0 {
		return nil, nil
	}
	k := q.keys
	call := wire.DedupPolicyEntriesCall{Pending: k.Pending, Active: k.Active, Running: k.Running, Schedule: k.Schedule, Dead: k.Dead, Results: k.Results, Wake: k.Wake,
		Dedup: k.Dedup, DedupKeys: keys}
	err = q.c.idempotent(ctx, func(ctx context.Context) error {
		if err := q.c.ensureRead(ctx); err != nil {
			return err
		}
		res := q.c.execScriptsRO(ctx, []*wire.Script{wire.ScriptDedupPolicyEntries}, []rueidis.LuaExec{call.LuaExec()})
		recs, err := wire.DecodeDedupPolicyEntries(res[0])
		if err != nil {
			return err
		}
		if len(recs) != len(keys) {
			return errorf("emq: %s: %d records for %d keys", wire.ScriptDedupPolicyEntries.Name, len(recs), len(keys))
		}
		got := make([]DedupEntry, len(recs))
		for i, r := range recs {
			e := DedupEntry{Mode: Dedup(r.Mode), Held: r.Held != 0, State: State(r.State)}
			if r.ExpiresMS > 0 {
				e.Expires = time.UnixMilli(r.ExpiresMS)
			}
			if r.Holder != "" {
				if e.Holder, err = ParseID(r.Holder); err != nil {
					return errorf("emq: %s: key %d: holder: %w", wire.ScriptDedupPolicyEntries.Name, i, err)
				}
			}
			if r.Parked != "" {
				if e.Parked, err = ParseID(r.Parked); err != nil {
					return errorf("emq: %s: key %d: parked: %w", wire.ScriptDedupPolicyEntries.Name, i, err)
				}
			}
			got[i] = e
		}
		entries = got
		return nil
	})
	return entries, err
}

// MaxDedupSweep is the most entries one SweepDedup page asks for.
const MaxDedupSweep = 1000

// DedupSweep is what one SweepDedup page did.
type DedupSweep struct {
	// Cursor is the cursor of the next page; "0" when the walk is done.
	Cursor string
	// Dropped counts the entries deleted: their holders are done, their
	// hold expired, or they were unreadable.
	Dropped int
	// Released counts the parked jobs made due and their keys' holders.
	Released int
}

// SweepDedup walks one page of the queue's deduplication entries in one
// sweep_dedup call (echomq 2.5.0), from cursor ("" or "0" starts a walk)
// with a size hint of count (1 to MaxDedupSweep): each parked job whose
// holder is done is made due, and each entry that no longer holds its key
// is deleted. Every worker's maintenance walks them; an operator need not.
// A count out of range is refused with ErrArgument before anything is
// sent.
func (q *Queue) SweepDedup(ctx context.Context, cursor string, count int) (_ DedupSweep, err error) {
	defer q.c.afterFailure(ctx, &err)
	if count < 1 || count > MaxDedupSweep {
		return DedupSweep{}, errorf("%w: a sweep page of %d entries (1 to %d)", ErrArgument, count, MaxDedupSweep)
	}
	if cursor == "" {
		cursor = "0"
	}
	if err := q.c.ensure(ctx); err != nil {
		return DedupSweep{}, err
	}
	k := q.keys
	call := wire.SweepDedupPolicyCall{Pending: k.Pending, Active: k.Active, Running: k.Running, Schedule: k.Schedule, Dead: k.Dead, Results: k.Results, Wake: k.Wake,
		Dedup: k.Dedup, Cursor: cursor, Count: int64(count)}
	r, err := call.Exec(ctx, q.c.rc)
	if err != nil {
		return DedupSweep{}, err
	}
	return DedupSweep{Cursor: r.Cursor, Dropped: int(r.Dropped), Released: int(r.Released)}, nil
}

// MaxCancelIDs is the most ids one CancelIDs call takes.
const MaxCancelIDs = 1000

// CancelIDs cancels those of ids that are pending, scheduled or active in
// one cancel_ids call (echomq 2.5.0): their rows are deleted with their
// failure records, progress reports and retry policies, and a cancelled
// event is reported for each when eventsMax is above 0. An active job's
// lease holder is told on the queue's cancel channel, and a 2.5 worker
// cancels its handler's context at once (cause ErrCancelled); a worker
// that missed it learns at its next extend. It returns, per id and in
// order, the state the job was cancelled from, or "" when it was in none
// of them (dead, gone, or an id given twice) and is left as it is. More
// than MaxCancelIDs ids, a negative eventsMax or a malformed id is refused
// before anything is sent; no ids sends nothing.
func (q *Queue) CancelIDs(ctx context.Context, ids []ID, eventsMax int) (_ []State, err error) {
	defer q.c.afterFailure(ctx, &err)
	switch {
	case len(ids) > MaxCancelIDs:
		return nil, errorf("%w: %d ids to cancel, at most %d a call", ErrArgument, len(ids), MaxCancelIDs)
	case eventsMax < 0:
		return nil, errorf("%w: negative events max %d", ErrArgument, eventsMax)
	}
	rows, err := q.rowsOf(ids)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	if err := q.c.ensure(ctx); err != nil {
		return nil, err
	}
	k := q.keys
	call := wire.CancelPolicyIDsCall{Pending: k.Pending, Schedule: k.Schedule, Active: k.Active, Running: k.Running, Policy: k.Policy, Wake: k.Wake, Failures: k.Failures, Progress: k.Progress,
		Options: k.Options, Events: k.Events, Cancel: k.Cancel, Rows: rows, EventsMax: int64(eventsMax), IDs: ids}
	rs, err := call.Exec(ctx, q.c.rc)
	if err != nil {
		return nil, err
	}
	if len(rs) != len(ids) {
		return nil, errorf("emq: %s: %d records for %d ids", wire.ScriptCancelPolicyIDs.Name, len(rs), len(ids))
	}
	out := make([]State, len(rs))
	for i, r := range rs {
		out[i] = State(r.State)
	}
	return out, nil
}

// CancelledJob is a job CancelKey cancelled, and the state it was
// cancelled from.
type CancelledJob struct {
	ID    ID
	State State
}

// CancelKey cancels the jobs of a deduplication key (echomq 2.5.0): its
// holder and, keep_last, the job parked behind it, read with DedupEntries
// and cancelled in one CancelIDs call with eventsMax. It returns those
// actually cancelled, holder first; none when the key has no live holder.
func (q *Queue) CancelKey(ctx context.Context, key string, eventsMax int) ([]CancelledJob, error) {
	if eventsMax < 0 {
		return nil, errorf("%w: negative events max %d", ErrArgument, eventsMax)
	}
	es, err := q.DedupEntries(ctx, key)
	if err != nil {
		return nil, err
	}
	var ids []ID
	for _, id := range []ID{es[0].Holder, es[0].Parked} {
		if !id.IsZero() {
			ids = append(ids, id)
		}
	}
	states, err := q.CancelIDs(ctx, ids, eventsMax)
	if err != nil {
		return nil, err
	}
	out := []CancelledJob{}
	for i, s := range states {
		if s != "" {
			out = append(out, CancelledJob{ID: ids[i], State: s})
		}
	}
	return out, nil
}
