package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
)

// TestQuickRun runs `go run . -quick` end to end against a real
// redis-server and checks that the report is complete and sane. It never
// skips: a missing redis-server or redis-benchmark fails with the command
// that installs it.
func TestQuickRun(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal(hintServer)
	}
	if _, err := exec.LookPath("redis-benchmark"); err != nil {
		t.Fatal(hintBenchmark)
	}
	dir := t.TempDir()
	chart := filepath.Join(dir, "bench.svg")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	start := time.Now()
	if err := run(ctx, []string{"-quick", "-out", dir, "-chart", chart}, &stdout, &stderr); err != nil {
		t.Fatalf("quick run: %v\nstderr:\n%s", err, stderr.String())
	}
	t.Logf("quick run took %v\n%s", time.Since(start).Round(time.Millisecond), stdout.String())

	var rep Report
	b, err := os.ReadFile(filepath.Join(dir, "quick.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("quick.json: %v", err)
	}

	// Meta: versions, machine, command.
	m := rep.Meta
	for name, v := range map[string]string{"date": m.Date, "command": m.Command, "cpu": m.CPU, "go": m.Go, "redis": m.Redis,
		"redis-benchmark": m.RedisBenchmark, "asynq": m.Asynq, "rueidis": m.Rueidis, "sdk": m.SDKVersion} {
		if v == "" || v == "unknown" {
			t.Errorf("meta %s is %q", name, v)
		}
	}
	if !m.Quick || m.Jobs != 5000 || m.RSSJobs != 200_000 || m.Producers != 8 || m.Concurrency != 50 || m.Cores < 1 || m.GOMAXPROCS < 1 {
		t.Errorf("meta = %+v", m)
	}
	if !strings.Contains(m.Command, "-quick") {
		t.Errorf("command %q does not show -quick", m.Command)
	}

	// Every row: a positive SDK figure; where asynq was measured, a positive
	// figure and the ratio computed from the two.
	want := []string{"enqueue_one", "enqueue_batch", "drain", "enqueue_process", "latency_p50", "latency_p99",
		"server_usec_per_job", "server_cpu_per_job", "allocs_per_job", "rss", "goroutines", "evalsha_p1", "evalsha_p16"}
	rows := map[string]Row{}
	for _, r := range rep.Rows {
		rows[r.Key] = r
	}
	withAsynq := map[string]bool{"enqueue_one": true, "enqueue_batch": true, "drain": true, "enqueue_process": true,
		"latency_p50": true, "latency_p99": true, "server_usec_per_job": true, "server_cpu_per_job": true, "allocs_per_job": true}
	for _, k := range want {
		r, ok := rows[k]
		if !ok {
			t.Errorf("row %s missing", k)
			continue
		}
		if !(r.SDK > 0) || math.IsInf(r.SDK, 0) {
			t.Errorf("row %s: SDK figure %v", k, r.SDK)
		}
		if withAsynq[k] {
			if !(r.Asynq > 0) || math.IsInf(r.Asynq, 0) {
				t.Errorf("row %s: asynq figure %v", k, r.Asynq)
			}
			if !(r.Ratio > 0) || math.Abs(r.Ratio-r.SDK/r.Asynq) > 1e-9*r.Ratio {
				t.Errorf("row %s: ratio %v, want %v", k, r.Ratio, r.SDK/r.Asynq)
			}
		}
		if r.Target != "" && r.Met == nil {
			t.Errorf("row %s: target %q not judged", k, r.Target)
		}
	}
	for _, k := range []string{"enqueue_one", "enqueue_batch"} {
		r := rows[k]
		if !(r.Ceiling > 0) || math.Abs(r.CeilingRatio-r.SDK/r.Ceiling) > 1e-9*r.CeilingRatio {
			t.Errorf("row %s: ceiling %v, ratio %v", k, r.Ceiling, r.CeilingRatio)
		}
	}
	if rows["enqueue_one"].Ceiling != rep.Ceiling.P1 || rows["enqueue_batch"].Ceiling != rep.Ceiling.P16 {
		t.Errorf("ceilings: rows %v/%v, measured %v/%v", rows["enqueue_one"].Ceiling, rows["enqueue_batch"].Ceiling, rep.Ceiling.P1, rep.Ceiling.P16)
	}

	// The cost of every throughput scenario, for both sides.
	if len(rep.Costs) != 4 {
		t.Errorf("%d cost rows, want 4", len(rep.Costs))
	}
	for _, c := range rep.Costs {
		for side, ms := range map[string]*Measure{"sdk": c.SDK, "asynq": c.Asynq} {
			if ms == nil {
				t.Errorf("%s %s: not measured", c.Scenario, side)
				continue
			}
			if ms.Jobs != 5000 || !(ms.Seconds > 0) || !(ms.JobsPerSec > 0) || !(ms.Server.CPUSeconds > 0) ||
				!(ms.Server.UsecPerJob > 0) || !(ms.Server.CallsPerJob >= 1) || !(ms.ClientCPUPerJobUs > 0) || !(ms.AllocsPerJob > 0) {
				t.Errorf("%s %s: %+v", c.Scenario, side, *ms)
			}
		}
	}

	// Latency, resources, ceiling.
	for side, l := range map[string]Latency{"sdk": rep.Latency.SDK, "asynq": rep.Latency.Asynq} {
		if l.Samples < 1 || !(l.P50Ms > 0) || l.P99Ms < l.P50Ms || l.MaxMs < l.P99Ms {
			t.Errorf("latency %s: %+v", side, l)
		}
	}
	if rep.Latency.SDK.Samples != 100 {
		t.Errorf("SDK latency took %d samples, want 100", rep.Latency.SDK.Samples)
	}
	res := rep.Resources
	if res.Jobs != 200_000 || res.Samples < 10 || !(res.JobsPerSec > 0) {
		t.Errorf("resources: %+v", res)
	}
	for name, tr := range map[string]Triple{"rss": res.RSSMiB, "goroutines": res.Goroutines} {
		if !(tr.Start > 0) || tr.Peak < tr.Start || tr.Peak < tr.End || !(tr.End > 0) || !(tr.First20 > 0) || !(tr.Last20 > 0) {
			t.Errorf("resources %s: %+v", name, tr)
		}
	}
	if !(rep.Ceiling.P1 > 0) || !(rep.Ceiling.P16 > 0) || rep.Ceiling.Requests != 50_000 || rep.Ceiling.Clients != 50 {
		t.Errorf("ceiling: %+v", rep.Ceiling)
	}

	// The Node half: the TypeScript SDK and BullMQ, every scenario measured
	// on both sides, the rows built from them and judged where a target is.
	if rep.Node == nil {
		t.Fatal("the report has no Node half (TypeScript SDK vs BullMQ)")
	}
	for _, side := range []string{"emq", "bullmq"} {
		if rep.Node.Versions[side] == "" {
			t.Errorf("node: no version for %s", side)
		}
		for _, sc := range []string{"enqueue_one", "enqueue_batched", "drain", "enqueue_process"} {
			if r := rep.Node.Results[side][sc]; r.Jobs != 2000 || !(r.JobsPerSec > 0) || !(r.ServerCPUUsPerJob > 0) {
				t.Errorf("node %s %s: %+v", side, sc, r)
			}
		}
		if l := rep.Node.Results[side]["latency"]; l.Samples < 1 || !(l.P50Ms > 0) || l.P99Ms < l.P50Ms {
			t.Errorf("node %s latency: %+v", side, l)
		}
	}
	nodeRows := map[string]Row{}
	for _, r := range rep.Node.Rows {
		nodeRows[r.Key] = r
		if !(r.SDK > 0) || !(r.Asynq > 0) || math.Abs(r.Ratio-r.SDK/r.Asynq) > 1e-9*r.Ratio {
			t.Errorf("node row %s: TS %v, BullMQ %v, ratio %v", r.Key, r.SDK, r.Asynq, r.Ratio)
		}
		if r.Target != "" && r.Met == nil {
			t.Errorf("node row %s: target %q not judged", r.Key, r.Target)
		}
	}
	for _, k := range []string{"ts_enqueue_one", "ts_enqueue_batch", "ts_drain", "ts_enqueue_process", "ts_latency_p50", "ts_latency_p99", "ts_server_cpu_per_job"} {
		if _, ok := nodeRows[k]; !ok {
			t.Errorf("node row %s missing", k)
		}
	}
	// The Go SDK against BullMQ: the Go row's own figure over BullMQ's
	// from the Node half, judged.
	for k, sc := range map[string]string{"enqueue_one_vs_bullmq": "enqueue_one", "enqueue_process_vs_bullmq": "enqueue_process"} {
		r, ok := rows[k]
		goKey := strings.TrimSuffix(k, "_vs_bullmq")
		switch {
		case !ok:
			t.Errorf("row %s missing", k)
		case r.SDK != rows[goKey].SDK || r.Asynq != rep.Node.Results["bullmq"][sc].JobsPerSec || !(r.Ratio > 0) || math.Abs(r.Ratio-r.SDK/r.Asynq) > 1e-9*r.Ratio:
			t.Errorf("row %s: SDK %v (the Go row %v), BullMQ %v (measured %v), ratio %v", k, r.SDK, rows[goKey].SDK, r.Asynq, rep.Node.Results["bullmq"][sc].JobsPerSec, r.Ratio)
		case r.Met == nil:
			t.Errorf("row %s: target %q not judged", k, r.Target)
		}
	}

	// The Python half: every side run measured in every scenario, the rows
	// built from them (a ratio wherever the SDK and the peer were both
	// measured) and judged where a target is.
	py := rep.Python
	if py == nil {
		t.Fatal("the report has no Python half (Python SDK vs arq and RQ)")
	}
	if !slices.Contains(py.Sides, "arq") || !slices.Contains(py.Sides, "rq") {
		t.Errorf("python sides %v: arq and RQ must be measured", py.Sides)
	}
	sdkMeasured := slices.Contains(py.Sides, "emq")
	if !sdkMeasured || py.Missing != "" {
		t.Errorf("the Python SDK side was not measured (sides %v): %q", py.Sides, py.Missing)
	}
	for _, side := range py.Sides {
		if py.Versions[side] == "" || py.Notes[side] == "" {
			t.Errorf("python: no version or notes for %s", side)
		}
		for _, sc := range []string{"enqueue_one", "enqueue_batched", "drain", "enqueue_process"} {
			if r := py.Results[side][sc]; r.Jobs != 500 || !(r.JobsPerSec > 0) || !(r.ServerCPUUsPerJob > 0) || !(r.ClientCPUUsPerJob > 0) || len(r.Runs) != 1 {
				t.Errorf("python %s %s: %+v", side, sc, r)
			}
		}
		if l := py.Results[side]["latency"]; l.Samples < 1 || !(l.P50Ms > 0) || l.P99Ms < l.P50Ms || l.MaxMs < l.P99Ms {
			t.Errorf("python %s latency: %+v", side, l)
		}
	}
	pyRows := map[string]PyRow{}
	for _, r := range py.Rows {
		pyRows[r.Key] = r
		if !(r.Arq > 0) || !(r.RQ > 0) {
			t.Errorf("python row %s: arq %v, RQ %v", r.Key, r.Arq, r.RQ)
		}
		if sdkMeasured {
			if !(r.SDK > 0) || math.Abs(r.RatioArq-r.SDK/r.Arq) > 1e-9*r.RatioArq || math.Abs(r.RatioRQ-r.SDK/r.RQ) > 1e-9*r.RatioRQ {
				t.Errorf("python row %s: SDK %v, arq %v, RQ %v, ratios %v %v", r.Key, r.SDK, r.Arq, r.RQ, r.RatioArq, r.RatioRQ)
			}
			if r.Target != "" && r.Met == nil {
				t.Errorf("python row %s: target %q not judged", r.Key, r.Target)
			}
		} else if r.SDK != 0 || r.RatioArq != 0 || r.Met != nil {
			t.Errorf("python row %s: an SDK figure or verdict without the SDK measured: %+v", r.Key, r)
		}
	}
	for _, k := range []string{"py_enqueue_one", "py_enqueue_batch", "py_drain", "py_enqueue_process", "py_latency_p50", "py_latency_p99", "py_server_cpu_per_job", "py_client_cpu_per_job"} {
		if _, ok := pyRows[k]; !ok {
			t.Errorf("python row %s missing", k)
		}
	}

	// The scheduler scenario: 1,000 schedulers, the Go runner alone and
	// the three runners competing, every run exact and counted by the
	// runner that fired it; the time reported (judged, never required: a
	// loaded machine may miss it).
	sr := rep.Schedulers
	if sr == nil {
		t.Fatal("the report has no scheduler scenario")
	}
	if sr.Schedulers != 1000 || !slices.Equal(sr.Runners, []string{"go", "ts", "python"}) || len(sr.Alone) != 1 || len(sr.Competing) != 1 ||
		sr.PollMs != 250 || sr.HorizonMs != 0 || sr.LoadAvg == "" || sr.Date == "" || sr.Redis != m.Redis {
		t.Errorf("schedulers: %+v", sr)
	}
	for _, name := range sr.Runners {
		if sr.Versions[name] == "" {
			t.Errorf("schedulers: no version for the %s runner", name)
		}
	}
	for _, r := range append(slices.Clone(sr.Alone), sr.Competing...) {
		fired := 0
		for _, name := range r.Runners {
			fired += r.Fired[name]
			if r.ByNode[name] != r.Fired[name] {
				t.Errorf("schedulers %v: %s fired %d, %d runs carry its node", r.Runners, name, r.Fired[name], r.ByNode[name])
			}
		}
		if r.Pending != 1000 || r.Scheduled != 0 || r.SchedulerRuns != 1000 || r.Duplicates != 0 || r.Missing != 0 || fired != 1000 ||
			!(r.Seconds > 0) || r.FirstMs < 0 || r.FirstMs > r.AllMs || r.Met != (r.Seconds <= 1) || r.TMs%1000 != 0 || r.Samples < 1 || r.LoadAvg == "" {
			t.Errorf("schedulers run %v: %+v", r.Runners, r)
		}
	}
	schedRows := map[string]SchedRow{}
	for _, r := range sr.Rows {
		schedRows[r.Key] = r
		if r.Target != "" && r.Met == nil {
			t.Errorf("scheduler row %s: target %q not judged", r.Key, r.Target)
		}
		if r.Load == "" {
			t.Errorf("scheduler row %s: no load", r.Key)
		}
	}
	for _, k := range []string{"sched_all", "sched_first", "sched_firing", "sched_at_1s", "sched_exact", "sched_fired", "sched_server_cpu"} {
		if _, ok := schedRows[k]; !ok {
			t.Errorf("scheduler row %s missing", k)
		}
	}
	if r := schedRows["sched_all"]; r.Competing != sr.Competing[0].Seconds || r.Alone != sr.Alone[0].Seconds || math.Abs(r.Ratio-r.Competing/r.Alone) > 1e-9*r.Ratio {
		t.Errorf("row sched_all: %+v", r)
	}

	// The Markdown file, the chart and the printed table.
	md, err := os.ReadFile(filepath.Join(dir, "quick.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "## Job schedulers: 1,000 due in the same second") {
		t.Error("quick.md has no scheduler section")
	}
	for _, r := range sr.Rows {
		if !strings.Contains(string(md), "| "+r.Scenario+" |") || !strings.Contains(stdout.String(), r.Scenario) {
			t.Errorf("scheduler row %q missing from quick.md or the printed table", r.Scenario)
		}
	}
	for _, s := range []string{"| scenario | unit |", m.Redis, m.Go, m.Asynq, m.Command, m.Date, "bench.svg"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("quick.md lacks %q", s)
		}
	}
	for _, r := range append(slices.Clone(rep.Rows), rep.Node.Rows...) {
		if !strings.Contains(string(md), r.Scenario) || !strings.Contains(stdout.String(), r.Scenario) {
			t.Errorf("row %q missing from quick.md or the printed table", r.Scenario)
		}
	}
	for _, r := range py.Rows {
		if !strings.Contains(string(md), "| "+r.Scenario+" |") || !strings.Contains(stdout.String(), r.Scenario) {
			t.Errorf("python row %q missing from quick.md or the printed table", r.Scenario)
		}
	}
	if !strings.Contains(string(md), "## Python SDK vs arq and RQ") {
		t.Error("quick.md has no Python section")
	}
	svg, err := os.ReadFile(chart)
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(svg, new(struct {
		XMLName xml.Name `xml:"svg"`
	})); err != nil {
		t.Errorf("chart is not an SVG document: %v", err)
	}
	for _, k := range []string{"enqueue_one", "enqueue_batch", "drain", "enqueue_process"} {
		for _, v := range []float64{rows[k].SDK, rows[k].Asynq} {
			if !strings.Contains(string(svg), ">"+shortNum(v)+"<") {
				t.Errorf("chart lacks the %s label %s", k, shortNum(v))
			}
		}
	}
}

func TestParseBenchmarkCSV(t *testing.T) {
	out := "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n" +
		"\"EVALSHA abc 3 k1 k2 k3 JOB000000001234 p\",\"71123.45\",\"0.650\",\"0.128\",\"0.631\",\"0.903\",\"1.111\",\"3.271\"\n"
	got, err := parseBenchmarkCSV(out)
	if err != nil || got != 71123.45 {
		t.Fatalf("parseBenchmarkCSV = %v, %v", got, err)
	}
	if _, err := parseBenchmarkCSV("ERR unknown command\n"); err == nil {
		t.Fatal("no error for output without a figure")
	}
}

func TestTriple(t *testing.T) {
	flat := make([]float64, 100)
	growing := make([]float64, 100)
	for i := range flat {
		flat[i] = 50 + float64(i%3)
		growing[i] = 50 + float64(i)
	}
	if tr := triple(flat, 10, 0.10, 4); tr.Grows || tr.Start != 50 || tr.Peak != 52 {
		t.Errorf("flat: %+v", tr)
	}
	if tr := triple(growing, 10, 0.10, 4); !tr.Grows || tr.End != 149 {
		t.Errorf("growing: %+v", tr)
	}
}

func TestSummarize(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	l := summarize(ds)
	if l.Samples != 100 || l.P50Ms != 50 || l.P99Ms != 99 || l.MaxMs != 100 {
		t.Errorf("summarize = %+v", l)
	}
}

// TestCheckSchedRun fires a few schedulers on a real redis-server and
// checks that the scheduler scenario's checker passes them, and fails a
// duplicate run, a missing run and a runner's count that does not match.
func TestCheckSchedRun(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(hintServer)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := startServer(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	c, q, err := connectQueue(ctx, srv.Addr(), schedQueue)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	now, err := serverMs(ctx, srv)
	if err != nil {
		t.Fatal(err)
	}
	start := now - 500
	ids := []string{"a", "b", "c", "d", "e"}
	for _, id := range ids {
		if _, err := q.UpsertScheduler(ctx, id, emq.Schedule{Every: schedEvery, Start: time.UnixMilli(start)}); err != nil {
			t.Fatal(err)
		}
	}
	fired, err := q.FireDue(ctx, 0)
	if err != nil || len(fired) != len(ids) {
		t.Fatalf("FireDue: %d runs, %v", len(fired), err)
	}
	nodes := map[int]string{c.Node(): runnerGo}
	check := func(f int) (SchedRun, error) {
		r := SchedRun{TMs: start, Fired: map[string]int{runnerGo: f}}
		return r, checkSchedRun(ctx, srv, q, ids, nodes, &r)
	}
	if r, err := check(len(ids)); err != nil || r.Pending != 5 || r.SchedulerRuns != 5 || r.ByNode[runnerGo] != 5 {
		t.Fatalf("a clean run: %+v, %v", r, err)
	}
	if _, err := check(4); err == nil || !strings.Contains(err.Error(), "reported 4 runs fired") {
		t.Errorf("a runner's count off by one: %v", err)
	}
	pending := q.Keys().Pending
	extra, err := c.Mint(emq.WorkKind)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.admin.Do(ctx, srv.admin.B().Zadd().Key(pending).ScoreMember().ScoreMember(0, extra.String()).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if r, err := check(len(ids)); err == nil || r.Duplicates != 1 || !strings.Contains(err.Error(), "1 duplicates") {
		t.Errorf("a duplicate run: %+v, %v", r, err)
	}
	if err := srv.admin.Do(ctx, srv.admin.B().Zrem().Key(pending).Member(extra.String(), fired[0].ID.String()).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if r, err := check(len(ids)); err == nil || r.Missing != 1 || !strings.Contains(err.Error(), "1 missing") {
		t.Errorf("a missing run: %+v, %v", r, err)
	}
}
