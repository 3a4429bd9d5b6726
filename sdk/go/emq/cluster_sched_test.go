package emq_test

import (
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// clusterSchedulers runs job schedulers (echomq 2.6.0) on a queue of every
// primary: every key a scheduler script declares (the schedulers hash, its
// due index, the queue's sets, each run's row) is in the queue's slot, so
// upserts, reads, firings (one call per due page) and claims of the runs
// work wherever the queue lives.
func clusterSchedulers(t *testing.T, cl *redistest.Cluster) {
	c := clusterConnect(t, cl, nil)
	ctx := ctxT(t)
	for _, p := range cl.Primaries() {
		q := queue(t, c, clusterQueueOn(t, cl, "sched", p))
		now := time.Now().Add(-10*time.Hour - 30*time.Minute)
		for _, id := range []string{"a", "b", "c"} {
			if _, err := q.UpsertScheduler(ctx, id, emq.Schedule{Every: time.Hour, Start: now}, emq.WithMissed(emq.MissedBackfill), emq.WithBackfill(2),
				emq.WithTemplate([]byte("{scheduler} {slot}"))); err != nil {
				t.Fatalf("%s: UpsertScheduler(%s): %v", q.Name(), id, err)
			}
		}
		fired, err := q.FireDue(ctx, 0)
		if err != nil || len(fired) != 6 {
			t.Fatalf("%s: FireDue = %v, %v; want two backfilled runs of each", q.Name(), fired, err)
		}
		jobs, err := q.ClaimMany(ctx, time.Minute, 10)
		if err != nil || len(jobs) != 6 {
			t.Fatalf("%s: ClaimMany = %d jobs, %v; want the six runs", q.Name(), len(jobs), err)
		}
		if n, err := q.PauseSchedulers(ctx, "a", "b"); err != nil || n != 2 {
			t.Fatalf("%s: PauseSchedulers = %d, %v", q.Name(), n, err)
		}
		list, err := q.ListSchedulers(ctx, 0, 10)
		if err != nil || len(list) != 3 || list[0].ID != "c" || !list[2].Paused {
			t.Fatalf("%s: ListSchedulers = %+v, %v; want c first, the paused last", q.Name(), list, err)
		}
		if n, err := q.RemoveSchedulers(ctx, "a", "b", "c"); err != nil || n != 3 {
			t.Fatalf("%s: RemoveSchedulers = %d, %v", q.Name(), n, err)
		}
	}
}
