package emqprom_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/rueidis"

	emqprom "github.com/echomq/echomq/exporters/prometheus"
	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// scrape fetches the registry's metrics over HTTP and parses the text
// format.
func scrape(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	hs := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer hs.Close()
	req, _ := http.NewRequest(http.MethodGet, hs.URL, nil)
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

// value is the value of the family's metric with the labels.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("no metric %s in the scrape", name)
	}
next:
	for _, m := range f.GetMetric() {
		for k, v := range labels {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		if c := m.GetCounter(); c != nil {
			return c.GetValue()
		}
		return m.GetGauge().GetValue()
	}
	t.Fatalf("no %s%v in the scrape", name, labels)
	return 0
}

// A real worker run against a real server, its counters and the queue
// gauges scraped over HTTP.
func TestScrapeAfterARealRun(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	reg := prometheus.NewRegistry()
	m, err := emqprom.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := emq.Connect(ctx, emq.Options{Redis: rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true}, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	q, _ := c.Queue("orders")
	const n, poison = 40, 3
	bad := map[emq.ID]bool{}
	for i := range n {
		id, _ := c.Mint(emq.WorkKind)
		if i < poison {
			bad[id] = true
		}
		if _, err := q.Push(ctx, id, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	later, _ := c.Mint(emq.WorkKind)
	if _, err := q.EnqueueAt(ctx, later, []byte("{}"), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	w, err := emq.NewWorker(q, func(ctx context.Context, j emq.Job) error {
		if bad[j.ID] {
			return emq.Permanent(errors.New("poison"))
		}
		return nil
	}, emq.WorkerOptions{Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	for {
		s, err := q.Sizes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s[emq.SetPending] == 0 && s[emq.SetActive] == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the worker did not drain the queue: %v", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	// A job pushed after the run waits, so the oldest pending age shows.
	waiting, _ := c.Mint(emq.WorkKind)
	if _, err := q.Push(ctx, waiting, []byte("{}")); err != nil {
		t.Fatal(err)
	}

	coll, err := emqprom.NewQueues(c, emqprom.QueuesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(coll)
	time.Sleep(50 * time.Millisecond)
	fams := scrape(t, reg)
	orders := map[string]string{"queue": "orders"}
	for name, want := range map[string]float64{
		"emq_enqueued_total":  n + 2,
		"emq_completed_total": n - poison,
		"emq_buried_total":    poison,
		"emq_claimed_total":   n,
	} {
		if got := value(t, fams, name, orders); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	for set, want := range map[emq.Set]float64{emq.SetPending: 1, emq.SetActive: 0, emq.SetSchedule: 1, emq.SetDead: poison} {
		if got := value(t, fams, "emq_queue_jobs", map[string]string{"queue": "orders", "set": string(set)}); got != want {
			t.Errorf("emq_queue_jobs{set=%s} = %v, want %v", set, got, want)
		}
	}
	if age := value(t, fams, "emq_queue_oldest_pending_age_seconds", orders); age <= 0 || age > 30 {
		t.Errorf("oldest pending age = %v s", age)
	}
	if got := value(t, fams, "emq_queue_due_scheduled", orders); got != 0 {
		t.Errorf("due scheduled = %v", got)
	}
	if got := value(t, fams, "emq_queue_expired_leases", orders); got != 0 {
		t.Errorf("expired leases = %v", got)
	}
	// The 2.4 worker's settles are counted on the server too.
	for name, want := range map[string]float64{
		"emq_jobs_" + string(emq.EventCompleted) + "_total": n - poison,
		"emq_jobs_" + string(emq.EventDead) + "_total":      poison,
	} {
		if got := value(t, fams, name, orders); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := value(t, fams, "emq_queue_list_complete", nil); got != 1 {
		t.Errorf("list complete = %v", got)
	}
}

func TestBadQueueName(t *testing.T) {
	if _, err := emqprom.NewQueues(nil, emqprom.QueuesOptions{Queues: []string{"Bad{q}"}}); !errors.Is(err, emq.ErrQueueName) {
		t.Errorf("NewQueues with a malformed name: %v", err)
	}
}
