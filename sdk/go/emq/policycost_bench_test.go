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
// The variants run in rounds on one server, in turn, so that each meets
// the same load; the cost is the CPU of the server's main thread (INFO
// cpu) per call, claim and completion apart, and each variant's ratio to
// 2.6 (claim plus completion).
func BenchmarkPolicyScriptCost(b *testing.B) {
	variants := []string{"2.6", "2.7", "2.7-cap", "record"}
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
	load := func(src string) string {
		sha, err := rc.Do(ctx, rc.B().ScriptLoad().Script(src).Build()).ToString()
		if err != nil {
			b.Fatal(err)
		}
		return sha
	}
	// The policy record's read, before the body: KEYS[1] of claim_ids and
	// KEYS[3] of complete_result_claim_ids are the queue's pending key.
	read := func(i string) string {
		return "redis.call('HMGET', string.sub(KEYS[" + i + "], 1, -8) .. 'policy', 'paused', 'concurrency')\n"
	}
	type variant struct {
		keys                  wire.QueueKeys
		claimSHA, completeSHA string
		policy                bool // the 2.7 twins' keys
		claimCPU, completeCPU float64
		calls                 int
	}
	vs := map[string]*variant{}
	for i, v := range variants {
		k, err := wire.NewQueueKeys("bench" + strconv.Itoa(i))
		if err != nil {
			b.Fatal(err)
		}
		x := &variant{keys: k}
		switch v {
		case "2.6":
			x.claimSHA, x.completeSHA = load(wire.ScriptClaimIDs.Source), load(wire.ScriptCompleteResultClaimIDs.Source)
		case "record":
			x.claimSHA, x.completeSHA = load(read("1")+wire.ScriptClaimIDs.Source), load(read("3")+wire.ScriptCompleteResultClaimIDs.Source)
		default:
			x.claimSHA, x.completeSHA, x.policy = load(wire.ScriptClaimPolicyIDs.Source), load(wire.ScriptCompletePolicyIDs.Source), true
		}
		if v == "2.7-cap" {
			set := wire.SetPolicyCall{Pending: k.Pending, Active: k.Active, Running: k.Running, Policy: k.Policy, Wake: k.Wake, Paused: -1, Concurrency: 1 << 30}
			if _, err := set.Exec(ctx, rc); err != nil {
				b.Fatal(err)
			}
		}
		vs[v] = x
	}
	run := func(sha string, x rueidis.LuaExec) {
		if err := rc.Do(ctx, rc.B().Evalsha().Sha1(sha).Numkeys(int64(len(x.Keys))).Key(x.Keys...).Arg(x.Args...).Build()).Error(); err != nil {
			b.Fatal(err)
		}
	}
	// Rounds of chunk jobs a variant, the variants in turn on one server,
	// so that each meets the same load; the server's main-thread CPU is
	// read around each variant's claims and completions.
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
				if v.policy {
					x := wire.ClaimPolicyIDsCall{Pending: k.Pending, Active: k.Active, Running: k.Running, Policy: k.Policy, Wake: k.Wake, Rows: []string{row}, LeaseMS: 60000, IDs: ids[j : j+1]}
					run(v.claimSHA, x.LuaExec())
				} else {
					x := wire.ClaimIDsCall{Pending: k.Pending, Active: k.Active, Wake: k.Wake, Rows: []string{row}, LeaseMS: 60000, IDs: ids[j : j+1]}
					run(v.claimSHA, x.LuaExec())
				}
			}
			cpu1 := mainCPU(b, srv)
			for j := range ids {
				row, _ := k.Row(ids[j])
				if v.policy {
					x := wire.CompletePolicyIDsCall{Row: row, Active: k.Active, Running: k.Running, Policy: k.Policy, Pending: k.Pending, Wake: k.Wake, Results: k.Results,
						ResultTimes: k.ResultTimes, Progress: k.Progress, Failures: k.Failures, Options: k.Options, Events: k.Events, Counters: k.Counters, ID: ids[j], Token: 1, LeaseMS: 60000}
					run(v.completeSHA, x.LuaExec())
				} else {
					x := wire.CompleteResultClaimIDsCall{Row: row, Active: k.Active, Pending: k.Pending, Wake: k.Wake, Results: k.Results, ResultTimes: k.ResultTimes,
						Progress: k.Progress, Failures: k.Failures, Options: k.Options, Events: k.Events, Counters: k.Counters, ID: ids[j], Token: 1, LeaseMS: 60000}
					run(v.completeSHA, x.LuaExec())
				}
			}
			v.claimCPU += (cpu1 - cpu0) * 1e6
			v.completeCPU += (mainCPU(b, srv) - cpu1) * 1e6
			v.calls += chunk
			if n, err := rc.Do(ctx, rc.B().Exists().Key(k.Pending, k.Running).Build()).AsInt64(); err != nil || n != 0 {
				b.Fatalf("%s: after a round %d of pending and running remain (%v): every job was claimed and completed", name, n, err)
			}
		}
	}
	b.StopTimer()
	base := vs["2.6"]
	for _, name := range variants {
		v := vs[name]
		cl, co := v.claimCPU/float64(v.calls), v.completeCPU/float64(v.calls)
		b.ReportMetric(cl, name+"-claim-cpu-µs")
		b.ReportMetric(co, name+"-complete-cpu-µs")
		if name != "2.6" {
			b.ReportMetric((cl+co)/((base.claimCPU+base.completeCPU)/float64(base.calls)), name+"/2.6")
		}
	}
}
