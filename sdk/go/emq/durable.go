package emq

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// Durability asks that an enqueue be acknowledged by replicas before it is
// reported, for producers that need more than Redis's asynchronous
// replication: PushDurable and PushBatchDurable send WAIT Replicas Timeout
// on the connection that ran the enqueue, right behind it in the same round
// trip, and report how many replicas acknowledged it.
//
// What it buys, and what it does not: a primary acknowledges a write before
// any replica has it, so a plain enqueue acknowledged just before the
// primary dies can be missing from the replica a failover promotes, and be
// lost. WAIT closes that window for the writes it reports acknowledged:
// with one replica per primary and Replicas 1, the replica a failover
// promotes holds the job. It is not a consensus protocol, though: with
// several replicas a failover may promote one that had not acknowledged
// the write, a replica that restarts without persistence forgets what it
// acknowledged, and a primary restarted with an empty dataset can wipe its
// replicas. And WAIT rolls nothing back: when too few replicas answer in
// time the job stays enqueued on the primary (a *DurabilityError says so),
// and may or may not survive a failover.
type Durability struct {
	// Replicas is how many replicas must acknowledge the enqueue: WAIT's
	// numreplicas. At least 1.
	Replicas int
	// Timeout bounds the wait for them: WAIT's timeout, at least a
	// millisecond. A round trip that finds a duplicate id may wait up to
	// Timeout again (see PushDurable).
	Timeout time.Duration
}

func (d Durability) check() error {
	if d.Replicas < 1 {
		return errorf("%w: durability needs at least 1 replica, not %d (use Push)", ErrArgument, d.Replicas)
	}
	return positive("durability timeout", d.Timeout)
}

// DurabilityError means fewer replicas than asked acknowledged an enqueue
// within the timeout, or the acknowledgement could not be read (Err says
// why: the connection failed after the enqueue). The enqueue itself took
// effect on the primary and is not rolled back; it may be lost if the
// primary fails before a replica has it. Pushing the same id again waits
// for the replicas again while the job is queued or running (a duplicate
// is left untouched) — but once the job has run and been retired, a push
// of its id enqueues it anew, and it runs again.
type DurabilityError struct {
	Acked   int           // replicas that acknowledged; the fewest over a batch's round trips
	Want    int           // Durability.Replicas
	Timeout time.Duration // Durability.Timeout
	Err     error         // why the acknowledgement could not be read; nil when WAIT answered
}

// Error says how many replicas acknowledged, of how many.
func (e *DurabilityError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("emq: the enqueue took effect on the primary, but its acknowledgement by %d replicas could not be read: %v", e.Want, e.Err)
	}
	return fmt.Sprintf("emq: %d of %d replicas acknowledged the enqueue within %v; it took effect on the primary and is not rolled back", e.Acked, e.Want, e.Timeout)
}

// Unwrap returns Err.
func (e *DurabilityError) Unwrap() error { return e.Err }

// worse returns the worse of e (nil for none yet) and o: an unread
// acknowledgement, then the fewer replicas.
func (e *DurabilityError) worse(o *DurabilityError) *DurabilityError {
	switch {
	case e == nil, e.Err == nil && o.Err != nil, e.Err == nil && o.Acked < e.Acked:
		return o
	}
	return e
}

// PushDurable is Push followed, on the same connection and in the same
// round trip, by WAIT: it reports the job enqueued (false for a duplicate)
// with a nil error only when at least d.Replicas replicas acknowledged it
// within d.Timeout; otherwise the error is a *DurabilityError, and the job
// is enqueued on the primary all the same (WAIT does not roll back).
//
// A duplicate id wrote nothing, so WAIT alone would not speak for the
// original enqueue (made by another connection, perhaps by an earlier
// attempt of this very call whose reply was lost). For a duplicate,
// PushDurable reads the primary's replication offset after the script ran
// and waits, up to d.Timeout more, until d.Replicas replicas report (INFO
// replication) having acknowledged that offset; replicas report every
// second, so a duplicate may take that long.
//
// On a Redis Cluster the round trip goes to the primary serving the
// queue's slot; PushDurable follows MOVED and ASK and resends what the
// cluster answers TRYAGAIN (until ctx ends). Other errors, a connection
// lost or CLUSTERDOWN during a failover among them, are returned as Push
// returns them: the enqueue may or may not have taken effect. Pushing the
// same id again then does not duplicate a job still queued or running,
// but enqueues anew one that already ran and was retired.
func (q *Queue) PushDurable(ctx context.Context, id ID, payload []byte, d Durability) (_ bool, err error) {
	defer q.c.afterFailure(ctx, &err)
	if err := d.check(); err != nil {
		return false, err
	}
	call, err := q.pushCall(id, payload)
	if err != nil {
		return false, err
	}
	if err := q.c.ensure(ctx); err != nil {
		return false, err
	}
	oks, errs, derr := q.pushDurable(ctx, []rueidis.LuaExec{call.LuaExec()}, d)
	switch {
	case errs[0] != nil:
		return false, errs[0]
	case derr != nil:
		return oks[0], derr
	}
	return oks[0], nil
}

// PushBatchDurable is PushBatch followed by WAIT on the same connection, in
// the same round trip (one per cluster node the batch meets: all of a
// queue's keys share its slot, so one unless the slot moves meanwhile). The
// result tells, per job, whether it was enqueued; a job refused or failed
// is reported in a *BatchError as by PushBatch. When fewer than d.Replicas
// replicas acknowledged what the batch wrote within d.Timeout the error is
// (or, with a *BatchError, joins) a *DurabilityError; nothing is rolled
// back. Duplicates are checked as PushDurable checks them.
func (q *Queue) PushBatchDurable(ctx context.Context, jobs []NewJob, d Durability) (_ []bool, err error) {
	defer q.c.afterFailure(ctx, &err)
	if err := d.check(); err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	execs, err := q.pushExecs(ctx, jobs)
	if err != nil {
		return nil, err
	}
	oks, errs, derr := q.pushDurable(ctx, execs, d)
	var berr error
	for _, err := range errs {
		if err != nil {
			berr = &BatchError{Errs: errs}
			break
		}
	}
	switch {
	case berr != nil && derr != nil:
		return oks, join(berr, derr)
	case berr != nil:
		return oks, berr
	case derr != nil:
		return oks, derr
	}
	return oks, nil
}

// redirectPause is the longest pause between round trips that the cluster
// redirected or asked to try again.
const redirectPause = 100 * time.Millisecond

// pushDurable runs the push calls in round trips, each on one connection:
// ASKING when a redirect asked for it, the scripts, then WAIT. Calls
// answered NOSCRIPT are resent as EVAL, calls redirected by MOVED or ASK go
// to the node named, calls answered TRYAGAIN are resent after a pause; the
// cluster refused each of those before it ran. It returns each call's
// outcome and error, and a *DurabilityError when a round trip that wrote,
// or found a duplicate, was acknowledged by fewer than d.Replicas replicas.
func (q *Queue) pushDurable(ctx context.Context, calls []rueidis.LuaExec, d Durability) ([]bool, []error, *DurabilityError) {
	oks := make([]bool, len(calls))
	errs := make([]error, len(calls))
	eval := make([]bool, len(calls))  // answered NOSCRIPT: send the source
	last := make([]error, len(calls)) // the last redirect or TRYAGAIN of a call
	todo := make([]int, len(calls))
	for i := range todo {
		todo[i] = i
	}
	var derr *DurabilityError
	var enqueued int64
	var route roundRoute
	redirects := 0
	for wait := tryAgainFirst; len(todo) > 0; {
		sent := route
		rd := q.durableRound(ctx, sent, todo, calls, eval, d)
		route = roundRoute{}
		var again []int
		settle := rd.replies == nil // the node named is unknown yet: route by slot after a pause
		redirected := false
		for j, i := range todo {
			if rd.replies == nil {
				again, last[i] = append(again, i), errorf("a redirect to %s, a node the client does not know yet", sent.addr)
				continue
			}
			r := rd.replies[j]
			if e, ok := rueidis.IsRedisErr(r.Error()); ok {
				switch addr, moved := e.IsMoved(); {
				case e.IsNoScript() && !eval[i]:
					eval[i] = true
					again = append(again, i)
					continue
				case moved:
					route, redirected = roundRoute{addr: addr}, true
					again, last[i] = append(again, i), e
					continue
				case e.IsTryAgain():
					settle = true
					again, last[i] = append(again, i), e
					continue
				}
				if addr, ok := e.IsAsk(); ok {
					route, redirected = roundRoute{addr: addr, asking: true}, true
					again, last[i] = append(again, i), e
					continue
				}
			}
			n, err := wire.DecodePush(r)
			if err != nil {
				errs[i] = err
				continue
			}
			oks[i] = n == wire.PushEnqueued
			if oks[i] {
				enqueued++
			}
		}
		if rd.checked && (rd.err != nil || rd.acked < d.Replicas) {
			derr = derr.worse(&DurabilityError{Acked: rd.acked, Want: d.Replicas, Timeout: d.Timeout, Err: rd.err})
		}
		todo = again
		if redirected {
			redirects++
		} else {
			redirects = 0
		}
		if len(todo) == 0 || !settle && redirects < 3 {
			continue
		}
		if !pause(ctx, wait) {
			// ctx ended while the cluster redirected: the calls left did not run.
			for _, i := range todo {
				errs[i] = errorf("emq: %s: %w; the cluster answered %v", wire.ScriptPush.Name, ctx.Err(), last[i])
			}
			break
		}
		wait = min(2*wait, redirectPause)
	}
	q.c.metrics.Add(Enqueued, q.Name(), enqueued)
	return oks, errs, derr
}

// roundRoute is where a round trip goes: the node serving the queue's slot
// (addr empty), or the node a MOVED or ASK named.
type roundRoute struct {
	addr   string
	asking bool
}

// roundResult is what one round trip answered.
type roundResult struct {
	replies []rueidis.RedisResult // the replies of the calls sent; nil when nothing was sent
	checked bool                  // the round trip wrote or found a duplicate: acked speaks for it
	acked   int                   // replicas that acknowledged it
	err     error                 // why the acknowledgement could not be read
}

// multiDoer is what a round trip needs of a connection: a dedicated client,
// or a node's client (whose DoMulti holds a pipeline with WAIT, a blocking
// command, on one connection).
type multiDoer interface {
	DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult
}

// durableRound sends the calls of todo, then WAIT, in one pipeline on one
// connection: a dedicated connection to the node serving the queue's slot,
// or a connection to the node route names, after ASKING when asked. WAIT
// counts the replicas that acknowledged every write of its connection so
// far, so it must share the scripts' connection. A duplicate among the
// replies is checked against the primary's replication offset on the same
// node (replicatedTo).
func (q *Queue) durableRound(ctx context.Context, route roundRoute, todo []int, calls []rueidis.LuaExec, eval []bool, d Durability) roundResult {
	var rd roundResult
	run := func(conn multiDoer) {
		b := q.c.rc.B()
		cmds := make(rueidis.Commands, 0, len(todo)+2)
		if route.asking {
			cmds = append(cmds, b.Asking().Build())
		}
		for _, i := range todo {
			x := calls[i]
			if eval[i] {
				cmds = append(cmds, b.Eval().Script(wire.ScriptPush.Source).Numkeys(int64(len(x.Keys))).Key(x.Keys...).Arg(x.Args...).Build())
			} else {
				cmds = append(cmds, b.Evalsha().Sha1(wire.ScriptPush.SHA1).Numkeys(int64(len(x.Keys))).Key(x.Keys...).Arg(x.Args...).Build())
			}
		}
		cmds = append(cmds, b.Wait().Numreplicas(int64(d.Replicas)).Timeout(d.Timeout.Milliseconds()).Build())
		out := conn.DoMulti(ctx, cmds...)
		if route.asking {
			out = out[1:]
		}
		rd.replies = out[:len(todo)]
		lastWrite, lastDup := -1, -1
		for j, r := range rd.replies {
			if n, err := wire.DecodePush(r); err == nil && n == wire.PushEnqueued {
				lastWrite = j
			} else if err == nil {
				lastDup = j
			}
		}
		if lastWrite < 0 && lastDup < 0 {
			return
		}
		rd.checked = true
		acked, err := out[len(todo)].AsInt64()
		if err != nil {
			rd.err = errorf("WAIT: %w", err)
			return
		}
		rd.acked = int(acked)
		// WAIT waits for the replication offset right after the
		// connection's last write, which covers everything the node had
		// applied then: a duplicate found before a write is covered too.
		// One found after it is checked against the offset now, unless
		// WAIT already fell short.
		if lastDup > lastWrite && rd.acked >= d.Replicas {
			n, err := replicatedTo(ctx, conn, b, d)
			rd.acked, rd.err = min(rd.acked, n), err
		}
	}
	if route.addr == "" {
		_ = q.c.rc.Dedicated(func(dc rueidis.DedicatedClient) error {
			run(dc)
			return nil
		})
		return rd
	}
	if node, ok := q.c.rc.Nodes()[route.addr]; ok {
		run(node)
	}
	return rd
}

// replicatedTo reads, on conn's node, the primary's replication offset —
// which covers every write the node had applied, a duplicate's original
// enqueue among them — and waits up to d.Timeout until d.Replicas online
// replicas report having acknowledged it. It returns how many did.
//
// The first round trip is INFO, WAIT, INFO: a server that takes any
// command's offset as the connection's write offset (Redis 7.0) makes WAIT
// ask the replicas for their offsets and block until they reach it, so the
// second INFO usually settles it; a server that takes only writes' offsets
// leaves it to the replicas' reports, sent every second.
func replicatedTo(ctx context.Context, conn multiDoer, b rueidis.Builder, d Durability) (int, error) {
	deadline := time.Now().Add(d.Timeout)
	info := func() rueidis.Completed { return b.Info().Section("replication").Build() }
	wait := b.Wait().Numreplicas(int64(d.Replicas)).Timeout(d.Timeout.Milliseconds()).Build()
	out := conn.DoMulti(ctx, info(), wait, info())
	text, err := out[0].ToString()
	if err != nil {
		return 0, errorf("INFO replication: %w", err)
	}
	target, _, err := parseReplication(text)
	if err != nil {
		return 0, err
	}
	r := out[2]
	for {
		text, err := r.ToString()
		if err != nil {
			return 0, errorf("INFO replication: %w", err)
		}
		_, replicas, err := parseReplication(text)
		if err != nil {
			return 0, err
		}
		acked := 0
		for _, off := range replicas {
			if off >= target {
				acked++
			}
		}
		if acked >= d.Replicas || !time.Now().Before(deadline) {
			return acked, nil
		}
		if !pause(ctx, min(20*time.Millisecond, time.Until(deadline))) {
			return acked, ctx.Err()
		}
		r = conn.DoMulti(ctx, info())[0]
	}
}

// parseReplication reads INFO replication of a primary: its replication
// offset (master_repl_offset) and the offset each online replica last
// acknowledged (slaveN:...,state=online,offset=N,...).
func parseReplication(info string) (offset int64, replicas []int64, err error) {
	found := false
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "master_repl_offset:"); ok {
			if offset, err = strconv.ParseInt(v, 10, 64); err != nil {
				return 0, nil, errorf("INFO replication: master_repl_offset %q", v)
			}
			found = true
			continue
		}
		name, fields, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "slave") || strings.TrimLeft(name[len("slave"):], "0123456789") != "" || name == "slave" {
			continue
		}
		online, off := false, int64(-1)
		for _, f := range strings.Split(fields, ",") {
			if v, ok := strings.CutPrefix(f, "offset="); ok {
				off, _ = strconv.ParseInt(v, 10, 64)
			}
			online = online || f == "state=online"
		}
		if online && off >= 0 {
			replicas = append(replicas, off)
		}
	}
	if !found {
		return 0, nil, errorf("INFO replication has no master_repl_offset (not a primary?)")
	}
	return offset, replicas, nil
}
