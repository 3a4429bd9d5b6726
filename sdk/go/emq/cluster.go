package emq

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq/wire"
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
		if isTryAgain(r) {
			r = c.twinsOriginal(ctx, cmd, r)
		}
		if !isTryAgain(r) || !pause(ctx, wait) {
			return r
		}
	}
}

// twinsOriginal runs, for cmd, a call of a 2.7 twin the cluster answered
// r (TRYAGAIN), the call of the 2.6 script the twin serves instead, and
// returns its reply when it ran; otherwise r.
//
// A twin declares the queue's running set (and policy), which a queue in
// the classic layout does not have: while the queue's slot migrates, a
// multi-key call with a key on neither node is answered TRYAGAIN until the
// migration ends, where the 2.6 script, whose keys are all on one node,
// runs. In the classic layout the 2.6 script is the twin's exact
// behaviour (a queue without a policy); in the policy layout it fails
// WRONGTYPE on the tripwire before any write, and the twin is retried.
func (c tryAgainClient) twinsOriginal(ctx context.Context, cmd rueidis.Completed, r rueidis.RedisResult) rueidis.RedisResult {
	alt, ok := originalCall(c.Client, cmd)
	if !ok {
		return r
	}
	a := c.Client.Do(ctx, alt)
	if wrongType(a.Error()) || isTryAgain(a) {
		return r
	}
	return a
}

// twinOf is the 2.6 script each 2.7 twin (and each 2.8 claimer that
// honours a rate limit: claim_rate_ids, complete_rate_ids) serves in the
// classic layout, with the same ARGV and reply: a queue without a policy
// has no rate limit either.
var twinOf = map[*wire.Script]*wire.Script{
	wire.ScriptClaimRateIDs:       wire.ScriptClaimIDs,
	wire.ScriptCompleteRateIDs:    wire.ScriptCompleteResultClaimIDs,
	wire.ScriptClaimPolicyIDs:     wire.ScriptClaimIDs,
	wire.ScriptCompletePolicyIDs:  wire.ScriptCompleteResultClaimIDs,
	wire.ScriptFailPolicy:         wire.ScriptFail,
	wire.ScriptReapPolicyIDs:      wire.ScriptReapRecordedIDs,
	wire.ScriptExtendPolicy:       wire.ScriptExtend,
	wire.ScriptCancelPolicyIDs:    wire.ScriptCancelIDs,
	wire.ScriptAddDedupPolicy:     wire.ScriptAddDedup,
	wire.ScriptReplaceDedupPolicy: wire.ScriptReplaceDedup,
	wire.ScriptDedupPolicyEntries: wire.ScriptDedupEntries,
	wire.ScriptSweepDedupPolicy:   wire.ScriptSweepDedup,
}

// twinBySHA and twinBySource find a twin from its EVALSHA or EVAL.
var twinBySHA, twinBySource = func() (map[string]*wire.Script, map[string]*wire.Script) {
	sha, src := map[string]*wire.Script{}, map[string]*wire.Script{}
	for t := range twinOf {
		sha[t.SHA1], src[t.Source] = t, t
	}
	return sha, src
}()

// originalCall is the EVAL (EVAL_RO for a read-only call) of the 2.6
// script of the twin cmd calls, with the twin's keys of the same names and
// its ARGV; ok is false when cmd calls no twin. The twin's last KEYS name
// (a repeated group of rows, or one key) is the 2.6 script's last, and
// takes every key from there on.
func originalCall(rc rueidis.Client, cmd rueidis.Completed) (rueidis.Completed, bool) {
	words := cmd.Commands()
	if len(words) < 3 {
		return rueidis.Completed{}, false
	}
	var twin *wire.Script
	eval := ""
	switch strings.ToUpper(words[0]) {
	case "EVALSHA":
		twin, eval = twinBySHA[words[1]], "EVAL"
	case "EVALSHA_RO":
		twin, eval = twinBySHA[words[1]], "EVAL_RO"
	case "EVAL":
		twin, eval = twinBySource[words[1]], "EVAL"
	case "EVAL_RO":
		twin, eval = twinBySource[words[1]], "EVAL_RO"
	}
	n, err := strconv.Atoi(words[2])
	if twin == nil || err != nil || n < 0 || 3+n > len(words) {
		return rueidis.Completed{}, false
	}
	keys, args := words[3:3+n], words[3+n:]
	old := twinOf[twin]
	var oldKeys []string
	for i, name := range old.Keys {
		j := slices.Index(twin.Keys, name)
		if j < 0 {
			return rueidis.Completed{}, false
		}
		if i == len(old.Keys)-1 && j == len(twin.Keys)-1 {
			oldKeys = append(oldKeys, keys[min(j, len(keys)):]...)
			continue
		}
		if j >= len(keys) {
			return rueidis.Completed{}, false
		}
		oldKeys = append(oldKeys, keys[j])
	}
	return rc.B().Arbitrary(eval).Args(old.Source, strconv.Itoa(len(oldKeys))).Keys(oldKeys...).Args(args...).Build(), true
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
				out[i] = c.twinsOriginal(ctx, multi[i], r)
			}
			if isTryAgain(out[i]) {
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
