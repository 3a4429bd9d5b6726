package emq_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
)

// A Tally prints every total, in counter order; give one to Connect
// (Options.Metrics) and print it, or log it (it is a slog.LogValuer too).
func ExampleTally_String() {
	ctx := context.Background()
	var tally emq.Tally
	c, err := emq.Connect(ctx, emq.Options{Addr: addr, Metrics: &tally})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	q, _ := c.Queue("tally-example")
	for range 3 {
		id, _ := c.Mint(emq.WorkKind)
		if _, err := q.Push(ctx, id, []byte("x")); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println(&tally)
	// Output:
	// enqueued=3 claimed=0 completed=0 retried=0 buried=0 stale=0 reaped=0 promoted=0 panicked=0 handed_back=0 cancelled=0
}

// A JobInfo prints on one line: id, state, attempts, its lease deadline or
// run-at when it has one, and a preview of its payload.
func ExampleJobInfo_String() {
	ctx := context.Background()
	c, err := emq.Connect(ctx, emq.Options{Addr: addr})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	q, _ := c.Queue("print-example")
	id := emq.MustParseID("JOB0SX8JD1mXuy") // any id of the job kind; Mint makes fresh ones
	if _, err := q.Push(ctx, id, []byte(`{"to":"ada","subject":"a long subject line, cut in the preview"}`)); err != nil {
		log.Fatal(err)
	}
	info, _, err := q.Get(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(info)

	// An active job shows its lease deadline, on the server's clock in UTC.
	info.State, info.Attempts, info.In = emq.StateActive, 1, []emq.Set{emq.SetActive}
	info.At = time.Date(2026, 12, 1, 21, 0, 30, 0, time.UTC)
	info.Payload = []byte("hello")
	fmt.Println(info)

	missing, found, _ := q.Get(ctx, emq.MustParseID("JOB0SX8JD1mXuz"))
	fmt.Println(found, missing)
	// Output:
	// JOB0SX8JD1mXuy pending attempts=0 payload=64 bytes "{\"to\":\"ada\",\"subject\":\"a long su"…
	// JOB0SX8JD1mXuy active attempts=1 at=2026-12-01T21:00:30.000Z payload=5 bytes "hello"
	// false JOB0SX8JD1mXuz no row
}

// A claimed Job prints its id, token, lease deadline and payload preview.
func ExampleJob_String() {
	j := emq.Job{
		ID:       emq.MustParseID("JOB0SX8JD1mXuy"),
		Token:    2,
		Payload:  []byte{0xff, 0x00, 'a'},
		Deadline: time.Date(2026, 12, 1, 21, 0, 30, 500e6, time.UTC),
	}
	fmt.Println(j)
	// Output:
	// JOB0SX8JD1mXuy token=2 deadline=2026-12-01T21:00:30.500Z payload=3 bytes "\xff\x00a"
}

// The quickstart: connect, push jobs, run a worker over them, and handle
// the errors a program meets — a push of an id that is no job's is
// refused before anything is sent, and a handler's Permanent error buries
// its job instead of retrying it.
func Example() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	c, err := emq.Connect(ctx, emq.Options{Addr: addr})
	if err != nil {
		log.Fatal(err) // errors.Is(err, emq.ErrConnection): no server answered
	}
	defer c.Close()
	q, err := c.Queue("quickstart")
	if err != nil {
		log.Fatal(err)
	}

	for _, to := range []string{"ada@example.com", "not an address"} {
		id, err := c.Mint(emq.WorkKind)
		if err != nil {
			log.Fatal(err)
		}
		if _, err := q.Push(ctx, id, []byte(to)); err != nil {
			log.Fatal(err)
		}
	}
	order, _ := c.Mint(emq.KindORD)
	_, err = q.Push(ctx, order, []byte("an order id is no job's"))
	fmt.Println("push of an order id:", errors.Is(err, emq.ErrKind))

	seen := 0
	w, err := emq.NewWorker(q, func(ctx context.Context, job emq.Job) error {
		seen++ // Concurrency 1: one handler at a time
		if seen == 2 {
			defer stop()
		}
		if !bytes.Contains(job.Payload, []byte("@")) {
			return emq.Permanent(fmt.Errorf("%q is not an address", job.Payload))
		}
		fmt.Printf("sent to %s\n", job.Payload)
		return nil
	}, emq.WorkerOptions{Concurrency: 1})
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Run(ctx); err != nil {
		log.Fatal(err)
	}
	sizes, _ := q.Sizes(context.Background())
	fmt.Println("dead:", sizes[emq.SetDead])
	// Output:
	// push of an order id: true
	// sent to ada@example.com
	// dead: 1
}
