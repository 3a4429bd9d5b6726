package dashboard_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq/dashboard"
	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// settled24 are jobs of queue orders settled through the 2.4 scripts'
// generated calls: one reporting progress, one completed with its result
// kept, one failed and retried.
type settled24 struct {
	running, completed, failed emq.ID
}

const (
	testProgress = "step 2 of 5"
	testResult   = `{"invoice":"INV-7","total":42}`
)

// settle24 takes three of orders' newest pending jobs and settles them.
func settle24(t testing.TB, w *world) settled24 {
	t.Helper()
	ctx := ctxT(t)
	q, _ := w.c.Queue("orders")
	k := q.Keys()
	pending := w.ids["orders"][emq.StatePending]
	if len(pending) < 3 {
		t.Fatal("the seed has fewer than 3 pending jobs")
	}
	s := settled24{running: pending[len(pending)-1], completed: pending[len(pending)-2], failed: pending[len(pending)-3]}
	w.ids["orders"][emq.StatePending] = pending[:len(pending)-3]
	js, err := q.ClaimIDs(ctx, time.Hour, []emq.ID{s.running, s.completed, s.failed})
	if err != nil || len(js) != 3 {
		t.Fatalf("ClaimIDs = %v, %v", js, err)
	}
	row := func(id emq.ID) string { r, _ := k.Row(id); return r }
	p := wire.ProgressCall{Row: row(s.running), ProgressKey: k.Progress, Events: k.Events, ID: s.running, Token: js[0].Token, Progress: testProgress, EventsMax: 100}
	if _, err := p.Exec(ctx, w.c.Redis()); err != nil {
		t.Fatal(err)
	}
	c := wire.CompleteResultClaimIDsCall{Row: row(s.completed), Active: k.Active, Pending: k.Pending, Wake: k.Wake, Results: k.Results,
		ResultTimes: k.ResultTimes, Progress: k.Progress, Failures: k.Failures, Options: k.Options, Events: k.Events, Counters: k.Counters,
		ID: s.completed, Token: js[1].Token, LeaseMS: 60000, Result: testResult, Keep: 100, EventsMax: 100}
	if _, err := c.Exec(ctx, w.c.Redis()); err != nil {
		t.Fatal(err)
	}
	f := wire.FailCall{Active: k.Active, Row: row(s.failed), Schedule: k.Schedule, Dead: k.Dead, Wake: k.Wake, Failures: k.Failures,
		Options: k.Options, Events: k.Events, Counters: k.Counters, ID: s.failed, Token: js[2].Token, Class: emq.FailureClassError,
		Worker: "w", Error: "boom", Backoff: emq.BackoffFixed, BackoffMS: 3600000, EventsMax: 100}
	if _, err := f.Exec(ctx, w.c.Redis()); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCountersAndOutputPages: the queue page shows the server's settle
// counters (totals and the last hour's chart); the job page shows a
// running job's progress and a completed job's kept record and result
// (200, not 404), masked as payloads are.
func TestCountersAndOutputPages(t *testing.T) {
	w := seed(t, 10, 1)
	s := settle24(t, w)
	_, hs := serve(t, w.srv, dashboard.Options{})

	code, body := get(t, hs.URL+"/queue/orders")
	if code != 200 || !strings.Contains(body, `id="counters"`) || !strings.Contains(body, "settled per minute") {
		t.Fatalf("queue page = %d\n%s", code, body)
	}
	for word, n := range map[emq.Event]int{emq.EventCompleted: 1, emq.EventFailed: 1, emq.EventRetried: 1, emq.EventDead: 0} {
		if want := `<dd id="total-` + string(word) + `">` + strconv.Itoa(n) + `</dd>`; !strings.Contains(body, want) {
			t.Errorf("the queue page lacks %s", want)
		}
	}

	code, body = get(t, hs.URL+"/queue/orders/job/"+s.running.String())
	if code != 200 || !strings.Contains(body, `<pre id="progress" class="out">`+testProgress+`</pre>`) {
		t.Errorf("running job page = %d\n%s", code, body)
	}
	code, body = get(t, hs.URL+"/queue/orders/job/"+s.completed.String())
	if code != 200 || !strings.Contains(body, `id="completed-note"`) || !strings.Contains(body, `id="result"`) || !strings.Contains(body, "INV-7") || !strings.Contains(body, `<dd id="completed-attempt">1</dd>`) {
		t.Errorf("completed job page = %d\n%s", code, body)
	}
	if code, _ := get(t, hs.URL+"/queue/orders/job/"+s.failed.String()); code != 200 {
		t.Errorf("failed job page = %d", code)
	}

	// Masked: the result's JSON field is hidden, the progress report (not
	// JSON) whole.
	_, masked := serve(t, w.srv, dashboard.Options{Mask: dashboard.MaskJSONFields("invoice")})
	if _, body := get(t, masked.URL+"/queue/orders/job/"+s.completed.String()); strings.Contains(body, "INV-7") || !strings.Contains(body, "masked") {
		t.Errorf("masked completed job page shows the result\n%s", body)
	}
	if _, body := get(t, masked.URL+"/queue/orders/job/"+s.running.String()); strings.Contains(body, testProgress) {
		t.Errorf("masked running job page shows the progress\n%s", body)
	}
}
