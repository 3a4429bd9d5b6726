// Package emqprom exports EchoMQ to Prometheus: Metrics is an emq.Metrics
// (pass it as emq.Options.Metrics) that counts the SDK's counters per
// queue, and Queues is a prometheus.Collector that reads each queue's set
// sizes, oldest pending age, expired leases and due run-ats, and the
// server's settle counters (echomq 2.4.0), from the server at every
// scrape. Handler serves Queues alone on an observing client, as the
// standalone exporter (cmd/emqprom) does.
//
// It is a module of its own (github.com/echomq/echomq/exporters/prometheus),
// so that the SDK never depends on client_golang.
package emqprom

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/echomq/echomq/sdk/go/emq"
)

// Namespace starts every metric's name.
const Namespace = "emq"

// Metrics counts the SDK's counters in Prometheus counter vectors, one per
// emq.Counter, named emq_<counter>_total (emq_enqueued_total,
// emq_completed_total, ...) and labelled by queue. It is safe for
// concurrent use and never blocks.
type Metrics struct {
	vecs []*prometheus.CounterVec
}

var _ emq.Metrics = (*Metrics)(nil)

// NewMetrics returns the counters, registered with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{}
	for _, c := range emq.Counters() {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace,
			Name:      c.String() + "_total",
			Help:      "Jobs counted as " + c.String() + " by the EchoMQ SDK (emq.Counter " + c.String() + ").",
		}, []string{"queue"})
		if err := reg.Register(v); err != nil {
			return nil, fmt.Errorf("emqprom: registering %s: %w", c, err)
		}
		m.vecs = append(m.vecs, v)
	}
	return m, nil
}

// Add counts n for c on queue.
func (m *Metrics) Add(c emq.Counter, queue string, n int64) {
	if int(c) < 0 || int(c) >= len(m.vecs) || n <= 0 {
		return
	}
	m.vecs[c].WithLabelValues(queue).Add(float64(n))
}

// QueuesOptions configure Queues.
type QueuesOptions struct {
	// Queues, when set, are the queues read; otherwise every queue that
	// Client.ListQueues finds (bounded by List) is read at each scrape.
	Queues []string
	List   emq.ListOptions
	// Timeout bounds the reads of one scrape (default 5s).
	Timeout time.Duration
	// SkipSettleCounters leaves out the emq_jobs_*_total counters (and
	// their read-only script call per queue), for a user the server does
	// not grant EVALSHA_RO, as a collector of before echomq 2.4.0 needed.
	SkipSettleCounters bool
}

// Queues is a prometheus.Collector of the queues' state on the server,
// read at every scrape (a few commands per queue, none reading a whole
// set):
//
//	emq_queue_jobs{queue,set}                  the size of each set
//	emq_queue_oldest_pending_age_seconds{queue} how long the oldest pending job has waited since its mint
//	emq_queue_expired_leases{queue}            active jobs past their lease deadline
//	emq_queue_due_scheduled{queue}             scheduled jobs past their run-at
//	emq_queue_list_complete                    1 when the scan for queues ran to its end
//	emq_jobs_completed_total{queue}            jobs completed, as the server counts them (echomq 2.4.0)
//	emq_jobs_failed_total{queue}               attempts that failed, whatever came next
//	emq_jobs_retried_total{queue}              attempts handed back to run again
//	emq_jobs_dead_total{queue}                 jobs buried
//
// The emq_jobs_*_total counters are the totals of the queue's settle
// counters (Queue.Counters), kept by the 2.4 scripts in the call that
// settles each job: whichever process scrapes them, they count the
// settles of every 2.4 client of the queue (what a 2.3 client settles is
// not counted), unlike Metrics, which counts what its own process did.
type Queues struct {
	c                                 *emq.Client
	o                                 QueuesOptions
	jobs, age, expired, due, complete *prometheus.Desc
	settled                           []*prometheus.Desc // by settleWords
}

// settleWords name the settle counters, as the event vocabulary does.
var settleWords = []emq.Event{emq.EventCompleted, emq.EventFailed, emq.EventRetried, emq.EventDead}

// settleHelp says what each settle counter counts.
var settleHelp = []string{
	"Jobs completed, as the server's settle counters count them (echomq 2.4.0; a 2.3 client's settles are not counted).",
	"Attempts that failed, whatever came next, as the server's settle counters count them (echomq 2.4.0).",
	"Attempts handed back to run again (after a failure or a lost lease), as the server's settle counters count them (echomq 2.4.0).",
	"Jobs buried, as the server's settle counters count them (echomq 2.4.0).",
}

var _ prometheus.Collector = (*Queues)(nil)

// NewQueues returns the collector of c's queues; register it with a
// prometheus.Registerer.
func NewQueues(c *emq.Client, o QueuesOptions) (*Queues, error) {
	for _, q := range o.Queues {
		if err := emq.ValidateQueueName(q); err != nil {
			return nil, fmt.Errorf("emqprom: %w", err)
		}
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	name := func(n string) string { return prometheus.BuildFQName(Namespace, "queue", n) }
	settled := make([]*prometheus.Desc, len(settleWords))
	for i, w := range settleWords {
		settled[i] = prometheus.NewDesc(prometheus.BuildFQName(Namespace, "jobs", string(w)+"_total"), settleHelp[i], []string{"queue"}, nil)
	}
	return &Queues{
		settled: settled,
		c:       c, o: o,
		jobs:     prometheus.NewDesc(name("jobs"), "Jobs in each set of the queue.", []string{"queue", "set"}, nil),
		age:      prometheus.NewDesc(name("oldest_pending_age_seconds"), "Time since the oldest pending job was minted (0 when none is pending).", []string{"queue"}, nil),
		expired:  prometheus.NewDesc(name("expired_leases"), "Active jobs whose lease deadline has passed (maintenance reaps them).", []string{"queue"}, nil),
		due:      prometheus.NewDesc(name("due_scheduled"), "Scheduled jobs whose run-at has come (maintenance promotes them).", []string{"queue"}, nil),
		complete: prometheus.NewDesc(name("list_complete"), "1 when the scan for queues ran to its end within its bounds, 0 otherwise.", nil, nil),
	}, nil
}

// Describe sends the descriptions of the collector's metrics.
func (q *Queues) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range append([]*prometheus.Desc{q.jobs, q.age, q.expired, q.due, q.complete}, q.settled...) {
		ch <- d
	}
}

// Collect reads every queue and sends its gauges; a failed read is sent
// as an invalid metric, which fails the scrape with the error.
func (q *Queues) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), q.o.Timeout)
	defer cancel()
	names, complete := q.o.Queues, true
	if names == nil {
		list, err := q.c.ListQueues(ctx, q.o.List)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(q.jobs, err)
			return
		}
		names, complete = list.Names, list.Complete
	}
	ch <- prometheus.MustNewConstMetric(q.complete, prometheus.GaugeValue, map[bool]float64{true: 1, false: 0}[complete])
	now, err := q.c.ServerTime(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(q.jobs, err)
		return
	}
	for _, name := range names {
		if err := q.collect(ctx, ch, name, now); err != nil {
			ch <- prometheus.NewInvalidMetric(q.jobs, fmt.Errorf("emqprom: queue %s: %w", name, err))
		}
	}
}

func (q *Queues) collect(ctx context.Context, ch chan<- prometheus.Metric, name string, now time.Time) error {
	qu, err := q.c.Queue(name)
	if err != nil {
		return err
	}
	sizes, err := qu.Sizes(ctx)
	if err != nil {
		return err
	}
	oldest, ok, err := qu.Oldest(ctx, emq.SetPending)
	if err != nil {
		return err
	}
	expired, err := qu.Due(ctx, emq.SetActive, now)
	if err != nil {
		return err
	}
	due, err := qu.Due(ctx, emq.SetSchedule, now)
	if err != nil {
		return err
	}
	var counters emq.QueueCounters
	if !q.o.SkipSettleCounters {
		if counters, err = qu.Counters(ctx, 0); err != nil {
			return err
		}
	}
	for _, s := range emq.Sets() {
		ch <- prometheus.MustNewConstMetric(q.jobs, prometheus.GaugeValue, float64(sizes[s]), name, string(s))
	}
	age := 0.0
	if ok {
		age = max(0, now.Sub(oldest.Time()).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(q.age, prometheus.GaugeValue, age, name)
	ch <- prometheus.MustNewConstMetric(q.expired, prometheus.GaugeValue, float64(expired), name)
	ch <- prometheus.MustNewConstMetric(q.due, prometheus.GaugeValue, float64(due), name)
	if q.o.SkipSettleCounters {
		return nil
	}
	t := counters.Totals
	for i, n := range []int64{t.Completed, t.Failed, t.Retried, t.Dead} {
		ch <- prometheus.MustNewConstMetric(q.settled[i], prometheus.CounterValue, float64(n), name)
	}
	return nil
}

// Handler serves the Queues collector of c (with o) alone, on a registry
// of its own, in the Prometheus exposition formats: the standalone
// exporter's /metrics. Every scrape reads the server; a read that fails
// answers 500 with the error. An observing client (emq.Observe) suits:
// the collector only reads.
func Handler(c *emq.Client, o QueuesOptions) (http.Handler, error) {
	coll, err := NewQueues(c, o)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(coll); err != nil {
		return nil, fmt.Errorf("emqprom: registering the queues: %w", err)
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}), nil
}
