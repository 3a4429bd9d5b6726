package emq_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// BenchmarkOutputCost measures what 2.4.0's reports cost the server,
// against 2.3.0's scripts in the same run, as the server's script time per
// job life (INFO commandstats, read around each life): push, claim and
// complete with complete_claim_ids (2.3) and with complete_result_claim_ids
// counting only (keep 0, events 0), reporting an event, and keeping a
// 64-byte result under a retention of 1000 as well; and the life of a job
// that fails once — push, claim, fail, promote, claim, complete — with
// retry_failed and forget_failures (2.3) and with fail and
// complete_result_claim_ids reporting events (2.4).
func BenchmarkOutputCost(b *testing.B) {
	result := string(make([]byte, 64))
	complete24 := func(keep, events int64) func(ctx context.Context, rc rueidis.Client, q *emq.Queue, id emq.ID, tok int64) error {
		return func(ctx context.Context, rc rueidis.Client, q *emq.Queue, id emq.ID, tok int64) error {
			k := q.Keys()
			row, err := k.Row(id)
			if err != nil {
				return err
			}
			call := wire.CompleteResultClaimIDsCall{Row: row, Active: k.Active, Pending: k.Pending, Wake: k.Wake, Results: k.Results, ResultTimes: k.ResultTimes,
				Progress: k.Progress, Failures: k.Failures, Options: k.Options, Events: k.Events, Counters: k.Counters,
				ID: id, Token: tok, LeaseMS: 60000, Result: result, Keep: keep, KeepAgeMS: 0, EventsMax: events}
			_, err = call.Exec(ctx, rc)
			return err
		}
	}
	complete23 := func(ctx context.Context, _ rueidis.Client, q *emq.Queue, id emq.ID, tok int64) error {
		_, err := q.CompleteClaimIDs(ctx, id, tok, time.Minute, nil)
		return err
	}
	fail24 := func(ctx context.Context, rc rueidis.Client, q *emq.Queue, id emq.ID, tok int64) error {
		k := q.Keys()
		row, err := k.Row(id)
		if err != nil {
			return err
		}
		call := wire.FailCall{Active: k.Active, Row: row, Schedule: k.Schedule, Dead: k.Dead, Wake: k.Wake, Failures: k.Failures, Options: k.Options,
			Events: k.Events, Counters: k.Counters, ID: id, Token: tok, Class: wire.FailureClassError, Worker: "bench-worker:4242",
			Error: "connect: connection refused (dial tcp 10.0.0.7:5432)", MaxAttempts: 5, Backoff: wire.BackoffFixed, EventsMax: 10000}
		_, err = call.Exec(ctx, rc)
		return err
	}
	f := emq.Failure{Class: emq.FailureClassError, Worker: "bench-worker:4242", Message: "connect: connection refused (dial tcp 10.0.0.7:5432)"}
	fail23 := func(ctx context.Context, _ rueidis.Client, q *emq.Queue, id emq.ID, tok int64) error {
		_, err := q.RetryFailed(ctx, id, tok, 0, f)
		return err
	}
	forget23 := func(ctx context.Context, rc rueidis.Client, q *emq.Queue, id emq.ID, tok int64) error {
		if err := complete23(ctx, rc, q, id, tok); err != nil {
			return err
		}
		_, err := q.ForgetFailures(ctx, []emq.ID{id})
		return err
	}
	type settle = func(ctx context.Context, rc rueidis.Client, q *emq.Queue, id emq.ID, tok int64) error
	for _, tc := range []struct {
		name     string
		fail     settle // nil: the job completes at once
		complete settle
	}{
		{"complete/2.3", nil, complete23},
		{"complete/2.4-counted", nil, complete24(0, 0)},
		{"complete/2.4-event", nil, complete24(0, 10000)},
		{"complete/2.4-event-result", nil, complete24(1000, 10000)},
		{"fail-once/2.3-recorded", fail23, forget23},
		{"fail-once/2.4-event", fail24, complete24(0, 10000)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			srv := redistest.Start(b)
			c, err := emq.Connect(context.Background(), options(srv))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
			if err != nil {
				b.Fatal(err)
			}
			defer rc.Close()
			q, _ := c.Queue("bench")
			ctx := context.Background()
			var usec int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				id, _ := c.Mint(emq.WorkKind)
				u0 := scriptUsec(b, srv)
				if _, err := q.Push(ctx, id, []byte("{}")); err != nil {
					b.Fatal(err)
				}
				js, err := q.ClaimIDs(ctx, time.Minute, []emq.ID{id})
				if err != nil || len(js) != 1 {
					b.Fatal(errorOr(err, "claim"))
				}
				tok := js[0].Token
				if tc.fail != nil {
					if err := tc.fail(ctx, rc, q, id, tok); err != nil {
						b.Fatal(err)
					}
					if _, err := q.PromoteIDs(ctx, []emq.ID{id}); err != nil {
						b.Fatal(err)
					}
					if js, err = q.ClaimIDs(ctx, time.Minute, []emq.ID{id}); err != nil || len(js) != 1 {
						b.Fatal(errorOr(err, "second claim"))
					}
					tok = js[0].Token
				}
				if err := tc.complete(ctx, rc, q, id, tok); err != nil {
					b.Fatal(err)
				}
				usec += scriptUsec(b, srv) - u0
			}
			b.StopTimer()
			b.ReportMetric(float64(usec)/float64(b.N), "server-µs/job")
		})
	}
}
