package orders

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// errSimulated is the failure -fail-rate injects.
var errSimulated = errors.New("simulated failure")

// RunWorker is the worker service: an emq.Worker on the queue whose
// handler decodes each job's order (re-parsing its ORD id), "processes" it
// for -work and fails a -fail-rate share of attempts at random, so that
// retries show. A payload that is not an order fails permanently and its
// job is buried at once. It logs with slog to stdout, one line per order
// processed:
//
//	level=INFO msg="order processed" job=JOB0Nu3Bq7VPRA order=ORD0Nu3Bq7VPR9 qty=3 attempt=1
//
// and the SDK's counters every -report and at exit. When ctx is done
// (SIGINT or SIGTERM in the program) it stops claiming, lets running
// handlers finish for up to -shutdown-timeout (then hands their jobs back
// to the queue), prints the counters and the queue's sizes, and returns
// nil: a clean shutdown. args are the command-line flags, without the
// program name.
func RunWorker(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	var (
		cf          common
		concurrency = fs.Int("concurrency", 10, "handlers running at once")
		work        = fs.Duration("work", 100*time.Millisecond, "how long processing one order takes")
		failRate    = fs.Float64("fail-rate", 0.1, "share of attempts that fail at random (0..1), to show retries")
		maxAttempts = fs.Int64("max-attempts", 5, "claims a job gets before a failure buries it")
		retryBase   = fs.Duration("retry-base", time.Second, "backoff before the first retry; it doubles with each attempt, up to a minute")
		shutdown    = fs.Duration("shutdown-timeout", 10*time.Second, "how long a shutdown waits for running handlers before handing their jobs back")
		report      = fs.Duration("report", 5*time.Second, "how often the counters are printed; 0 prints them only at exit")
	)
	cf.register(fs)
	if err := parse(fs, args, stdout); err != nil {
		return err
	}
	if *concurrency < 1 || *failRate < 0 || *failRate > 1 || *maxAttempts < 1 || *retryBase <= 0 || *shutdown <= 0 || *work < 0 || *report < 0 {
		return fmt.Errorf("-concurrency and -max-attempts must be at least 1, -fail-rate in 0..1, -retry-base and -shutdown-timeout positive, -work and -report not negative")
	}
	log, _ := newLogger(stdout)

	tally := &emq.Tally{}
	client, q, err := cf.open(ctx, log, tally)
	if err != nil {
		return err
	}
	defer client.Close()

	handle := func(ctx context.Context, job emq.Job) error {
		o, err := Decode(job.Payload)
		if err != nil {
			// No retry makes a payload decode: bury the job now.
			return emq.Permanent(err)
		}
		select {
		case <-time.After(*work):
		case <-ctx.Done():
			// The lease was lost or the shutdown deadline passed; the job
			// runs again, here or elsewhere.
			return context.Cause(ctx)
		}
		if *failRate > 0 && mrand.Float64() < *failRate {
			return fmt.Errorf("order %s: %w", o.ID, errSimulated)
		}
		// job.Token is the fencing token, which counts the job's claims:
		// it is the attempt number.
		log.Info("order processed", "job", job.ID, "order", o.ID, "qty", o.Qty, "attempt", job.Token)
		return nil
	}
	w, err := emq.NewWorker(q, handle, emq.WorkerOptions{
		Concurrency:     *concurrency,
		MaxAttempts:     *maxAttempts,
		Backoff:         emq.ExponentialBackoff(*retryBase, time.Minute),
		ShutdownTimeout: *shutdown,
	})
	if err != nil {
		return err
	}

	log.Info("worker started", "addr", cf.addr, "queue", q.Name(), "concurrency", *concurrency, "node", client.Node())
	stopReport := make(chan struct{})
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		if *report == 0 {
			return
		}
		t := time.NewTicker(*report)
		defer t.Stop()
		for {
			select {
			case <-stopReport:
				return
			case <-t.C:
				logCounters(log, "counters", tally)
			}
		}
	}()

	stopNotice := context.AfterFunc(ctx, func() {
		log.Info("shutting down: no more claims; running handlers may finish", "timeout", *shutdown)
	})
	runErr := w.Run(ctx) // returns once ctx is done and the shutdown is over
	stopNotice()
	close(stopReport)
	<-reported
	logCounters(log, "final counters", tally)
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if sizes, err := q.Sizes(sctx); err == nil {
		attrs := make([]any, 0, 2*len(sizes))
		for _, s := range wire.Sets() {
			attrs = append(attrs, string(s), sizes[s])
		}
		log.Info("queue sizes", attrs...)
	}
	if runErr != nil {
		return runErr
	}
	log.Info("worker stopped cleanly")
	return nil
}

// logCounters logs every counter of t, in the SDK's order.
func logCounters(log *slog.Logger, msg string, t *emq.Tally) {
	attrs := make([]any, 0, 2*len(emq.Counters()))
	for _, c := range emq.Counters() {
		attrs = append(attrs, c.String(), t.Get(c))
	}
	log.Info(msg, attrs...)
}
