package emq_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
)

// Failures reads the failed attempts recorded for a job, oldest first:
// here one retried with RetryFailed and then buried with BuryFailed, as a
// worker does when its handler fails. Get returns the same history with
// the job, and when a dead job died.
func ExampleQueue_Failures() {
	ctx := context.Background()
	c, err := emq.Connect(ctx, emq.Options{Addr: addr})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	q, err := c.Queue("example-failures")
	if err != nil {
		log.Fatal(err)
	}
	id, err := c.Mint(emq.WorkKind)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := q.Push(ctx, id, []byte("invoice 17")); err != nil {
		log.Fatal(err)
	}
	jobs, err := q.ClaimMany(ctx, time.Minute, 1)
	if err != nil || len(jobs) != 1 {
		log.Fatal(len(jobs), err)
	}
	job := jobs[0]
	if _, err := q.RetryFailed(ctx, job.ID, job.Token, 0, emq.Failure{Class: emq.FailureClassTimeout, Worker: "billing-1", Message: "no answer within 5s"}); err != nil {
		log.Fatal(err)
	}
	due, err := q.Head(ctx, emq.SetSchedule, 10)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := q.PromoteIDs(ctx, due); err != nil {
		log.Fatal(err)
	}
	if jobs, err = q.ClaimMany(ctx, time.Minute, 1); err != nil || len(jobs) != 1 {
		log.Fatal(len(jobs), err)
	}
	job = jobs[0]
	if err := q.BuryFailed(ctx, job.ID, job.Token, emq.Failure{Class: emq.FailureClassError, Worker: "billing-2", Message: "card declined"}); err != nil {
		log.Fatal(err)
	}

	history, err := q.Failures(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range history {
		fmt.Printf("attempt %d: %s by %s: %s\n", f.Attempt, f.Class, f.Worker, f.Message)
	}
	info, _, err := q.Get(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(info.State, info.DiedAt.Equal(history[len(history)-1].At))
	// Output:
	// attempt 1: timeout by billing-1: no answer within 5s
	// attempt 2: error by billing-2: card declined
	// dead true
}
