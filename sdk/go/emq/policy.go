package emq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// QueuePolicy is a queue's policy (echomq 2.7.0) as one call left it:
// whether the queue is paused, its concurrency cap, its rate limit
// (echomq 2.8.0), the minor its tripwire names and how many of its jobs
// are leased. The wire vocabulary's words for the policies are
// PolicyPaused, PolicyConcurrency, PolicyRateLimit and PolicyRatePeriod.
type QueuePolicy struct {
	// Paused reports that claims lease nothing; producers keep
	// enqueueing, and the leased jobs run to their end.
	Paused bool
	// Concurrency is the cap on the queue's jobs leased at once, across
	// every worker of every client; 0 is no cap.
	Concurrency int
	// Requires is the least minor of this major a client must speak to
	// claim or settle on the queue (the later of the two its tripwire
	// names): 8 while it has a rate limit, 7 while it has another policy,
	// 0 when it has none (the classic layout, which every 2.x client
	// serves).
	Requires int
	// Leased is how many of the queue's jobs are leased; Policy reads it,
	// the setters read it after their call.
	Leased int64
	// RateLimit is the most of the queue's jobs started (leased) in any
	// window of RatePeriod, across every worker of every client (echomq
	// 2.8.0; see SetRateLimit); 0 is no limit, and RatePeriod is then 0.
	RateLimit int
	// RatePeriod is the rate limit's window, a whole number of
	// milliseconds.
	RatePeriod time.Duration
	// AdmitIn is how long until the rate limit admits the next start, as
	// the call read it (its pace and its log of starts); 0 when one is
	// admitted now or there is no limit.
	AdmitIn time.Duration
}

// PolicyOption changes how Pause, SetConcurrency and SetRateLimit lay a
// queue's tripwire.
type PolicyOption func(*policyOptions)

type policyOptions struct{ force bool }

// ForceTripwire skips the check Pause, SetConcurrency and SetRateLimit
// make before they lay a queue's tripwire: that no client of a release below the tripwire's
// floor has fenced on the deployment (ErrTripwireFloor). Those releases'
// scripts write before they read the active key, so on a queue in the
// policy layout they would be wrong rather than refused. Use it only when
// no such client is left: the bundle record (the reserve's bundle member)
// keeps every version that ever fenced, including those long gone.
func ForceTripwire() PolicyOption {
	return func(o *policyOptions) { o.force = true }
}

// ErrTripwireFloor means Pause, SetConcurrency or SetRateLimit refused to
// lay a queue's tripwire because the deployment's bundle record names a
// release below the tripwire's floor, whose scripts write before they read
// the active key. It matches ErrArgument too; errors.As to *TripwireFloorError gives
// the versions. ForceTripwire overrides the check.
var ErrTripwireFloor = fmt.Errorf("%w: the deployment records a client below the tripwire floor", ErrArgument)

// TripwireFloorError is the refusal ErrTripwireFloor describes.
type TripwireFloorError struct {
	Queue    string   // the queue whose policy was to be set
	Floor    string   // the least release whose scripts honour the tripwire
	Versions []string // the recorded versions below Floor, in order
}

// Error names the queue, the versions and the floor.
func (e *TripwireFloorError) Error() string {
	return fmt.Sprintf("emq: queue %q: not laying its policy tripwire: the bundle record names %s, below %s, whose scripts would write on the queue before they read it (ForceTripwire only when no such client is left)",
		e.Queue, strings.Join(e.Versions, ", "), e.Floor)
}

// Is matches ErrTripwireFloor and ErrArgument.
func (e *TripwireFloorError) Is(target error) bool {
	return target == ErrTripwireFloor || target == ErrArgument
}

// PolicyError is the refusal of a call whose script predates the queue's
// policy layout (echomq 2.7.0): the queue has a policy (paused, a
// concurrency cap or a rate limit), its active key holds the tripwire,
// and the script failed WRONGTYPE on it before any write. It matches
// ErrPolicy under errors.Is and unwraps to the server's reply.
type PolicyError struct {
	Queue  string // the queue
	Script string // the script that was refused
	Use    string // the call that serves the queue
	Err    error  // the server's WRONGTYPE reply
}

// Error names the queue, the refused script and the call to use.
func (e *PolicyError) Error() string {
	return fmt.Sprintf("emq: queue %q has a policy (paused, a concurrency cap or a rate limit), which %s cannot honour: use %s", e.Queue, e.Script, e.Use)
}

// Is matches ErrPolicy.
func (e *PolicyError) Is(target error) bool { return target == ErrPolicy }

// Unwrap returns the server's reply.
func (e *PolicyError) Unwrap() error { return e.Err }

// wrongType reports whether err is, or wraps, a server's WRONGTYPE reply.
func wrongType(err error) bool {
	var re *rueidis.RedisError
	return errors.As(err, &re) && !re.IsNil() && strings.HasPrefix(re.Error(), "WRONGTYPE")
}

// tripped reports whether the active key of the queue of k holds the
// tripwire (at a key of type wire.ActiveTripwireType, the two minors that
// claim and settle there: "<claim> <settle>"): the queue is in the policy
// layout and its leased jobs are in the running set. A value of another
// type, or a string that names no minors, is a foreign writer's.
func (c *Client) tripped(ctx context.Context, k wire.QueueKeys) bool {
	res := c.rc.DoMulti(ctx, c.rc.B().Type().Key(k.Active).Build(), c.rc.B().Get().Key(k.Active).Build())
	t, err := res[0].ToString()
	if err != nil || t != wire.ActiveTripwireType {
		return false
	}
	v, err := res[1].ToString()
	claim, settle, two := strings.Cut(v, " ")
	return err == nil && two && canonicalDecimal(claim) && canonicalDecimal(settle)
}

// leasedKey returns the key that holds the ids of set s for k's queue:
// its set, except for the active set of a queue in the policy layout,
// whose leased jobs are in the running set. It reads the layout (one TYPE)
// only for the active set, and only after err, the error of a read of the
// set's key, was WRONGTYPE; retry is false when the read stands as it is.
func (c *Client) leasedKey(ctx context.Context, k wire.QueueKeys, s Set, err error) (key string, retry bool) {
	if s != SetActive || !wrongType(err) || !c.tripped(ctx, k) {
		return "", false
	}
	return k.Running, true
}

// doSet sends the command build makes for the key of set s, and again for
// the running set when s is the active set of a queue in the policy
// layout (leasedKey).
func (q *Queue) doSet(ctx context.Context, s Set, build func(key string) rueidis.Completed) rueidis.RedisResult {
	r := q.c.rc.Do(ctx, build(q.keys.Set(s)))
	if key, retry := q.c.leasedKey(ctx, q.keys, s, r.Error()); retry {
		return q.c.rc.Do(ctx, build(key))
	}
	return r
}

// held reports whether the queue's policy holds its claims back: it is
// paused, or as many of its jobs are leased as its concurrency cap allows,
// or (echomq 2.8.0) its rate limit admits no start now, when admit is how
// long until it does (0 for a pause or a cap: until the doorbell rings).
// A claim that leased nothing of pending ids asks, so that a worker waits
// on the doorbell instead of reading the head again; a failed read says
// false.
func (q *Queue) held(ctx context.Context) (held bool, admit time.Duration) {
	p, err := q.readPolicy(ctx, false)
	switch {
	case err != nil:
		return false, 0
	case p.Paused || p.Concurrency > 0 && p.Leased >= int64(p.Concurrency):
		return true, 0
	case p.AdmitIn > 0:
		return true, p.AdmitIn
	}
	return false, 0
}

// legacy turns the WRONGTYPE failure of a call of one of the scripts that
// predate the policy layout into a *PolicyError naming use, when the
// queue's active key holds the tripwire (checked with TYPE); any other
// error is returned as it is.
func (q *Queue) legacy(ctx context.Context, err error, script *wire.Script, use string) error {
	if !wrongType(err) || !q.c.tripped(ctx, q.keys) {
		return err
	}
	return &PolicyError{Queue: q.Name(), Script: script.Name, Use: use, Err: err}
}

// Pause pauses the queue (echomq 2.7.0): from the next claim on, no worker
// of any client leases its jobs, while producers keep enqueueing and the
// jobs leased run to their end. It returns the queue's policy after the
// call; a concurrency cap and a rate limit are kept. The first policy of a
// queue lays its tripwire: its leased jobs move to the running set and
// every client older than 2.7 is refused on the queue (WRONGTYPE) rather
// than served wrong; before that, Pause refuses with ErrTripwireFloor a
// deployment whose bundle record names a release that would not be
// refused (see ForceTripwire). Resume undoes it.
func (q *Queue) Pause(ctx context.Context, opts ...PolicyOption) (QueuePolicy, error) {
	return q.configurePolicy(ctx, 1, -1, -1, 0, opts)
}

// Resume resumes a paused queue: the claims lease again, and the doorbell
// is rung when jobs are pending. When the queue has no concurrency cap and
// no rate limit, its last policy is cleared and the classic layout is
// back. Resuming a queue that is not paused changes nothing. It returns
// the queue's policy after the call.
func (q *Queue) Resume(ctx context.Context) (QueuePolicy, error) {
	return q.configurePolicy(ctx, 0, -1, -1, 0, nil)
}

// SetConcurrency caps at n the queue's jobs leased at once, across every
// worker of every client (echomq 2.7.0); 0 removes the cap (and, on a
// queue that is not paused and has no rate limit, its last policy: the
// classic layout is back). Raising or removing a cap rings the doorbell
// when jobs are pending. A negative n is refused with ErrArgument before
// anything is sent; a cap on a queue without a policy lays its tripwire,
// checked as Pause checks it. It returns the queue's policy after the
// call.
func (q *Queue) SetConcurrency(ctx context.Context, n int, opts ...PolicyOption) (QueuePolicy, error) {
	if n < 0 {
		return QueuePolicy{}, errorf("%w: concurrency %d", ErrArgument, n)
	}
	return q.configurePolicy(ctx, -1, int64(n), -1, 0, opts)
}

// Rate limit bounds (the configure_policy script's).
const (
	maxRateLimit  = wire.ConfigurePolicyRateLimitMax
	maxRatePeriod = wire.ConfigurePolicyRatePeriodMSMax * time.Millisecond
)

// SetRateLimit limits the queue to n jobs started (leased) in any window
// of per, across every worker of every client (echomq 2.8.0): the starts
// are paced, one every per/n with one interval's tolerance, so that they
// spread over the period rather than burst at a window's edge; a job the
// limit holds back stays pending (never failed, its attempts unchanged),
// and a worker waits on the doorbell until the limit admits it. n 0
// removes the limit (per is then ignored; on a queue that is neither
// paused nor capped, the classic layout is back). Setting, changing or
// removing the limit rings the doorbell when jobs are pending; a changed
// limit restarts the pace and keeps the log of starts.
//
// While a queue has a rate limit its tripwire names minor 8 to claim: a
// 2.7 client's claims are refused there (ErrPolicy) while its settles
// still go through. n below 0 or above wire.ConfigurePolicyRateLimitMax, and (n > 0) per under a
// millisecond, over 24 hours or not a whole number of milliseconds, are
// refused with ErrArgument before anything is sent; a limit on a queue
// without a policy lays its tripwire, checked as Pause checks it. It
// returns the queue's policy after the call; a pause and a cap are kept.
func (q *Queue) SetRateLimit(ctx context.Context, n int, per time.Duration, opts ...PolicyOption) (QueuePolicy, error) {
	if n < 0 || n > maxRateLimit {
		return QueuePolicy{}, errorf("%w: rate limit %d (give 0 to remove it, or 1 to %d)", ErrArgument, n, maxRateLimit)
	}
	perMS := int64(0)
	if n > 0 {
		if per < time.Millisecond || per > maxRatePeriod || per%time.Millisecond != 0 {
			return QueuePolicy{}, errorf("%w: rate period %v (give a whole number of milliseconds from 1ms to %v)", ErrArgument, per, maxRatePeriod)
		}
		perMS = per.Milliseconds()
	}
	return q.configurePolicy(ctx, -1, -1, int64(n), perMS, opts)
}

// Policy reads the queue's policy and how many of its jobs are leased, in
// either layout, and how long until its rate limit admits the next start.
// It only reads, also on an observing client.
func (q *Queue) Policy(ctx context.Context) (p QueuePolicy, err error) {
	err = q.c.idempotent(ctx, func(ctx context.Context) error {
		if err := q.c.ensureRead(ctx); err != nil {
			return err
		}
		p, err = q.readPolicy(ctx, true)
		return err
	})
	return p, err
}

// readPolicy is one read_policy call, read-only (EVALSHA_RO) for an
// observer's reads, or as the writers' calls go (EVALSHA), which a
// worker's ACL grants.
func (q *Queue) readPolicy(ctx context.Context, ro bool) (QueuePolicy, error) {
	call := q.readPolicyCall()
	var r wire.ReadPolicyReply
	var err error
	if ro {
		res := q.c.execScriptsRO(ctx, []*wire.Script{wire.ScriptReadPolicy}, []rueidis.LuaExec{call.LuaExec()})
		r, err = wire.DecodeReadPolicy(res[0])
	} else {
		r, err = call.Exec(ctx, q.c.rc)
	}
	if err != nil {
		return QueuePolicy{}, err
	}
	return policyOf(r), nil
}

// policyOf is the QueuePolicy of a read_policy reply.
func policyOf(r wire.ReadPolicyReply) QueuePolicy {
	return QueuePolicy{Paused: r.Paused == 1, Concurrency: int(r.Concurrency), Requires: int(r.Requires), Leased: r.Leased,
		RateLimit: int(r.RateLimit), RatePeriod: time.Duration(r.RatePeriodMS) * time.Millisecond, AdmitIn: time.Duration(r.AdmitInMS) * time.Millisecond}
}

func (q *Queue) readPolicyCall() wire.ReadPolicyCall {
	return wire.ReadPolicyCall{Active: q.keys.Active, Running: q.keys.Running, Policy: q.keys.Policy, Starts: q.keys.Starts}
}

// configurePolicy is one configure_policy call (paused, concurrency,
// rateLimit and ratePeriodMS as its ARGV: -1 keeps), after the floor check
// when the call may lay the tripwire, and the read_policy read of what it
// left.
func (q *Queue) configurePolicy(ctx context.Context, paused, concurrency, rateLimit, ratePeriodMS int64, opts []PolicyOption) (_ QueuePolicy, err error) {
	defer q.c.afterFailure(ctx, &err)
	var o policyOptions
	for _, f := range opts {
		f(&o)
	}
	if err := q.c.ensure(ctx); err != nil {
		return QueuePolicy{}, err
	}
	if paused == 1 || concurrency > 0 || rateLimit > 0 {
		if !o.force {
			if err := q.checkFloor(ctx); err != nil {
				return QueuePolicy{}, err
			}
		}
	}
	k := q.keys
	call := wire.ConfigurePolicyCall{Pending: k.Pending, Active: k.Active, Running: k.Running, Policy: k.Policy, Starts: k.Starts, Wake: k.Wake,
		Paused: paused, Concurrency: concurrency, RateLimit: rateLimit, RatePeriodMS: ratePeriodMS}
	if _, err := call.Exec(ctx, q.c.rc); err != nil {
		return QueuePolicy{}, err
	}
	return q.readPolicy(ctx, false)
}

// checkFloor refuses with a *TripwireFloorError when the bundle record
// names a version below the tripwire's floor (a version that does not
// parse is not judged: the fence refuses those clients).
func (q *Queue) checkFloor(ctx context.Context) error {
	// A queue already in the policy layout has its tripwire: nothing to lay.
	if q.c.tripped(ctx, q.keys) {
		return nil
	}
	fields, err := q.c.rc.Do(ctx, q.c.rc.B().Hkeys().Key(wire.KeyBundle).Build()).AsStrSlice()
	if err != nil {
		return errorf("emq: reading %s: %w", wire.KeyBundle, err)
	}
	floor := tripwireFloor()
	var below []string
	for _, f := range fields {
		v, ok := parseVersionRecord(wire.VersionRecordPrefix + f)
		if ok && v[0] == floor[0] && slices.Compare(v[:], floor[:]) < 0 {
			below = append(below, f)
		}
	}
	if len(below) == 0 {
		return nil
	}
	slices.Sort(below)
	return &TripwireFloorError{Queue: q.Name(), Floor: wire.ActiveTripwireFloor, Versions: below}
}

// tripwireFloor is the least release whose scripts read the active key
// before they write (wire.ActiveTripwireFloor).
func tripwireFloor() [3]int {
	v, _ := parseVersionRecord(wire.VersionRecordPrefix + wire.ActiveTripwireFloor)
	return v
}
