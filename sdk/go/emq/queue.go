package emq

import (
	"context"
	"errors"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// Queue is a handle on one queue of a fenced keyspace. Its methods are the
// bus surface; the caller never builds a key or names a script. It is safe
// for concurrent use.
type Queue struct {
	c    *Client
	keys wire.QueueKeys
	p    *pusher // the client's coalescer of this queue's pushes, shared by its handles
}

// Job is a claimed job: its id, the fencing token the claim minted, its
// payload and its lease deadline on the server's clock.
type Job struct {
	ID       ID
	Token    int64
	Payload  []byte
	Deadline time.Time
}

// Attempt is which claim of the job this is, 1 for the first: the fencing
// token is the row's attempts, which only a claim increments.
func (j Job) Attempt() int64 { return j.Token }

// ErrArgument means an argument is out of range (a lease or a limit that is
// not positive); nothing was sent.
var ErrArgument = errors.New("emq: invalid argument")

// Queue returns the handle of the queue named name. A malformed name is
// refused with ErrQueueName before any command is sent.
func (c *Client) Queue(name string) (*Queue, error) {
	k, err := wire.NewQueueKeys(name)
	if err != nil {
		return nil, err
	}
	q := &Queue{c: c, keys: k}
	q.p = c.pusher(q)
	return q, nil
}

// Name returns the queue's name.
func (q *Queue) Name() string { return q.keys.Queue() }

// Keys returns the queue's keys, for inspection tools.
func (q *Queue) Keys() wire.QueueKeys { return q.keys }

// row returns the row key of id, refusing a malformed id before anything
// is sent, and fences the keyspace if a connection changed.
func (q *Queue) row(ctx context.Context, id ID) (string, error) {
	row, err := q.keys.Row(id)
	if err != nil {
		return "", err
	}
	return row, q.c.ensure(ctx)
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

func positive(what string, d time.Duration) error {
	if d < time.Millisecond {
		return errorf("%w: %s %v is under a millisecond", ErrArgument, what, d)
	}
	return nil
}

// Enqueue admits a job with id and payload. It reports true when the job
// was enqueued and false when a job with this id already exists (the row is
// left untouched: a duplicate is a success). An id of a kind other than
// WorkKind is refused with ErrKind. Like Push it is resent across a
// reconnect (see ErrConnection).
func (q *Queue) Enqueue(ctx context.Context, id ID, payload []byte) (enqueued bool, err error) {
	err = q.c.idempotent(ctx, func(ctx context.Context) (err error) {
		enqueued, err = q.enqueueOnce(ctx, id, payload)
		return err
	})
	return enqueued, err
}

// enqueueOnce is one attempt of Enqueue.
func (q *Queue) enqueueOnce(ctx context.Context, id ID, payload []byte) (bool, error) {
	row, err := q.keys.Row(id)
	if err != nil {
		return false, err
	}
	if err := q.c.checkPayload(payload); err != nil {
		return false, err
	}
	if err := q.c.ensure(ctx); err != nil {
		return false, err
	}
	call := wire.EnqueueCall{Row: row, Pending: q.keys.Pending, ID: id, Payload: rueidis.BinaryString(payload)}
	n, err := call.Exec(ctx, q.c.rc)
	if n == wire.EnqueueEnqueued {
		q.c.metrics.Add(Enqueued, q.Name(), 1)
	}
	return n == wire.EnqueueEnqueued, err
}

// EnqueueAt admits a job that becomes claimable at at (server clock), once
// Promote has moved it. Replies and refusals are Enqueue's.
func (q *Queue) EnqueueAt(ctx context.Context, id ID, payload []byte, at time.Time) (enqueued bool, err error) {
	err = q.c.idempotent(ctx, func(ctx context.Context) (err error) {
		enqueued, err = q.enqueueAtOnce(ctx, id, payload, at)
		return err
	})
	return enqueued, err
}

// enqueueAtOnce is one attempt of EnqueueAt.
func (q *Queue) enqueueAtOnce(ctx context.Context, id ID, payload []byte, at time.Time) (bool, error) {
	row, err := q.keys.Row(id)
	if err != nil {
		return false, err
	}
	if err := q.c.checkPayload(payload); err != nil {
		return false, err
	}
	if err := q.c.ensure(ctx); err != nil {
		return false, err
	}
	call := wire.EnqueueAtCall{Row: row, Schedule: q.keys.Schedule, ID: id, Payload: rueidis.BinaryString(payload), RunAtMS: at.UnixMilli()}
	n, err := call.Exec(ctx, q.c.rc)
	if n == wire.EnqueueAtEnqueued {
		q.c.metrics.Add(Enqueued, q.Name(), 1)
	}
	return n == wire.EnqueueAtEnqueued, err
}

// Claim leases the oldest pending job for lease. ok is false when nothing
// is pending. The job's Token must be presented to every later transition.
//
// Claim runs the 2.0 claim script, which reaches the row of the id it pops
// through the row prefix rather than KEYS, and it keeps doing so because
// its observable behaviour is frozen (it never touches the doorbell, which
// a claim_ids call checks and rings): on a Redis Cluster whose queue slot
// is being migrated it can lose the job it pops. Workers do not use it;
// use ClaimMany(ctx, lease, 1), or Head and ClaimIDs, which declare every
// key they touch.
//
// Deprecated: use ClaimMany(ctx, lease, 1), or Head(ctx, SetPending, n)
// and ClaimIDs. The 2.0 claim script stays in the wire layer (wire.ClaimCall).
func (q *Queue) Claim(ctx context.Context, lease time.Duration) (job Job, ok bool, err error) {
	defer q.c.afterFailure(ctx, &err)
	if err := positive("lease", lease); err != nil {
		return Job{}, false, err
	}
	if err := q.c.ensure(ctx); err != nil {
		return Job{}, false, err
	}
	call := wire.ClaimCall{Pending: q.keys.Pending, Active: q.keys.Active, Prefix: q.keys.RowPrefix(), LeaseMS: ms(lease)}
	r, ok, err := call.Exec(ctx, q.c.rc)
	if err != nil || !ok {
		return Job{}, false, q.legacy(ctx, err, wire.ScriptClaim, "ClaimMany")
	}
	return Job{ID: r.ID, Token: r.Token, Payload: []byte(r.Payload), Deadline: time.UnixMilli(r.DeadlineMS)}, true, nil
}

// Extend pushes the lease of an active job to now+lease and returns the new
// deadline, in one extend_policy call (extend in either layout). A token
// that is not the row's, or a job no longer active, is refused with
// ErrStale.
func (q *Queue) Extend(ctx context.Context, id ID, token int64, lease time.Duration) (_ time.Time, err error) {
	defer q.c.afterFailure(ctx, &err)
	if err := positive("lease", lease); err != nil {
		return time.Time{}, err
	}
	row, err := q.row(ctx, id)
	if err != nil {
		return time.Time{}, err
	}
	call := wire.ExtendPolicyCall{Active: q.keys.Active, Running: q.keys.Running, Row: row, ID: id, Token: token, LeaseMS: ms(lease)}
	d, err := call.Exec(ctx, q.c.rc)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(d), nil
}

// Complete retires an active job: its row is deleted and nothing of it
// remains. A stale token is refused with ErrStale, and the lease holder's
// work survives.
func (q *Queue) Complete(ctx context.Context, id ID, token int64) (err error) {
	defer q.c.afterFailure(ctx, &err)
	row, err := q.row(ctx, id)
	if err != nil {
		return err
	}
	call := wire.CompleteCall{Active: q.keys.Active, Row: row, ID: id, Token: token}
	_, err = call.Exec(ctx, q.c.rc)
	return q.legacy(ctx, err, wire.ScriptComplete, "CompleteResult")
}

// Retry hands an active job back to run again after delay (it is
// scheduled, and Promote makes it pending) and returns its run-at, on a
// queue with a policy too (retry_policy, echomq 2.7.0). A stale token is
// refused with ErrStale.
func (q *Queue) Retry(ctx context.Context, id ID, token int64, delay time.Duration) (_ time.Time, err error) {
	defer q.c.afterFailure(ctx, &err)
	if delay < 0 {
		return time.Time{}, errorf("%w: negative delay %v", ErrArgument, delay)
	}
	row, err := q.row(ctx, id)
	if err != nil {
		return time.Time{}, err
	}
	k := q.keys
	call := wire.RetryPolicyCall{Active: k.Active, Running: k.Running, Policy: k.Policy, Pending: k.Pending, Wake: k.Wake, Row: row, Schedule: k.Schedule,
		ID: id, Token: token, DelayMS: ms(delay)}
	at, err := call.Exec(ctx, q.c.rc)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(at), nil
}

// Bury moves an active job to the dead set, on a queue with a policy too
// (bury_policy, echomq 2.7.0). A stale token is refused with ErrStale.
func (q *Queue) Bury(ctx context.Context, id ID, token int64) (err error) {
	defer q.c.afterFailure(ctx, &err)
	row, err := q.row(ctx, id)
	if err != nil {
		return err
	}
	k := q.keys
	call := wire.BuryPolicyCall{Active: k.Active, Running: k.Running, Policy: k.Policy, Pending: k.Pending, Wake: k.Wake, Row: row, Dead: k.Dead, ID: id, Token: token}
	_, err = call.Exec(ctx, q.c.rc)
	return err
}

// Promote moves up to limit scheduled jobs whose run-at has come to
// pending and returns how many moved. It never rings the doorbell.
//
// Promote runs the 2.0 promote script, which reaches rows through the row
// prefix rather than KEYS; it keeps doing so because its observable
// behaviour is frozen (promote_ids rings the doorbell when it moves a
// job). Workers do not use it: they read the schedule's head with Head and
// promote with PromoteIDs, which declares every key it touches.
//
// Deprecated: use Head(ctx, SetSchedule, limit) and PromoteIDs. The 2.0
// promote script stays in the wire layer (wire.PromoteCall).
func (q *Queue) Promote(ctx context.Context, limit int) (_ int, err error) {
	defer q.c.afterFailure(ctx, &err)
	if limit <= 0 {
		return 0, errorf("%w: limit %d", ErrArgument, limit)
	}
	if err := q.c.ensure(ctx); err != nil {
		return 0, err
	}
	call := wire.PromoteCall{Schedule: q.keys.Schedule, Pending: q.keys.Pending, Prefix: q.keys.RowPrefix(), Limit: int64(limit)}
	n, err := call.Exec(ctx, q.c.rc)
	return int(n), err
}

// Reap takes back up to limit expired leases: each job goes back to
// pending, or to dead when maxAttempts > 0 and its attempts reached it. It
// returns how many moved. It never touches the doorbell.
//
// Reap runs the 2.0 reap script, which reaches rows through the row prefix
// rather than KEYS; it keeps doing so because its observable behaviour is
// frozen (reap_ids checks and rings the doorbell). Workers do not use it:
// they read the active set's head with Head and reap with ReapIDs, which
// declares every key it touches.
//
// Deprecated: use Head(ctx, SetActive, limit) and ReapIDs (or
// ReapFailedIDs, which records each lease taken back). The 2.0 reap script
// stays in the wire layer (wire.ReapCall).
func (q *Queue) Reap(ctx context.Context, limit, maxAttempts int) (_ int, err error) {
	defer q.c.afterFailure(ctx, &err)
	if limit <= 0 || maxAttempts < 0 {
		return 0, errorf("%w: limit %d, max attempts %d", ErrArgument, limit, maxAttempts)
	}
	if err := q.c.ensure(ctx); err != nil {
		return 0, err
	}
	call := wire.ReapCall{Active: q.keys.Active, Pending: q.keys.Pending, Dead: q.keys.Dead, Prefix: q.keys.RowPrefix(), Limit: int64(limit), MaxAttempts: int64(maxAttempts)}
	n, err := call.Exec(ctx, q.c.rc)
	return int(n), q.legacy(ctx, err, wire.ScriptReap, "ReapRecordedIDs")
}

// Revive moves a dead job back to pending, keeping its attempts, and rings
// the queue's doorbell. It reports false when the job is not dead. It
// runs revive_recorded (echomq 2.4.0), which also reports a revived event
// within the client's Options.EventsMax (see ReviveRecorded); a client
// that writes no event (a negative EventsMax, or an observer) runs the
// revive and ring scripts, which touch no events stream.
func (q *Queue) Revive(ctx context.Context, id ID) (_ bool, err error) {
	if q.c.eventsMax > 0 {
		return q.ReviveRecorded(ctx, id, int(q.c.eventsMax))
	}
	defer q.c.afterFailure(ctx, &err)
	row, err := q.row(ctx, id)
	if err != nil {
		return false, err
	}
	call := wire.ReviveCall{Dead: q.keys.Dead, Pending: q.keys.Pending, Row: row, ID: id}
	n, err := call.Exec(ctx, q.c.rc)
	if n == wire.ReviveRevived {
		// Wake an idle worker; the revive itself stands without it.
		ring := wire.RingCall{Wake: q.keys.Wake}
		_, _ = ring.Exec(ctx, q.c.rc)
	}
	return n == wire.ReviveRevived, err
}

// Browse returns up to n ids of set s, newest first: for a score-zero set
// (pending, dead) that is reverse mint order, read from the ids themselves;
// for a scored set (active, schedule) it is the latest deadline or run-at
// first.
func (q *Queue) Browse(ctx context.Context, s Set, n int) (ids []ID, err error) {
	err = q.c.idempotent(ctx, func(ctx context.Context) (err error) {
		ids, err = q.browseOnce(ctx, s, n)
		return err
	})
	return ids, err
}

// browseOnce is one attempt of Browse.
func (q *Queue) browseOnce(ctx context.Context, s Set, n int) ([]ID, error) {
	key := q.keys.Set(s)
	if key == "" {
		return nil, errorf("%w: unknown set %q", ErrArgument, s)
	}
	if n <= 0 {
		return nil, errorf("%w: browse count %d", ErrArgument, n)
	}
	if err := q.c.ensureRead(ctx); err != nil {
		return nil, err
	}
	members, err := q.doSet(ctx, s, func(key string) rueidis.Completed {
		if s.Lex() {
			return q.c.rc.B().Zrange().Key(key).Min("+").Max("-").Bylex().Rev().Limit(0, int64(n)).Build()
		}
		return q.c.rc.B().Zrange().Key(key).Min("+inf").Max("-inf").Byscore().Rev().Limit(0, int64(n)).Build()
	}).AsStrSlice()
	if err != nil {
		return nil, errorf("emq: browse %s: %w", s, err)
	}
	ids := make([]ID, 0, len(members))
	for _, m := range members {
		id, err := ParseID(m)
		if err != nil {
			return nil, errorf("emq: browse %s: %w", s, err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// Size returns how many ids set s holds.
func (q *Queue) Size(ctx context.Context, s Set) (n int64, err error) {
	err = q.c.idempotent(ctx, func(ctx context.Context) (err error) {
		n, err = q.sizeOnce(ctx, s)
		return err
	})
	return n, err
}

// sizeOnce is one attempt of Size.
func (q *Queue) sizeOnce(ctx context.Context, s Set) (int64, error) {
	key := q.keys.Set(s)
	if key == "" {
		return 0, errorf("%w: unknown set %q", ErrArgument, s)
	}
	if err := q.c.ensureRead(ctx); err != nil {
		return 0, err
	}
	n, err := q.doSet(ctx, s, func(key string) rueidis.Completed { return q.c.rc.B().Zcard().Key(key).Build() }).AsInt64()
	if err != nil {
		return 0, errorf("emq: size of %s: %w", s, err)
	}
	return n, nil
}

// PendingSize returns how many jobs wait to be claimed.
func (q *Queue) PendingSize(ctx context.Context) (int64, error) {
	return q.Size(ctx, SetPending)
}

// Sizes returns the size of every set, read in one round trip.
func (q *Queue) Sizes(ctx context.Context) (sizes map[Set]int64, err error) {
	err = q.c.idempotent(ctx, func(ctx context.Context) (err error) {
		sizes, err = q.sizesOnce(ctx)
		return err
	})
	return sizes, err
}

// sizesOnce is one attempt of Sizes.
func (q *Queue) sizesOnce(ctx context.Context) (map[Set]int64, error) {
	if err := q.c.ensureRead(ctx); err != nil {
		return nil, err
	}
	sets := wire.Sets()
	cmds := make(rueidis.Commands, len(sets))
	for i, s := range sets {
		cmds[i] = q.c.rc.B().Zcard().Key(q.keys.Set(s)).Build()
	}
	out := make(map[Set]int64, len(sets))
	for i, r := range q.c.rc.DoMulti(ctx, cmds...) {
		if key, retry := q.c.leasedKey(ctx, q.keys, sets[i], r.Error()); retry {
			r = q.c.rc.Do(ctx, q.c.rc.B().Zcard().Key(key).Build())
		}
		n, err := r.AsInt64()
		if err != nil {
			return nil, errorf("emq: size of %s: %w", sets[i], err)
		}
		out[sets[i]] = n
	}
	return out, nil
}
