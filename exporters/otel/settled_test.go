package emqotel_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	emqotel "github.com/echomq/echomq/exporters/otel"
	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// The server's settle counters (echomq 2.4.0) are observed as counters
// per queue, on an observing client that settled nothing itself; the
// settles run the 2.4 scripts through their generated calls.
func TestExportServerCounters(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	opt := emq.Options{Redis: rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true}}
	c, err := emq.Connect(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	q, _ := c.Queue("mail")
	k := q.Keys()
	ids := make([]emq.ID, 2)
	for i := range ids {
		ids[i], _ = c.Mint(emq.WorkKind)
		if _, err := q.Push(ctx, ids[i], []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	js, err := q.ClaimIDs(ctx, time.Minute, ids)
	if err != nil || len(js) != 2 {
		t.Fatalf("ClaimIDs = %v, %v", js, err)
	}
	row := func(id emq.ID) string { r, _ := k.Row(id); return r }
	done := wire.CompleteResultClaimIDsCall{Row: row(ids[0]), Active: k.Active, Pending: k.Pending, Wake: k.Wake, Results: k.Results,
		ResultTimes: k.ResultTimes, Progress: k.Progress, Failures: k.Failures, Options: k.Options, Events: k.Events, Counters: k.Counters,
		ID: ids[0], Token: js[0].Token, LeaseMS: 60000}
	if _, err := done.Exec(ctx, c.Redis()); err != nil {
		t.Fatal(err)
	}
	f := wire.FailCall{Active: k.Active, Row: row(ids[1]), Schedule: k.Schedule, Dead: k.Dead, Wake: k.Wake, Failures: k.Failures,
		Options: k.Options, Events: k.Events, Counters: k.Counters, ID: ids[1], Token: js[1].Token, Class: emq.FailureClassError,
		Worker: "w", Error: "boom", Backoff: emq.BackoffFixed, Bury: 1}
	if _, err := f.Exec(ctx, c.Redis()); err != nil {
		t.Fatal(err)
	}

	obs, err := emq.Observe(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	reg, err := emqotel.RegisterQueues(mp.Meter("t"), obs, emqotel.QueuesOptions{Queues: []string{"mail"}})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	mail := attribute.String("queue", "mail")
	for w, want := range map[emq.Event]float64{emq.EventCompleted: 1, emq.EventFailed: 1, emq.EventRetried: 0, emq.EventDead: 1} {
		if got := point(t, rm, emqotel.Prefix+"jobs."+string(w), mail); got != want {
			t.Errorf("%sjobs.%s = %v, want %v", emqotel.Prefix, w, got, want)
		}
	}
}
