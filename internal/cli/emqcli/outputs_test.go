package emqcli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq/internal/cli/emqcli"
	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// outputsSeed is a queue with a job reporting progress, a job completed
// with its result kept, one failed and buried, settled through the 2.4
// scripts' generated calls.
type outputsSeed struct {
	srv                        *redistest.Server
	c                          *emq.Client
	q                          *emq.Queue
	running, completed, binary emq.ID
}

func seedOutputs(t *testing.T) *outputsSeed {
	t.Helper()
	srv := redistest.Start(t)
	s := &outputsSeed{srv: srv, c: connect(t, srv)}
	var err error
	if s.q, err = s.c.Queue("orders"); err != nil {
		t.Fatal(err)
	}
	ctx := ctxP(t)
	k := s.q.Keys()
	claimed := func() (emq.ID, string, int64) {
		id, err := s.c.Mint(emq.WorkKind)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.q.Push(ctx, id, []byte("payload")); err != nil {
			t.Fatal(err)
		}
		js, err := s.q.ClaimIDs(ctx, time.Minute, []emq.ID{id})
		if err != nil || len(js) != 1 {
			t.Fatalf("ClaimIDs = %v, %v", js, err)
		}
		row, _ := k.Row(id)
		return id, row, js[0].Token
	}
	complete := func(id emq.ID, row string, tok int64, result string) {
		call := wire.CompleteResultClaimIDsCall{Row: row, Active: k.Active, Pending: k.Pending, Wake: k.Wake, Results: k.Results,
			ResultTimes: k.ResultTimes, Progress: k.Progress, Failures: k.Failures, Options: k.Options, Events: k.Events,
			Counters: k.Counters, ID: id, Token: tok, LeaseMS: 60000, Result: result, Keep: 10, EventsMax: 100}
		if _, err := call.Exec(ctx, s.c.Redis()); err != nil {
			t.Fatal(err)
		}
	}
	var row string
	var tok int64
	s.running, row, tok = claimed()
	p := wire.ProgressCall{Row: row, ProgressKey: k.Progress, Events: k.Events, ID: s.running, Token: tok, Progress: "step 3 of 4", EventsMax: 100}
	if _, err := p.Exec(ctx, s.c.Redis()); err != nil {
		t.Fatal(err)
	}
	s.completed, row, tok = claimed()
	complete(s.completed, row, tok, "invoice sent")
	s.binary, row, tok = claimed()
	complete(s.binary, row, tok, "\x00\x01"+strings.Repeat("x", 300))
	dead, row, tok := claimed()
	f := wire.FailCall{Active: k.Active, Row: row, Schedule: k.Schedule, Dead: k.Dead, Wake: k.Wake, Failures: k.Failures,
		Options: k.Options, Events: k.Events, Counters: k.Counters, ID: dead, Token: tok, Class: emq.FailureClassError,
		Worker: "w", Error: "boom", Backoff: emq.BackoffFixed, Bury: 1, EventsMax: 100}
	if _, err := f.Exec(ctx, s.c.Redis()); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestInspectShowOutputs: show prints a running job's progress, and a
// completed job's kept record and result, bounded; JSON says the same as
// the SDK's Get.
func TestInspectShowOutputs(t *testing.T) {
	s := seedOutputs(t)
	progress, attempt, result := wire.ScriptOutput.ReplyElements()[0], wire.ScriptOutput.ReplyElements()[2], wire.ScriptOutput.ReplyElements()[3]

	code, out, errs := inspectRun(t, s.srv, "show", "-queue", "orders", s.running.String())
	if code != emqcli.ExitOK || !strings.Contains(lineWith(out, progress), "11 bytes, text: step 3 of 4") {
		t.Errorf("show of a running job = %d\n%s%s", code, out, errs)
	}
	m := map[string]any{}
	code, out, _ = inspectRun(t, s.srv, "show", "-queue", "orders", "-format", "json", s.running.String())
	if err := json.Unmarshal([]byte(out), &m); code != emqcli.ExitOK || err != nil || m[progress] != "step 3 of 4" || m[progress+"_bytes"] != float64(11) {
		t.Errorf("show -format json of a running job = %d %v\n%s", code, err, out)
	}

	code, out, errs = inspectRun(t, s.srv, "show", "-queue", "orders", s.completed.String())
	if code != emqcli.ExitOK || !strings.Contains(out, "completed") || !strings.Contains(lineWith(out, result), "12 bytes, text: invoice sent") || !strings.Contains(lineWith(out, attempt), "1") {
		t.Errorf("show of a completed job = %d\n%s%s", code, out, errs)
	}
	t.Logf("emq inspect show -queue orders %s\n%s", s.completed, out)
	info, _, err := s.q.Get(ctxP(t), s.completed)
	if err != nil || info.Completed == nil {
		t.Fatalf("Get = %+v, %v", info, err)
	}
	m = map[string]any{}
	code, out, _ = inspectRun(t, s.srv, "show", "-queue", "orders", "-format", "json", s.completed.String())
	if err := json.Unmarshal([]byte(out), &m); code != emqcli.ExitOK || err != nil {
		t.Fatalf("show -format json of a completed job = %d %v\n%s", code, err, out)
	}
	c, _ := m["completed"].(map[string]any)
	at, _ := time.Parse(time.RFC3339Nano, c["at"].(string))
	if c[result] != "invoice sent" || c[attempt] != float64(1) || !at.Equal(info.Completed.At) || m["found"] != false {
		t.Errorf("show -format json of a completed job = %v; Get %+v", m, info.Completed)
	}

	// A binary result of 302 bytes: hex, cut at 200 bytes.
	code, out, _ = inspectRun(t, s.srv, "show", "-queue", "orders", s.binary.String())
	line := lineWith(out, result)
	if code != emqcli.ExitOK || !strings.Contains(line, "302 bytes, hex: 0001787878") || !strings.HasSuffix(line, "…") || len(line) > 500 {
		t.Errorf("show of a binary result = %d\n%s", code, out)
	}
	// -raw has no payload to write for a completed job.
	if code, out, _ := inspectRun(t, s.srv, "show", "-queue", "orders", "-raw", s.completed.String()); code != emqcli.ExitFindings || out != "" {
		t.Errorf("show -raw of a completed job = %d %q", code, out)
	}
}

// TestInspectCounters: counters prints the SDK's Counters, in text and
// JSON; minutes out of range exit 2 with nothing sent.
func TestInspectCounters(t *testing.T) {
	s := seedOutputs(t)
	code, out, errs := inspectRun(t, s.srv, "counters", "-queue", "orders", "-minutes", "3")
	if code != emqcli.ExitOK {
		t.Fatalf("counters = %d\n%s%s", code, out, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.Contains(lines[0], strings.ToUpper(string(emq.EventCompleted))) {
		t.Fatalf("counters -minutes 3 printed %d lines\n%s", len(lines), out)
	}
	// completed 2, failed 1, retried 0, dead 1.
	if f := strings.Fields(lines[1]); len(f) != 5 || strings.Join(f, " ") != "total 2 1 0 1" {
		t.Errorf("the totals line = %q", lines[1])
	}
	t.Logf("emq inspect counters -queue orders -minutes 3\n%s", out)

	code, out, _ = inspectRun(t, s.srv, "counters", "-queue", "orders", "-format", "json", "-minutes", "2")
	var m struct {
		Totals  map[string]int64 `json:"totals"`
		Minutes []map[string]any `json:"minutes"`
	}
	if err := json.Unmarshal([]byte(out), &m); code != emqcli.ExitOK || err != nil {
		t.Fatalf("counters -format json = %d %v\n%s", code, err, out)
	}
	// The seed's completions fall in the current minute, or the one
	// before when a minute began since.
	if m.Totals[string(emq.EventCompleted)] != 2 || m.Totals[string(emq.EventDead)] != 1 || len(m.Minutes) != 2 ||
		m.Minutes[0][string(emq.EventCompleted)].(float64)+m.Minutes[1][string(emq.EventCompleted)].(float64) != 2 {
		t.Errorf("counters -format json = %s", out)
	}

	before := commandStats(t, s.srv)
	for _, n := range []string{"-1", "1441"} {
		if code, _, errs := inspectRun(t, s.srv, "counters", "-queue", "orders", "-minutes", n); code != emqcli.ExitUsage || !strings.Contains(errs, "nothing was sent") {
			t.Errorf("counters -minutes %s = %d\n%s", n, code, errs)
		}
	}
	if after := commandStats(t, s.srv); after["evalsha_ro"] != before["evalsha_ro"] {
		t.Errorf("refused minutes sent a script: %v -> %v", before, after)
	}
	if code, out, _ := run(t, "inspect", "counters", "-h"); code != emqcli.ExitOK || !strings.Contains(out, "-minutes") || !strings.Contains(out, "Queue.Counters") {
		t.Errorf("inspect counters -h = %d\n%s", code, out)
	}
}

// TestInspectEvents: events prints the SDK's EventsPage in pages after a
// stream id, in text and JSON; -follow prints events as they come; a bad
// -after or -n exits 2 with nothing sent.
func TestInspectEvents(t *testing.T) {
	s := seedOutputs(t)
	ev := wire.ScriptEvents.Name
	// progress, completed, completed, failed, dead.
	code, out, errs := inspectRun(t, s.srv, ev, "-queue", "orders")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != emqcli.ExitOK || len(lines) != 7 || lines[5] != "(no more events)" || !strings.HasPrefix(lines[6], "next: -after ") {
		t.Fatalf("events = %d\n%s%s", code, out, errs)
	}
	for i, w := range []emq.Event{emq.EventProgress, emq.EventCompleted, emq.EventCompleted, emq.EventFailed, emq.EventDead} {
		if f := strings.Fields(lines[i]); len(f) < 3 || f[1] != string(w) {
			t.Errorf("event line %d = %q, want %s", i, lines[i], w)
		}
	}
	if !strings.Contains(lines[0], "step 3 of 4") || !strings.Contains(lines[3], "class "+string(emq.FailureClassError)) || !strings.Contains(lines[3], "error: boom") {
		t.Errorf("the events' details:\n%s", out)
	}
	t.Logf("emq inspect events -queue orders\n%s", out)

	code, out, _ = inspectRun(t, s.srv, ev, "-queue", "orders", "-n", "2")
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if code != emqcli.ExitOK || len(lines) != 3 || !strings.HasPrefix(lines[2], "next: -after ") {
		t.Fatalf("events -n 2 = %d\n%s", code, out)
	}
	after := strings.TrimPrefix(lines[2], "next: -after ")
	var page struct {
		Events []map[string]any `json:"events"`
		Next   string           `json:"next"`
	}
	code, out, _ = inspectRun(t, s.srv, ev, "-queue", "orders", "-after", after, "-format", "json")
	if err := json.Unmarshal([]byte(out), &page); code != emqcli.ExitOK || err != nil || len(page.Events) != 3 || page.Next == after {
		t.Fatalf("events -after %s -format json = %d %v\n%s", after, code, err, out)
	}
	if page.Events[0][wire.ScriptEvents.ReplyElements()[1]] != string(emq.EventCompleted) {
		t.Errorf("the first event after %s = %v", after, page.Events[0])
	}

	// -follow: the five kept, then one written while it listens.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	defer emqcli.FollowEventsUntil(ctx)()
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errs := inspectRun(t, s.srv, ev, "-queue", "orders", "-follow", "-n", "6", "-format", "json")
		done <- result{code, out, errs}
	}()
	k := s.q.Keys()
	p := wire.ProgressCall{Row: func() string { r, _ := k.Row(s.running); return r }(), ProgressKey: k.Progress, Events: k.Events, ID: s.running, Token: 1, Progress: "step 4 of 4", EventsMax: 100}
	if _, err := p.Exec(ctx, s.c.Redis()); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		lines := strings.Split(strings.TrimSpace(r.out), "\n")
		if r.code != emqcli.ExitOK || len(lines) != 6 || !strings.Contains(lines[5], "step 4 of 4") {
			t.Errorf("events -follow -n 6 = %d\n%s%s", r.code, r.out, r.err)
		}
	case <-ctx.Done():
		t.Fatal("events -follow -n 6 did not end")
	}

	before := commandStats(t, s.srv)
	for _, args := range [][]string{{"-after", "nope"}, {"-after", "1-"}, {"-n", "1001"}, {"-n", "-1"}} {
		if code, _, errs := inspectRun(t, s.srv, ev, append([]string{"-queue", "orders"}, args...)...); code != emqcli.ExitUsage || !strings.Contains(errs, "nothing was sent") {
			t.Errorf("events %v = %d\n%s", args, code, errs)
		}
	}
	if after := commandStats(t, s.srv); after["evalsha_ro"] != before["evalsha_ro"] {
		t.Errorf("refused input sent a script")
	}
}
