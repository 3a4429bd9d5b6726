package main

import (
	"context"
	"maps"
	"regexp"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// The wire mode of the echomq 2.4.0 reads: output, counters and events run
// their scripts' generated calls after the contract's argument checks
// (nothing sent), rendered as the idiomatic ops render them.

func init() {
	maps.Copy(wireOps, map[string]wireOp{
		wire.ScriptOutput.Name:   wireOutput,
		wire.ScriptCounters.Name: wireCounters,
		wire.ScriptEvents.Name:   wireEvents,
	})
}

func wireOutput(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[queueArgs](req)
	if err != nil {
		return nil, err
	}
	k, id, row, err := t.wireQueueID(a)
	if err != nil {
		return nil, err
	}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	c := wire.OutputCall{Row: row, Results: k.Results, Progress: k.Progress, ID: id}
	r, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	el := wire.ScriptOutput.ReplyElements() // progress, completed_at_ms, attempt, result
	m := bytesOut(map[string]any{el[1]: r.CompletedAtMS, el[2]: r.Attempt}, el[0], []byte(r.Progress))
	return bytesOut(m, el[3], []byte(r.Result)), nil
}

func wireCounters(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[struct {
		Queue   string `json:"queue"`
		Minutes int64  `json:"minutes"`
	}](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	if a.Minutes < 0 || a.Minutes > emq.MaxCounterMinutes {
		return nil, argument("minutes %d", a.Minutes)
	}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	c := wire.CountersCall{Counters: q.Keys().Counters, Minutes: a.Minutes}
	rs, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, argument("the counters reply has no totals")
	}
	counts := func(r wire.CountersReply) emq.SettleCounts {
		return emq.SettleCounts{Completed: r.Completed, Failed: r.Failed, Retried: r.Retried, Dead: r.Dead}
	}
	minutes := make([]any, 0, len(rs)-1)
	for _, r := range rs[1:] {
		m := countsOut(counts(r))
		m[wire.ScriptCounters.ReplyElements()[0]] = r.MinuteMS // minute_ms
		minutes = append(minutes, m)
	}
	return map[string]any{"totals": countsOut(counts(rs[0])), "minutes": minutes}, nil
}

// wireStreamID is a stream id as the events script takes it.
var wireStreamID = regexp.MustCompile(`^[0-9]+-[0-9]+$`)

func wireEvents(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[struct {
		Queue string `json:"queue"`
		After string `json:"after"`
		Count int64  `json:"count"`
	}](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	if a.Count < 1 || a.Count > emq.MaxEventsPage {
		return nil, argument("count %d", a.Count)
	}
	if a.After != "" && !wireStreamID.MatchString(a.After) {
		return nil, argument("after %q", a.After)
	}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	c := wire.EventsCall{Events: q.Keys().Events, After: a.After, Count: a.Count}
	rs, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	el := wire.ScriptEvents.ReplyElements() // stream_id, event, id, attempt, class, error, run_at_ms, progress
	out := make([]any, len(rs))
	for i, e := range rs {
		m := map[string]any{el[0]: e.StreamID, el[1]: string(e.Event), el[2]: e.ID.String(), el[3]: e.Attempt, el[4]: string(e.Class), el[6]: e.RunAtMS}
		m = bytesOut(m, el[5], []byte(e.Error))
		out[i] = bytesOut(m, el[7], []byte(e.Progress))
	}
	return map[string]any{wire.ScriptEvents.Name: out}, nil
}
