package dashboard

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// statsOf reads the stats of names, in order, in one round trip after
// the server's clock (emq.Client.Stats).
func statsOf(ctx context.Context, c *emq.Client, names []string) ([]emq.QueueStats, error) {
	return c.Stats(ctx, names)
}

// queueList caches the keyspace's queue names.
type queueList struct {
	mu       sync.Mutex
	at       time.Time
	list     emq.QueueList
	fixed    []string
	ttl      time.Duration
	opts     emq.ListOptions
	c        *emq.Client
	refreshs atomic.Int64
	listing  bool // a refresh runs
}

// get returns the queue names. The first call lists them; later calls
// return the cached list at once, and when it is older than the ttl start
// one listing in the background whose result later calls get (so that a
// page never waits for a scan of a large keyspace but the first).
func (l *queueList) get(ctx context.Context) (emq.QueueList, error) {
	if l.fixed != nil {
		return emq.QueueList{Names: l.fixed, Complete: true}, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.at.IsZero() {
		got, err := l.c.ListQueues(ctx, l.opts)
		if err != nil {
			return emq.QueueList{}, err
		}
		l.refreshs.Add(1)
		l.list, l.at = got, time.Now()
		return got, nil
	}
	if time.Since(l.at) >= l.ttl && !l.listing {
		l.listing = true
		go l.refresh()
	}
	return l.list, nil
}

// refresh lists the queues again, keeping the old list when that fails.
func (l *queueList) refresh() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := l.c.ListQueues(ctx, l.opts)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.listing = false
	if err != nil {
		l.at = time.Now() // try again after another ttl
		return
	}
	l.refreshs.Add(1)
	l.list, l.at = got, time.Now()
}

// forget makes the next get list the queues again in the background.
func (l *queueList) forget() {
	l.mu.Lock()
	if !l.at.IsZero() {
		l.at = time.Unix(1, 0)
	}
	l.mu.Unlock()
}

// Point is one sample of a queue.
type Point struct {
	At time.Time
	// Sizes are the set sizes, in emq.Sets order.
	Sizes []int64
	// LeftPending counts the jobs that were pending at the previous sample
	// and have left the pending set since (claimed, mostly): the queue's
	// drain, measured from the server alone. -1 for the first sample.
	LeftPending int64
	// Completed counts the completions reported to Dashboard.Metrics since
	// the previous sample (by the workers of this process); -1 when no
	// worker reported any.
	Completed int64
	// newest is the newest pending id at this sample, and pending the size
	// of the pending set: the next sample counts how many of those left.
	newest emq.ID
}

// history keeps the newest points of every sampled queue.
type history struct {
	mu     sync.Mutex
	keep   int
	points map[string][]Point
	done   map[string]int64 // the completions counted at the last sample
}

func (h *history) add(name string, p Point) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ps := append(h.points[name], p)
	if len(ps) > h.keep {
		ps = slices.Clone(ps[len(ps)-h.keep:])
	}
	h.points[name] = ps
}

func (h *history) last(name string) (Point, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ps := h.points[name]
	if len(ps) == 0 {
		return Point{}, false
	}
	return ps[len(ps)-1], true
}

// Points returns the samples of a queue, oldest first.
func (d *Dashboard) Points(name string) []Point {
	d.hist.mu.Lock()
	defer d.hist.mu.Unlock()
	return slices.Clone(d.hist.points[name])
}

// counters is the emq.Metrics of Dashboard.Metrics: totals per queue and
// counter.
type counters struct {
	mu sync.Mutex
	n  map[string]*[16]atomic.Int64
}

func newCounters() *counters { return &counters{n: map[string]*[16]atomic.Int64{}} }

// Add counts n for c on queue.
func (m *counters) Add(c emq.Counter, queue string, n int64) {
	if c < 0 || int(c) >= 16 {
		return
	}
	m.mu.Lock()
	t := m.n[queue]
	if t == nil {
		t = new([16]atomic.Int64)
		m.n[queue] = t
	}
	m.mu.Unlock()
	t[c].Add(n)
}

func (m *counters) get(queue string, c emq.Counter) (int64, bool) {
	m.mu.Lock()
	t := m.n[queue]
	m.mu.Unlock()
	if t == nil {
		return 0, false
	}
	return t[c].Load(), true
}

// Sample reads every listed queue (at most Options.MaxSampled) once and
// adds a point to its history. Run calls it every Options.SampleEvery.
func (d *Dashboard) Sample(ctx context.Context) error {
	list, err := d.queues.get(ctx)
	if err != nil {
		return err
	}
	names := list.Names
	if len(names) > d.opt.MaxSampled {
		names = names[:d.opt.MaxSampled]
	}
	for _, name := range names {
		if err := d.sampleQueue(ctx, name); err != nil {
			return fmt.Errorf("dashboard: sampling %s: %w", name, err)
		}
	}
	return nil
}

func (d *Dashboard) sampleQueue(ctx context.Context, name string) error {
	q, err := d.opt.Client.Queue(name)
	if err != nil {
		return err
	}
	now, err := d.opt.Client.ServerTime(ctx)
	if err != nil {
		return err
	}
	sizes, err := q.Sizes(ctx)
	if err != nil {
		return err
	}
	p := Point{At: now, LeftPending: -1, Completed: -1}
	for _, s := range wire.Sets() {
		p.Sizes = append(p.Sizes, sizes[s])
	}
	// The newest pending id, and how many of the previous sample's
	// pending jobs are still pending: ids up to its newest.
	if ids, _, err := q.Page(ctx, emq.SetPending, "", 1); err != nil {
		return err
	} else if len(ids) == 1 {
		p.newest = ids[0]
	}
	if prev, ok := d.hist.last(name); ok {
		pending := prev.Sizes[slices.Index(wire.Sets(), emq.SetPending)]
		still := int64(0)
		if !prev.newest.IsZero() {
			if still, err = q.CountUpTo(ctx, emq.SetPending, prev.newest); err != nil {
				return err
			}
		}
		p.LeftPending = max(0, pending-still)
	}
	if done, ok := d.metrics.get(name, emq.Completed); ok {
		d.hist.mu.Lock()
		prev, seen := d.hist.done[name]
		d.hist.done[name] = done
		d.hist.mu.Unlock()
		if seen {
			p.Completed = done - prev
		}
	}
	d.hist.add(name, p)
	return nil
}

// Run samples every Options.SampleEvery until ctx ends, logging a failed
// sample and going on. It returns ctx's error.
func (d *Dashboard) Run(ctx context.Context) error {
	t := time.NewTicker(d.opt.SampleEvery)
	defer t.Stop()
	for {
		if err := d.Sample(ctx); err != nil && ctx.Err() == nil {
			d.opt.Logger.Warn("dashboard: sample failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
