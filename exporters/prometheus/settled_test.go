package emqprom_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/rueidis"

	emqprom "github.com/echomq/echomq/exporters/prometheus"
	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// settle runs the 2.4 settle scripts through their generated calls on a
// fresh queue orders: one job completed, one failed and retried, one
// failed and buried.
func settle(t *testing.T, ctx context.Context, srv *redistest.Server) {
	t.Helper()
	c, err := emq.Connect(ctx, emq.Options{Redis: rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	q, _ := c.Queue("orders")
	k := q.Keys()
	ids := make([]emq.ID, 3)
	for i := range ids {
		ids[i], _ = c.Mint(emq.WorkKind)
		if _, err := q.Push(ctx, ids[i], []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	js, err := q.ClaimIDs(ctx, time.Minute, ids)
	if err != nil || len(js) != 3 {
		t.Fatalf("ClaimIDs = %v, %v", js, err)
	}
	row := func(id emq.ID) string { r, _ := k.Row(id); return r }
	done := wire.CompleteResultClaimIDsCall{Row: row(ids[0]), Active: k.Active, Pending: k.Pending, Wake: k.Wake, Results: k.Results,
		ResultTimes: k.ResultTimes, Progress: k.Progress, Failures: k.Failures, Options: k.Options, Events: k.Events, Counters: k.Counters,
		ID: ids[0], Token: js[0].Token, LeaseMS: 60000}
	if _, err := done.Exec(ctx, c.Redis()); err != nil {
		t.Fatal(err)
	}
	for i, bury := range []int64{0, 1} {
		f := wire.FailCall{Active: k.Active, Row: row(ids[i+1]), Schedule: k.Schedule, Dead: k.Dead, Wake: k.Wake, Failures: k.Failures,
			Options: k.Options, Events: k.Events, Counters: k.Counters, ID: ids[i+1], Token: js[i+1].Token, Class: emq.FailureClassError,
			Worker: "w", Error: "boom", Backoff: emq.BackoffFixed, BackoffMS: 60000, Bury: bury}
		if _, err := f.Exec(ctx, c.Redis()); err != nil {
			t.Fatal(err)
		}
	}
}

// scrapeURL fetches url and parses the text format.
func scrapeURL(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing the scrape: %v", err)
	}
	return fams
}

// The server's settle counters (echomq 2.4.0) are exported as counters
// per queue by Handler on an observing client, a process that settled
// nothing itself.
func TestHandlerExportsServerCounters(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	settle(t, ctx, srv)

	obs, err := emq.Observe(ctx, emq.Options{Redis: rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	h, err := emqprom.Handler(obs, emqprom.QueuesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	defer hs.Close()
	fams := scrapeURL(t, hs.URL)
	orders := map[string]string{"queue": "orders"}
	for name, want := range map[string]float64{
		"emq_jobs_" + string(emq.EventCompleted) + "_total": 1,
		"emq_jobs_" + string(emq.EventFailed) + "_total":    2,
		"emq_jobs_" + string(emq.EventRetried) + "_total":   1,
		"emq_jobs_" + string(emq.EventDead) + "_total":      1,
	} {
		if got := value(t, fams, name, orders); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
		if typ := fams[name].GetType(); typ != dto.MetricType_COUNTER {
			t.Errorf("%s is a %v, want a counter", name, typ)
		}
	}
	if got := value(t, fams, "emq_queue_jobs", map[string]string{"queue": "orders", "set": string(emq.SetDead)}); got != 1 {
		t.Errorf("emq_queue_jobs{set=dead} = %v", got)
	}
	skip, err := emqprom.Handler(obs, emqprom.QueuesOptions{SkipSettleCounters: true})
	if err != nil {
		t.Fatal(err)
	}
	hs2 := httptest.NewServer(skip)
	defer hs2.Close()
	fams = scrapeURL(t, hs2.URL)
	if _, ok := fams["emq_jobs_"+string(emq.EventCompleted)+"_total"]; ok {
		t.Error("SkipSettleCounters still exports the settle counters")
	}
	if got := value(t, fams, "emq_queue_jobs", map[string]string{"queue": "orders", "set": string(emq.SetDead)}); got != 1 {
		t.Errorf("emq_queue_jobs{set=dead} without settle counters = %v", got)
	}
	if _, err := emqprom.Handler(obs, emqprom.QueuesOptions{Queues: []string{"Bad{q}"}}); err == nil {
		t.Error("Handler took a malformed queue name")
	}
}
