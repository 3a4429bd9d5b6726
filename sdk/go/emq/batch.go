package emq

import (
	"context"
	"strconv"
	"time"

	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// ClaimMany leases up to n of the oldest pending jobs for lease, oldest
// first, and rings the queue's doorbell again when pending jobs remain
// behind them. It reads up to n ids at the head of pending and claims
// them with claim_ids, which declares every key it touches; ids another
// claimer took in between are skipped (so it may lease fewer than n while
// more are pending), and when every id read was taken it reads the head
// again, a few times at most. It returns no jobs and no error when nothing
// is pending. A lease under a millisecond or an n under 1 is
// refused with ErrArgument before anything is sent.
func (q *Queue) ClaimMany(ctx context.Context, lease time.Duration, n int) (_ []Job, err error) {
	defer q.c.afterFailure(ctx, &err)
	if err := positive("lease", lease); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, errorf("%w: claim count %d", ErrArgument, n)
	}
	if err := q.c.ensure(ctx); err != nil {
		return nil, err
	}
	jobs, err := q.claimHead(ctx, lease, n)
	if err != nil {
		return nil, err
	}
	q.c.metrics.Add(Claimed, q.Name(), int64(len(jobs)))
	return jobs, nil
}

// CompleteClaim retires an active job like Complete and, in the same
// script call, leases up to n of the oldest pending jobs for lease (n may
// be 0: complete only). It reads up to n ids at the head of pending first
// and passes them to complete_claim_ids, which declares every key it
// touches; ids another claimer took in between are skipped, so it may
// lease fewer than n while more are pending. A stale token is refused with
// ErrStale and nothing is leased. A malformed id, a lease under a
// millisecond or a negative n is refused before anything is sent.
//
// Deprecated: use CompleteClaimIDs with the ids to lease next (those of
// Head(ctx, SetPending, n), or a worker's pool), or Complete when nothing
// more is to be leased.
func (q *Queue) CompleteClaim(ctx context.Context, id ID, token int64, lease time.Duration, n int) (_ []Job, err error) {
	defer q.c.afterFailure(ctx, &err)
	if err := positive("lease", lease); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, errorf("%w: claim count %d", ErrArgument, n)
	}
	row, err := q.row(ctx, id)
	if err != nil {
		return nil, err
	}
	var members []string
	if n > 0 {
		if members, err = q.c.rc.Do(ctx, q.headCmd(q.keys.Pending, n)).AsStrSlice(); err != nil {
			return nil, errorf("emq: head of %s: %w", SetPending, err)
		}
	}
	keys := append([]string{row, q.keys.Active, q.keys.Pending, q.keys.Wake}, q.rawRows(members)...)
	args := append([]string{id.String(), strconv.FormatInt(token, 10), strconv.FormatInt(ms(lease), 10)}, members...)
	rs, err := wire.DecodeCompleteClaimIDs(wire.ScriptCompleteClaimIDs.Lua().Exec(ctx, q.c.rc, keys, args))
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
