package emq

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// The worker's side of echomq 2.5.0: it listens on the queue's cancel
// channel (sharded pub/sub) and cancels the handler of a job cancel_ids
// cancelled, treats the refused settle of such a job as its cancellation,
// and sweeps the queue's deduplication entries in its maintenance.

// ErrCancelled is the cause of a handler's context when its job was
// cancelled (Queue.CancelIDs, Queue.CancelKey) by any client: the job's
// row is gone, so nothing the handler does can be settled.
// errors.Is(context.Cause(ctx), ErrCancelled) tells it from a lost lease
// (ErrLeaseLost) and a shutdown (ErrShutdown). The worker neither retries
// nor buries the job, and logs it at info level.
var ErrCancelled = errors.New("emq: the job was cancelled")

// cancelMemory is how many cancellations a worker remembers after their
// handlers returned, so that a message arriving while a job is being
// settled still explains its refused settle.
const cancelMemory = 256

// cancels is what a worker heard on its queue's cancel channel.
type cancels struct {
	mu    sync.Mutex
	seen  map[string]bool // "<id> <token>"
	order []string
}

func (c *cancels) add(msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	if c.seen[msg] {
		return
	}
	c.seen[msg] = true
	c.order = append(c.order, msg)
	if len(c.order) > cancelMemory {
		delete(c.seen, c.order[0])
		c.order = c.order[1:]
	}
}

func (c *cancels) has(job Job) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[cancelMessage(job)]
}

// cancelMessage is the message cancel_ids publishes for job: its id, one
// space, its token.
func cancelMessage(job Job) string {
	return job.ID.String() + " " + strconv.FormatInt(job.Token, 10)
}

// listenCancels subscribes to the queue's cancel channel (SSUBSCRIBE: on a
// cluster, on the node of the queue's slot) until ctx ends, subscribing
// again after a broken connection; subscribed is closed at the first
// subscription, or at the first failure to subscribe, or when ctx ends. A message naming a job a handler
// holds with that token cancels the handler's context with ErrCancelled.
func (w *Worker) listenCancels(ctx context.Context, subscribed chan<- struct{}) {
	rc := w.q.c.rc
	var once sync.Once
	confirm := func() { once.Do(func() { close(subscribed) }) }
	defer confirm()
	hctx := rueidis.WithOnSubscriptionHook(ctx, func(s rueidis.PubSubSubscription) {
		if s.Kind == "ssubscribe" {
			confirm()
		}
	})
	pause := 50 * time.Millisecond
	for ctx.Err() == nil {
		begin := time.Now()
		err := rc.Receive(hctx, rc.B().Ssubscribe().Channel(w.q.keys.Cancel).Build(), func(m rueidis.PubSubMessage) {
			w.cancelled(m.Message)
		})
		if ctx.Err() != nil {
			return
		}
		confirm() // claim anyway: the extends tell a cancellation meanwhile
		if time.Since(begin) > 5*time.Second {
			pause = 50 * time.Millisecond
		}
		if err == nil {
			// The server ended the subscription (SUNSUBSCRIBE: the slot
			// moved to another node, on a cluster): subscribe again, at
			// the slot's new node.
			w.log.Info("emq: the cancel channel's subscription ended; subscribing again", "channel", w.q.keys.Cancel, "in", pause)
		} else {
			w.log.Warn("emq: listening for cancellations failed; subscribing again (meanwhile a cancelled job's handler learns it at its next extend)", "channel", w.q.keys.Cancel, "err", err, "in", pause)
		}
		sleep(ctx, pause)
		pause = min(pause*2, 5*time.Second)
	}
}

// cancelled handles a message of the cancel channel: "<id> <token>".
func (w *Worker) cancelled(msg string) {
	id, token, ok := strings.Cut(msg, " ")
	if !ok {
		return
	}
	w.cancels.add(msg)
	for i := range w.slots {
		fl := w.slots[i].cur.Load()
		if fl == nil || fl.job.ID.String() != id || strconv.FormatInt(fl.job.Token, 10) != token {
			continue
		}
		fl.cancelled.Store(true)
		fl.cancel(ErrCancelled)
	}
}

// settledCancelled counts and logs a job whose handler ran while it was
// cancelled: its row is gone, nothing is settled.
func (w *Worker) settledCancelled(job Job, op string) {
	w.m.Add(Cancelled, w.q.Name(), 1)
	w.log.Info("emq: the job was cancelled while its handler ran; nothing to "+op, "id", job.ID, "token", job.Token)
}

// dedupSweepPages bounds the sweep_dedup pages one maintenance tick walks;
// the walk goes on at the next tick from where it stopped.
const dedupSweepPages = 10

// sweepDedup walks the queue's deduplication entries, a page of
// sweepBatch at a time, from where the last tick stopped, until the walk
// is done or dedupSweepPages pages were read: a parked job whose holder
// is done becomes due, entries that hold nothing are deleted. On an
// empty hash it is one call that scans nothing.
func (w *Worker) sweepDedup(ctx context.Context) {
	for range dedupSweepPages {
		r, err := w.q.SweepDedup(ctx, w.dedupCursor, sweepBatch)
		if err != nil {
			w.log.Warn("emq: sweeping deduplication entries failed", "err", err)
			return
		}
		w.dedupCursor = r.Cursor
		if r.Released > 0 {
			w.log.Debug("emq: parked jobs made due", "jobs", r.Released)
		}
		if r.Cursor == "0" {
			return
		}
	}
}
