package emq_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
)

// exampleQueue connects and returns a queue handle for an example.
func exampleQueue(ctx context.Context, name string) (*emq.Client, *emq.Queue) {
	c, err := emq.Connect(ctx, emq.Options{Addr: addr})
	if err != nil {
		log.Fatal(err)
	}
	q, err := c.Queue(name)
	if err != nil {
		log.Fatal(err)
	}
	return c, q
}

// PushDedup admits one job per key while it waits or runs: a second push
// of the key names the holder and admits nothing.
func ExampleQueue_PushDedup() {
	ctx := context.Background()
	c, q := exampleQueue(ctx, "example-push-dedup")
	defer c.Close()
	a, _ := c.Mint(emq.WorkKind)
	b, _ := c.Mint(emq.WorkKind)
	first, err := q.PushDedup(ctx, a, []byte("sync account 42"), "account-42")
	if err != nil {
		log.Fatal(err)
	}
	second, err := q.PushDedup(ctx, b, []byte("sync account 42"), "account-42")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(first.Outcome, first.ID == a)
	fmt.Println(second.Outcome, second.ID == a)
	// Output:
	// admitted true
	// duplicate true
}

// WithDedup sets the policy: here a debounce, whose later push replaces
// the waiting job's payload and moves its run-at back.
func ExampleWithDedup() {
	ctx := context.Background()
	c, q := exampleQueue(ctx, "example-with-dedup")
	defer c.Close()
	debounce := emq.WithDedup(emq.DedupPolicy{Mode: emq.DedupDebounce})
	var holder emq.ID
	for i, text := range []string{"draft 1", "draft 2", "draft 3"} {
		id, _ := c.Mint(emq.WorkKind)
		r, err := q.PushDedup(ctx, id, []byte(text), "doc-7", debounce, emq.Delay(2*time.Second))
		if err != nil {
			log.Fatal(err)
		}
		if i == 0 {
			holder = id
		}
		fmt.Println(r.Outcome, r.ID == holder)
	}
	info, _, _ := q.Get(ctx, holder)
	fmt.Println(string(info.Payload))
	// Output:
	// admitted true
	// replaced true
	// replaced true
	// draft 3
}

// PushBatchDedup admits a batch, each job under its own key; a later job
// of the batch meets the key an earlier one took.
func ExampleQueue_PushBatchDedup() {
	ctx := context.Background()
	c, q := exampleQueue(ctx, "example-push-batch-dedup")
	defer c.Close()
	jobs := make([]emq.NewJob, 3)
	for i, key := range []string{"a", "b", "a"} {
		id, _ := c.Mint(emq.WorkKind)
		jobs[i] = emq.NewJob{ID: id, Payload: []byte(key), DedupKey: key}
	}
	rs, err := q.PushBatchDedup(ctx, jobs, emq.WithDedup(emq.DedupPolicy{Mode: emq.DedupThrottle, TTL: 500 * time.Millisecond}))
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range rs {
		fmt.Println(r.Outcome)
	}
	// Output:
	// admitted
	// admitted
	// duplicate
}

// AddDedup is one add_dedup call: a replacement it cannot declare comes
// back deferred, and ReplaceDedup naming that job resolves it (PushDedup
// does both).
func ExampleQueue_AddDedup() {
	ctx := context.Background()
	c, q := exampleQueue(ctx, "example-add-dedup")
	defer c.Close()
	keepLast := emq.WithDedup(emq.DedupPolicy{Mode: emq.DedupKeepLast})
	a, _ := c.Mint(emq.WorkKind)
	b, _ := c.Mint(emq.WorkKind)
	if _, err := q.PushDedup(ctx, a, []byte("v1"), "cfg", keepLast); err != nil {
		log.Fatal(err)
	}
	rs, err := q.AddDedup(ctx, []emq.NewJob{{ID: b, Payload: []byte("v2"), DedupKey: "cfg"}}, keepLast)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rs[0].Outcome, rs[0].ID == a)
	r, err := q.ReplaceDedup(ctx, b, []byte("v2"), "cfg", rs[0].ID, 0, keepLast)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.Outcome, r.ID == a)
	// Output:
	// deferred true
	// replaced true
}

// ExampleQueue_ReplaceDedup: without a guess, name the new job itself as
// the target; the call admits it or says which job to replace.
func ExampleQueue_ReplaceDedup() {
	ctx := context.Background()
	c, q := exampleQueue(ctx, "example-replace-dedup")
	defer c.Close()
	id, _ := c.Mint(emq.WorkKind)
	r, err := q.ReplaceDedup(ctx, id, []byte("x"), "only", id, 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.Outcome, r.ID == id)
	_, err = q.ReplaceDedup(ctx, id, []byte("x"), "", id, 0)
	fmt.Println(errors.Is(err, emq.ErrArgument))
	// Output:
	// admitted true
	// true
}

// DedupEntries reads who holds a key, and whether a push now would meet
// it.
func ExampleQueue_DedupEntries() {
	ctx := context.Background()
	c, q := exampleQueue(ctx, "example-dedup-entries")
	defer c.Close()
	id, _ := c.Mint(emq.WorkKind)
	if _, err := q.PushDedup(ctx, id, nil, "report-2024"); err != nil {
		log.Fatal(err)
	}
	es, err := q.DedupEntries(ctx, "report-2024", "report-2025")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(es[0].Holder == id, es[0].Mode, es[0].Held, es[0].State)
	fmt.Println(es[1].Holder.IsZero(), es[1].Held)
	// Output:
	// true until_done true pending
	// true false
}

// SweepDedup walks the entries a page at a time; workers do it in their
// maintenance.
func ExampleQueue_SweepDedup() {
	ctx := context.Background()
	c, q := exampleQueue(ctx, "example-sweep-dedup")
	defer c.Close()
	id, _ := c.Mint(emq.WorkKind)
	if _, err := q.PushDedup(ctx, id, nil, "k"); err != nil {
		log.Fatal(err)
	}
	if _, err := q.CancelIDs(ctx, []emq.ID{id}, 0); err != nil {
		log.Fatal(err)
	}
	dropped := 0
	for cursor := ""; ; {
		r, err := q.SweepDedup(ctx, cursor, 100)
		if err != nil {
			log.Fatal(err)
		}
		dropped += r.Dropped
		if cursor = r.Cursor; cursor == "0" {
			break
		}
	}
	fmt.Println(dropped)
	// Output:
	// 1
}

// CancelIDs cancels waiting and running jobs; a running job's worker
// cancels its handler's context with ErrCancelled.
func ExampleQueue_CancelIDs() {
	ctx := context.Background()
	c, q := exampleQueue(ctx, "example-cancel-ids")
	defer c.Close()
	a, _ := c.Mint(emq.WorkKind)
	b, _ := c.Mint(emq.WorkKind)
	if _, err := q.Push(ctx, a, nil); err != nil {
		log.Fatal(err)
	}
	states, err := q.CancelIDs(ctx, []emq.ID{a, b}, 1000)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q\n", states)
	// Output:
	// ["pending" ""]
}

// CancelKey cancels a key's holder (and a job parked behind it).
func ExampleQueue_CancelKey() {
	ctx := context.Background()
	c, q := exampleQueue(ctx, "example-cancel-key")
	defer c.Close()
	id, _ := c.Mint(emq.WorkKind)
	if _, err := q.PushDedup(ctx, id, nil, "nightly"); err != nil {
		log.Fatal(err)
	}
	cs, err := q.CancelKey(ctx, "nightly", 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(cs), cs[0].ID == id, cs[0].State)
	// Output:
	// 1 true pending
}

// A handler tells a cancellation from a lost lease or a shutdown by its
// context's cause.
func ExampleErrCancelled() {
	handle := func(ctx context.Context, job emq.Job) error {
		select {
		case <-time.After(time.Hour): // the work
			return nil
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), emq.ErrCancelled) {
				return nil // cancelled by a client: the worker settles nothing
			}
			return context.Cause(ctx)
		}
	}
	_ = emq.Handler(handle)
	fmt.Println(emq.ErrCancelled)
	// Output:
	// emq: the job was cancelled
}
