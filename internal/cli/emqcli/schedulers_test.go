package emqcli_test

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq/internal/cli/emqcli"
	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// seedSchedulers upserts queue orders' job schedulers: a cron in a zone, an
// interval from an hour ago that fired once, a paused one and one whose
// schedule has no slot at all (its next advanced to none); it returns the
// queue and their ids in the order list_schedulers pages them.
func seedSchedulers(t *testing.T, srv *redistest.Server) (*emq.Queue, []string) {
	t.Helper()
	c := connect(t, srv)
	q, err := c.Queue("orders")
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxP(t)
	now := time.Now()
	ups := []struct {
		id string
		s  emq.Schedule
		o  []emq.SchedulerOption
	}{
		{"nightly report", emq.Schedule{Cron: "30 2 * * *", TZ: "Europe/Berlin"}, []emq.SchedulerOption{emq.WithTemplate([]byte(`{"report":"{scheduler}","at":{slot}}`))}},
		{"hourly", emq.Schedule{Every: time.Hour, Start: now.Add(-time.Hour - time.Minute)}, []emq.SchedulerOption{emq.WithMissed(emq.MissedBackfill), emq.WithBackfill(3), emq.WithGrace(10 * time.Minute)}},
		{"paused", emq.Schedule{Every: time.Minute, Start: now.Add(time.Hour)}, []emq.SchedulerOption{emq.WithTemplate([]byte{0x00, 0xff})}},
		{"never", emq.Schedule{Cron: "0 0 30 2 *"}, nil},
	}
	for _, u := range ups {
		if _, err := q.UpsertScheduler(ctx, u.id, u.s, u.o...); err != nil {
			t.Fatalf("UpsertScheduler(%q): %v", u.id, err)
		}
	}
	if n, err := q.PauseSchedulers(ctx, "paused"); err != nil || n != 1 {
		t.Fatalf("PauseSchedulers = %d, %v", n, err)
	}
	// One tick: "hourly" fires its missed slot (backfill) and its slot
	// within the grace, "never" advances to no slot, "nightly report" is
	// not due.
	fired, err := q.FireDue(ctx, 0)
	if err != nil || len(fired) == 0 {
		t.Fatalf("FireDue = %v, %v", fired, err)
	}
	infos, err := q.ListSchedulers(ctx, 0, emq.MaxSchedulerPage)
	if err != nil || len(infos) != len(ups) {
		t.Fatalf("ListSchedulers = %d records, %v", len(infos), err)
	}
	var ids []string
	for _, i := range infos {
		ids = append(ids, i.ID)
	}
	return q, ids
}

// TestInspectSchedulers: list_schedulers shows what the SDK reads of each
// scheduler (its schedule, missed policy, paused, next slot, runs and last
// run) and the next runs the SDK's NextRuns computes, in text and JSON, by
// page or by id; a missing id is a finding, bad flags are refused.
func TestInspectSchedulers(t *testing.T) {
	srv := redistest.Start(t)
	q, order := seedSchedulers(t, srv)
	ctx := ctxP(t)
	sub := wire.ScriptListSchedulers.Name
	infos, err := q.Schedulers(ctx, order...)
	if err != nil {
		t.Fatal(err)
	}
	nextRuns := func(i emq.SchedulerInfo, n int) []time.Time {
		if i.Next.IsZero() {
			return nil
		}
		r, err := emq.NextRuns(i.Schedule, i.Next, n)
		if err != nil {
			t.Fatalf("NextRuns(%q): %v", i.ID, err)
		}
		return r
	}
	byID := map[string]emq.SchedulerInfo{}
	for _, i := range infos {
		byID[i.ID] = i
	}
	if h := byID["hourly"]; h.Runs == 0 || h.LastID.IsZero() {
		t.Fatalf("the seed's hourly scheduler fired nothing: %+v", h)
	}

	// Text, one page of all.
	code, out, errs := inspectRun(t, srv, sub, "-queue", "orders", "-runs", "4")
	if code != emqcli.ExitOK || errs != "" {
		t.Fatalf("%s = %d\n%s%s", sub, code, out, errs)
	}
	if !strings.HasSuffix(out, "(last page)\n") {
		t.Errorf("the one page does not end the list:\n%s", out)
	}
	var at []int
	for _, id := range order {
		at = append(at, strings.Index(out, strconv.Quote(id)+"\n"))
	}
	if slices.Contains(at, -1) || !slices.IsSorted(at) {
		t.Errorf("the schedulers are not all shown in next-slot order %q (at %v):\n%s", order, at, out)
	}
	block := func(id string) string {
		b, _ := strings.CutPrefix(out[strings.Index(out, strconv.Quote(id)+"\n"):], strconv.Quote(id)+"\n")
		if end := strings.Index(b, "\n\""); end >= 0 {
			b = b[:end]
		}
		return b
	}
	for _, id := range order {
		i, b := byID[id], block(id)
		var runs []string
		for _, r := range nextRuns(i, 4) {
			runs = append(runs, r.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
		}
		if len(runs) > 0 && !strings.Contains(b, "next runs  "+strings.Join(runs, ", ")+"\n") {
			t.Errorf("%q: the next runs are not NextRuns' %v:\n%s", id, runs, b)
		}
		if !strings.Contains(b, "  missed     "+string(i.Missed)) {
			t.Errorf("%q: the missed policy %s is not shown:\n%s", id, i.Missed, b)
		}
		if i.Runs > 0 && !strings.Contains(b, "runs       "+strconv.FormatInt(i.Runs, 10)+", the last of slot "+i.LastSlot.UTC().Format("2006-01-02T15:04:05.000Z07:00")+": job "+i.LastID.String()) {
			t.Errorf("%q: the runs and the last run are not shown:\n%s", id, b)
		}
	}
	for id, want := range map[string]string{
		"nightly report": `cron "30 2 * * *" in Europe/Berlin`,
		"hourly":         "every 1h0m0s from " + byID["hourly"].Start.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
		"paused":         "paused: it fires nothing until resumed",
		"never":          "next slot  none: the schedule has no further slot",
	} {
		if !strings.Contains(block(id), want) {
			t.Errorf("%q does not show %q:\n%s", id, want, block(id))
		}
	}
	if b := block("paused"); !strings.Contains(b, "hex: 00ff") {
		t.Errorf("a binary template is not shown in hex:\n%s", b)
	}
	if b := block("hourly"); !strings.Contains(b, ", at most 3 runs") || !strings.Contains(b, "grace 10m0s") {
		t.Errorf("the backfill bound and the grace are not shown:\n%s", b)
	}

	// JSON, two pages of two.
	var got []map[string]any
	offset := 0
	for page := 0; ; page++ {
		code, out, errs := inspectRun(t, srv, sub, "-queue", "orders", "-n", "2", "-offset", strconv.Itoa(offset), "-format", "json")
		if code != emqcli.ExitOK || errs != "" {
			t.Fatalf("%s -format json = %d\n%s%s", sub, code, out, errs)
		}
		var p struct {
			Records    []map[string]any
			NextOffset *int `json:"next_offset"`
		}
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		got = append(got, p.Records...)
		if p.NextOffset == nil {
			break
		}
		if page > 3 {
			t.Fatal("the pages do not end")
		}
		offset = *p.NextOffset
	}
	names := wire.ScriptSchedulerEntries.ReplyElements()
	if len(got) != len(order) {
		t.Fatalf("the JSON pages hold %d records; want %d", len(got), len(order))
	}
	for k, m := range got {
		i := byID[order[k]]
		ms := func(t time.Time) float64 {
			if t.IsZero() {
				return 0
			}
			return float64(t.UnixMilli())
		}
		want := map[string]any{names[0]: i.ID, names[1]: i.Cron, names[4]: i.TZ, names[5]: string(i.Missed), names[6]: float64(i.Backfill),
			names[7]: float64(i.Grace.Milliseconds()), names[9]: i.Paused, names[10]: ms(i.Next), names[11]: ms(i.LastSlot), names[13]: float64(i.Runs), "found": true}
		for key, w := range want {
			if m[key] != w {
				t.Errorf("record %d (%q) %s = %v; the SDK reads %v", k, i.ID, key, m[key], w)
			}
		}
		var runs []any
		for _, r := range nextRuns(i, 3) {
			runs = append(runs, float64(r.UnixMilli()))
		}
		if g, _ := m["next_runs_ms"].([]any); !slices.Equal(g, runs) {
			t.Errorf("record %q next_runs_ms %v; NextRuns gives %v", i.ID, m["next_runs_ms"], runs)
		}
	}

	// By id: in order, a missing one a finding.
	code, out, errs = inspectRun(t, srv, sub, "-queue", "orders", "paused", "nope", "hourly")
	if code != emqcli.ExitFindings || errs != "" || !strings.Contains(out, `"nope"  no such scheduler`) ||
		strings.Index(out, `"paused"`) > strings.Index(out, `"hourly"`) || strings.Contains(out, "last page") {
		t.Errorf("%s by ids with a missing one = %d\n%s%s", sub, code, out, errs)
	}
	if code, out, errs := inspectRun(t, srv, sub, "-queue", "orders", "-format", "json", "hourly"); code != emqcli.ExitOK || !strings.Contains(out, `"found": true`) {
		t.Errorf("%s -format json hourly = %d\n%s%s", sub, code, out, errs)
	}
	// An empty queue.
	if code, out, _ := inspectRun(t, srv, sub, "-queue", "invoices"); code != emqcli.ExitOK || !strings.Contains(out, "no job schedulers in queue invoices") {
		t.Errorf("%s of a queue without schedulers = %d\n%s", sub, code, out)
	}
	// Bad input: nothing sent.
	before := commandStats(t, srv)
	for _, args := range [][]string{{"-n", "0"}, {"-n", "1001"}, {"-offset", "-1"}, {"-runs", "101"}, {"-runs", "-1"}, {strings.Repeat("s", 257)}, {""}, {"-format", "xml"}} {
		if code, out, errs := inspectRun(t, srv, sub, append([]string{"-queue", "orders"}, args...)...); code != emqcli.ExitUsage || out != "" || errs == "" {
			t.Errorf("%s %q = %d; want %d and a message\n%s%s", sub, args, code, emqcli.ExitUsage, out, errs)
		}
	}
	after := commandStats(t, srv)
	delete(before, "info")
	delete(after, "info")
	if !maps.Equal(before, after) {
		t.Errorf("refused input sent commands: %v -> %v", before, after)
	}
}
