package emq_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// BenchmarkRateScriptCost measures what a claim and a completion cost the
// server with and without a rate limit (echomq 2.8.0, issue 21), one job a
// call, in four variants measured in the same run:
//
//   - 2.7: claim_policy_ids and complete_policy_ids on a queue with no
//     policy (the classic layout), the calls 2.7 workers make;
//   - 2.8: claim_rate_ids and complete_rate_ids on a queue with no policy,
//     the calls 2.8 workers make (the target: within 5% of 2.7);
//   - 2.8-cap: the 2.8 calls under a concurrency cap that never binds (the
//     policy layout, as 2.7's cap costs);
//   - 2.8-rate: the 2.8 calls under a rate limit that never binds (the
//     pace and the starts log read and written on every lease).
//
// The variants run in rounds on one server, in turn, so that each meets
// the same load; the cost is the CPU of the server's main thread (INFO
// cpu) per call, claim and completion apart, and each variant's ratio to
// 2.7 (claim plus completion).
func BenchmarkRateScriptCost(b *testing.B) {
	variants := []string{"2.7", "2.8", "2.8-cap", "2.8-rate"}
	srv := redistest.Start(b)
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	ctx := context.Background()
	c, err := emq.Connect(ctx, options(srv))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	type variant struct {
		keys                  wire.QueueKeys
		rate                  bool // the 2.8 calls
		claimCPU, completeCPU float64
		calls                 int
	}
	vs := map[string]*variant{}
	for i, v := range variants {
		k, err := wire.NewQueueKeys("bench" + strconv.Itoa(i))
		if err != nil {
			b.Fatal(err)
		}
		x := &variant{keys: k, rate: v != "2.7"}
		set := wire.ConfigurePolicyCall{Pending: k.Pending, Active: k.Active, Running: k.Running, Policy: k.Policy, Starts: k.Starts, Wake: k.Wake, Paused: -1, Concurrency: -1, RateLimit: -1}
		switch v {
		case "2.8-cap":
			set.Concurrency = 1 << 30
		case "2.8-rate":
			set.RateLimit, set.RatePeriodMS = 1000000, 1000
		}
		if set.Concurrency > 0 || set.RateLimit > 0 {
			if _, err := set.Exec(ctx, rc); err != nil {
				b.Fatal(err)
			}
		}
		vs[v] = x
	}
	run := func(s *wire.Script, x rueidis.LuaExec) {
		if err := s.Lua().Exec(ctx, rc, x.Keys, x.Args).Error(); err != nil {
			b.Fatalf("%s: %v", s.Name, err)
		}
	}
	const chunk = 200
	b.ResetTimer()
	for done := 0; done < b.N; done += chunk {
		for _, name := range variants {
			v := vs[name]
			k := v.keys
			ids := make([]wire.ID, chunk)
			push := wire.PushManyCall{Pending: k.Pending, Wake: k.Wake}
			for j := range ids {
				id, _ := c.Mint(emq.WorkKind)
				ids[j] = id
				row, _ := k.Row(id)
				push.Rows = append(push.Rows, row)
				push.Entries = append(push.Entries, wire.PushManyEntry{ID: id, Payload: "{}"})
			}
			if _, err := push.Exec(ctx, rc); err != nil {
				b.Fatal(err)
			}
			cpu0 := mainCPU(b, srv)
			for j := range ids {
				row, _ := k.Row(ids[j])
				if v.rate {
					x := wire.ClaimRateIDsCall{Pending: k.Pending, Active: k.Active, Running: k.Running, Policy: k.Policy, Starts: k.Starts, Wake: k.Wake, Rows: []string{row}, LeaseMS: 60000, IDs: ids[j : j+1]}
					e := x.LuaExec()
					if r, err := wire.ScriptClaimRateIDs.Lua().Exec(ctx, rc, e.Keys, e.Args).ToArray(); err != nil || len(r) != 1 {
						pol, _ := rc.Do(ctx, rc.B().Hgetall().Key(k.Policy).Build()).AsStrMap()
						b.Fatalf("%s: claim_rate_ids leased %d (%v); policy %v", name, len(r), err, pol)
					}
				} else {
					x := wire.ClaimPolicyIDsCall{Pending: k.Pending, Active: k.Active, Running: k.Running, Policy: k.Policy, Wake: k.Wake, Rows: []string{row}, LeaseMS: 60000, IDs: ids[j : j+1]}
					run(wire.ScriptClaimPolicyIDs, x.LuaExec())
				}
			}
			cpu1 := mainCPU(b, srv)
			for j := range ids {
				row, _ := k.Row(ids[j])
				if v.rate {
					x := wire.CompleteRateIDsCall{Row: row, Active: k.Active, Running: k.Running, Policy: k.Policy, Starts: k.Starts, Pending: k.Pending, Wake: k.Wake, Results: k.Results,
						ResultTimes: k.ResultTimes, Progress: k.Progress, Failures: k.Failures, Options: k.Options, Events: k.Events, Counters: k.Counters, ID: ids[j], Token: 1, LeaseMS: 60000}
					run(wire.ScriptCompleteRateIDs, x.LuaExec())
				} else {
					x := wire.CompletePolicyIDsCall{Row: row, Active: k.Active, Running: k.Running, Policy: k.Policy, Pending: k.Pending, Wake: k.Wake, Results: k.Results,
						ResultTimes: k.ResultTimes, Progress: k.Progress, Failures: k.Failures, Options: k.Options, Events: k.Events, Counters: k.Counters, ID: ids[j], Token: 1, LeaseMS: 60000}
					run(wire.ScriptCompletePolicyIDs, x.LuaExec())
				}
			}
			v.claimCPU += (cpu1 - cpu0) * 1e6
			v.completeCPU += (mainCPU(b, srv) - cpu1) * 1e6
			v.calls += chunk
			if n, err := rc.Do(ctx, rc.B().Exists().Key(k.Pending, k.Running, k.Active).Build()).AsInt64(); err != nil || n > 1 {
				b.Fatalf("%s: after a round %d of pending, running and active remain (%v): every job was claimed and completed", name, n, err)
			}
		}
	}
	b.StopTimer()
	base := vs["2.7"]
	for _, name := range variants {
		v := vs[name]
		cl, co := v.claimCPU/float64(v.calls), v.completeCPU/float64(v.calls)
		b.ReportMetric(cl, name+"-claim-cpu-µs")
		b.ReportMetric(co, name+"-complete-cpu-µs")
		if name != "2.7" {
			b.ReportMetric((cl+co)/((base.claimCPU+base.completeCPU)/float64(base.calls)), name+"/2.7")
		}
	}
}
