package emq_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
)

// A scheduler runner and a worker: the scheduler fires a run when its slot
// falls due (an interval without a start is due at once), the run is an
// ordinary job, and the worker runs it. Any number of processes may run
// RunSchedulers on the same queue: each slot fires once.
func Example_schedulers() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	c, q := exampleQueue(ctx, "example-schedulers")
	defer c.Close()
	defer q.RemoveSchedulers(context.Background(), "digest")
	if _, err := q.UpsertScheduler(ctx, "digest", emq.Schedule{Every: time.Hour},
		emq.WithTemplate([]byte("send the digest of {scheduler}"))); err != nil {
		log.Fatal(err)
	}
	go func() {
		if err := q.RunSchedulers(ctx, emq.SchedulerOptions{}); err != nil {
			log.Print(err)
		}
	}()
	w, err := emq.NewWorker(q, func(ctx context.Context, job emq.Job) error {
		fmt.Println(string(job.Payload))
		stop()
		return nil
	}, emq.WorkerOptions{Concurrency: 1})
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Run(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// send the digest of digest
}

// UpsertScheduler creates a scheduler, and an upsert of the same schedule
// keeps its next slot: a fleet may upsert its schedulers at every start.
func ExampleQueue_UpsertScheduler() {
	ctx := context.Background()
	c, q := exampleQueue(ctx, "example-upsert-scheduler")
	defer c.Close()
	defer q.RemoveSchedulers(ctx, "nightly")
	nightly := emq.Schedule{Cron: "0 3 * * *", TZ: "Europe/Berlin"}
	for range 2 {
		r, err := q.UpsertScheduler(ctx, "nightly", nightly, emq.WithMissed(emq.MissedSkip), emq.WithTemplate([]byte(`{"report":"nightly","slot":{slot}}`)))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("created", r.Created, "changed", r.Changed)
	}
	recs, err := q.Schedulers(ctx, "nightly", "no-such")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(recs[0].Cron, recs[0].TZ, recs[0].Missed, recs[1].Found())
	// Output:
	// created true changed true
	// created false changed false
	// 0 3 * * * Europe/Berlin skip false
}

// FireDue is one tick of the runner: here a scheduler that fell ten hours
// behind with a grace of a minute fires one run standing for every missed
// slot (run_once, the default), then nothing until its next slot.
func ExampleQueue_FireDue() {
	ctx := context.Background()
	c, q := exampleQueue(ctx, "example-fire-due")
	defer c.Close()
	defer q.RemoveSchedulers(ctx, "hourly")
	start := time.Now().Add(-10*time.Hour - 30*time.Minute)
	if _, err := q.UpsertScheduler(ctx, "hourly", emq.Schedule{Every: time.Hour, Start: start}); err != nil {
		log.Fatal(err)
	}
	for range 2 {
		fired, err := q.FireDue(ctx, 0)
		if err != nil {
			log.Fatal(err)
		}
		for _, f := range fired {
			fmt.Printf("%s: one run for %v of slots\n", f.Scheduler, f.Until.Sub(f.Slot))
		}
		fmt.Println(len(fired), "fired")
	}
	// Output:
	// hourly: one run for 11h0m0s of slots
	// 1 fired
	// 0 fired
}

// ParseCron reads a cron expression in a zone: a wall time the zone
// repeats (the night clocks go back) runs once, at its first occurrence.
func ExampleParseCron() {
	s, err := emq.ParseCron("30 1 * * *", "America/New_York")
	if err != nil {
		log.Fatal(err)
	}
	at := time.Date(2027, 11, 6, 0, 0, 0, 0, time.UTC)
	for range 3 {
		at = s.Next(at)
		fmt.Println(at.In(s.Location()).Format(time.RFC3339), at.UTC().Format(time.TimeOnly))
	}
	_, err = emq.ParseCron("0 0 L * *", "")
	fmt.Println(err)
	// Output:
	// 2027-11-06T01:30:00-04:00 05:30:00
	// 2027-11-07T01:30:00-04:00 05:30:00
	// 2027-11-08T01:30:00-05:00 06:30:00
	// emq: invalid argument: cron "0 0 L * *" in zone "": day of month field "L": "L" is not a value of the field
}

// NextRuns lists a schedule's coming runs, for a dashboard: here of an
// interval anchored at 09:00.
func ExampleNextRuns() {
	start := time.Date(2027, 1, 1, 9, 0, 0, 0, time.UTC)
	runs, err := emq.NextRuns(emq.Schedule{Every: 90 * time.Minute, Start: start}, start.Add(time.Hour), 3)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range runs {
		fmt.Println(r.UTC().Format(time.TimeOnly))
	}
	// Output:
	// 10:30:00
	// 12:00:00
	// 13:30:00
}

// PlanScheduler is the plan a runner fires for a record: a backfill of the
// last two missed slots, then the slot due now.
func ExamplePlanScheduler() {
	start := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	info := emq.SchedulerInfo{ID: "hourly", Schedule: emq.Schedule{Every: time.Hour, Start: start},
		Missed: emq.MissedBackfill, Backfill: 2, Grace: time.Minute, Next: start}
	now := start.Add(5*time.Hour + 30*time.Second)
	entries, err := emq.PlanScheduler(info, now, 0)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range entries {
		fmt.Println(e.Slot.UTC().Format(time.TimeOnly), "until", e.Until.UTC().Format(time.TimeOnly))
	}
	// Output:
	// 03:00:00 until 04:00:00
	// 04:00:00 until 05:00:00
	// 05:00:00 until 06:00:00
}
