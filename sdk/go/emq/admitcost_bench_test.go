package emq_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// BenchmarkAdmitScriptCost measures the server's cost of one call of each
// admission script, push_many, add_many and add_dedup (every job with a
// fresh deduplication key of its own, until_done), at k = 1, 10 and 100
// jobs a call: the server's time per call, from INFO commandstats
// (usec_per_call of EVALSHA, which includes the commands the script
// runs), and the CPU time of the server's main thread (reading, running
// and answering the calls), steadier on a loaded machine; both per call
// and per job. A fit of µs/call = a + b·k over the k of one script
// gives its fixed cost a and its cost per job b. It also reports the
// commands the script ran per job (their calls, from commandstats).
func BenchmarkAdmitScriptCost(b *testing.B) {
	for _, script := range []string{"push_many", "add_many", "add_dedup"} {
		for _, k := range []int{1, 10, 100} {
			b.Run(fmt.Sprintf("%s/k=%d", script, k), func(b *testing.B) {
				srv := redistest.Start(b)
				rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
				if err != nil {
					b.Fatal(err)
				}
				defer rc.Close()
				ctx := context.Background()
				keys, err := wire.NewQueueKeys("bench")
				if err != nil {
					b.Fatal(err)
				}
				c, err := emq.Connect(ctx, options(srv)) // fences the keyspace, mints the ids
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				batch := func() rueidis.LuaExec {
					rows := make([]string, k)
					ids := make([]wire.ID, k)
					for i := range ids {
						id, _ := c.Mint(emq.WorkKind)
						ids[i] = id
						rows[i], _ = keys.Row(id)
					}
					switch script {
					case "push_many":
						call := wire.PushManyCall{Pending: keys.Pending, Wake: keys.Wake, Rows: rows}
						for _, id := range ids {
							call.Entries = append(call.Entries, wire.PushManyEntry{ID: id, Payload: "{}"})
						}
						return call.LuaExec()
					case "add_many":
						call := wire.AddManyCall{Pending: keys.Pending, Schedule: keys.Schedule, Wake: keys.Wake, Options: keys.Options, Rows: rows,
							Backoff: wire.BackoffInherit}
						for _, id := range ids {
							call.Entries = append(call.Entries, wire.AddManyEntry{ID: id, Payload: "{}"})
						}
						return call.LuaExec()
					}
					call := wire.AddDedupCall{Pending: keys.Pending, Active: keys.Active, Schedule: keys.Schedule, Dead: keys.Dead, Results: keys.Results,
						Wake: keys.Wake, Options: keys.Options, Dedup: keys.Dedup, Rows: rows, Mode: wire.DedupUntilDone, Backoff: wire.BackoffInherit}
					for _, id := range ids {
						call.Entries = append(call.Entries, wire.AddDedupEntry{ID: id, Payload: "{}", DedupKey: "k-" + id.String()})
					}
					return call.LuaExec()
				}
				s := map[string]*wire.Script{"push_many": wire.ScriptPushMany, "add_many": wire.ScriptAddMany, "add_dedup": wire.ScriptAddDedup}[script]
				if err := rc.Do(ctx, rc.B().ScriptLoad().Script(s.Source).Build()).Error(); err != nil {
					b.Fatal(err)
				}
				if _, err := srv.Do("CONFIG", "RESETSTAT"); err != nil {
					b.Fatal(err)
				}
				cpu0 := mainCPU(b, srv)
				calls := 0
				b.ResetTimer()
				for n := 0; n < b.N; n += k {
					b.StopTimer()
					x := batch()
					b.StartTimer()
					if err := rc.Do(ctx, rc.B().Evalsha().Sha1(s.SHA1).Numkeys(int64(len(x.Keys))).Key(x.Keys...).Arg(x.Args...).Build()).Error(); err != nil {
						b.Fatal(err)
					}
					calls++
				}
				b.StopTimer()
				cpu := (mainCPU(b, srv) - cpu0) * 1e6
				stats := scriptStats(b, srv)
				ev := stats["evalsha"]
				b.ReportMetric(ev.usec/float64(ev.calls), "server-µs/call")
				b.ReportMetric(ev.usec/float64(ev.calls*int64(k)), "server-µs/job")
				b.ReportMetric(cpu/float64(calls), "cpu-µs/call")
				b.ReportMetric(cpu/float64(calls*k), "cpu-µs/job")
				inner := int64(0)
				for name, st := range stats {
					if name != "evalsha" && name != "config" {
						inner += st.calls
					}
				}
				b.ReportMetric(float64(inner)/float64(ev.calls*int64(k)), "cmds/job")
				if testing.Verbose() {
					var parts []string
					for name, st := range stats {
						parts = append(parts, fmt.Sprintf("%s %.2f/job %.2fµs", name, float64(st.calls)/float64(ev.calls*int64(k)), st.usec/float64(st.calls)))
					}
					b.Logf("%s k=%d: %s", script, k, strings.Join(parts, "; "))
				}
			})
		}
	}
}

// mainCPU is the CPU time, in seconds, the server's main thread used so
// far (INFO cpu): unlike commandstats' usec, which is wall time, it does
// not count the time other processes took the CPU from the server.
func mainCPU(b *testing.B, srv *redistest.Server) float64 {
	b.Helper()
	info, err := srv.Do("INFO", "cpu")
	if err != nil {
		b.Fatal(err)
	}
	return parseMainCPU(info)
}

// parseMainCPU reads the main thread's CPU seconds (user and system) from
// INFO cpu.
func parseMainCPU(info string) float64 {
	cpu := 0.0
	for _, line := range strings.Split(info, "\n") {
		name, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (name == "used_cpu_user_main_thread" || name == "used_cpu_sys_main_thread") {
			x, _ := strconv.ParseFloat(v, 64)
			cpu += x
		}
	}
	return cpu
}

type cmdStat struct {
	calls int64
	usec  float64
}

// scriptStats reads INFO commandstats: calls and usec per command.
func scriptStats(b *testing.B, srv *redistest.Server) map[string]cmdStat {
	b.Helper()
	info, err := srv.Do("INFO", "commandstats")
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]cmdStat{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var st cmdStat
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				st.calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				st.usec, _ = strconv.ParseFloat(v, 64)
			}
		}
		out[strings.TrimPrefix(name, "cmdstat_")] = st
	}
	return out
}
