package emqprom_test

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/rueidis"

	emqprom "github.com/echomq/echomq/exporters/prometheus"
	"github.com/echomq/echomq/sdk/go/emq"
)

func Example() {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m, err := emqprom.NewMetrics(reg) // emq_completed_total{queue="orders"}, ...
	if err != nil {
		return
	}
	c, err := emq.Connect(ctx, emq.Options{Redis: rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}}, Metrics: m})
	if err != nil {
		return
	}
	defer c.Close()
	queues, _ := emqprom.NewQueues(c, emqprom.QueuesOptions{}) // emq_queue_jobs{queue,set}, ... read at each scrape
	reg.MustRegister(queues)
	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
}
