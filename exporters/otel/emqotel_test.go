package emqotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	emqotel "github.com/echomq/echomq/exporters/otel"
	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// point finds the value of instrument name at the attributes.
func point(t *testing.T, rm metricdata.ResourceMetrics, name string, attrs ...attribute.KeyValue) float64 {
	t.Helper()
	want := attribute.NewSet(attrs...)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					if p.Attributes.Equals(&want) {
						return float64(p.Value)
					}
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					if p.Attributes.Equals(&want) {
						return float64(p.Value)
					}
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					if p.Attributes.Equals(&want) {
						return p.Value
					}
				}
			default:
				t.Fatalf("%s has data %T", name, m.Data)
			}
			t.Fatalf("%s has no point at %v", name, attrs)
		}
	}
	t.Fatalf("no instrument %s was exported", name)
	return 0
}

// A real worker run against a real server, read through the SDK's
// ManualReader.
func TestExportAfterARealRun(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	meter := mp.Meter("github.com/echomq/echomq/exporters/otel/test")
	m, err := emqotel.NewMetrics(meter)
	if err != nil {
		t.Fatal(err)
	}
	c, err := emq.Connect(ctx, emq.Options{Redis: rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true}, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	q, _ := c.Queue("mail")
	const n, poison = 30, 2
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
	w, err := emq.NewWorker(q, func(ctx context.Context, j emq.Job) error {
		if bad[j.ID] {
			return emq.Permanent(errors.New("poison"))
		}
		return nil
	}, emq.WorkerOptions{Concurrency: 3})
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
	waiting, _ := c.Mint(emq.WorkKind)
	if _, err := q.Push(ctx, waiting, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	reg, err := emqotel.RegisterQueues(meter, c, emqotel.QueuesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	time.Sleep(50 * time.Millisecond)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	mail := attribute.String("queue", "mail")
	for name, want := range map[string]float64{"emq.enqueued": n + 1, "emq.claimed": n, "emq.completed": n - poison, "emq.buried": poison} {
		if got := point(t, rm, name, mail); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	for set, want := range map[emq.Set]float64{emq.SetPending: 1, emq.SetActive: 0, emq.SetSchedule: 0, emq.SetDead: poison} {
		if got := point(t, rm, "emq.queue.jobs", mail, attribute.String("set", string(set))); got != want {
			t.Errorf("emq.queue.jobs{set=%s} = %v, want %v", set, got, want)
		}
	}
	if age := point(t, rm, "emq.queue.oldest_pending_age", mail); age <= 0 || age > 30 {
		t.Errorf("oldest pending age = %v s", age)
	}
	if got := point(t, rm, "emq.queue.expired_leases", mail); got != 0 {
		t.Errorf("expired leases = %v", got)
	}
	// The 2.4 worker's settles are counted on the server too.
	for w, want := range map[emq.Event]float64{emq.EventCompleted: n - poison, emq.EventDead: poison} {
		if got := point(t, rm, emqotel.Prefix+"jobs."+string(w), mail); got != want {
			t.Errorf("%sjobs.%s = %v, want %v", emqotel.Prefix, w, got, want)
		}
	}
}

func TestBadQueueName(t *testing.T) {
	mp := sdkmetric.NewMeterProvider()
	if _, err := emqotel.RegisterQueues(mp.Meter("t"), nil, emqotel.QueuesOptions{Queues: []string{"a b"}}); !errors.Is(err, emq.ErrQueueName) {
		t.Errorf("RegisterQueues with a malformed name: %v", err)
	}
}
