package main

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// The ops of echomq 2.6.0's job schedulers (conformance/README.md), on
// the SDK's public API: upsert_scheduler, scheduler_entries,
// list_schedulers, due_schedulers, pause_schedulers, remove_schedulers,
// fire_schedulers and fire_due (one tick of the SDK's runner).

// schedOps are the scheduler ops, by name.
var schedOps = map[string]func(t *testee, ctx context.Context, req request) (any, error){
	wire.ScriptUpsertScheduler.Name:  opUpsertScheduler,
	wire.ScriptSchedulerEntries.Name: opSchedulerEntries,
	wire.ScriptListSchedulers.Name:   opListSchedulers,
	wire.ScriptDueSchedulers.Name:    opDueSchedulers,
	wire.ScriptPauseSchedulers.Name:  opPauseSchedulers,
	wire.ScriptRemoveSchedulers.Name: opRemoveSchedulers,
	wire.ScriptFireSchedulers.Name:   opFireSchedulers,
	"fire_due":                       opFireDue,
}

// schedulersField is the contract's field of scheduler ids and of
// scheduler records (a name the contract shares with the key type).
const schedulersField = "schedulers"

// upsertArgs are upsert_scheduler's; omitted: cron and tz "", numbers 0,
// missed run_once, grace_ms 60000, template "".
type upsertArgs struct {
	Queue       string  `json:"queue"`
	Scheduler   string  `json:"scheduler"`
	Cron        string  `json:"cron"`
	TZ          string  `json:"tz"`
	EveryMS     int64   `json:"every_ms"`
	StartMS     int64   `json:"start_ms"`
	Missed      *string `json:"missed"`
	Backfill    int     `json:"backfill"`
	GraceMS     *int64  `json:"grace_ms"`
	Template    *string `json:"template"`
	TemplateB64 *string `json:"template_b64"`
}

// template is the template's bytes.
func (a upsertArgs) template() ([]byte, error) {
	return payload{Text: a.Template, B64: a.TemplateB64}.bytes()
}

// msTime is Unix milliseconds as a time: 0 is the zero time, the SDK's
// "none".
func msTime(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}

// timeMS is msTime's inverse.
func timeMS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func opUpsertScheduler(t *testee, ctx context.Context, req request) (any, error) {
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
	opts := []emq.SchedulerOption{emq.WithBackfill(a.Backfill), emq.WithTemplate(tmpl)}
	if a.Missed != nil {
		opts = append(opts, emq.WithMissed(emq.Missed(*a.Missed)))
	}
	if a.GraceMS != nil {
		opts = append(opts, emq.WithGrace(ms(*a.GraceMS)))
	}
	s := emq.Schedule{Cron: a.Cron, TZ: a.TZ, Every: ms(a.EveryMS), Start: msTime(a.StartMS)}
	r, err := q.UpsertScheduler(ctx, a.Scheduler, s, opts...)
	if err != nil {
		return nil, err
	}
	return map[string]any{"created": r.Created, "changed": r.Changed, "next_ms": timeMS(r.Next)}, nil
}

// schedulerOut renders a scheduler's record as the reading ops answer it:
// the template as text when it is UTF-8, and always as template_b64.
func schedulerOut(i emq.SchedulerInfo) map[string]any {
	last := ""
	if !i.LastID.IsZero() {
		last = i.LastID.String()
	}
	m := map[string]any{"scheduler": i.ID, "cron": i.Cron, "every_ms": i.Every.Milliseconds(), "start_ms": timeMS(i.Start), "tz": i.TZ,
		"missed": string(i.Missed), "backfill": i.Backfill, "grace_ms": i.Grace.Milliseconds(), "paused": i.Paused, "next_ms": timeMS(i.Next),
		"last_slot_ms": timeMS(i.LastSlot), "last_id": last, "runs": i.Runs, "now_ms": timeMS(i.Now)}
	return bytesOut(m, "template", i.Template)
}

func schedulersOut(field string, recs []emq.SchedulerInfo) map[string]any {
	out := make([]any, len(recs))
	for i, r := range recs {
		out[i] = schedulerOut(r)
	}
	return map[string]any{field: out}
}

// schedIDsArgs are the ops on scheduler ids (pause_schedulers also takes
// paused).
type schedIDsArgs struct {
	Queue      string   `json:"queue"`
	Schedulers []string `json:"schedulers"`
	Paused     bool     `json:"paused"`
}

func opSchedulerEntries(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[schedIDsArgs](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	recs, err := q.Schedulers(ctx, a.Schedulers...)
	if err != nil {
		return nil, err
	}
	return schedulersOut("entries", recs), nil
}

func opListSchedulers(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[struct {
		Queue  string `json:"queue"`
		Offset int    `json:"offset"`
		Count  int    `json:"count"`
	}](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	recs, err := q.ListSchedulers(ctx, a.Offset, a.Count)
	if err != nil {
		return nil, err
	}
	return schedulersOut(schedulersField, recs), nil
}

// dueArgs are due_schedulers' (and fire_due's horizon).
type dueArgs struct {
	Queue     string `json:"queue"`
	HorizonMS int64  `json:"horizon_ms"`
	Count     int    `json:"count"`
	Spread    int64  `json:"spread"`
}

func opDueSchedulers(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[dueArgs](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	recs, err := q.DueSchedulers(ctx, ms(a.HorizonMS), a.Count, int(a.Spread))
	if err != nil {
		return nil, err
	}
	return schedulersOut(schedulersField, recs), nil
}

func opPauseSchedulers(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[schedIDsArgs](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	pause := q.ResumeSchedulers
	if a.Paused {
		pause = q.PauseSchedulers
	}
	n, err := pause(ctx, a.Schedulers...)
	if err != nil {
		return nil, err
	}
	return map[string]any{"changed": n}, nil
}

func opRemoveSchedulers(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[schedIDsArgs](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	n, err := q.RemoveSchedulers(ctx, a.Schedulers...)
	if err != nil {
		return nil, err
	}
	return map[string]any{"removed": n}, nil
}

// firingArg is one entry of fire_schedulers.
type firingArg struct {
	ID        string `json:"id"`
	Scheduler string `json:"scheduler"`
	ExpectMS  int64  `json:"expect_ms"`
	NextMS    int64  `json:"next_ms"`
	SlotMS    int64  `json:"slot_ms"`
	UntilMS   int64  `json:"until_ms"`
}

type firingArgs struct {
	Queue   string      `json:"queue"`
	Entries []firingArg `json:"entries"`
}

func opFireSchedulers(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[firingArgs](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	entries := make([]emq.SchedulerFiring, len(a.Entries))
	for i, e := range a.Entries {
		id, err := emq.ParseID(e.ID)
		if err != nil {
			return nil, err
		}
		entries[i] = emq.SchedulerFiring{ID: id, Scheduler: e.Scheduler, Expect: msTime(e.ExpectMS), Next: msTime(e.NextMS), Slot: msTime(e.SlotMS), Until: msTime(e.UntilMS)}
	}
	outcomes, err := q.FireSchedulers(ctx, entries)
	if err != nil {
		return nil, err
	}
	return map[string]any{"outcomes": outcomesOut(outcomes)}, nil
}

func outcomesOut(os []emq.Firing) []string {
	out := make([]string, len(os))
	for i, o := range os {
		out[i] = string(o)
	}
	return out
}

func opFireDue(t *testee, ctx context.Context, req request) (any, error) {
	a, err := args[dueArgs](req)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, err
	}
	fired, err := q.FireDue(ctx, ms(a.HorizonMS))
	if err != nil {
		return nil, err
	}
	slices.SortFunc(fired, func(x, y emq.FiredRun) int {
		if c := strings.Compare(x.Scheduler, y.Scheduler); c != 0 {
			return c
		}
		return x.Slot.Compare(y.Slot)
	})
	out := make([]any, len(fired))
	for i, f := range fired {
		out[i] = map[string]any{"scheduler": f.Scheduler, "slot_ms": timeMS(f.Slot), "until_ms": timeMS(f.Until), "id": f.ID.String()}
	}
	return map[string]any{"fired": out}, nil
}
