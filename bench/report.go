package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// Report is everything one run measured; it is written as
// results/<name>.json and rendered as the table, the Markdown file and the
// chart.
type Report struct {
	Meta      Meta              `json:"meta"`
	Rows      []Row             `json:"rows"`
	Costs     []CostRow         `json:"costs"`
	Latency   SidePair[Latency] `json:"latency"`
	Resources Resources         `json:"resources"`
	Ceiling   Ceiling           `json:"evalsha_ceiling"`
	Notes     []string          `json:"notes"`
	// Node is the Node half: the TypeScript SDK vs BullMQ on the same
	// server, nil when the run was made with -node=false.
	Node *NodeReport `json:"node,omitempty"`
	// Python is the Python half: the Python SDK vs arq and RQ on the same
	// server, nil when the run was made with -python=false.
	Python *PythonReport `json:"python,omitempty"`
	// Schedulers is the scheduler scenario (echomq 2.6.0's job schedulers,
	// the Go, TypeScript and Python runners competing), nil when it was
	// left out (-schedulers 0).
	Schedulers *SchedulersReport `json:"schedulers,omitempty"`
}

// SidePair holds the SDK's and the peer's figure of one kind.
type SidePair[T any] struct {
	SDK   T `json:"sdk"`
	Asynq T `json:"asynq"`
}

// Meta says where, when and how the run was made.
type Meta struct {
	Date            string  `json:"date"`
	Command         string  `json:"command"`
	Quick           bool    `json:"quick"`
	Runs            int     `json:"runs"`
	Jobs            int     `json:"jobs"`
	Producers       int     `json:"producers"`
	Concurrency     int     `json:"concurrency"`
	Batch           int     `json:"batch"`
	RSSJobs         int     `json:"rss_jobs"`
	CPU             string  `json:"cpu"`
	Cores           int     `json:"cores"`
	GOMAXPROCS      int     `json:"gomaxprocs"`
	MemoryGiB       float64 `json:"memory_gib"`
	Kernel          string  `json:"kernel"`
	Go              string  `json:"go"`
	Redis           string  `json:"redis"`
	RedisBenchmark  string  `json:"redis_benchmark"`
	Asynq           string  `json:"asynq"`
	Rueidis         string  `json:"rueidis"`
	SDKVersion      string  `json:"sdk_protocol_version"`
	SDKSharedClient bool    `json:"sdk_shared_client"`
	LoadAvgStart    string  `json:"loadavg_start"`
	WallSeconds     float64 `json:"wall_seconds"`
	OtherCPUSeconds float64 `json:"other_processes_cpu_seconds"`
}

// Ceiling is redis-benchmark's EVALSHA of push.lua.
type Ceiling struct {
	Requests int        `json:"requests"`
	Clients  int        `json:"clients"`
	P1       float64    `json:"p1_rps"`
	P16      float64    `json:"p16_rps"`
	P1Cost   ServerCost `json:"p1_server"`
	P16Cost  ServerCost `json:"p16_server"`
}

// Row is one line of the results table. Ratio is always SDK ÷ asynq (for
// "lower is better" rows, under 1 is the SDK ahead).
type Row struct {
	Key          string  `json:"key"`
	Scenario     string  `json:"scenario"`
	Unit         string  `json:"unit"`
	Better       string  `json:"better"` // higher | lower | none
	SDK          float64 `json:"sdk"`
	SDKText      string  `json:"sdk_text,omitempty"`
	Asynq        float64 `json:"asynq,omitempty"` // 0: not measured for asynq
	AsynqText    string  `json:"asynq_text,omitempty"`
	Ratio        float64 `json:"ratio,omitempty"` // SDK / asynq
	Ceiling      float64 `json:"ceiling,omitempty"`
	CeilingLabel string  `json:"ceiling_label,omitempty"`
	CeilingRatio float64 `json:"ceiling_ratio,omitempty"` // SDK / ceiling
	Target       string  `json:"target,omitempty"`
	Met          *bool   `json:"met,omitempty"`
	Note         string  `json:"note,omitempty"`
}

// CostRow is what one scenario cost the server and this process, per side.
type CostRow struct {
	Scenario string   `json:"scenario"`
	SDK      *Measure `json:"sdk,omitempty"`
	Asynq    *Measure `json:"asynq,omitempty"`
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func met(ok bool) *bool { return &ok }

// fmtNum prints a figure with sensible precision.
func fmtNum(v float64) string {
	switch a := math.Abs(v); {
	case v == 0:
		return "0"
	case a >= 1000:
		return commas(int64(math.Round(v)))
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
}

func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func fmtRatio(r float64) string {
	if r == 0 {
		return "—"
	}
	if r < 0.01 {
		return "1/" + fmtNum(1/r)
	}
	if r >= 10 {
		return strconv.FormatFloat(r, 'f', 1, 64) + "×"
	}
	return strconv.FormatFloat(r, 'f', 2, 64) + "×"
}

func (r Row) sdkCell() string {
	if r.SDKText != "" {
		return r.SDKText
	}
	return fmtNum(r.SDK)
}

func (r Row) asynqCell() string {
	if r.AsynqText != "" {
		return r.AsynqText
	}
	if r.Asynq == 0 {
		return "—"
	}
	return fmtNum(r.Asynq)
}

func (r Row) ceilingCell() string {
	if r.Ceiling == 0 {
		return "—"
	}
	return fmt.Sprintf("%s of %s %s", fmtRatio(r.CeilingRatio), fmtNum(r.Ceiling), r.CeilingLabel)
}

func (r Row) metCell() string { return metCell(r.Met) }

func metCell(m *bool) string {
	switch {
	case m == nil:
		return ""
	case *m:
		return "yes"
	default:
		return "**no**"
	}
}

// pyCell prints a figure of the Python table, "—" for a side not measured.
func pyCell(v float64) string {
	if v == 0 {
		return "—"
	}
	return fmtNum(v)
}

// buildRows turns the measures into the table.
func buildRows(rep *Report, m measures) []Row {
	var rows []Row
	add := func(r Row) { rows = append(rows, r) }

	one := Row{Key: "enqueue_one", Scenario: fmt.Sprintf("1. enqueue, one job per call (%d producers)", rep.Meta.Producers), Unit: "jobs/s", Better: "higher",
		SDK: m.enqueueOne.SDK.JobsPerSec, Asynq: m.enqueueOne.Asynq.JobsPerSec,
		Ceiling: rep.Ceiling.P1, CeilingLabel: "EVALSHA -P 1", Target: "≥ 2× asynq",
		Note: "Queue.Push, coalesced (the default): concurrent pushes go out as push_many calls"}
	one.Ratio = ratio(one.SDK, one.Asynq)
	one.CeilingRatio = ratio(one.SDK, one.Ceiling)
	one.Met = met(one.Ratio >= 2)
	add(one)
	var bullmq map[string]NodeResult // the Node half's BullMQ figures, same server and run
	if rep.Node != nil {
		bullmq = rep.Node.Results["bullmq"]
	}
	if bq, ok := bullmq["enqueue_one"]; ok {
		r := Row{Key: "enqueue_one_vs_bullmq", Scenario: fmt.Sprintf("1b. enqueue, one job per call (%d producers): Go SDK vs BullMQ", rep.Meta.Producers), Unit: "jobs/s", Better: "higher",
			SDK: one.SDK, Asynq: bq.JobsPerSec, Target: "≥ 2× BullMQ",
			Note: "the peer column is BullMQ's Queue.add from the Node half (same server, same run); the ratio is SDK/BullMQ"}
		r.Ratio = ratio(r.SDK, r.Asynq)
		r.Met = met(r.Ratio >= 2)
		add(r)
	}

	b := Row{Key: "enqueue_batch", Scenario: fmt.Sprintf("2. enqueue, batched (PushBatch of %d, %d producers)", rep.Meta.Batch, rep.Meta.Producers), Unit: "jobs/s", Better: "higher",
		SDK: m.enqueueBatch.SDK.JobsPerSec, Asynq: m.enqueueBatch.Asynq.JobsPerSec,
		Ceiling: rep.Ceiling.P16, CeilingLabel: "EVALSHA -P 16", Target: "≥ 0.8× the -P 16 ceiling",
		Note: "asynq has no batched enqueue: its figure is one Enqueue per job, measured again"}
	b.Ratio = ratio(b.SDK, b.Asynq)
	b.CeilingRatio = ratio(b.SDK, b.Ceiling)
	b.Met = met(b.CeilingRatio >= 0.8)
	add(b)

	d := Row{Key: "drain", Scenario: fmt.Sprintf("3. drain a pre-filled queue (concurrency %d)", rep.Meta.Concurrency), Unit: "jobs/s", Better: "higher",
		SDK: m.drain.SDK.JobsPerSec, Asynq: m.drain.Asynq.JobsPerSec, Target: "≥ 3× asynq"}
	d.Ratio = ratio(d.SDK, d.Asynq)
	d.Met = met(d.Ratio >= 3)
	add(d)

	ep := Row{Key: "enqueue_process", Scenario: "4. enqueue and process at once", Unit: "jobs/s", Better: "higher",
		SDK: m.enqProc.SDK.JobsPerSec, Asynq: m.enqProc.Asynq.JobsPerSec, Target: "≥ 4× asynq"}
	ep.Ratio = ratio(ep.SDK, ep.Asynq)
	ep.Met = met(ep.Ratio >= 4)
	add(ep)
	if bq, ok := bullmq["enqueue_process"]; ok {
		r := Row{Key: "enqueue_process_vs_bullmq", Scenario: "4b. enqueue and process at once: Go SDK vs BullMQ", Unit: "jobs/s", Better: "higher",
			SDK: ep.SDK, Asynq: bq.JobsPerSec, Target: "≥ 2.5× BullMQ",
			Note: "the peer column is BullMQ's from the Node half (same server, same run); the ratio is SDK/BullMQ"}
		r.Ratio = ratio(r.SDK, r.Asynq)
		r.Met = met(r.Ratio >= 2.5)
		add(r)
	}

	lat := rep.Latency
	p50 := Row{Key: "latency_p50", Scenario: "5. enqueue → handler start, idle worker, p50", Unit: "ms", Better: "lower",
		SDK: lat.SDK.P50Ms, Asynq: lat.Asynq.P50Ms, Target: "≤ 1 ms",
		Note: fmt.Sprintf("samples: SDK %d, asynq %d; Push coalesced (the default)", lat.SDK.Samples, lat.Asynq.Samples)}
	p50.Ratio = ratio(p50.SDK, p50.Asynq)
	p50.Met = met(p50.SDK <= 1)
	add(p50)
	p99 := Row{Key: "latency_p99", Scenario: "5. enqueue → handler start, idle worker, p99", Unit: "ms", Better: "lower",
		SDK: lat.SDK.P99Ms, Asynq: lat.Asynq.P99Ms, Target: "≤ 5 ms", Note: p50.Note}
	p99.Ratio = ratio(p99.SDK, p99.Asynq)
	p99.Met = met(p99.SDK <= 5)
	add(p99)

	st := Row{Key: "server_usec_per_job", Scenario: "6. Redis server time per job (Σ commandstats usec, enqueue+process)", Unit: "µs/job", Better: "lower",
		SDK: m.enqProc.SDK.Server.UsecPerJob, Asynq: m.enqProc.Asynq.Server.UsecPerJob, Target: "≤ 0.5× asynq",
		Note: "a script's nested commands count twice (inside the script and on their own), on both sides"}
	st.Ratio = ratio(st.SDK, st.Asynq)
	st.Met = met(st.Ratio <= 0.5)
	add(st)
	sc := Row{Key: "server_cpu_per_job", Scenario: "6. Redis server CPU per job (INFO cpu, enqueue+process)", Unit: "µs/job", Better: "lower",
		SDK: m.enqProc.SDK.Server.CPUPerJobUs, Asynq: m.enqProc.Asynq.Server.CPUPerJobUs, Target: "≤ 0.35× asynq",
		Note: "a job's whole lifecycle: push, claim, complete"}
	sc.Ratio = ratio(sc.SDK, sc.Asynq)
	sc.Met = met(sc.Ratio <= 0.35)
	add(sc)

	al := Row{Key: "allocs_per_job", Scenario: "7. allocations per job, worker path (drain)", Unit: "allocs/job", Better: "lower",
		SDK: m.drain.SDK.AllocsPerJob, Asynq: m.drain.Asynq.AllocsPerJob}
	al.Ratio = ratio(al.SDK, al.Asynq)
	add(al)

	res := rep.Resources
	rss := Row{Key: "rss", Scenario: fmt.Sprintf("8. RSS over a %s-job enqueue+process run (SDK)", commas(int64(res.Jobs))), Unit: "MiB start/peak/end", Better: "none",
		SDK: res.RSSMiB.Peak, SDKText: fmt.Sprintf("%.1f / %.1f / %.1f", res.RSSMiB.Start, res.RSSMiB.Peak, res.RSSMiB.End),
		Target: "no growth", Met: met(!res.RSSMiB.Grows),
		Note: fmt.Sprintf("mean of first 20%% after warm-up %.1f, of last 20%% %.1f; %s jobs/s", res.RSSMiB.First20, res.RSSMiB.Last20, fmtNum(res.JobsPerSec))}
	add(rss)
	gr := Row{Key: "goroutines", Scenario: fmt.Sprintf("8. goroutines over the %s-job run (SDK)", commas(int64(res.Jobs))), Unit: "start/peak/end", Better: "none",
		SDK: res.Goroutines.Peak, SDKText: fmt.Sprintf("%.0f / %.0f / %.0f", res.Goroutines.Start, res.Goroutines.Peak, res.Goroutines.End),
		Target: "no growth", Met: met(!res.Goroutines.Grows),
		Note: fmt.Sprintf("mean of first 20%% after warm-up %.1f, of last 20%% %.1f", res.Goroutines.First20, res.Goroutines.Last20)}
	add(gr)

	add(Row{Key: "evalsha_p1", Scenario: fmt.Sprintf("9. redis-benchmark EVALSHA push.lua, -c %d -P 1", rep.Ceiling.Clients), Unit: "req/s", Better: "higher", SDK: rep.Ceiling.P1,
		Note: "the server's ceiling, not a side's figure"})
	add(Row{Key: "evalsha_p16", Scenario: fmt.Sprintf("9. redis-benchmark EVALSHA push.lua, -c %d -P 16", rep.Ceiling.Clients), Unit: "req/s", Better: "higher", SDK: rep.Ceiling.P16,
		Note: "the server's ceiling, not a side's figure"})
	return rows
}

// writeTable prints the results as aligned text.
func writeTable(w io.Writer, rep *Report) {
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	head := []string{"scenario", "unit", "SDK", "asynq", "SDK/asynq", "vs ceiling", "target", "met"}
	cells := [][]string{head}
	for _, r := range rep.Rows {
		cells = append(cells, []string{r.Scenario, r.Unit, r.sdkCell(), r.asynqCell(), fmtRatio(r.Ratio), r.ceilingCell(), r.Target, strings.Trim(r.metCell(), "*")})
	}
	width := make([]int, len(head))
	for _, row := range cells {
		for i, c := range row {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	for j, row := range cells {
		for i, c := range row {
			pad := width[i] - len([]rune(c))
			if i >= 2 && i <= 4 {
				fmt.Fprint(bw, strings.Repeat(" ", pad)+c)
			} else {
				fmt.Fprint(bw, c+strings.Repeat(" ", pad))
			}
			if i < len(row)-1 {
				fmt.Fprint(bw, "  ")
			}
		}
		fmt.Fprintln(bw)
		if j == 0 {
			total := 0
			for _, n := range width {
				total += n + 2
			}
			fmt.Fprintln(bw, strings.Repeat("-", total-2))
		}
	}
	fmt.Fprintln(bw)
	fmt.Fprintln(bw, "Server and client cost per scenario (per side: wall s, Redis CPU s, Redis CPU µs/job, Σ usec/job, calls/job, client CPU µs/job):")
	for _, c := range rep.Costs {
		for _, s := range []struct {
			name string
			m    *Measure
		}{{"sdk", c.SDK}, {"asynq", c.Asynq}} {
			if s.m == nil {
				continue
			}
			fmt.Fprintf(bw, "  %-34s %-5s  %7.2fs  cpu %6.2fs  %7.1f µs/job  Σ %7.1f µs/job  %5.2f calls/job  client %6.1f µs/job\n",
				c.Scenario, s.name, s.m.Seconds, s.m.Server.CPUSeconds, s.m.Server.CPUPerJobUs, s.m.Server.UsecPerJob, s.m.Server.CallsPerJob, s.m.ClientCPUPerJobUs)
		}
	}
	if rep.Node != nil {
		fmt.Fprintln(bw, "\nTypeScript SDK vs BullMQ (same server):")
		for _, r := range rep.Node.Rows {
			fmt.Fprintf(bw, "  %-52s %-7s TS %10s  BullMQ %10s  %8s  %s %s\n", r.Scenario, r.Unit, r.sdkCell(), r.asynqCell(), fmtRatio(r.Ratio), r.Target, strings.Trim(r.metCell(), "*"))
		}
	}
	if p := rep.Python; p != nil {
		fmt.Fprintln(bw, "\nPython SDK vs arq and RQ (same server):")
		for _, r := range p.Rows {
			fmt.Fprintf(bw, "  %-52s %-7s SDK %10s  arq %10s  RQ %10s  SDK/arq %8s  SDK/RQ %8s  %s %s\n", r.Scenario, r.Unit,
				pyCell(r.SDK), pyCell(r.Arq), pyCell(r.RQ), fmtRatio(r.RatioArq), fmtRatio(r.RatioRQ), r.Target, strings.Trim(metCell(r.Met), "*"))
		}
		if p.Missing != "" {
			fmt.Fprintf(bw, "  %s\n", p.Missing)
		}
	}
	writeSchedTable(bw, rep.Schedulers)
	m := rep.Meta
	fmt.Fprintf(bw, "machine: %s, %d cores, GOMAXPROCS %d, %s, Redis %s, asynq %s; load average %s at the start, other processes used %.1f CPU-s over the %.0f s run\n",
		m.CPU, m.Cores, m.GOMAXPROCS, m.Go, m.Redis, m.Asynq, m.LoadAvgStart, m.OtherCPUSeconds, m.WallSeconds)
}

// writeMarkdown renders the report as results/<name>.md.
func writeMarkdown(w io.Writer, rep *Report, chart string) error {
	bw := bufio.NewWriter(w)
	m := rep.Meta
	fmt.Fprintf(bw, "# EchoMQ SDK vs asynq — benchmark results\n\n")
	fmt.Fprintf(bw, "Generated by `%s` on %s. Do not edit: run the command again.\n\n", m.Command, m.Date)
	if chart != "" {
		fmt.Fprintf(bw, "![throughput chart](%s)\n\n", chart)
	}
	fmt.Fprintf(bw, "| | |\n|---|---|\n")
	fmt.Fprintf(bw, "| machine | %s, %d cores, %.0f GiB, Linux %s |\n", m.CPU, m.Cores, m.MemoryGiB, m.Kernel)
	fmt.Fprintf(bw, "| Go | %s, GOMAXPROCS %d |\n", m.Go, m.GOMAXPROCS)
	fmt.Fprintf(bw, "| Redis | %s (its own redis-server on loopback, save \"\", appendonly no); %s |\n", m.Redis, m.RedisBenchmark)
	fmt.Fprintf(bw, "| SDK | github.com/echomq/echomq/sdk/go/emq, protocol %s, rueidis %s |\n", m.SDKVersion, m.Rueidis)
	fmt.Fprintf(bw, "| peer | github.com/hibiken/asynq %s, default settings |\n", m.Asynq)
	if m.SDKSharedClient {
		fmt.Fprintf(bw, "| -sdk-shared-client | the SDK's worker ran on its producers' client |\n")
	}
	fmt.Fprintf(bw, "| quiet? | load average %s at the start; other processes used %.1f CPU-s over the %.0f s run (%.1f%% of the machine) |\n",
		m.LoadAvgStart, m.OtherCPUSeconds, m.WallSeconds, 100*m.OtherCPUSeconds/math.Max(1, m.WallSeconds*float64(m.Cores)))
	fmt.Fprintf(bw, "| load | %s no-op jobs, %d producers, worker concurrency %d, batches of %d; resource run %s jobs |\n\n",
		commas(int64(m.Jobs)), m.Producers, m.Concurrency, m.Batch, commas(int64(m.RSSJobs)))

	fmt.Fprintf(bw, "SDK/asynq is always SDK ÷ asynq: above 1 is the SDK ahead on a \"higher is better\" row, below 1 on a \"lower is better\" row.\n\n")
	fmt.Fprintf(bw, "| scenario | unit | better | SDK | asynq | SDK/asynq | vs EVALSHA ceiling | target | met | note |\n")
	fmt.Fprintf(bw, "|---|---|---|--:|--:|--:|---|---|---|---|\n")
	for _, r := range rep.Rows {
		fmt.Fprintf(bw, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.Scenario, r.Unit, r.Better, r.sdkCell(), r.asynqCell(), fmtRatio(r.Ratio), r.ceilingCell(), r.Target, r.metCell(), r.Note)
	}
	if rep.Node == nil {
		fmt.Fprintf(bw, "\nThe Node half (TypeScript SDK vs BullMQ) was not run (-node=false).\n")
	} else {
		n := rep.Node
		fmt.Fprintf(bw, "\n## TypeScript SDK vs BullMQ\n\n")
		fmt.Fprintf(bw, "The same redis-server, in the same run, after the Go scenarios (flushed first): Node %s; %s; %s. TS/BullMQ is TS ÷ BullMQ.\n\n", n.Node, n.Versions["emq"], n.Versions["bullmq"])
		fmt.Fprintf(bw, "| scenario | unit | better | TS SDK | BullMQ | TS/BullMQ | target | met | note |\n")
		fmt.Fprintf(bw, "|---|---|---|--:|--:|--:|---|---|---|\n")
		for _, r := range n.Rows {
			fmt.Fprintf(bw, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				r.Scenario, r.Unit, r.Better, r.sdkCell(), r.asynqCell(), fmtRatio(r.Ratio), r.Target, r.metCell(), r.Note)
		}
	}
	if p := rep.Python; p == nil {
		fmt.Fprintf(bw, "\nThe Python half (Python SDK vs arq and RQ) was not run (-python=false).\n")
	} else {
		fmt.Fprintf(bw, "\n## Python SDK vs arq and RQ\n\n")
		var vs []string
		for _, s := range p.Sides {
			vs = append(vs, p.Versions[s])
		}
		fmt.Fprintf(bw, "The same redis-server, in the same run, after the Node half (flushed first): Python %s; %s. SDK/arq and SDK/RQ are the SDK's figure ÷ the peer's.", p.Python, strings.Join(vs, "; "))
		if p.Missing != "" {
			fmt.Fprintf(bw, " **%s.**", strings.ToUpper(p.Missing[:1])+p.Missing[1:])
		}
		fmt.Fprintf(bw, "\n\n| scenario | unit | better | Python SDK | arq | RQ | SDK/arq | SDK/RQ | target | met | note |\n")
		fmt.Fprintf(bw, "|---|---|---|--:|--:|--:|--:|--:|---|---|---|\n")
		for _, r := range p.Rows {
			fmt.Fprintf(bw, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				r.Scenario, r.Unit, r.Better, pyCell(r.SDK), pyCell(r.Arq), pyCell(r.RQ), fmtRatio(r.RatioArq), fmtRatio(r.RatioRQ), r.Target, metCell(r.Met), r.Note)
		}
		fmt.Fprintf(bw, "\n")
		for _, s := range p.Sides {
			fmt.Fprintf(bw, "- %s\n", p.Notes[s])
		}
	}
	writeSchedMarkdown(bw, rep.Schedulers)
	fmt.Fprintf(bw, "\n## Cost per scenario\n\n")
	fmt.Fprintf(bw, "Redis runs on the same 2 cores as the benchmark, so its CPU bounds what either side can reach.\n\n")
	fmt.Fprintf(bw, "The median of %d run(s) per side; \"runs\" lists every run's jobs/s.\n\n", m.Runs)
	fmt.Fprintf(bw, "| scenario | side | wall s | jobs/s | runs | Redis CPU s | Redis CPU µs/job | Σ usec/job | commands/job | client CPU µs/job | allocs/job |\n")
	fmt.Fprintf(bw, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, c := range rep.Costs {
		for _, s := range []struct {
			name string
			m    *Measure
		}{{"SDK", c.SDK}, {"asynq", c.Asynq}} {
			if s.m == nil {
				continue
			}
			fmt.Fprintf(bw, "| %s | %s | %.2f | %s | %s | %.2f | %s | %s | %.2f | %s | %s |\n", c.Scenario, s.name, s.m.Seconds, fmtNum(s.m.JobsPerSec), fmtRunsK(s.m.Runs),
				s.m.Server.CPUSeconds, fmtNum(s.m.Server.CPUPerJobUs), fmtNum(s.m.Server.UsecPerJob), s.m.Server.CallsPerJob, fmtNum(s.m.ClientCPUPerJobUs), fmtNum(s.m.AllocsPerJob))
		}
	}
	for _, c := range rep.Costs {
		if !strings.HasPrefix(c.Scenario, "4.") || c.SDK == nil || c.Asynq == nil {
			continue
		}
		fmt.Fprintf(bw, "\n## Server commands per job, %s\n\n", c.Scenario)
		fmt.Fprintf(bw, "INFO commandstats of the window divided by the jobs, the costliest first (commands a script calls are listed too, and their time is also inside the script's).\n\n")
		fmt.Fprintf(bw, "| side | command | calls/job | usec/job |\n|---|---|--:|--:|\n")
		for _, s := range []struct {
			name string
			m    *Measure
		}{{"SDK", c.SDK}, {"asynq", c.Asynq}} {
			for i, st := range s.m.Server.Commands {
				if i == 10 {
					break
				}
				fmt.Fprintf(bw, "| %s | %s | %.3f | %.2f |\n", s.name, st.Command, float64(st.Calls)/float64(s.m.Jobs), float64(st.Usec)/float64(s.m.Jobs))
			}
		}
	}
	fmt.Fprintf(bw, "\n## Notes\n\n")
	for _, n := range rep.Notes {
		fmt.Fprintf(bw, "- %s\n", n)
	}
	return bw.Flush()
}

func fmtRunsK(rs []float64) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = shortNum(r)
	}
	return strings.Join(parts, ", ")
}

func writeJSON(path string, rep *Report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// collectMeta fills what the run knows about its machine and versions.
func collectMeta(m *Meta) {
	m.Go = runtime.Version()
	m.GOMAXPROCS = runtime.GOMAXPROCS(0)
	m.Cores = runtime.NumCPU()
	m.CPU = "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
				m.MemoryGiB = math.Round(kb/1024/1024*10) / 10
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	m.Asynq, m.Rueidis = "unknown", "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			switch d.Path {
			case "github.com/hibiken/asynq":
				m.Asynq = d.Version
			case "github.com/redis/rueidis":
				m.Rueidis = d.Version
			}
		}
	}
}
