package emq

import (
	"context"
	"time"

	"github.com/redis/rueidis"
)

// TRYAGAIN backoff: the first wait, and the longest.
const (
	tryAgainFirst = 2 * time.Millisecond
	tryAgainMax   = 100 * time.Millisecond
)

// tryAgainClient is the rueidis cluster client with TRYAGAIN absorbed.
//
// rueidis follows MOVED and ASK itself, but hands TRYAGAIN to the caller
// unless the command is marked retryable, and the bundle's scripts are not
// (a retryable command is also resent after a network error, which could
// run a script twice). A cluster answers TRYAGAIN while a slot is being
// migrated, to a multi-key command whose keys are split between the two
// nodes or, on the importing node, not all there yet: every script of a
// queue whose slot moves meets it. TRYAGAIN is decided before the command
// runs, so resending is safe; Do and DoMulti resend a command answered
// TRYAGAIN, with a backoff from 2ms to 100ms, until it is answered
// otherwise or ctx ends (then the TRYAGAIN reply is returned).
//
// Commands are pinned (rueidis.Completed.Pin) so that rueidis does not
// recycle them between attempts. Everything else (DoCache, Dedicated,
// Nodes, ...) is the rueidis client's own.
type tryAgainClient struct {
	rueidis.Client
}

// Do sends cmd, again while the cluster answers TRYAGAIN.
func (c tryAgainClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	cmd.Pin()
	for wait := tryAgainFirst; ; wait = min(2*wait, tryAgainMax) {
		r := c.Client.Do(ctx, cmd)
		if !isTryAgain(r) || !pause(ctx, wait) {
			return r
		}
	}
}

// DoMulti sends multi, then again those of its commands the cluster
// answered TRYAGAIN (in their order, after the others ran).
func (c tryAgainClient) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	for _, cmd := range multi {
		cmd.Pin()
	}
	out := c.Client.DoMulti(ctx, multi...)
	for wait := tryAgainFirst; ; wait = min(2*wait, tryAgainMax) {
		var again []int
		for i, r := range out {
			if isTryAgain(r) {
				again = append(again, i)
			}
		}
		if len(again) == 0 || !pause(ctx, wait) {
			return out
		}
		cmds := make([]rueidis.Completed, len(again))
		for j, i := range again {
			cmds[j] = multi[i]
		}
		for j, r := range c.Client.DoMulti(ctx, cmds...) {
			out[again[j]] = r
		}
	}
}

// clusterState reports whether e is the cluster's state speaking (a slot
// moving or unserved, the cluster down) rather than the command's own
// answer: the fence does not take such an error for a refusal.
func clusterState(e *rueidis.RedisError) bool {
	_, moved := e.IsMoved()
	_, ask := e.IsAsk()
	return moved || ask || e.IsTryAgain() || e.IsClusterDown()
}

func isTryAgain(r rueidis.RedisResult) bool {
	e, ok := rueidis.IsRedisErr(r.Error())
	return ok && e.IsTryAgain()
}

// pause waits d and reports true, or reports false as soon as ctx ends.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
