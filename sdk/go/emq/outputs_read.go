package emq

import (
	"context"
	"regexp"
	"slices"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// The reads of echomq 2.4.0: what a job says of itself (Output, and Get's
// Progress and Completed), the queue's settle counters (Counters) and its
// events stream (EventsPage, Events). Every one is a read-only script sent
// as EVALSHA_RO, so an observing client with a read-only ACL user runs it;
// in a cluster all their keys are in the queue's slot.

// CompletionRecord is a completed job's record, kept by a worker that keeps
// results (echomq 2.4.0): when, by which attempt and with what result the
// job was completed. A worker that keeps none (the default, and every 2.3
// worker) leaves no record: a completed job without one reads as not
// recorded, never as failed.
type CompletionRecord struct {
	At      time.Time // when it was completed (server clock)
	Attempt int64     // the attempt that completed it: the token its lease held
	Result  []byte    // the handler's result; empty when it returned none
}

// JobOutput is what a job has said of itself beyond its failures, as
// Output reads it.
type JobOutput struct {
	// Progress is the lease holder's last progress report while the job's
	// row exists; empty when none was made.
	Progress []byte
	// Completed is the job's completion record once its row is gone and
	// its completion was kept; nil otherwise.
	Completed *CompletionRecord
}

// Output reads a job's last progress report (while its row exists) and
// its completion record (once it is gone, when the completing worker kept
// one), in one read-only call. A job never enqueued, or completed without
// a kept record, answers the zero JobOutput. Get answers the same beside
// the row. It only reads, also on an observing client, and is resent
// across a reconnect like every read.
func (q *Queue) Output(ctx context.Context, id ID) (out JobOutput, err error) {
	row, err := q.keys.Row(id)
	if err != nil {
		return JobOutput{}, err
	}
	err = q.c.idempotent(ctx, func(ctx context.Context) error {
		if err := q.c.ensureRead(ctx); err != nil {
			return err
		}
		call := q.outputCall(row, id)
		res := q.c.execScriptsRO(ctx, []*wire.Script{wire.ScriptOutput}, []rueidis.LuaExec{call.LuaExec()})
		out, err = decodeOutput(res[0])
		if err != nil {
			return errorf("emq: output of %s: %w", id, err)
		}
		return nil
	})
	return out, err
}

// againRO sends again, as EVAL_RO and in one round trip, the calls of res
// (the replies of read-only scripts pipelined with other commands, calls[i]
// running scripts[i]) that met NOSCRIPT, and returns res with their
// replies.
func (c *Client) againRO(ctx context.Context, scripts []*wire.Script, calls []rueidis.LuaExec, res []rueidis.RedisResult) []rueidis.RedisResult {
	var again []int
	var evals rueidis.Commands
	for i, r := range res {
		if e, ok := rueidis.IsRedisErr(r.Error()); ok && e.IsNoScript() {
			again, evals = append(again, i), append(evals, c.evalRO(scripts[i], calls[i]))
		}
	}
	if len(again) == 0 {
		return res
	}
	out := slices.Clone(res)
	for j, r := range c.rc.DoMulti(ctx, evals...) {
		out[again[j]] = r
	}
	return out
}

// outputCall is the output script's call for id, whose row is row.
func (q *Queue) outputCall(row string, id ID) wire.OutputCall {
	return wire.OutputCall{Row: row, Results: q.keys.Results, Progress: q.keys.Progress, ID: id}
}

// decodeOutput turns a reply of the output script into a JobOutput.
func decodeOutput(r rueidis.RedisResult) (JobOutput, error) {
	rep, err := wire.DecodeOutput(r)
	if err != nil {
		return JobOutput{}, err
	}
	var out JobOutput
	if rep.Progress != "" {
		out.Progress = []byte(rep.Progress)
	}
	if rep.CompletedAtMS > 0 {
		out.Completed = &CompletionRecord{At: time.UnixMilli(rep.CompletedAtMS), Attempt: rep.Attempt, Result: []byte(rep.Result)}
	}
	return out, nil
}

// MaxCounterMinutes is the most minutes Counters reads back: the counters
// keep one bucket per minute for the last day.
const MaxCounterMinutes = 1440

// SettleCounts are how many settles of each kind the 2.4 scripts counted
// (echomq 2.4.0): what a 2.3 client settles is not counted.
type SettleCounts struct {
	Completed int64 // jobs completed
	Failed    int64 // attempts that failed, whatever came next
	Retried   int64 // attempts handed back to run again (after a failure or a lost lease)
	Dead      int64 // jobs buried
}

// MinuteCounts are the counts of one minute of server time.
type MinuteCounts struct {
	Minute time.Time // the start of the minute (server clock)
	SettleCounts
}

// QueueCounters are a queue's settle counters as Counters reads them.
type QueueCounters struct {
	// Totals are the counts since the queue's first count.
	Totals SettleCounts
	// Minutes are the last minutes' counts, the current minute first; a
	// minute nothing was counted in holds zeros.
	Minutes []MinuteCounts
}

// Counters reads a queue's settle counters: the totals and the buckets of
// the last minutes of server time, the current one first (minutes from 0,
// the totals only, to MaxCounterMinutes), in one read-only call. minutes
// out of range is refused with ErrArgument before anything is sent. It
// only reads, also on an observing client, and is resent across a
// reconnect like every read.
func (q *Queue) Counters(ctx context.Context, minutes int) (out QueueCounters, err error) {
	if minutes < 0 || minutes > MaxCounterMinutes {
		return QueueCounters{}, errorf("%w: counters of %d minutes (0 to %d)", ErrArgument, minutes, MaxCounterMinutes)
	}
	err = q.c.idempotent(ctx, func(ctx context.Context) error {
		if err := q.c.ensureRead(ctx); err != nil {
			return err
		}
		call := wire.CountersCall{Counters: q.keys.Counters, Minutes: int64(minutes)}
		res := q.c.execScriptsRO(ctx, []*wire.Script{wire.ScriptCounters}, []rueidis.LuaExec{call.LuaExec()})
		recs, err := wire.DecodeCounters(res[0])
		if err != nil {
			return errorf("emq: counters of %s: %w", q.Name(), err)
		}
		if len(recs) == 0 {
			return errorf("emq: counters of %s: the reply has no totals", q.Name())
		}
		got := QueueCounters{Totals: settleCounts(recs[0]), Minutes: make([]MinuteCounts, 0, len(recs)-1)}
		for _, r := range recs[1:] {
			got.Minutes = append(got.Minutes, MinuteCounts{Minute: time.UnixMilli(r.MinuteMS), SettleCounts: settleCounts(r)})
		}
		out = got
		return nil
	})
	return out, err
}

func settleCounts(r wire.CountersReply) SettleCounts {
	return SettleCounts{Completed: r.Completed, Failed: r.Failed, Retried: r.Retried, Dead: r.Dead}
}

// StreamID is a position in a queue's events stream: an entry's stream id
// ("ms-seq"), as JobEvent.StreamID reports it. The zero StreamID is before
// the oldest entry the stream keeps. Pass back what a JobEvent carried;
// one that is not "ms-seq" is refused with ErrArgument before anything is
// sent.
type StreamID string

// MaxEventsPage is the most events one EventsPage call reads.
const MaxEventsPage = 1000

// JobEvent is one entry of a queue's events stream (echomq 2.4.0): what
// happened to a job, written by the 2.4 scripts in the same call as the
// change it reports. A 2.3 client's settles write none, so a missing
// event never means that a change did not happen.
type JobEvent struct {
	// StreamID is the entry's stream id ("ms-seq"): pass it as after to
	// resume behind it.
	StreamID StreamID
	// Event is what happened: a word of the event vocabulary (Events); a
	// word of a later minor's vocabulary is kept as it is (Registered
	// reports false).
	Event Event
	ID    ID // the job it happened to
	// Attempt is the job's attempts when it happened.
	Attempt int64
	// Class is why an attempt failed (EventFailed); empty otherwise.
	Class FailureClass
	// Error is the start of the error text (EventFailed, at most 256
	// bytes); empty otherwise.
	Error string
	// RunAt is when the next attempt may run (EventRetried after a failed
	// attempt, server clock); zero otherwise.
	RunAt time.Time
	// Progress is what was reported (EventProgress); empty otherwise.
	Progress []byte
}

// streamID is a stream id as the events script takes it.
var streamID = regexp.MustCompile(`^[0-9]+-[0-9]+$`)

// checkEventsPage refuses before sending what the events script refuses.
func checkEventsPage(after StreamID, count int) error {
	if count < 1 || count > MaxEventsPage {
		return errorf("%w: a page of %d events (1 to %d)", ErrArgument, count, MaxEventsPage)
	}
	if after != "" && !streamID.MatchString(string(after)) {
		return errorf("%w: after %q is not a stream id (ms-seq)", ErrArgument, after)
	}
	return nil
}

// EventsPage reads up to count events of the queue after the stream id
// after, oldest first ("" reads from the oldest kept), in one read-only
// call; it is empty when there are none yet. A count outside 1 to
// MaxEventsPage or an after that is not a stream id ("ms-seq") is refused
// with ErrArgument before anything is sent. It only reads, also on an
// observing client, and is resent across a reconnect like every read.
// Events listens on top of it.
func (q *Queue) EventsPage(ctx context.Context, after StreamID, count int) (events []JobEvent, err error) {
	if err := checkEventsPage(after, count); err != nil {
		return nil, err
	}
	err = q.c.idempotent(ctx, func(ctx context.Context) error {
		if err := q.c.ensureRead(ctx); err != nil {
			return err
		}
		call := wire.EventsCall{Events: q.keys.Events, After: string(after), Count: int64(count)}
		res := q.c.execScriptsRO(ctx, []*wire.Script{wire.ScriptEvents}, []rueidis.LuaExec{call.LuaExec()})
		recs, err := wire.DecodeEvents(res[0])
		if err != nil {
			return errorf("emq: events of %s: %w", q.Name(), err)
		}
		got := make([]JobEvent, len(recs))
		for i, r := range recs {
			got[i] = JobEvent{StreamID: StreamID(r.StreamID), Event: r.Event, ID: r.ID, Attempt: r.Attempt, Class: r.Class, Error: r.Error}
			if r.RunAtMS > 0 {
				got[i].RunAt = time.UnixMilli(r.RunAtMS)
			}
			if r.Progress != "" {
				got[i].Progress = []byte(r.Progress)
			}
		}
		events = got
		return nil
	})
	return events, err
}

// EventsOption configures Events.
type EventsOption func(*eventsConfig)

type eventsConfig struct {
	page int
	wait time.Duration
}

// EventsPageSize sets how many events Events reads a call (default 100, at
// most MaxEventsPage).
func EventsPageSize(n int) EventsOption { return func(c *eventsConfig) { c.page = n } }

// EventsWait sets how long one wait of Events on an empty stream blocks
// on the server (XREAD BLOCK) before it reads a page again, whatever came
// (default 5 s, rounded up to a millisecond). A wait ends early when an
// event arrives, and when ctx ends.
func EventsWait(d time.Duration) EventsOption { return func(c *eventsConfig) { c.wait = d } }

// Events listens to the queue's events stream: it calls handle with each
// event after the stream id after ("" starts at the oldest kept), oldest
// first, one at a time and in order, until ctx ends (it then returns nil)
// or handle returns an error (Events returns it). It reads pages with
// EventsPage; when a page is empty, it waits on the stream with XREAD
// BLOCK (only as a wait: what XREAD returns is not read as events) and
// reads a page again, so that an idle stream costs one blocked call per
// EventsWait. To resume after a return, pass the StreamID of the last
// event handled. A read that fails (after the resends every read gets)
// ends it with its error. A bad after, page size or wait is refused with
// ErrArgument before anything is sent. Events are a hint: the stream keeps
// the last writes only (each writer's events max length), so a listener
// that falls far behind misses the oldest.
func (q *Queue) Events(ctx context.Context, after StreamID, handle func(context.Context, JobEvent) error, opts ...EventsOption) error {
	cfg := eventsConfig{page: 100, wait: 5 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	if err := checkEventsPage(after, cfg.page); err != nil {
		return err
	}
	if cfg.wait <= 0 {
		return errorf("%w: events wait %v", ErrArgument, cfg.wait)
	}
	if handle == nil {
		return errorf("%w: no event handler", ErrArgument)
	}
	// met is the first entry after after that the last wait met: when
	// the page read after the wait is empty, the events script skipped it
	// (an entry that names no event), and the listener moves past it, so
	// that it does not end every wait at once.
	met := StreamID("")
	for ctx.Err() == nil {
		page, err := q.EventsPage(ctx, after, cfg.page)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		for _, e := range page {
			if err := handle(ctx, e); err != nil {
				return err
			}
			after = e.StreamID
		}
		switch {
		case len(page) > 0:
			met = ""
		case met != "":
			after, met = met, ""
		default:
			if met, err = q.waitEvents(ctx, after, cfg.wait); err != nil && ctx.Err() == nil {
				return err
			}
		}
	}
	return nil
}

// waitEvents blocks on the events stream until an entry after after
// arrives or wait passes, and returns the entry's stream id ("" when the
// wait passed).
func (q *Queue) waitEvents(ctx context.Context, after StreamID, wait time.Duration) (met StreamID, err error) {
	defer q.c.afterFailure(ctx, &err)
	if err := q.c.ensureRead(ctx); err != nil {
		return "", err
	}
	if after == "" {
		after = "0-0"
	}
	rc := q.c.rc
	blockMS := (wait + time.Millisecond - 1).Milliseconds()
	streams, err := rc.Do(ctx, rc.B().Xread().Count(1).Block(blockMS).Streams().Key(q.keys.Events).Id(string(after)).Build()).AsXRead()
	if rueidis.IsRedisNil(err) {
		return "", nil // the wait passed
	}
	if err != nil {
		return "", errorf("emq: waiting on the events of %s: %w", q.Name(), err)
	}
	for _, entries := range streams {
		for _, e := range entries {
			met = StreamID(e.ID)
		}
	}
	return met, nil
}
