package emq

import (
	"context"
	"errors"
	"io"
	mrand "math/rand/v2"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/redis/rueidis"
)

// ErrConnection means a call failed in transport, not by any answer of the
// server's: the connection was lost (the server restarted, failed over or
// closed it), could not be opened, timed out, or reached a server still
// loading its dataset. The error wraps the transport error (errors.Is finds
// io.EOF, a *net.OpError, ...); it never matches ErrVersionFence and never
// is a *FenceError, even when the step that failed was the version fence.
//
// It is retryable: the client fences the next connection before its next
// command. A command that was never sent — no connection could be opened,
// the connection was found closed by the server before the command was
// written, or rueidis gave the connection up before writing it — is sent
// again by the client, whatever the call, on a
// fresh connection (fenced as it is dialed): the call waits for a
// connection as long as its context allows, or, when the context has no
// deadline, for a bounded backoff of a few hundred milliseconds. So the
// first call of any kind after a server restart succeeds once the server
// answers again. The version fence is idempotent, and runs again at once
// on a fresh connection when it fails in transport after it was written.
// Idempotent calls (Enqueue, EnqueueAt, Push, PushBatch and the read-only
// inspection calls) are also resent after a failure once written, on a
// fresh, re-fenced connection, a few times within a short bounded backoff
// and the caller's context, so they return ErrConnection only when the
// server stayed unreachable throughout. Other calls (Claim, ClaimMany,
// Complete, CompleteClaim, Retry, Bury, Extend, Revive, Purge, Promote,
// Reap, ...) are never resent once written: the command may or may not
// have run before the connection failed, so the caller decides — a
// worker's loops simply go on, and a job whose settlement was lost keeps
// its lease until it is reaped. Such a call fences again at once after the
// failure; when the keyspace came back with another major its error also
// carries the *FenceError (both match).
var ErrConnection = errors.New("emq: connection failed")

// The resend policy of idempotent calls: up to resendAttempts attempts in
// all, the first resend at once (typically a stale connection is replaced
// by a fresh one), then after resendBackoff, doubling up to resendMax, each
// wait jittered to its upper half. About a second in all, bounded further
// by the caller's context.
const (
	resendAttempts = 8
	resendBackoff  = 10 * time.Millisecond
	resendMax      = 500 * time.Millisecond
)

// transient reports whether err is a failure of transport (or a server
// still loading its dataset) rather than an answer: the call may be sent
// again on another connection. A context's end, a closed client, a script's
// refusal, the fence's refusal and any other error reply are not.
func transient(err error) bool {
	if err == nil {
		return false
	}
	var ns *notSent // declared past the nil check: its address escapes
	switch {
	case errors.Is(err, ErrConnection):
		return true
	case errors.As(err, &ns):
		// No connection to send it on: a failure of transport, even when
		// the context ended while the connection was being opened.
		return !errors.Is(err, ErrVersionFence) && !errors.Is(err, ErrBundle)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, rueidis.ErrClosing), errors.Is(err, ErrVersionFence), errors.Is(err, ErrBundle):
		return false
	}
	var re *rueidis.RedisError
	if errors.As(err, &re) {
		return re.IsLoading()
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// loadingReply reports whether a raw error reply is LOADING: the server is
// up but still loading its dataset, and ran nothing.
func loadingReply(msg string) bool { return strings.HasPrefix(msg, "LOADING") }

// connectionError marks a transport failure with ErrConnection, wrapping
// it; any other error (nil among them) is returned as it is.
func connectionError(err error) error {
	if !transient(err) || errors.Is(err, ErrConnection) {
		return err
	}
	return errorf("%w: %w", ErrConnection, err)
}

// resendWait is the pause before resend n (1 for the first resend).
func resendWait(n int) time.Duration {
	if n <= 1 {
		return 0
	}
	d := resendBackoff << min(n-2, 10)
	d = min(d, resendMax)
	return d/2 + time.Duration(mrand.Int64N(int64(d/2)+1))
}

// idempotent runs attempt, one attempt of an idempotent call (which
// checks its arguments and then fences the keyspace, ensure or ensureRead,
// before it sends anything), and runs it again while it fails in
// transport: up to resendAttempts attempts, pausing resendWait between
// them, while ctx lasts. Each attempt after a failure fences first, on
// whatever connection replaced the failed one, so a keyspace that came
// back foreign refuses the resend with a *FenceError and nothing is
// written. The error of the last attempt is returned, marked with
// ErrConnection when it failed in transport.
func (c *Client) idempotent(ctx context.Context, attempt func(ctx context.Context) error) error {
	var err error
	for n := 0; n < resendAttempts; n++ {
		if n > 0 {
			if d := resendWait(n); (d > 0 && !pause(ctx, d)) || ctx.Err() != nil {
				return errorf("%w (%d attempts, then: %w)", connectionError(err), n, ctx.Err())
			}
		}
		err = attempt(ctx)
		if !transient(err) || ctx.Err() != nil {
			return connectionError(err)
		}
		if neverSent(err) {
			// Nothing was sent, and sendClient waited for a connection
			// as long as the policy allows: waiting again would double it.
			return errorf("%w (no connection)", connectionError(err))
		}
		c.log.Debug("emq: an idempotent call failed in transport; resending it on a fresh connection", "attempt", n+1, "err", err)
	}
	return errorf("%w (gave up after %d attempts)", connectionError(err), resendAttempts)
}

// retryDelay wraps the rueidis retry policy of read-only commands (rueidis
// resends those after a network error, never a script call): a connection
// refused by the fence as it was dialed is final, not resent; everything
// else goes to the caller's RetryDelay, or rueidis's default (exponential,
// at most a second, until the command's context ends).
func retryDelay(next rueidis.RetryDelayFn) rueidis.RetryDelayFn {
	return func(attempts int, cmd rueidis.Completed, err error) time.Duration {
		if errors.Is(err, ErrVersionFence) || errors.Is(err, ErrBundle) {
			return -1
		}
		if next != nil {
			return next(attempts, cmd, err)
		}
		base := time.Duration(1<<min(attempts, 20)) * time.Microsecond
		return min(time.Second, base+time.Duration(mrand.Int64N(int64(base)+1)))
	}
}

// afterFailure settles the error of a call that is not resent: a
// transport failure is marked with ErrConnection, and the keyspace is
// fenced once more at once, on whatever connection replaces the failed one
// (the fence is idempotent), so that a keyspace that came back with
// another major is reported by this very call: its *FenceError joined to
// the connection error (the call may or may not have run on the server
// that went away; nothing ran on the refused keyspace). A call that was
// never sent has nothing to settle beyond the mark: it already waited for
// a connection (sendClient), and a fresh connection it met was fenced as
// it was dialed. An observing client does not fence.
func (c *Client) afterFailure(ctx context.Context, err *error) {
	if !transient(*err) {
		return
	}
	*err = connectionError(*err)
	if c.observer || ctx.Err() != nil || neverSent(*err) {
		return
	}
	// ensure runs the fence again while stale pipelined connections fail
	// it, until one is replaced; a timeout (a server that does not
	// answer) ends it.
	if ferr := c.ensure(ctx); ferr != nil && !transient(ferr) {
		*err = join(ferr, *err)
	}
}

// refenceAttempts bounds the fences ensure runs after fences that failed in
// transport once written: enough to meet a fresh connection behind
// rueidis's pipelined ones (at most eight, plus the pooled one).
const refenceAttempts = 10
