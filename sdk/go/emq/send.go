package emq

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/redis/rueidis"
)

// notSent marks the error of a command that never reached a server: the
// connection it was to go out on could not be opened (the dial failed, or
// the fence of a freshly dialed connection failed in transport), or was
// found closed by the server before anything of the command was written
// (see watchedConn). Such a command can be sent again, on another
// connection, whatever it does: nothing of it ran.
type notSent struct{ err error }

func (e *notSent) Error() string { return e.err.Error() }
func (e *notSent) Unwrap() error { return e.err }

// markNotSent marks err as the error of a command that was never sent;
// nil stays nil.
func markNotSent(err error) error {
	if err == nil {
		return nil
	}
	var ns *notSent
	if errors.As(err, &ns) {
		return err
	}
	return &notSent{err: err}
}

// connEnd is an error of a connection the server closed or reset: at is
// the client's dial count when the connection failed (watchedConn). A
// command issued after it, answered with it, was never run: rueidis
// answers it without writing it (the connection is closing), or writes it
// after the server's end, where nothing reads it. A command outstanding at
// the end may have run.
type connEnd struct {
	err error
	at  uint64
}

func (e *connEnd) Error() string { return e.err.Error() }
func (e *connEnd) Unwrap() error { return e.err }

// endedBefore reports whether err is the end of a connection that failed
// before a command issued when the dial count was begin.
func endedBefore(err error, begin uint64) bool {
	if err == nil {
		return false
	}
	var ce *connEnd
	return errors.As(err, &ce) && ce.at <= begin
}

// neverSent reports whether err is the failure of a command that never
// reached a server (notSent), and is worth sending again. A timeout is not:
// a server that accepts connections but does not answer is not waited out
// command by command. (A LOADING reply runs nothing either, but rueidis
// recycles a command answered by the server, so sendClient cannot send it
// again; the idempotent calls resend it themselves.)
func neverSent(err error) bool {
	if err == nil || timedOut(err) {
		return false
	}
	var ns *notSent
	if errors.As(err, &ns) {
		return !errors.Is(err, ErrVersionFence) && !errors.Is(err, ErrBundle)
	}
	return false
}

// timedOut reports whether err is a network timeout.
func timedOut(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// sendClient is the rueidis client with every command that was never sent
// sent again (neverSent): Do and DoMulti wait for a connection, with
// resendWait's backoff, for as long as the command's context allows, or
// for resendAttempts attempts when the context has no deadline. A command
// that was written is never sent twice by it: whether it ran is unknown,
// and the calls above decide (idempotent resends the idempotent ones).
//
// A command is sent again only after an error of no server's (notSent, or
// a connection's end), which rueidis never recycles the command after, so
// commands need no pinning. Everything else (DoCache, Dedicated, Nodes,
// ...) is the rueidis client's own.
type sendClient struct {
	rueidis.Client
	c *Client
}

// sendMaxWait caps the pause between two attempts at a command that was
// never sent: a server back from a restart is met within it.
const sendMaxWait = 100 * time.Millisecond

// sendAgain reports whether a command issued when the dial count was
// begin, that failed attempt times (1 for the first) with err, may be sent
// again, after waiting for its turn.
func sendAgain(ctx context.Context, attempt int, begin uint64, err error) bool {
	if !(neverSent(err) || endedBefore(err, begin)) || ctx.Err() != nil {
		return false
	}
	if _, ok := ctx.Deadline(); !ok && attempt >= resendAttempts {
		return false
	}
	return pause(ctx, min(max(resendWait(attempt), time.Millisecond), sendMaxWait))
}

// Do sends cmd, again while it was never sent.
func (c sendClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	var prev error
	for n := 1; ; n++ {
		begin := c.c.dials.Load()
		r := c.Client.Do(ctx, cmd)
		if !sendAgain(ctx, n, begin, r.Error()) {
			if prev != nil && ctx.Err() != nil && errors.Is(r.Error(), ctx.Err()) {
				return rueidis.NewErrorResult(waitedOut(prev, ctx))
			}
			return r
		}
		prev = r.Error()
	}
}

// waitedOut is the error of a command that was never sent and whose
// context ended while it waited for a connection: the last failure to
// send it (a failure of transport), then the context's end.
func waitedOut(last error, ctx context.Context) error {
	return markNotSent(errorf("%w (then, waiting for a connection: %w)", last, ctx.Err()))
}

// DoMulti sends multi, then again those of its commands that were never
// sent (in their order).
func (c sendClient) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	begin := c.c.dials.Load()
	out := c.Client.DoMulti(ctx, multi...)
	for n := 1; ; n++ {
		var again []int
		for i, r := range out {
			if err := r.Error(); neverSent(err) || endedBefore(err, begin) {
				again = append(again, i)
			}
		}
		if len(again) == 0 || !sendAgain(ctx, n, begin, out[again[0]].Error()) {
			return out
		}
		prev := out[again[0]].Error()
		begin = c.c.dials.Load()
		cmds := make([]rueidis.Completed, len(again))
		for j, i := range again {
			cmds[j] = multi[i]
		}
		for j, r := range c.Client.DoMulti(ctx, cmds...) {
			if ctx.Err() != nil && errors.Is(r.Error(), ctx.Err()) {
				r = rueidis.NewErrorResult(waitedOut(prev, ctx))
			}
			out[again[j]] = r
		}
	}
}
