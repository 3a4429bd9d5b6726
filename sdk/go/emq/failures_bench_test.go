package emq_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// BenchmarkFailureRecordCost measures what recording a failure costs the
// server, against the 2.2 scripts in the same run: the life of a job
// that fails once and then completes — push, claim, retry, promote,
// claim, complete — with retry (2.2, nothing recorded) and with
// retry_failed then forget_failures after the complete (2.3.0, the record
// written and deleted), and the life of a job that fails for good — push,
// claim, bury — with bury and with bury_failed. It reports the server's
// script time per job (INFO commandstats: the usec of EVAL, EVALSHA and
// EVALSHA_RO), read around each job's life so that nothing else counts.
func BenchmarkFailureRecordCost(b *testing.B) {
	f := emq.Failure{Class: emq.FailureClassError, Worker: "bench-worker:4242", Message: "connect: connection refused (dial tcp 10.0.0.7:5432)"}
	for _, tc := range []struct {
		name string
		life func(ctx context.Context, q *emq.Queue, id emq.ID) error
	}{
		{"retry-then-complete/2.2", func(ctx context.Context, q *emq.Queue, id emq.ID) error {
			return failOnce(ctx, q, id, func(tok int64) error { _, err := q.Retry(ctx, id, tok, 0); return err }, false)
		}},
		{"retry-then-complete/2.3-recorded", func(ctx context.Context, q *emq.Queue, id emq.ID) error {
			return failOnce(ctx, q, id, func(tok int64) error { _, err := q.RetryFailed(ctx, id, tok, 0, f); return err }, true)
		}},
		{"bury/2.2", func(ctx context.Context, q *emq.Queue, id emq.ID) error {
			return failHard(ctx, q, id, func(tok int64) error { return q.Bury(ctx, id, tok) })
		}},
		{"bury/2.3-recorded", func(ctx context.Context, q *emq.Queue, id emq.ID) error {
			return failHard(ctx, q, id, func(tok int64) error { return q.BuryFailed(ctx, id, tok, f) })
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			srv := redistest.Start(b)
			c, err := emq.Connect(context.Background(), options(srv))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			q, _ := c.Queue("bench")
			ctx := context.Background()
			var usec int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				id, _ := c.Mint(emq.WorkKind)
				u0 := scriptUsec(b, srv)
				if err := tc.life(ctx, q, id); err != nil {
					b.Fatal(err)
				}
				usec += scriptUsec(b, srv) - u0
			}
			b.StopTimer()
			b.ReportMetric(float64(usec)/float64(b.N), "server-µs/job")
		})
	}
}

// failOnce runs the life of a job that fails once and then completes.
func failOnce(ctx context.Context, q *emq.Queue, id emq.ID, fail func(tok int64) error, forget bool) error {
	if _, err := q.Push(ctx, id, []byte("{}")); err != nil {
		return err
	}
	js, err := q.ClaimIDs(ctx, time.Minute, []emq.ID{id})
	if err != nil || len(js) != 1 {
		return errorOr(err, "claim")
	}
	if err := fail(js[0].Token); err != nil {
		return err
	}
	if _, err := q.PromoteIDs(ctx, []emq.ID{id}); err != nil {
		return err
	}
	if js, err = q.ClaimIDs(ctx, time.Minute, []emq.ID{id}); err != nil || len(js) != 1 {
		return errorOr(err, "second claim")
	}
	if err := q.Complete(ctx, id, js[0].Token); err != nil {
		return err
	}
	if forget {
		_, err = q.ForgetFailures(ctx, []emq.ID{id})
	}
	return err
}

// failHard runs the life of a job that fails for good at once.
func failHard(ctx context.Context, q *emq.Queue, id emq.ID, fail func(tok int64) error) error {
	if _, err := q.Push(ctx, id, []byte("{}")); err != nil {
		return err
	}
	js, err := q.ClaimIDs(ctx, time.Minute, []emq.ID{id})
	if err != nil || len(js) != 1 {
		return errorOr(err, "claim")
	}
	return fail(js[0].Token)
}

func errorOr(err error, what string) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("%s leased nothing", what)
}

// scriptUsec is the server's time in scripts so far: the usec of EVAL,
// EVALSHA and EVALSHA_RO in INFO commandstats.
func scriptUsec(b *testing.B, srv *redistest.Server) int64 {
	b.Helper()
	info, err := srv.Do("INFO", "commandstats")
	if err != nil {
		b.Fatal(err)
	}
	var total int64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "cmdstat_eval" && name != "cmdstat_evalsha" && name != "cmdstat_evalsha_ro" && name != "cmdstat_eval_ro") {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "usec="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				total += n
			}
		}
	}
	return total
}
