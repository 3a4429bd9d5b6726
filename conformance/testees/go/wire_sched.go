package main

import (
	"context"
	"maps"
	"slices"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// The wire mode of echomq 2.6.0: each scheduler op that is a script runs
// its generated call after the contract's argument checks (nothing sent);
// fire_due, a tick of the SDK's runner, is the SDK's in both modes.

func init() {
	maps.Copy(wireOps, map[string]wireOp{
		wire.ScriptUpsertScheduler.Name:  wireUpsertScheduler,
		wire.ScriptRemoveSchedulers.Name: wireRemoveSchedulers,
		wire.ScriptPauseSchedulers.Name:  wirePauseSchedulers,
		wire.ScriptSchedulerEntries.Name: wireSchedulerEntries,
		wire.ScriptListSchedulers.Name:   wireListSchedulers,
		wire.ScriptDueSchedulers.Name:    wireDueSchedulers,
		wire.ScriptFireSchedulers.Name:   wireFireSchedulers,
	})
}

func wireUpsertScheduler(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[upsertArgs](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	tmpl, err := a.template()
	if err != nil {
		return nil, err
	}
	missed := emq.MissedRunOnce
	if a.Missed != nil && *a.Missed != "" {
		missed = emq.Missed(*a.Missed)
	}
	grace := emq.DefaultGrace.Milliseconds()
	if a.GraceMS != nil {
		grace = *a.GraceMS
	}
	switch {
	case len(a.Scheduler) < 1 || len(a.Scheduler) > emq.MaxSchedulerID:
		return nil, argument("scheduler of %d bytes", len(a.Scheduler))
	case (a.Cron == "") == (a.EveryMS == 0):
		return nil, argument("exactly one of cron and every_ms")
	case a.EveryMS < 0 || a.StartMS < 0 || a.Backfill < 0 || grace < 0:
		return nil, argument("negative every_ms, start_ms, backfill or grace_ms")
	case a.Backfill > emq.MaxBackfill:
		return nil, argument("backfill %d", a.Backfill)
	case a.EveryMS > 0 && a.TZ != "":
		return nil, argument("tz with every_ms")
	case a.Cron != "" && a.StartMS != 0:
		return nil, argument("start_ms with cron")
	case !missed.Registered():
		return nil, argument("missed %q", missed)
	case len(a.Cron) > emq.MaxCronBytes || len(a.TZ) > emq.MaxTZBytes || len(tmpl) > emq.MaxTemplate:
		return nil, argument("cron, tz or template too long")
	}
	if a.Cron != "" {
		if _, err := emq.ParseCron(a.Cron, a.TZ); err != nil {
			return nil, err
		}
	}
	k := q.Keys()
	c := wire.UpsertSchedulerCall{Schedulers: k.Schedulers, SchedulerNext: k.SchedulerNext, Scheduler: a.Scheduler, Cron: a.Cron, EveryMS: a.EveryMS,
		StartMS: a.StartMS, Tz: a.TZ, Missed: missed, Backfill: int64(a.Backfill), GraceMS: grace, Template: rueidis.BinaryString(tmpl)}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	r, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	return map[string]any{"created": r.Created == 1, "changed": r.Changed == 1, "next_ms": r.NextMS}, nil
}

func wireRemoveSchedulers(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[schedIDsArgs](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	if len(a.Schedulers) == 0 {
		return map[string]any{"removed": 0}, nil
	}
	k := q.Keys()
	c := wire.RemoveSchedulersCall{SchedulersKey: k.Schedulers, SchedulerNext: k.SchedulerNext, Schedulers: a.Schedulers}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	n, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	return map[string]any{"removed": n}, nil
}

func wirePauseSchedulers(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[schedIDsArgs](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	if len(a.Schedulers) == 0 {
		return map[string]any{"changed": 0}, nil
	}
	k := q.Keys()
	c := wire.PauseSchedulersCall{SchedulersKey: k.Schedulers, SchedulerNext: k.SchedulerNext, Schedulers: a.Schedulers}
	if a.Paused {
		c.Paused = 1
	}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	n, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	return map[string]any{"changed": n}, nil
}

// wireRecordOut renders a record of the reading scripts as the ops answer
// it.
func wireRecordOut(r wire.SchedulerEntriesReply) map[string]any {
	m := map[string]any{"scheduler": r.Scheduler, "cron": r.Cron, "every_ms": r.EveryMS, "start_ms": r.StartMS, "tz": r.Tz,
		"missed": string(r.Missed), "backfill": r.Backfill, "grace_ms": r.GraceMS, "paused": r.Paused != 0, "next_ms": r.NextMS,
		"last_slot_ms": r.LastSlotMS, "last_id": r.LastID, "runs": r.Runs, "now_ms": r.NowMS}
	return bytesOut(m, "template", []byte(r.Template))
}

func wireSchedulerEntries(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[schedIDsArgs](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	out := []any{}
	if len(a.Schedulers) == 0 {
		return map[string]any{"entries": out}, nil
	}
	k := q.Keys()
	c := wire.SchedulerEntriesCall{SchedulersKey: k.Schedulers, SchedulerNext: k.SchedulerNext, Schedulers: a.Schedulers}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	rs, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		out = append(out, wireRecordOut(r))
	}
	return map[string]any{"entries": out}, nil
}

func wireListSchedulers(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[struct {
		Queue  string `json:"queue"`
		Offset int64  `json:"offset"`
		Count  int64  `json:"count"`
	}](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	if a.Offset < 0 || a.Count < 1 || a.Count > emq.MaxSchedulerPage {
		return nil, argument("offset %d, count %d", a.Offset, a.Count)
	}
	k := q.Keys()
	c := wire.ListSchedulersCall{Schedulers: k.Schedulers, SchedulerNext: k.SchedulerNext, Offset: a.Offset, Count: a.Count}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	rs, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	out := []any{}
	for _, r := range rs {
		out = append(out, wireRecordOut(wire.SchedulerEntriesReply(r)))
	}
	return map[string]any{schedulersField: out}, nil
}

func wireDueSchedulers(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[dueArgs](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	if a.HorizonMS < 0 || a.Spread < 0 || a.Count < 1 || a.Count > emq.MaxSchedulerPage {
		return nil, argument("horizon %d ms, count %d, spread %d", a.HorizonMS, a.Count, a.Spread)
	}
	k := q.Keys()
	c := wire.DueSchedulersCall{Schedulers: k.Schedulers, SchedulerNext: k.SchedulerNext, HorizonMS: a.HorizonMS, Count: int64(a.Count), Spread: a.Spread}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	rs, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	out := []any{}
	for _, r := range rs {
		out = append(out, wireRecordOut(wire.SchedulerEntriesReply(r)))
	}
	return map[string]any{schedulersField: out}, nil
}

func wireFireSchedulers(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[firingArgs](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	k := q.Keys()
	c := wire.FireSchedulersCall{SchedulersKey: k.Schedulers, SchedulerNext: k.SchedulerNext, Pending: k.Pending, Schedule: k.Schedule, Wake: k.Wake}
	for _, e := range a.Entries {
		id, err := emq.ParseID(e.ID)
		if err != nil {
			return nil, err
		}
		row, err := k.Row(id)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc([]int64{e.ExpectMS, e.NextMS, e.SlotMS, e.UntilMS}, func(v int64) bool { return v < 0 }) {
			return nil, argument("a negative time in the entry of %q", e.Scheduler)
		}
		c.Rows = append(c.Rows, row)
		c.Entries = append(c.Entries, wire.FireSchedulersEntry{ID: id, Scheduler: e.Scheduler, Expect: e.ExpectMS, Next: e.NextMS, Slot: e.SlotMS, Until: e.UntilMS})
	}
	if len(c.Entries) == 0 {
		return map[string]any{"outcomes": []string{}}, nil
	}
	rc, err := t.rc()
	if err != nil {
		return nil, err
	}
	rs, err := c.Exec(ctx, rc)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r.Outcome)
	}
	return map[string]any{"outcomes": out}, nil
}
