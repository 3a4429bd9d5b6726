package emq_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
)

// AddMany admits jobs with a relative delay on the server's clock and a
// retry policy of their own; a duplicate is reported, not admitted again.
func ExampleQueue_AddMany() {
	ctx := context.Background()
	c, err := emq.Connect(ctx, emq.Options{Addr: addr})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	q, err := c.Queue("example-add-many")
	if err != nil {
		log.Fatal(err)
	}
	a, _ := c.Mint(emq.WorkKind)
	b, _ := c.Mint(emq.WorkKind)
	out, err := q.AddMany(ctx, []emq.NewJob{{ID: a, Payload: []byte("one")}, {ID: b, Payload: []byte("two")}, {ID: a, Payload: []byte("again")}},
		emq.Delay(time.Minute), emq.Attempts(5), emq.WithBackoff(emq.ExponentialPolicy(time.Second, time.Minute)))
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range out {
		fmt.Println(r.Enqueued, !r.RunAt.IsZero())
	}
	_, err = q.AddMany(ctx, []emq.NewJob{{ID: a}}, emq.Attempts(-1))
	fmt.Println(errors.Is(err, emq.ErrArgument))
	// Output:
	// true true
	// true true
	// false false
	// true
}

// A ResultHandler returns its job's result, which the worker keeps as
// KeepResults says; the job's own attempts (Push with emq.Attempts)
// outlast the worker's MaxAttempts, and the handler reports progress
// through its context.
func ExampleNewResultWorker() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	c, err := emq.Connect(ctx, emq.Options{Addr: addr})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	q, err := c.Queue("example-results")
	if err != nil {
		log.Fatal(err)
	}
	id, _ := c.Mint(emq.WorkKind)
	if _, err := q.PushWith(ctx, id, []byte("cat.png"), emq.Delay(20*time.Millisecond), emq.Attempts(2), emq.WithBackoff(emq.FixedBackoff(10*time.Millisecond))); err != nil {
		log.Fatal(err)
	}
	w, err := emq.NewResultWorker(q, func(ctx context.Context, job emq.Job) ([]byte, error) {
		if err := emq.ReportProgress(ctx, []byte("resizing")); err != nil {
			return nil, err
		}
		if job.Attempt() == 1 {
			fmt.Println("attempt 1: decoder busy")
			return nil, errors.New("decoder busy")
		}
		defer stop()
		fmt.Printf("attempt %d: %s resized\n", job.Attempt(), job.Payload)
		return []byte("cat-128.png"), nil
	}, emq.WorkerOptions{Concurrency: 1, MaxAttempts: 1, KeepResults: emq.Retention{Count: 1000}})
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Run(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// attempt 1: decoder busy
	// attempt 2: cat.png resized
}
