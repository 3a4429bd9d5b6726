package emq

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// The calls of the scripts that touch only the keys they declare (2.2.0):
// each takes the ids it handles, and their rows go in KEYS, so that a
// cluster slot split by a migration answers TRYAGAIN or ASK instead of
// letting the script miss a row, and an ACL or a server enforcing declared
// keys sees every key. The caller learns the ids by reading the head of a
// set (Queue.Head); an id another caller took in between is skipped.

// Head returns up to n ids at the head of set s, in rank order: for
// pending the oldest first (FIFO), for schedule the earliest run-at
// first, for active the earliest lease deadline first (the running set's,
// under a queue's policy), for dead the oldest first. These are the ids ClaimIDs, PromoteIDs and ReapIDs take.
// An unknown set or an n under 1 is refused with ErrArgument before
// anything is sent; a member that is not a well-formed id (a foreign
// writer's) is an error wrapping ErrID.
func (q *Queue) Head(ctx context.Context, s Set, n int) (ids []ID, err error) {
	err = q.c.idempotent(ctx, func(ctx context.Context) (err error) {
		ids, err = q.headOnce(ctx, s, n)
		return err
	})
	return ids, err
}

// headOnce is one attempt of Head.
func (q *Queue) headOnce(ctx context.Context, s Set, n int) ([]ID, error) {
	key := q.keys.Set(s)
	if key == "" {
		return nil, errorf("%w: unknown set %q", ErrArgument, s)
	}
	if n < 1 {
		return nil, errorf("%w: head count %d", ErrArgument, n)
	}
	if err := q.c.ensureRead(ctx); err != nil {
		return nil, err
	}
	members, err := q.doSet(ctx, s, func(key string) rueidis.Completed { return q.headCmd(key, n) }).AsStrSlice()
	if err != nil {
		return nil, errorf("emq: head of %s: %w", s, err)
	}
	ids := make([]ID, 0, len(members))
	for _, m := range members {
		id, err := ParseID(m)
		if err != nil {
			return nil, errorf("emq: head of %s: %w", s, err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// headCmd reads the first n members of the sorted set key, by rank.
func (q *Queue) headCmd(key string, n int) rueidis.Completed {
	return q.c.rc.B().Zrange().Key(key).Min("0").Max(strconv.Itoa(n - 1)).Build()
}

// rowsOf returns the row keys of ids, refusing a malformed id before
// anything is sent.
func (q *Queue) rowsOf(ids []ID) ([]string, error) {
	rows := make([]string, len(ids))
	for i, id := range ids {
		row, err := q.keys.Row(id)
		if err != nil {
			return nil, errorf("id %d: %w", i, err)
		}
		rows[i] = row
	}
	return rows, nil
}

// ClaimIDs leases, for lease, exactly those of ids that are still pending,
// in the order given, in one claim_rate_ids call (claim_ids in either
// layout: on a paused queue it leases nothing, under a concurrency cap at
// most the room left, under a rate limit only the starts it admits now)
// that declares every row it
// touches, and returns them; an id no longer pending (another claimer took
// it, or it was never queued) is skipped, and an id without a row is
// dropped from the pending set. It rings the queue's doorbell again when
// it leased some and pending jobs remain. Read the ids with Head(ctx,
// SetPending, n). A lease under a millisecond or a malformed id is refused
// with ErrArgument or ErrID before anything is sent; no ids sends nothing.
func (q *Queue) ClaimIDs(ctx context.Context, lease time.Duration, ids []ID) (_ []Job, err error) {
	defer q.c.afterFailure(ctx, &err)
	if err := positive("lease", lease); err != nil {
		return nil, err
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
	call := wire.ClaimRateIDsCall{Pending: q.keys.Pending, Active: q.keys.Active, Running: q.keys.Running, Policy: q.keys.Policy, Starts: q.keys.Starts, Wake: q.keys.Wake,
		Rows: rows, LeaseMS: ms(lease), IDs: ids}
	rs, err := call.Exec(ctx, q.c.rc)
	if err != nil {
		return nil, err
	}
	jobs := make([]Job, len(rs))
	for i, r := range rs {
		jobs[i] = Job{ID: r.ID, Token: r.Token, Payload: []byte(r.Payload), Deadline: time.UnixMilli(r.DeadlineMS)}
	}
	q.c.metrics.Add(Claimed, q.Name(), int64(len(jobs)))
	return jobs, nil
}

// CompleteClaimIDs retires the active job id like Complete and, in the
// same complete_claim_ids call, leases for lease those of ids that are
// still pending, as ClaimIDs does (no ids: complete only). A stale token
// is refused with ErrStale and nothing is leased. A malformed id or a
// lease under a millisecond is refused before anything is sent. On a queue
// with a policy (echomq 2.7.0) the 2.2 script is refused: a *PolicyError
// matching ErrPolicy says to use CompleteResult, which serves both layouts.
func (q *Queue) CompleteClaimIDs(ctx context.Context, id ID, token int64, lease time.Duration, ids []ID) (_ []Job, err error) {
	defer q.c.afterFailure(ctx, &err)
	if err := positive("lease", lease); err != nil {
		return nil, err
	}
	row, err := q.keys.Row(id)
	if err != nil {
		return nil, err
	}
	rows, err := q.rowsOf(ids)
	if err != nil {
		return nil, err
	}
	if err := q.c.ensure(ctx); err != nil {
		return nil, err
	}
	call := wire.CompleteClaimIDsCall{Row: row, Active: q.keys.Active, Pending: q.keys.Pending, Wake: q.keys.Wake,
		Rows: rows, ID: id, Token: token, LeaseMS: ms(lease), IDs: ids}
	rs, err := call.Exec(ctx, q.c.rc)
	if err != nil {
		return nil, q.legacy(ctx, err, wire.ScriptCompleteClaimIDs, "CompleteResult")
	}
	q.c.metrics.Add(Completed, q.Name(), 1)
	jobs := make([]Job, len(rs))
	for i, r := range rs {
		jobs[i] = Job{ID: r.ID, Token: r.Token, Payload: []byte(r.Payload), Deadline: time.UnixMilli(r.DeadlineMS)}
	}
	q.c.metrics.Add(Claimed, q.Name(), int64(len(jobs)))
	return jobs, nil
}

// PromoteIDs moves those of ids that are scheduled and due to pending, in
// one promote_ids call that declares every row it touches, rings the
// queue's doorbell when any moved, and returns how many moved; an id not
// scheduled, or not yet due, is left as it is. Read the ids with Head(ctx,
// SetSchedule, n). A malformed id is refused with ErrID before anything is
// sent; no ids sends nothing.
func (q *Queue) PromoteIDs(ctx context.Context, ids []ID) (_ int, err error) {
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
	call := wire.PromoteIDsCall{Schedule: q.keys.Schedule, Pending: q.keys.Pending, Wake: q.keys.Wake, Rows: rows, IDs: ids}
	n, err := call.Exec(ctx, q.c.rc)
	return int(n), err
}

// ReapIDs takes back those of ids whose lease expired, in one reap_ids
// call that declares every row it touches: each goes back to pending, or
// to dead when maxAttempts > 0 and its attempts reached it. It rings the
// queue's doorbell when any went back to pending and returns how many
// moved; an id not active, or whose lease holds, is left as it is. Read
// the ids with Head(ctx, SetActive, n). A negative maxAttempts or a
// malformed id is refused before anything is sent; no ids sends nothing.
// On a queue with a policy (echomq 2.7.0) the 2.2 script is refused: a
// *PolicyError matching ErrPolicy says to use ReapRecordedIDs.
func (q *Queue) ReapIDs(ctx context.Context, ids []ID, maxAttempts int) (_ int, err error) {
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
	call := wire.ReapIDsCall{Active: q.keys.Active, Pending: q.keys.Pending, Dead: q.keys.Dead, Wake: q.keys.Wake, Rows: rows, MaxAttempts: int64(maxAttempts), IDs: ids}
	n, err := call.Exec(ctx, q.c.rc)
	return int(n), q.legacy(ctx, err, wire.ScriptReapIDs, "ReapRecordedIDs")
}

// PushMany admits jobs in one push_many call that declares every row it
// writes, and rings the queue's doorbell once when any was admitted. The
// result tells, per job and in order, whether it was enqueued (false: a
// duplicate — of a job already there or of one earlier in jobs — whose row
// is left untouched). An id of a kind other than WorkKind refuses the
// whole call with ErrKind and nothing is written. A malformed id or a
// payload over MaxPayload is refused before anything is sent; no jobs
// sends nothing.
//
// Like Push it is idempotent while the jobs exist, and it is resent across
// a reconnect (see ErrConnection): should a lost attempt have admitted
// them, the resend reports them as duplicates.
func (q *Queue) PushMany(ctx context.Context, jobs []NewJob) (enqueued []bool, err error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	call := wire.PushManyCall{Pending: q.keys.Pending, Wake: q.keys.Wake, Rows: make([]string, len(jobs)), Entries: make([]wire.PushManyEntry, len(jobs))}
	for i, j := range jobs {
		row, err := q.keys.Row(j.ID)
		if err != nil {
			return nil, errorf("job %d: %w", i, err)
		}
		if err := q.c.checkPayload(j.Payload); err != nil {
			return nil, errorf("job %d: %w", i, err)
		}
		call.Rows[i] = row
		call.Entries[i] = wire.PushManyEntry{ID: j.ID, Payload: rueidis.BinaryString(j.Payload)}
	}
	err = q.c.idempotent(ctx, func(ctx context.Context) error {
		if err := q.c.ensure(ctx); err != nil {
			return err
		}
		rs, err := call.Exec(ctx, q.c.rc)
		if err != nil {
			return err
		}
		if len(rs) != len(jobs) {
			return errorf("emq: %s: %d records for %d jobs", wire.ScriptPushMany.Name, len(rs), len(jobs))
		}
		enqueued = make([]bool, len(jobs))
		n := int64(0)
		for i, r := range rs {
			enqueued[i] = r.Enqueued != 0
			if enqueued[i] {
				n++
			}
		}
		q.c.metrics.Add(Enqueued, q.Name(), n)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return enqueued, nil
}

// headRetries bounds how often a pop path reads the head of a set again
// when another caller took every id it read while the set is not empty.
const headRetries = 8

// rawRows returns the row keys of members read from a set, as they are:
// a member that is not a well-formed id still names its row, so that the
// script drops it (no row) or leases it for the worker to bury.
func (q *Queue) rawRows(members []string) []string {
	rows := make([]string, len(members))
	for i, m := range members {
		rows[i] = q.keys.RowPrefix() + m
	}
	return rows
}

// claimIDsExec is the claim_rate_ids call of raw members.
func (q *Queue) claimIDsExec(lease time.Duration, members []string) rueidis.LuaExec {
	call := wire.ClaimRateIDsCall{Pending: q.keys.Pending, Active: q.keys.Active, Running: q.keys.Running, Policy: q.keys.Policy, Starts: q.keys.Starts, Wake: q.keys.Wake,
		Rows: q.rawRows(members), LeaseMS: ms(lease)}
	return rueidis.LuaExec{Keys: call.Keys(), Args: append(call.Args(), members...)}
}

// claimHead leases up to n jobs at the head of pending with claim_ids: it
// reads up to n head ids and claims them, and reads again, up to
// headRetries times, when every id it read was taken (or was an orphan)
// while pending is not empty, unless the queue's policy held the claim
// back (paused, or at its concurrency cap).
func (q *Queue) claimHead(ctx context.Context, lease time.Duration, n int) ([]Job, error) {
	for try := 0; try < headRetries; try++ {
		members, err := q.c.rc.Do(ctx, q.headCmd(q.keys.Pending, n)).AsStrSlice()
		if err != nil {
			return nil, errorf("emq: head of %s: %w", SetPending, err)
		}
		if len(members) == 0 {
			return nil, nil
		}
		x := q.claimIDsExec(lease, members)
		rs, err := wire.DecodeClaimRateIDs(wire.ScriptClaimRateIDs.Lua().Exec(ctx, q.c.rc, x.Keys, x.Args))
		if err != nil {
			return nil, err
		}
		if len(rs) == 0 {
			if try == 0 {
				if held, _ := q.held(ctx); held {
					return nil, nil // paused, at its cap or its rate limit: reading again would lease nothing either
				}
			}
			continue
		}
		jobs := make([]Job, len(rs))
		for i, r := range rs {
			jobs[i] = Job{ID: r.ID, Token: r.Token, Payload: []byte(r.Payload), Deadline: time.UnixMilli(r.DeadlineMS)}
		}
		return jobs, nil
	}
	return nil, nil
}

// promoteHead promotes the due jobs among the first limit ids of the
// schedule with promote_ids (which rings the doorbell when any moved) and
// returns how many moved and how many ids it read.
func (q *Queue) promoteHead(ctx context.Context, limit int) (moved, read int, err error) {
	members, err := q.c.rc.Do(ctx, q.headCmd(q.keys.Schedule, limit)).AsStrSlice()
	if err != nil || len(members) == 0 {
		return 0, 0, err
	}
	keys := append([]string{q.keys.Schedule, q.keys.Pending, q.keys.Wake}, q.rawRows(members)...)
	n, err := wire.DecodePromoteIDs(wire.ScriptPromoteIDs.Lua().Exec(ctx, q.c.rc, keys, members))
	return int(n), len(members), err
}
