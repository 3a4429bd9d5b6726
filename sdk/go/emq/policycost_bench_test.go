package emq_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// BenchmarkPolicyScriptCost measures what a claim and a completion cost
// the server under each design of claimer policies (issue 21), one job a
// call, in four variants measured in the same run:
//
//   - 2.6: claim_ids and complete_result_claim_ids, the 2.6 scripts;
//   - 2.7: their 2.7 twins, claim_policy_ids and complete_policy_ids, on a
//     queue with no policy (the classic layout: the guard's TYPE of the
//     active key replaces its ZCARD, nothing else is read);
//   - 2.7-cap: the twins on a queue with a concurrency cap (the policy
//     layout: the tripwire read and the policy record, HMGET and ZCARD);
//   - record: the 2.6 scripts each reading a per-queue policy record
//     (HMGET) on every call, as a 3.0.0 design whose every claim and
//     settle reads its policy record would.
//
// The server's time per call comes from INFO commandstats (usec_per_call
// of EVALSHA, wall time) and the CPU of its main thread, per call, claim
// and completion apart.
func BenchmarkPolicyScriptCost(b *testing.B) {
	for _, v := range []string{"2.6", "2.7", "2.7-cap", "record"} {
		b.Run(v, func(b *testing.B) {
			srv := redistest.Start(b)
			rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
			if err != nil {
				b.Fatal(err)
			}
			defer rc.Close()
			ctx := context.Background()
			k, err := wire.NewQueueKeys("bench")
			if err != nil {
				b.Fatal(err)
			}
			c, err := emq.Connect(ctx, options(srv))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			if v == "2.7-cap" {
				set := wire.SetPolicyCall{Pending: k.Pending, Active: k.Active, Running: k.Running, Policy: k.Policy, Wake: k.Wake, Paused: -1, Concurrency: 1 << 30}
				if _, err := set.Exec(ctx, rc); err != nil {
					b.Fatal(err)
				}
			}
			claimSrc, completeSrc := wire.ScriptClaimIDs.Source, wire.ScriptCompleteResultClaimIDs.Source
			if strings.HasPrefix(v, "2.7") {
				claimSrc, completeSrc = wire.ScriptClaimPolicyIDs.Source, wire.ScriptCompletePolicyIDs.Source
			}
			if v == "record" {
				// The policy record's read, before the body: KEYS[1] of
				// claim_ids and KEYS[3] of complete_result_claim_ids are
				// the queue's pending key.
				read := func(i string) string {
					return "redis.call('HMGET', string.sub(KEYS[" + i + "], 1, -8) .. 'policy', 'paused', 'concurrency')\n"
				}
				claimSrc, completeSrc = read("1")+claimSrc, read("3")+completeSrc
			}
			load := func(src string) string {
				sha, err := rc.Do(ctx, rc.B().ScriptLoad().Script(src).Build()).ToString()
				if err != nil {
					b.Fatal(err)
				}
				return sha
			}
			claimSHA, completeSHA := load(claimSrc), load(completeSrc)
			ids := make([]wire.ID, b.N)
			for i := 0; i < b.N; i += 100 {
				call := wire.PushManyCall{Pending: k.Pending, Wake: k.Wake}
				for j := i; j < min(i+100, b.N); j++ {
					id, _ := c.Mint(emq.WorkKind)
					ids[j] = id
					row, _ := k.Row(id)
					call.Rows = append(call.Rows, row)
					call.Entries = append(call.Entries, wire.PushManyEntry{ID: id, Payload: "{}"})
				}
				if _, err := call.Exec(ctx, rc); err != nil {
					b.Fatal(err)
				}
			}
			run := func(sha string, x rueidis.LuaExec) {
				if err := rc.Do(ctx, rc.B().Evalsha().Sha1(sha).Numkeys(int64(len(x.Keys))).Key(x.Keys...).Arg(x.Args...).Build()).Error(); err != nil {
					b.Fatal(err)
				}
			}
			phase := func(unit string, call func(i int)) {
				if _, err := srv.Do("CONFIG", "RESETSTAT"); err != nil {
					b.Fatal(err)
				}
				cpu0 := mainCPU(b, srv)
				for i := range ids {
					call(i)
				}
				cpu := (mainCPU(b, srv) - cpu0) * 1e6
				ev := scriptStats(b, srv)["evalsha"]
				b.ReportMetric(ev.usec/float64(ev.calls), unit+"-µs/call")
				b.ReportMetric(cpu/float64(len(ids)), unit+"-cpu-µs/call")
			}
			b.ResetTimer()
			phase("claim", func(i int) {
				row, _ := k.Row(ids[i])
				if v == "2.6" || v == "record" {
					x := wire.ClaimIDsCall{Pending: k.Pending, Active: k.Active, Wake: k.Wake, Rows: []string{row}, LeaseMS: 60000, IDs: ids[i : i+1]}
					run(claimSHA, x.LuaExec())
					return
				}
				x := wire.ClaimPolicyIDsCall{Pending: k.Pending, Active: k.Active, Running: k.Running, Policy: k.Policy, Wake: k.Wake, Rows: []string{row}, LeaseMS: 60000, IDs: ids[i : i+1]}
				run(claimSHA, x.LuaExec())
			})
			phase("complete", func(i int) {
				row, _ := k.Row(ids[i])
				if v == "2.6" || v == "record" {
					x := wire.CompleteResultClaimIDsCall{Row: row, Active: k.Active, Pending: k.Pending, Wake: k.Wake, Results: k.Results, ResultTimes: k.ResultTimes,
						Progress: k.Progress, Failures: k.Failures, Options: k.Options, Events: k.Events, Counters: k.Counters, ID: ids[i], Token: 1, LeaseMS: 60000}
					run(completeSHA, x.LuaExec())
					return
				}
				x := wire.CompletePolicyIDsCall{Row: row, Active: k.Active, Running: k.Running, Policy: k.Policy, Pending: k.Pending, Wake: k.Wake, Results: k.Results,
					ResultTimes: k.ResultTimes, Progress: k.Progress, Failures: k.Failures, Options: k.Options, Events: k.Events, Counters: k.Counters, ID: ids[i], Token: 1, LeaseMS: 60000}
				run(completeSHA, x.LuaExec())
			})
			b.StopTimer()
			if n, err := rc.Do(ctx, rc.B().Exists().Key(k.Pending, k.Running).Build()).AsInt64(); err != nil || n != 0 {
				b.Fatalf("after the run %d of pending and running remain (%v): every job was claimed and completed", n, err)
			}
		})
	}
}
