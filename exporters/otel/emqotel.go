// Package emqotel exports EchoMQ to OpenTelemetry metrics: Metrics is an
// emq.Metrics (pass it as emq.Options.Metrics) that counts the SDK's
// counters as Int64Counters per queue, and RegisterQueues registers
// observable gauges of each queue's set sizes, oldest pending age, expired
// leases and due run-ats, read from the server at every collection.
//
// It is a module of its own (github.com/echomq/echomq/exporters/otel), so
// that the SDK never depends on OpenTelemetry.
package emqotel

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/echomq/echomq/sdk/go/emq"
)

// Prefix starts every instrument's name.
const Prefix = "emq."

// Metrics counts the SDK's counters, one Int64Counter per emq.Counter
// named emq.<counter> (emq.enqueued, emq.completed, ...), with the
// attribute queue. It is safe for concurrent use.
type Metrics struct {
	counters []metric.Int64Counter
}

var _ emq.Metrics = (*Metrics)(nil)

// NewMetrics creates the counters on meter.
func NewMetrics(meter metric.Meter) (*Metrics, error) {
	m := &Metrics{}
	for _, c := range emq.Counters() {
		ctr, err := meter.Int64Counter(Prefix+c.String(),
			metric.WithUnit("{job}"),
			metric.WithDescription("Jobs counted as "+c.String()+" by the EchoMQ SDK (emq.Counter "+c.String()+")."))
		if err != nil {
			return nil, fmt.Errorf("emqotel: %s: %w", c, err)
		}
		m.counters = append(m.counters, ctr)
	}
	return m, nil
}

// Add counts n for c on queue.
func (m *Metrics) Add(c emq.Counter, queue string, n int64) {
	if int(c) < 0 || int(c) >= len(m.counters) || n <= 0 {
		return
	}
	m.counters[c].Add(context.Background(), n, metric.WithAttributes(attribute.String("queue", queue)))
}

// QueuesOptions configure RegisterQueues.
type QueuesOptions struct {
	// Queues, when set, are the queues read; otherwise every queue that
	// Client.ListQueues finds (bounded by List) is read at each collection.
	Queues []string
	List   emq.ListOptions
	// Timeout bounds the reads of one collection (default 5s), within the
	// collection's own context.
	Timeout time.Duration
	// SkipSettleCounters leaves out the emq.jobs.* counters (and their
	// read-only script call per queue), for a user the server does not
	// grant EVALSHA_RO, as a collection of before echomq 2.4.0 needed.
	SkipSettleCounters bool
}

// RegisterQueues registers, on meter, observable gauges of c's queues,
// read at every collection (a few commands per queue, none reading a
// whole set):
//
//	emq.queue.jobs{queue,set}                 the size of each set
//	emq.queue.oldest_pending_age{queue}       seconds since the oldest pending job was minted
//	emq.queue.expired_leases{queue}           active jobs past their lease deadline
//	emq.queue.due_scheduled{queue}            scheduled jobs past their run-at
//
// and observable counters of the server's settle counters (echomq 2.4.0;
// Queue.Counters' totals, kept by the 2.4 scripts as they settle: what
// every 2.4 client of the queue settled, whichever process reads them):
//
//	emq.jobs.completed{queue}                 jobs completed
//	emq.jobs.failed{queue}                    attempts that failed, whatever came next
//	emq.jobs.retried{queue}                   attempts handed back to run again
//	emq.jobs.dead{queue}                      jobs buried
//
// Unregister the returned registration to stop.
func RegisterQueues(meter metric.Meter, c *emq.Client, o QueuesOptions) (metric.Registration, error) {
	for _, q := range o.Queues {
		if err := emq.ValidateQueueName(q); err != nil {
			return nil, fmt.Errorf("emqotel: %w", err)
		}
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	jobs, err1 := meter.Int64ObservableGauge(Prefix+"queue.jobs", metric.WithUnit("{job}"), metric.WithDescription("Jobs in each set of the queue."))
	age, err2 := meter.Float64ObservableGauge(Prefix+"queue.oldest_pending_age", metric.WithUnit("s"), metric.WithDescription("Time since the oldest pending job was minted (0 when none is pending)."))
	expired, err3 := meter.Int64ObservableGauge(Prefix+"queue.expired_leases", metric.WithUnit("{job}"), metric.WithDescription("Active jobs whose lease deadline has passed (maintenance reaps them)."))
	due, err4 := meter.Int64ObservableGauge(Prefix+"queue.due_scheduled", metric.WithUnit("{job}"), metric.WithDescription("Scheduled jobs whose run-at has come (maintenance promotes them)."))
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return nil, fmt.Errorf("emqotel: %w", err)
	}
	settleWords := []emq.Event{emq.EventCompleted, emq.EventFailed, emq.EventRetried, emq.EventDead}
	settled := make([]metric.Int64ObservableCounter, len(settleWords))
	instruments := []metric.Observable{jobs, age, expired, due}
	for i, w := range settleWords {
		var err error
		settled[i], err = meter.Int64ObservableCounter(Prefix+"jobs."+string(w), metric.WithUnit("{job}"),
			metric.WithDescription("Settles counted as "+string(w)+" by the server's settle counters (echomq 2.4.0; a 2.3 client's settles are not counted)."))
		if err != nil {
			return nil, fmt.Errorf("emqotel: %w", err)
		}
		instruments = append(instruments, settled[i])
	}
	return meter.RegisterCallback(func(ctx context.Context, ob metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, o.Timeout)
		defer cancel()
		names := o.Queues
		if names == nil {
			list, err := c.ListQueues(ctx, o.List)
			if err != nil {
				return err
			}
			names = list.Names
		}
		now, err := c.ServerTime(ctx)
		if err != nil {
			return err
		}
		var errs []error
		for _, name := range names {
			q, err := c.Queue(name)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			sizes, err1 := q.Sizes(ctx)
			oldest, ok, err2 := q.Oldest(ctx, emq.SetPending)
			exp, err3 := q.Due(ctx, emq.SetActive, now)
			d, err4 := q.Due(ctx, emq.SetSchedule, now)
			var counters emq.QueueCounters
			var err5 error
			if !o.SkipSettleCounters {
				counters, err5 = q.Counters(ctx, 0)
			}
			if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
				errs = append(errs, fmt.Errorf("emqotel: queue %s: %w", name, err))
				continue
			}
			qa := attribute.String("queue", name)
			for _, s := range emq.Sets() {
				ob.ObserveInt64(jobs, sizes[s], metric.WithAttributes(qa, attribute.String("set", string(s))))
			}
			a := 0.0
			if ok {
				a = max(0, now.Sub(oldest.Time()).Seconds())
			}
			ob.ObserveFloat64(age, a, metric.WithAttributes(qa))
			ob.ObserveInt64(expired, exp, metric.WithAttributes(qa))
			ob.ObserveInt64(due, d, metric.WithAttributes(qa))
			if o.SkipSettleCounters {
				continue
			}
			tot := counters.Totals
			for i, n := range []int64{tot.Completed, tot.Failed, tot.Retried, tot.Dead} {
				ob.ObserveInt64(settled[i], n, metric.WithAttributes(qa))
			}
		}
		return errors.Join(errs...)
	}, instruments...)
}
