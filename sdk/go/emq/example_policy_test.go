package emq_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
)

// Pause holds every claim back, across every worker, until Resume; the
// producers keep enqueueing.
func ExampleQueue_Pause() {
	ctx := context.Background()
	c, q := exampleQueue(ctx, "example-pause")
	defer c.Close()
	id, _ := c.Mint(emq.WorkKind)
	if _, err := q.Push(ctx, id, []byte("report")); err != nil {
		log.Fatal(err)
	}
	p, err := q.Pause(ctx)
	if err != nil {
		log.Fatal(err)
	}
	jobs, _ := q.ClaimMany(ctx, time.Minute, 1)
	fmt.Println(p.Paused, p.Requires, len(jobs))
	p, _ = q.Resume(ctx)
	jobs, _ = q.ClaimMany(ctx, time.Minute, 1)
	fmt.Println(p.Paused, p.Requires, len(jobs))
	// Output:
	// true 7 0
	// false 0 1
}

// SetConcurrency caps the jobs leased at once; 0 removes the cap.
func ExampleQueue_SetConcurrency() {
	ctx := context.Background()
	c, q := exampleQueue(ctx, "example-concurrency")
	defer c.Close()
	for range 3 {
		id, _ := c.Mint(emq.WorkKind)
		if _, err := q.Push(ctx, id, []byte("resize")); err != nil {
			log.Fatal(err)
		}
	}
	if _, err := q.SetConcurrency(ctx, 2); err != nil {
		log.Fatal(err)
	}
	jobs, _ := q.ClaimMany(ctx, time.Minute, 3)
	p, _ := q.Policy(ctx)
	fmt.Println(len(jobs), p.Concurrency, p.Leased)
	p, _ = q.SetConcurrency(ctx, 0)
	fmt.Println(p.Concurrency, p.Requires)
	// Output:
	// 2 2 2
	// 0 0
}

// A deployment whose bundle record names a release older than the
// tripwire's floor is refused a first policy, unless forced.
func ExampleForceTripwire() {
	ctx := context.Background()
	c, q := exampleQueue(ctx, "example-force")
	defer c.Close()
	_, err := q.Pause(ctx)
	fmt.Println(errors.Is(err, emq.ErrTripwireFloor))
	// Only when no client of such a release is left:
	p, err := q.Pause(ctx, emq.ForceTripwire())
	fmt.Println(p.Paused, err)
	_, _ = q.Resume(ctx)
	// Output:
	// false
	// true <nil>
}

// SetRateLimit limits the jobs started in any window of the period, across
// every worker; the jobs it holds back stay pending, and 0 removes it.
func ExampleQueue_SetRateLimit() {
	ctx := context.Background()
	c, q := exampleQueue(ctx, "example-rate")
	defer c.Close()
	for range 3 {
		id, _ := c.Mint(emq.WorkKind)
		if _, err := q.Push(ctx, id, []byte("send")); err != nil {
			log.Fatal(err)
		}
	}
	p, err := q.SetRateLimit(ctx, 2, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.RateLimit, p.RatePeriod, p.Requires)
	jobs, _ := q.ClaimMany(ctx, time.Minute, 3)
	pending, _ := q.Size(ctx, emq.SetPending)
	p, _ = q.Policy(ctx)
	fmt.Println(len(jobs), pending, p.AdmitIn > 0)
	p, _ = q.SetRateLimit(ctx, 0, 0)
	fmt.Println(p.RateLimit, p.Requires)
	// Output:
	// 2 1m0s 8
	// 2 1 true
	// 0 0
}
