package emq

import (
	"log/slog"
	"sync/atomic"
)

// Counter names one thing the SDK counts.
type Counter int

// The counters. Their String names (enqueued, claimed, ...) are stable and
// fit a metrics exporter's label or name.
const (
	Enqueued   Counter = iota // jobs admitted by Push, PushBatch, Enqueue or EnqueueAt (not duplicates)
	Claimed                   // jobs leased by a worker
	Completed                 // jobs a handler finished and the complete was accepted
	Retried                   // jobs handed back to run again after a failure (or at shutdown)
	Buried                    // jobs moved to dead: out of attempts, permanently failed or undecodable
	Stale                     // transitions refused with EMQSTALE: the lease was lost, the normal outcome of a slow handler
	Reaped                    // expired leases taken back by maintenance
	Promoted                  // scheduled jobs made pending by maintenance
	Panicked                  // handler panics, recovered and counted as failures too
	HandedBack                // jobs of handlers that overran a shutdown's deadline, handed back to run elsewhere
	Cancelled                 // jobs cancelled (echomq 2.5.0) while a handler of this worker ran them: not settled, not retried
	numCounters
)

var counterNames = [numCounters]string{"enqueued", "claimed", "completed", "retried", "buried", "stale", "reaped", "promoted", "panicked", "handed_back", "cancelled"}

// String is the counter's name.
func (c Counter) String() string {
	if c < 0 || c >= numCounters {
		return "unknown"
	}
	return counterNames[c]
}

// Counters lists every counter, in order.
func Counters() []Counter {
	out := make([]Counter, numCounters)
	for i := range out {
		out[i] = Counter(i)
	}
	return out
}

// Metrics receives counts. An adapter to Prometheus or OpenTelemetry
// implements Add with a counter vector labelled by c.String() and queue.
// Add must be safe for concurrent use and must not block.
type Metrics interface {
	Add(c Counter, queue string, n int64)
}

// Tally is a Metrics that keeps totals in memory, for tests, logs and a
// quick look; it is safe for concurrent use.
type Tally struct {
	n [numCounters]atomic.Int64
}

// Add counts n for c; the queue is not kept apart.
func (t *Tally) Add(c Counter, _ string, n int64) {
	if c >= 0 && c < numCounters {
		t.n[c].Add(n)
	}
}

// Get returns the total of c.
func (t *Tally) Get(c Counter) int64 {
	if c < 0 || c >= numCounters {
		return 0
	}
	return t.n[c].Load()
}

// Snapshot returns every total by name.
func (t *Tally) Snapshot() map[string]int64 {
	out := make(map[string]int64, numCounters)
	for _, c := range Counters() {
		out[c.String()] = t.Get(c)
	}
	return out
}

// LogValue logs every total, in counter order:
// slog.Info("done", "counters", tally).
func (t *Tally) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, numCounters)
	for _, c := range Counters() {
		attrs = append(attrs, slog.Int64(c.String(), t.Get(c)))
	}
	return slog.GroupValue(attrs...)
}

type noMetrics struct{}

func (noMetrics) Add(Counter, string, int64) {}
