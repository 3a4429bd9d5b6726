package emqcli_test

import (
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
	if m.Totals[string(emq.EventCompleted)] != 2 || m.Totals[string(emq.EventDead)] != 1 || len(m.Minutes) != 2 || m.Minutes[0][string(emq.EventCompleted)] != float64(2) {
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
