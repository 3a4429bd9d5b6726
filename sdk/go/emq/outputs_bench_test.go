package emq_test

import (
	"context"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// BenchmarkCompletionCost measures what a 2.4.0 completion costs the
// server against 2.3's complete_claim_ids in the same run: a claimed job
// completed with complete_claim_ids, then with complete_result_claim_ids
// keeping nothing and writing no event, writing the completed event (the
// worker's default, EventsMax 10000), and keeping the result too
// (Retention{Count: 1000}). It reports the server's script time per
// completion (INFO commandstats), read around the completion alone.
func BenchmarkCompletionCost(b *testing.B) {
	for _, tc := range []struct {
		name string
		c    *emq.Completion
	}{
		{"complete_claim_ids/2.3", nil},
		{"complete_result/no-event", &emq.Completion{}},
		{"complete_result/event", &emq.Completion{EventsMax: 10000}},
		{"complete_result/event+kept", &emq.Completion{Result: []byte(`{"ok":true}`), Keep: emq.Retention{Count: 1000}, EventsMax: 10000}},
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
				if _, err := q.Push(ctx, id, []byte("{}")); err != nil {
					b.Fatal(err)
				}
				js, err := q.ClaimIDs(ctx, time.Minute, []emq.ID{id})
				if err != nil || len(js) != 1 {
					b.Fatal(js, err)
				}
				u0 := scriptUsec(b, srv)
				if tc.c == nil {
					_, err = q.CompleteClaimIDs(ctx, id, js[0].Token, time.Minute, nil)
				} else {
					_, err = q.CompleteResult(ctx, id, js[0].Token, time.Minute, nil, *tc.c)
				}
				if err != nil {
					b.Fatal(err)
				}
				usec += scriptUsec(b, srv) - u0
			}
			b.StopTimer()
			b.ReportMetric(float64(usec)/float64(b.N), "server-µs/job")
		})
	}
}
