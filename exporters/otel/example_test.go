package emqotel_test

import (
	"context"

	"github.com/redis/rueidis"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	emqotel "github.com/echomq/echomq/exporters/otel"
	"github.com/echomq/echomq/sdk/go/emq"
)

func Example() {
	ctx := context.Background()
	mp := sdkmetric.NewMeterProvider() // with the reader or exporter of your choice
	meter := mp.Meter("github.com/echomq/echomq")
	m, err := emqotel.NewMetrics(meter) // emq.completed{queue}, ...
	if err != nil {
		return
	}
	c, err := emq.Connect(ctx, emq.Options{Redis: rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}}, Metrics: m})
	if err != nil {
		return
	}
	defer c.Close()
	reg, _ := emqotel.RegisterQueues(meter, c, emqotel.QueuesOptions{}) // emq.queue.jobs{queue,set}, ...
	defer reg.Unregister()
}
