package emq_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// addr is the host:port of the redis-server the examples run against,
// started by TestMain. A program passes its own, e.g. "127.0.0.1:6379".
var addr string

// TestMain starts one redis-server for the examples (the tests start their
// own) and stops it when every test and example has run. Without
// redis-server the run fails with the install hint.
func TestMain(m *testing.M) {
	srv, err := redistest.StartServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	addr = srv.Addr()
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

// Connect fences the keyspace and returns a client; queue names are
// checked before any command is sent.
func ExampleConnect() {
	ctx := context.Background()
	c, err := emq.Connect(ctx, emq.Options{Addr: addr})
	if err != nil {
		log.Fatal(err) // a keyspace claimed by another major is a *FenceError
	}
	defer c.Close()

	q, err := c.Queue("orders")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(q.Name())

	_, err = c.Queue("Orders!")
	fmt.Println(errors.Is(err, emq.ErrQueueName))
	// Output:
	// orders
	// true
}

// A URL carries the address, credentials and database; rediss:// is TLS.
func ExampleConnect_url() {
	ctx := context.Background()
	c, err := emq.Connect(ctx, emq.Options{URL: "redis://" + addr + "/1"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println("connected")

	// The address is given once: Addr, Addrs, URL or Redis.InitAddress.
	_, err = emq.Connect(ctx, emq.Options{Addr: addr, URL: "redis://" + addr})
	fmt.Println(errors.Is(err, emq.ErrArgument))
	// Output:
	// connected
	// true
}

// Push admits a job under an id the client mints; pushing the same id
// again is a duplicate and changes nothing.
func ExampleQueue_Push() {
	ctx := context.Background()
	c, err := emq.Connect(ctx, emq.Options{Addr: addr})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	q, _ := c.Queue("invoices")

	id, err := c.Mint(emq.WorkKind)
	if err != nil {
		log.Fatal(err)
	}
	ok, err := q.Push(ctx, id, []byte(`{"invoice":42}`))
	fmt.Println(ok, err)
	ok, err = q.Push(ctx, id, []byte(`{"invoice":42}`))
	fmt.Println(ok, err)
	// Output:
	// true <nil>
	// false <nil>
}

// PushBatch admits many jobs in one round trip and reports each: a
// duplicate is false, and a job the scripts refuse is in the *BatchError
// while the others still took effect.
func ExampleQueue_PushBatch() {
	ctx := context.Background()
	c, err := emq.Connect(ctx, emq.Options{Addr: addr})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	q, _ := c.Queue("receipts")

	a, _ := c.Mint(emq.WorkKind)
	b, _ := c.Mint(emq.WorkKind)
	order, _ := c.Mint(emq.KindORD) // not a job's kind: refused with ErrKind
	added, err := q.PushBatch(ctx, []emq.NewJob{
		{ID: a, Payload: []byte("a")},
		{ID: b, Payload: []byte("b")},
		{ID: a, Payload: []byte("a again")},
		{ID: order, Payload: []byte("an order is no job")},
	})
	fmt.Println(added)

	var be *emq.BatchError
	if errors.As(err, &be) {
		for i, err := range be.Errs {
			if err != nil {
				fmt.Printf("job %d: ErrKind %v\n", i, errors.Is(err, emq.ErrKind))
			}
		}
	}
	// Output:
	// [true true false false]
	// job 3: ErrKind true
}

// A worker runs a handler over a queue's jobs until its context is done,
// then shuts down cleanly. A handler's error retries the job later;
// emq.Permanent(err) buries it at once.
func ExampleNewWorker() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	c, err := emq.Connect(ctx, emq.Options{Addr: addr})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	q, _ := c.Queue("emails")
	for _, to := range []string{"ada", "grace", "edsger"} {
		id, _ := c.Mint(emq.WorkKind)
		if _, err := q.Push(ctx, id, []byte(to)); err != nil {
			log.Fatal(err)
		}
	}

	var mu sync.Mutex
	var sent []string
	w, err := emq.NewWorker(q, func(ctx context.Context, job emq.Job) error {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, string(job.Payload))
		if len(sent) == 3 {
			stop() // enough for the example: shut the worker down
		}
		return nil // completes the job
	}, emq.WorkerOptions{Concurrency: 2, Lease: 30 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Run(ctx); err != nil {
		log.Fatal(err)
	}
	slices.Sort(sent)
	fmt.Println(sent)
	// Output:
	// [ada edsger grace]
}

// Page walks a set newest first, n ids at a time; the cursor it returns
// starts the next page and is empty after the last.
func ExampleQueue_Page() {
	ctx := context.Background()
	c, err := emq.Connect(ctx, emq.Options{Addr: addr})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	q, _ := c.Queue("reports")
	names := map[emq.ID]string{}
	for _, name := range []string{"monday", "tuesday", "wednesday"} {
		id, _ := c.Mint(emq.WorkKind)
		names[id] = name
		if _, err := q.Push(ctx, id, []byte(name)); err != nil {
			log.Fatal(err)
		}
	}

	var cursor emq.Cursor
	for page := 1; ; page++ {
		ids, next, err := q.Page(ctx, emq.SetPending, cursor, 2)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Print("page ", page, ":")
		for _, id := range ids {
			fmt.Print(" ", names[id])
		}
		fmt.Println()
		if next == "" {
			break
		}
		cursor = next
	}
	// Output:
	// page 1: wednesday tuesday
	// page 2: monday
}

// A script's refusal is a typed error: errors.Is matches the wire class's
// sentinel, errors.As gives the *ClassError with the script and message.
// Completing a job whose lease is gone (here: already completed) is
// ErrStale.
func ExampleClassError() {
	ctx := context.Background()
	c, err := emq.Connect(ctx, emq.Options{Addr: addr})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	q, _ := c.Queue("thumbnails")
	id, _ := c.Mint(emq.WorkKind)
	if _, err := q.Push(ctx, id, []byte("cat.png")); err != nil {
		log.Fatal(err)
	}
	jobs, err := q.ClaimMany(ctx, 30*time.Second, 1)
	if err != nil || len(jobs) != 1 {
		log.Fatal(len(jobs), err)
	}
	job := jobs[0]
	fmt.Println(q.Complete(ctx, job.ID, job.Token))

	err = q.Complete(ctx, job.ID, job.Token)
	fmt.Println(errors.Is(err, emq.ErrStale))
	var ce *emq.ClassError
	if errors.As(err, &ce) {
		fmt.Println(ce.Class, ce.Script)
	}
	// Output:
	// <nil>
	// true
	// EMQSTALE complete
}

// Connect refuses a keyspace that another major of the protocol claimed:
// the error matches ErrVersionFence and is a *FenceError that says what
// was found.
func ExampleFenceError() {
	ctx := context.Background()
	// Database 9 as a client of another major would have left it: claim
	// it, then overwrite the version record (with the wire layer's names).
	c, err := emq.Connect(ctx, emq.Options{URL: "redis://" + addr + "/9"})
	if err != nil {
		log.Fatal(err)
	}
	other := fmt.Sprintf("%s%d.0.0", wire.VersionRecordPrefix, wire.VersionMajor+1)
	rc := c.Redis()
	if err := rc.Do(ctx, rc.B().Set().Key(wire.KeyVersion).Value(other).Build()).Error(); err != nil {
		log.Fatal(err)
	}
	c.Close()

	_, err = emq.Connect(ctx, emq.Options{URL: "redis://" + addr + "/9"})
	fmt.Println(errors.Is(err, emq.ErrVersionFence))
	var fe *emq.FenceError
	if errors.As(err, &fe) {
		fmt.Println(fe.Found == other)
	}
	// Output:
	// true
	// true
}

// PushMany admits many jobs in one call, with one result per job; an id
// repeated in the call is a duplicate.
func ExampleQueue_PushMany() {
	ctx := context.Background()
	c, err := emq.Connect(ctx, emq.Options{Addr: addr})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	q, _ := c.Queue("example-push-many")

	a, _ := c.Mint(emq.WorkKind)
	b, _ := c.Mint(emq.WorkKind)
	enqueued, err := q.PushMany(ctx, []emq.NewJob{
		{ID: a, Payload: []byte("one")},
		{ID: b, Payload: []byte("two")},
		{ID: a, Payload: []byte("again")},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(enqueued)

	// An id of another kind refuses the whole call; nothing is written.
	o, _ := c.Mint(emq.KindORD)
	d, _ := c.Mint(emq.WorkKind)
	_, err = q.PushMany(ctx, []emq.NewJob{{ID: d, Payload: nil}, {ID: o, Payload: nil}})
	n, _ := q.PendingSize(ctx)
	fmt.Println(errors.Is(err, emq.ErrKind), n)
	// Output:
	// [true true false]
	// true 2
}

// Head reads the ids at the head of a set; ClaimIDs leases those still
// pending, in the order given, and skips any another claimer took.
func ExampleQueue_ClaimIDs() {
	ctx := context.Background()
	c, err := emq.Connect(ctx, emq.Options{Addr: addr})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	q, _ := c.Queue("example-claim-ids")
	for _, p := range []string{"first", "second", "third"} {
		id, _ := c.Mint(emq.WorkKind)
		if _, err := q.Push(ctx, id, []byte(p)); err != nil {
			log.Fatal(err)
		}
	}

	head, err := q.Head(ctx, emq.SetPending, 2)
	if err != nil {
		log.Fatal(err)
	}
	// Someone else takes the first meanwhile.
	if _, err := q.ClaimIDs(ctx, time.Minute, head[:1]); err != nil {
		log.Fatal(err)
	}
	jobs, err := q.ClaimIDs(ctx, time.Minute, head)
	if err != nil {
		log.Fatal(err)
	}
	for _, j := range jobs {
		fmt.Println(string(j.Payload), j.Token)
		if _, err := q.CompleteClaimIDs(ctx, j.ID, j.Token, time.Minute, nil); err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// second 1
}
