package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// This file is what the policies and mixed26policy scenarios share: the
// controller that sets a queue's policies (echomq 2.7.0: a pause, a
// concurrency cap, through the Go SDK's Queue.Pause, Resume and
// SetConcurrency) and keeps, for each change, the server's time before it
// was sent and after it was answered; a reader of the worker records'
// timeline (records.go: the S lines' lease deadlines, the t= words); and
// the judge that holds the leases to the policies in force.
//
// The rule the judge checks. A lease (job, token) is held, in the server's
// sense, from its claim until its settle is accepted or the reaper takes it
// back: it is a member of the active set (the running set under the
// tripwire), which is what a cap counts (claim_policy_ids: at most the cap
// less the jobs leased). A holder whose lease was reaped may still be
// running its handler (the harness's handlers ignore their context), but
// that lease no longer counts — the reaper freed its slot, or a frozen
// worker would hold a capped queue's slots for good — so the handlers'
// overlap is not what is judged (it is reported, as handler_overlap_max).
// The records bound each lease from inside, never from outside:
//
//   - it began in the millisecond of its claim script's TIME, which is its
//     deadline less the lease (the S line's d=); it is surely held from
//     the end of that millisecond;
//   - it is surely still held at the handler's return (the E line's t=)
//     when its settle was accepted (completed, retried, buried): the settle
//     was sent after the handler returned; otherwise (refused as stale, in
//     doubt, or the process killed first) until the earlier of that return
//     and its first deadline: a lease is reaped only after its deadline,
//     which an extension only moves later.
//
// Every process of a run is on one host, so the t= words and the server's
// TIME read one clock. A policy change is known to be in force between the
// server's TIME read after its reply and the TIME read before the next
// change was sent; within a change's bracket either side's policy may be.
// A lease whose claim millisecond meets only brackets and spans in which
// the queue was paused is a claim under a pause; a lease whose claim could
// only have happened under a cap of K, and at whose claim more than K
// leases were surely held (itself included), breaks the cap. A cap lowered
// below the jobs leased does not take leases back: only claims are judged,
// at their instant.

// policyState is a queue's policy: paused, and a cap (0: none).
type policyState struct {
	Paused bool
	Cap    int64
}

// any reports whether the queue has a policy (and so its tripwire).
func (s policyState) any() bool { return s.Paused || s.Cap > 0 }

// room is how many leases a claim may leave held under s: 0 while
// paused, the cap, or unbounded.
func (s policyState) room() int64 {
	switch {
	case s.Paused:
		return 0
	case s.Cap > 0:
		return s.Cap
	}
	return math.MaxInt64
}

func (s policyState) String() string {
	switch {
	case s.Paused && s.Cap > 0:
		return fmt.Sprintf("paused, cap %d", s.Cap)
	case s.Paused:
		return "paused"
	case s.Cap > 0:
		return fmt.Sprintf("cap %d", s.Cap)
	}
	return "no policy"
}

// policyChange is one change of the controller: the server's TIME (µs)
// read before the call was sent and after it was answered, and the policy
// before and after.
type policyChange struct {
	Before, After int64
	From, To      policyState
	What          string // "pause", "resume", "cap 3", "no cap"
}

// policyCtl sets the run's queue's policies and keeps the changes.
type policyCtl struct {
	r *run

	mu      sync.Mutex
	state   policyState
	changes []policyChange
}

// serverMicros reads the server's TIME, in µs.
func (c *policyCtl) serverMicros(ctx context.Context) (int64, error) {
	rc := c.r.chk.Client()
	t, err := rc.Do(ctx, rc.B().Time().Build()).AsStrSlice()
	if err != nil {
		return 0, err
	}
	if len(t) != 2 {
		return 0, fmt.Errorf("chaos: TIME answered %v", t)
	}
	s, err1 := strconv.ParseInt(t[0], 10, 64)
	us, err2 := strconv.ParseInt(t[1], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("chaos: TIME answered %v", t)
	}
	return s*1_000_000 + us, nil
}

// setPolicy is one change through the Go SDK's policy calls (Queue.Pause,
// Resume, SetConcurrency: paused 1 or 0, or concurrency n >= 0 with
// paused -1), answering the policy it left and the minor its tripwire
// names.
func (c *policyCtl) setPolicy(ctx context.Context, paused, concurrency int64) (policyState, int64, error) {
	q := c.r.queue
	var p emq.QueuePolicy
	var err error
	switch {
	case paused == 1:
		p, err = q.Pause(ctx)
	case paused == 0:
		p, err = q.Resume(ctx)
	default:
		p, err = q.SetConcurrency(ctx, int(concurrency))
	}
	if err != nil {
		return policyState{}, 0, err
	}
	return policyState{Paused: p.Paused, Cap: int64(p.Concurrency)}, int64(p.Requires), nil
}

// apply makes one change and keeps it; what the server answered must be
// what was asked, and the tripwire must name a minor (at most this tree's)
// exactly while the queue has a policy.
func (c *policyCtl) apply(ctx context.Context, what string, paused, concurrency int64) error {
	before, err := c.serverMicros(ctx)
	if err != nil {
		return err
	}
	to, requires, err := c.setPolicy(ctx, paused, concurrency)
	if err != nil {
		return fmt.Errorf("chaos: set_policy (%s): %w", what, err)
	}
	after, err := c.serverMicros(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	from := c.state
	want := from
	if paused >= 0 {
		want.Paused = paused == 1
	}
	if concurrency >= 0 {
		want.Cap = concurrency
	}
	c.state = to
	c.changes = append(c.changes, policyChange{Before: before, After: after, From: from, To: to, What: what})
	c.mu.Unlock()
	if to != want {
		c.r.violate("set_policy (%s) left the queue %s; want %s", what, to, want)
	}
	// The tripwire names the least minor that honours the policy: one of
	// this tree's at most, while the queue has one; none without.
	if minor := thisMinor(); to.any() && (requires <= 0 || requires > minor) || !to.any() && requires != 0 {
		c.r.violate("the policy change (%s) left the queue %s with a tripwire naming minor %d; want 1..%d with a policy, 0 without", what, to, requires, minor)
	}
	c.r.count("policy_changes", 1)
	c.r.logf("policy: %s -> %s", what, to)
	return nil
}

func (c *policyCtl) pause(ctx context.Context) error  { return c.apply(ctx, "pause", 1, -1) }
func (c *policyCtl) resume(ctx context.Context) error { return c.apply(ctx, "resume", 0, -1) }
func (c *policyCtl) setCap(ctx context.Context, n int64) error {
	what := fmt.Sprintf("cap %d", n)
	if n == 0 {
		what = "no cap"
	}
	return c.apply(ctx, what, -1, n)
}

// clear removes every policy.
func (c *policyCtl) clear(ctx context.Context) error {
	c.mu.Lock()
	s := c.state
	c.mu.Unlock()
	if s.Paused {
		if err := c.resume(ctx); err != nil {
			return err
		}
	}
	if s.Cap > 0 {
		return c.setCap(ctx, 0)
	}
	return nil
}

// history returns the changes made so far.
func (c *policyCtl) history() []policyChange {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]policyChange(nil), c.changes...)
}

// last returns the last change (the zero change before any).
func (c *policyCtl) last() policyChange {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.changes) == 0 {
		return policyChange{}
	}
	return c.changes[len(c.changes)-1]
}

// thisMinor is the minor of this tree's protocol version: the most a
// tripwire this tree lays may name.
func thisMinor() int64 {
	parts := strings.Split(wire.Version, ".")
	if len(parts) < 2 {
		return 0
	}
	n, _ := strconv.ParseInt(parts[1], 10, 64)
	return n
}

// leaseRec is what one worker process's records say of one lease.
type leaseRec struct {
	id      string
	token   int64
	proc    int   // the process's number in the pool
	lang    Lang  // its SDK
	claimMS int64 // the claim script's TIME, ms (deadline less the lease); -1 unknown
	deadMS  int64 // the first deadline, ms; -1 unknown
	startUS int64 // the handler's start (S t=), µs; 0 unknown
	endUS   int64 // the handler's return (E t=), µs; 0 none
	ok      bool  // the handler returned nil
	outcome byte  // the settle outcome recorded (C Z Y T B F), 0 none
	settled int64 // the settle record's t=, µs; 0 none
}

// accepted reports whether the lease's settle was accepted.
func (l *leaseRec) accepted() bool {
	return l.outcome == recCompleted || l.outcome == recRetried || l.outcome == recBuried
}

// heldFrom and heldTo bound the span the lease was surely held (µs), as
// the rule above says; heldFrom > heldTo when nothing is sure.
func (l *leaseRec) heldFrom() int64 { return (l.claimMS + 1) * 1000 }

func (l *leaseRec) heldTo() int64 {
	expiry := l.deadMS * 1000
	switch {
	case l.accepted() && l.endUS > 0:
		return l.endUS
	case l.endUS > 0:
		return min(l.endUS, expiry)
	}
	return expiry
}

// loggedRec is one W line: a warning or an error the SDK logged.
type loggedRec struct {
	proc      int
	lang      Lang
	op, class string
	us        int64
}

// timeline is every worker record of a run that the policy judge reads.
type timeline struct {
	leases []*leaseRec
	logs   []loggedRec
}

// tailer reads the pool's record files as they grow, whole lines only.
type tailer struct {
	pool   *Pool
	lease  time.Duration
	offset map[int]int64
	byKey  map[leaseKey]*leaseRec
	tl     timeline
}

type leaseKey struct {
	proc  int
	id    string
	token int64
}

func newTailer(pool *Pool, lease time.Duration) *tailer {
	return &tailer{pool: pool, lease: lease, offset: map[int]int64{}, byKey: map[leaseKey]*leaseRec{}}
}

// read reads what the record files gained since the last read.
func (t *tailer) read() error {
	for _, proc := range t.pool.Procs() {
		f, err := os.Open(proc.Records)
		if errors.Is(err, os.ErrNotExist) {
			continue // a process just started, which has not opened its records yet
		}
		if err != nil {
			return err
		}
		if _, err := f.Seek(t.offset[proc.N], io.SeekStart); err != nil {
			f.Close()
			return err
		}
		br := bufio.NewReaderSize(f, 64<<10)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				break // a line cut short is read whole next time
			}
			t.offset[proc.N] += int64(len(line))
			t.line(proc, strings.TrimSuffix(line, "\n"))
		}
		f.Close()
	}
	return nil
}

// words returns the key=value words of a record line (t=, d=).
func timeWord(w []string, key string) int64 {
	for _, s := range w {
		if v, ok := strings.CutPrefix(s, key); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return 0
}

func (t *tailer) line(proc *Proc, line string) {
	w := strings.Fields(line)
	if len(w) < 2 || len(w[0]) != 1 {
		return
	}
	kind := w[0][0]
	if kind == recLogged {
		if len(w) >= 3 {
			t.tl.logs = append(t.tl.logs, loggedRec{proc: proc.N, lang: proc.Lang, op: w[1], class: w[2], us: timeWord(w[3:], wordTime)})
		}
		return
	}
	if len(w) < 3 || !strings.ContainsRune("SECZYTBF", rune(kind)) {
		return
	}
	token, err := strconv.ParseInt(w[2], 10, 64)
	if err != nil {
		return
	}
	k := leaseKey{proc.N, w[1], token}
	l := t.byKey[k]
	if l == nil {
		l = &leaseRec{id: w[1], token: token, proc: proc.N, lang: proc.Lang, claimMS: -1, deadMS: -1}
		t.byKey[k] = l
		t.tl.leases = append(t.tl.leases, l)
	}
	switch kind {
	case recStart:
		l.startUS = timeWord(w[3:], wordTime)
		if d := timeWord(w[3:], wordDeadline); d > 0 {
			l.deadMS, l.claimMS = d, d-t.lease.Milliseconds()
		}
	case recEnd:
		l.endUS = timeWord(w[3:], wordTime)
		l.ok = len(w) > 3 && w[3] == "ok"
	default:
		if l.outcome == 0 || kind == recCompleted || kind == recBuried {
			l.outcome = kind
			l.settled = timeWord(w[3:], wordTime)
		}
	}
}

// claimedSince reports whether a lease of a process of lang (any when "")
// was claimed after server time us, by the records read so far.
func (t *tailer) claimedSince(lang Lang, us int64) bool {
	for i := len(t.tl.leases) - 1; i >= 0; i-- {
		l := t.tl.leases[i]
		if (lang == "" || l.lang == lang) && l.claimMS >= 0 && l.claimMS*1000 > us {
			return true
		}
	}
	return false
}

// waitClaim waits, reading the records every 50 ms, until a process of
// lang recorded a lease claimed after server time us; it reports whether
// one did within limit.
func (t *tailer) waitClaim(ctx context.Context, lang Lang, us int64, limit time.Duration) (bool, error) {
	deadline := time.Now().Add(limit)
	for {
		if err := t.read(); err != nil {
			return false, err
		}
		if t.claimedSince(lang, us) {
			return true, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false, ctx.Err()
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
}

// segment is a span of server time (µs, [from, to)) and the policies that
// may have been in force in it: one, or the two sides of a change.
type segment struct {
	from, to int64
	states   []policyState
}

// segments cuts the run's time at the changes' brackets.
func segments(changes []policyChange) []segment {
	var out []segment
	at := int64(math.MinInt64)
	cur := policyState{}
	for _, ch := range changes {
		out = append(out, segment{from: at, to: ch.Before, states: []policyState{cur}})
		out = append(out, segment{from: ch.Before, to: ch.After + 1, states: []policyState{ch.From, ch.To}})
		at, cur = ch.After+1, ch.To
	}
	return append(out, segment{from: at, to: math.MaxInt64, states: []policyState{cur}})
}

// possible returns the policies that may have been in force at some
// instant of [from, to).
func possible(segs []segment, from, to int64) []policyState {
	i := sort.Search(len(segs), func(i int) bool { return segs[i].to > from })
	var out []policyState
	for ; i < len(segs) && segs[i].from < to; i++ {
		out = append(out, segs[i].states...)
	}
	return out
}

// policyVerdict is what the judge found.
type policyVerdict struct {
	Leases, Timed  int64           // leases recorded; of them with a claim time
	Paused         int64           // leases claimed while the queue was surely paused (violations)
	CapBreaches    int64           // claims after which more leases were surely held than the cap allowed
	UnderPolicy    int64           // leases claimed while the queue surely had a policy
	InBrackets     int64           // claims within a change's bracket (either policy may have been in force)
	MaxHeld        map[int64]int64 // per cap: the most leases surely held at a claim under it
	Saturated      map[int64]int64 // per cap: claims at which exactly the cap was surely held
	HandlerOverlap int64           // the most handlers running at once (lost leases' included)
	// The old side's, for a mixed fleet (old reports whether a lease is
	// the old side's):
	OldUnderPolicy     int64 // old-side leases claimed while the queue surely had a policy (violations)
	OldSettledUnder    int64 // old-side settles accepted while the queue surely had a policy (violations)
	OldStranded        int64 // old-side leases held when a tripwire was laid and not settled by their holder
	OldTakenUnder      int64 // ... leased again while the queue still had a policy (the new side's reaper took them back)
	OldTakenAfter      int64 // ... leased again only once the policy was cleared
	OldReleasedTooSoon int64 // ... leased again before their deadline (violations)
	Problems           []string
	more               int
}

func (v *policyVerdict) problem(format string, args ...any) {
	if len(v.Problems) >= maxProblems {
		v.more++
		return
	}
	v.Problems = append(v.Problems, fmt.Sprintf(format, args...))
}

// judgePolicy holds the leases of tl to the changes (see the rule above);
// old says which languages are the old side (nil: none).
func judgePolicy(tl *timeline, changes []policyChange, old func(Lang) bool) policyVerdict {
	v := policyVerdict{MaxHeld: map[int64]int64{}, Saturated: map[int64]int64{}}
	if old == nil {
		old = func(Lang) bool { return false }
	}
	segs := segments(changes)
	type event struct {
		at    int64
		start bool
		l     *leaseRec
	}
	var evs, hevs []event
	var brief []*leaseRec // leases surely held at no instant past their claim's millisecond
	for _, l := range tl.leases {
		v.Leases++
		if l.startUS > 0 {
			end := l.endUS
			if end == 0 {
				end = max(l.startUS, l.deadMS*1000) // killed in its handler: to its deadline (a figure only)
			}
			hevs = append(hevs, event{l.startUS, true, l}, event{end, false, l})
		}
		if l.claimMS < 0 {
			continue
		}
		v.Timed++
		if from, to := l.heldFrom(), l.heldTo(); from <= to {
			evs = append(evs, event{from, true, l}, event{to, false, l})
		} else {
			brief = append(brief, l)
		}
	}
	order := func(e []event) {
		sort.Slice(e, func(i, j int) bool {
			if e[i].at != e[j].at {
				return e[i].at < e[j].at
			}
			return e[i].start && !e[j].start
		})
	}
	order(evs)
	order(hevs)
	var running int64
	for _, e := range hevs {
		if e.start {
			running++
			v.HandlerOverlap = max(v.HandlerOverlap, running)
		} else {
			running--
		}
	}
	// At the instant a lease is surely held from, the leases surely held
	// then (itself included) were all held at once; the last of them to be
	// claimed was claimed in this lease's millisecond (no other began
	// later), with the others held: its claim left that many held, under
	// a policy of this millisecond.
	held := int64(0)
	for i := 0; i < len(evs); {
		at := evs[i].at
		var starting []*leaseRec
		j := i
		for ; j < len(evs) && evs[j].at == at && evs[j].start; j++ {
			held++
			starting = append(starting, evs[j].l)
		}
		for _, l := range starting {
			v.judgeClaim(l, held, possible(segs, l.claimMS*1000, (l.claimMS+1)*1000), old(l.lang))
		}
		for ; j < len(evs) && evs[j].at == at; j++ {
			held--
		}
		i = j
	}
	// A lease held only within its claim's millisecond is judged alone: a
	// claim under a pause is one whatever else was held.
	for _, l := range brief {
		v.judgeClaim(l, 1, possible(segs, l.claimMS*1000, (l.claimMS+1)*1000), old(l.lang))
	}
	// The old side's settles, and the leases it held when a tripwire was
	// laid.
	byJob := map[string][]*leaseRec{}
	for _, l := range tl.leases {
		byJob[l.id] = append(byJob[l.id], l)
	}
	for _, l := range tl.leases {
		if !old(l.lang) || l.claimMS < 0 {
			continue
		}
		if l.accepted() && l.endUS > 0 && l.settled > 0 && surely(possible(segs, l.endUS, l.settled+1), policyState.any) {
			v.OldSettledUnder++
			v.problem("%s token %d: the old side's %c was accepted while the queue had a policy (handler returned at %d µs, settle recorded at %d µs)", l.id, l.token, l.outcome, l.endUS, l.settled)
		}
		if l.accepted() {
			continue
		}
		laid := false
		for _, ch := range changes {
			if !ch.From.any() && ch.To.any() && l.heldFrom() <= ch.Before && ch.After < l.deadMS*1000 {
				laid = true
			}
		}
		if !laid {
			continue
		}
		v.OldStranded++
		var next *leaseRec
		for _, m := range byJob[l.id] {
			if m.token > l.token && m.claimMS >= 0 && (next == nil || m.token < next.token) {
				next = m
			}
		}
		switch {
		case next == nil:
			// Finished otherwise (maintenance out of attempts) or its next
			// lease unrecorded: the accounting judges the job.
		case next.claimMS < l.deadMS:
			v.OldReleasedTooSoon++
			v.problem("%s: the old side's lease (token %d, deadline %d ms) was leased again (token %d) at %d ms, before it expired", l.id, l.token, l.deadMS, next.token, next.claimMS)
		case surely(possible(segs, next.claimMS*1000, (next.claimMS+1)*1000), policyState.any):
			v.OldTakenUnder++
		default:
			v.OldTakenAfter++
		}
	}
	return v
}

// judgeClaim judges one claim: held leases surely held just after it
// (itself included), under the policies that may have been in force in its
// millisecond.
func (v *policyVerdict) judgeClaim(l *leaseRec, held int64, states []policyState, old bool) {
	room := int64(0)
	for _, s := range states {
		room = max(room, s.room())
	}
	if len(states) > 1 {
		v.InBrackets++
	}
	if surely(states, policyState.any) {
		v.UnderPolicy++
		if old {
			v.OldUnderPolicy++
			v.problem("%s token %d: the old side (%s, process %d) leased it at %d ms, while the queue had a policy (%v)", l.id, l.token, l.lang, l.proc, l.claimMS, states)
		}
	}
	if len(states) == 1 && states[0].Cap > 0 && !states[0].Paused {
		c := states[0].Cap
		v.MaxHeld[c] = max(v.MaxHeld[c], held)
		if held == c {
			v.Saturated[c]++
		}
	}
	switch {
	case room == 0:
		v.Paused++
		v.problem("%s token %d: leased at %d ms (process %d, %s) while the queue was paused (%v)", l.id, l.token, l.claimMS, l.proc, l.lang, states)
	case held > room:
		v.CapBreaches++
		v.problem("%s token %d: leased at %d ms (process %d, %s) with %d leases surely held after it, under a cap of %d", l.id, l.token, l.claimMS, l.proc, l.lang, held, room)
	}
}

// surely reports whether every state satisfies f (and there is one).
func surely(states []policyState, f func(policyState) bool) bool {
	if len(states) == 0 {
		return false
	}
	for _, s := range states {
		if !f(s) {
			return false
		}
	}
	return true
}
