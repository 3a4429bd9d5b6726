package chaos

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
)

// AckLog is the producers' account of the enqueues the server
// acknowledged. It lives in the harness process, which no fault kills, and
// is appended to a file (one write(2) per id) for the record.
type AckLog struct {
	mu       sync.Mutex
	ids      []string
	set      map[string]bool
	rePushed map[string]bool
	f        *os.File
}

// NewAckLog makes an AckLog that also appends to path ("" for none).
func NewAckLog(path string) (*AckLog, error) {
	a := &AckLog{set: map[string]bool{}, rePushed: map[string]bool{}}
	if path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		a.f = f
	}
	return a, nil
}

// Ack records id as acknowledged; it reports whether id was not
// acknowledged before.
func (a *AckLog) Ack(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.set[id] {
		return false
	}
	a.set[id] = true
	a.ids = append(a.ids, id)
	if a.f != nil {
		_, _ = a.f.Write([]byte(id + "\n"))
	}
	return true
}

// markRePushed records that id was pushed again after a failed push.
func (a *AckLog) markRePushed(id string) {
	a.mu.Lock()
	a.rePushed[id] = true
	a.mu.Unlock()
}

// RePushed reports whether id was pushed more than once.
func (a *AckLog) RePushed(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rePushed[id]
}

// IDs returns the acknowledged ids, in acknowledgement order.
func (a *AckLog) IDs() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.ids...)
}

// Len returns how many ids are acknowledged.
func (a *AckLog) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.ids)
}

// Close closes the file.
func (a *AckLog) Close() error {
	if a.f == nil {
		return nil
	}
	return a.f.Close()
}

// Producer pushes jobs with the SDK and counts an enqueue acknowledged
// only when the server replied to it (enqueued, or a duplicate: the row of
// that id exists). A push that failed is pushed again with the same id and
// payload — enqueue is idempotent by id — until it is acknowledged.
type Producer struct {
	Queue     *emq.Queue
	Client    *emq.Client // mints the ids
	Acks      *AckLog
	Jobs      int           // how many jobs in all
	Rate      float64       // jobs per second in all; 0 pushes as fast as the server takes them
	Producers int           // goroutines (default 2)
	Batch     int           // jobs per PushBatch (default 10)
	GiveUp    time.Duration // a job unacknowledged this long is given up (default 2 min)
	Log       func(format string, args ...any)
	// MintIDs, when set, mints the ids of a batch instead of Client: the
	// id generator of another SDK.
	MintIDs func(ctx context.Context, n int) ([]emq.ID, error)
	// PushBatch, when set, pushes a batch instead of Queue.PushBatch (with
	// another SDK): it returns nil when every job was acknowledged, a
	// *emq.BatchError naming those that failed, or another error when
	// nothing was answered.
	PushBatch func(ctx context.Context, jobs []emq.NewJob) error
	// Options, when set, are the options of Queue.PushBatch's pushes (the
	// Go producer's; PushBatchWith), unused with PushBatch.
	Options []emq.PushOption
	// DedupKeys, when set, gives each job a deduplication key of its own
	// (derived from its id), so that its pushes go through add_dedup and
	// every settle must release the key.
	DedupKeys bool
	// OnAck, when set, is called with each id this producer saw
	// acknowledged first.
	OnAck func(id string)

	pushed, retries, gaveUp atomic.Int64
}

// ProducerStats sums up a producer run.
type ProducerStats struct {
	Pushed  int64 // distinct jobs pushed
	Retries int64 // pushes of a job again after a failed push
	GaveUp  int64 // jobs never acknowledged
}

// Run pushes the jobs and returns when all are acknowledged or given up,
// or ctx ends.
func (p *Producer) Run(ctx context.Context) ProducerStats {
	n := max(p.Producers, 1)
	if p.Batch <= 0 {
		p.Batch = 10
	}
	if p.GiveUp <= 0 {
		p.GiveUp = 2 * time.Minute
	}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		share := p.Jobs / n
		if i < p.Jobs%n {
			share++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.run(ctx, share, float64(n))
		}()
	}
	wg.Wait()
	return ProducerStats{Pushed: p.pushed.Load(), Retries: p.retries.Load(), GaveUp: p.gaveUp.Load()}
}

func (p *Producer) run(ctx context.Context, jobs int, producers float64) {
	var every time.Duration
	if p.Rate > 0 {
		every = time.Duration(float64(p.Batch) * producers / p.Rate * float64(time.Second))
	}
	start := time.Now()
	for k := 0; jobs > 0; k++ {
		if every > 0 {
			if d := time.Until(start.Add(time.Duration(k) * every)); d > 0 {
				sleepCtx(ctx, d)
			}
		}
		if ctx.Err() != nil {
			return
		}
		batch := make([]emq.NewJob, 0, min(p.Batch, jobs))
		for p.MintIDs != nil && len(batch) < cap(batch) {
			ids, err := p.MintIDs(ctx, cap(batch))
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				sleepCtx(ctx, 50*time.Millisecond)
				continue
			}
			for _, id := range ids {
				job := emq.NewJob{ID: id, Payload: []byte("chaos " + id.String())}
				if p.DedupKeys {
					job.DedupKey = "chaos-" + id.String()
				}
				batch = append(batch, job)
			}
		}
		for len(batch) < cap(batch) {
			id, err := p.Client.Mint(emq.WorkKind)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				sleepCtx(ctx, 50*time.Millisecond)
				continue
			}
			job := emq.NewJob{ID: id, Payload: []byte("chaos " + id.String())}
			if p.DedupKeys {
				job.DedupKey = "chaos-" + id.String()
			}
			batch = append(batch, job)
		}
		jobs -= len(batch)
		p.pushed.Add(int64(len(batch)))
		p.push(ctx, batch)
	}
}

// push pushes batch until every job is acknowledged or given up.
func (p *Producer) push(ctx context.Context, batch []emq.NewJob) {
	since := time.Now()
	pause := 20 * time.Millisecond
	for attempt := 0; len(batch) > 0; attempt++ {
		if attempt > 0 {
			for _, j := range batch {
				p.Acks.markRePushed(j.ID.String())
			}
			p.retries.Add(int64(len(batch)))
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var err error
		if p.PushBatch != nil {
			err = p.PushBatch(pctx, batch)
		} else {
			_, err = p.Queue.PushBatchWith(pctx, batch, p.Options...)
		}
		cancel()
		var be *emq.BatchError
		var left []emq.NewJob
		switch {
		case err == nil:
		case errors.As(err, &be):
			for i, e := range be.Errs {
				if e != nil {
					left = append(left, batch[i])
				}
			}
		default:
			left = batch // nothing was answered
		}
		for _, j := range batch {
			if !contains(left, j.ID) && p.Acks.Ack(j.ID.String()) && p.OnAck != nil {
				p.OnAck(j.ID.String())
			}
		}
		batch = left
		if len(batch) == 0 {
			return
		}
		if ctx.Err() != nil || time.Since(since) > p.GiveUp {
			p.gaveUp.Add(int64(len(batch)))
			if p.Log != nil {
				p.Log("producer: gave up %d jobs after %v: %v", len(batch), time.Since(since).Round(time.Millisecond), err)
			}
			return
		}
		sleepCtx(ctx, pause)
		pause = min(pause*2, 500*time.Millisecond)
	}
}

func contains(jobs []emq.NewJob, id emq.ID) bool {
	for _, j := range jobs {
		if j.ID == id {
			return true
		}
	}
	return false
}

// sleepCtx sleeps for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
