package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// hintNode is what a run without the Node half's dependencies says.
const hintNode = "the Node half of the benchmark needs node and its locked packages: build the TypeScript SDK (cd sdk/ts && npm ci && npm run build) and install bench/node (cd bench/node && npm ci); ./test.sh does both"

// NodeReport is what the Node half (bench/node/bench.mjs) measured against
// the same redis-server: the TypeScript SDK ("emq") and BullMQ, scenario by
// scenario, plus the rows built from them.
type NodeReport struct {
	Node     string                           `json:"node"`
	Versions map[string]string                `json:"versions"`
	Results  map[string]map[string]NodeResult `json:"results"`
	Rows     []Row                            `json:"rows"`
}

// NodeResult is one scenario of one side: a throughput run (Jobs, Seconds,
// JobsPerSec, server CPU) or the latency run (Samples, P50Ms, P99Ms).
type NodeResult struct {
	Jobs              int       `json:"jobs,omitempty"`
	Seconds           float64   `json:"seconds,omitempty"`
	JobsPerSec        float64   `json:"jobs_per_s,omitempty"`
	ServerCPUUsPerJob float64   `json:"server_cpu_us_per_job,omitempty"`
	ClientCPUUsPerJob float64   `json:"client_cpu_us_per_job,omitempty"` // the side's own processes (the Python half)
	Runs              []float64 `json:"runs,omitempty"`
	Samples           int       `json:"samples,omitempty"`
	P50Ms             float64   `json:"p50_ms,omitempty"`
	P99Ms             float64   `json:"p99_ms,omitempty"`
	MaxMs             float64   `json:"max_ms,omitempty"`
	Budget            string    `json:"budget,omitempty"`
}

// runNode runs bench/node/bench.mjs against the server at addr with cfg's
// load and returns its report with the rows built. It fails, with the
// install hint, when node or the packages are missing: the Node rows are
// part of the benchmark, never silently left out.
func runNode(ctx context.Context, cfg *config, addr string, log io.Writer) (*NodeReport, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, errors.New(hintNode)
	}
	dir := cfg.NodeDir
	for _, need := range []string{filepath.Join(dir, "node_modules", "bullmq"), filepath.Join(dir, "node_modules", "@echomq", "sdk")} {
		if _, err := os.Stat(need); err != nil {
			return nil, fmt.Errorf("%s is missing: %s", need, hintNode)
		}
	}
	args := []string{"bench.mjs", "--addr", addr,
		"--jobs", strconv.Itoa(cfg.NodeJobs), "--producers", strconv.Itoa(cfg.Producers),
		"--concurrency", strconv.Itoa(cfg.Concurrency), "--batch", strconv.Itoa(cfg.Batch),
		"--runs", strconv.Itoa(cfg.Runs), "--latency-samples", strconv.Itoa(cfg.LatencySamples),
		"--latency-budget-ms", strconv.FormatInt(cfg.LatencyBudget.Milliseconds(), 10)}
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, log
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("node %s: %w", args[0], err)
	}
	rep := new(NodeReport)
	if err := json.Unmarshal(out.Bytes(), rep); err != nil {
		return nil, fmt.Errorf("node bench.mjs printed no report: %w", err)
	}
	for _, side := range []string{"emq", "bullmq"} {
		for _, sc := range []string{"enqueue_one", "enqueue_batched", "drain", "enqueue_process", "latency"} {
			if _, ok := rep.Results[side][sc]; !ok {
				return nil, fmt.Errorf("node bench.mjs: no %s result for %s", sc, side)
			}
		}
	}
	rep.Rows = nodeRows(cfg, rep)
	return rep, nil
}

// nodeRows turns the Node half's results into table rows, SDK = the
// TypeScript SDK and the peer = BullMQ, with the targets the TypeScript SDK
// is held to.
func nodeRows(cfg *config, rep *NodeReport) []Row {
	ts, bq := rep.Results["emq"], rep.Results["bullmq"]
	var rows []Row
	through := func(key, scenario, sc, target string, want float64, note string) {
		r := Row{Key: "ts_" + key, Scenario: scenario, Unit: "jobs/s", Better: "higher",
			SDK: ts[sc].JobsPerSec, Asynq: bq[sc].JobsPerSec, Target: target, Note: note}
		r.Ratio = ratio(r.SDK, r.Asynq)
		if want > 0 {
			r.Met = met(r.Ratio >= want)
		}
		rows = append(rows, r)
	}
	through("enqueue_one", fmt.Sprintf("T1. enqueue, one job per call (%d producers)", cfg.Producers), "enqueue_one", "≥ 2× BullMQ", 2, "queue.push (coalesced into push_many) vs Queue.add")
	through("enqueue_batch", fmt.Sprintf("T2. enqueue, batched (%d per call)", cfg.Batch), "enqueue_batched", "≥ 3× BullMQ", 3, "queue.pushBatch (chunked push_many) vs Queue.addBulk")
	through("drain", fmt.Sprintf("T3. drain a pre-filled queue (concurrency %d)", cfg.Concurrency), "drain", "≥ 2× BullMQ", 2, "")
	through("enqueue_process", "T4. enqueue and process at once", "enqueue_process", "≥ 2× BullMQ", 2, "")
	lat := func(key, scenario string, get func(NodeResult) float64, target string, limit float64) {
		r := Row{Key: "ts_" + key, Scenario: scenario, Unit: "ms", Better: "lower", SDK: get(ts["latency"]), Asynq: get(bq["latency"]), Target: target,
			Note: fmt.Sprintf("samples: TS %d, BullMQ %d", ts["latency"].Samples, bq["latency"].Samples)}
		r.Ratio = ratio(r.SDK, r.Asynq)
		if limit > 0 {
			r.Met = met(r.SDK <= limit)
		}
		rows = append(rows, r)
	}
	lat("latency_p50", "T5. enqueue → handler start, idle worker, p50", func(n NodeResult) float64 { return n.P50Ms }, "≤ 5 ms", 5)
	lat("latency_p99", "T5. enqueue → handler start, idle worker, p99", func(n NodeResult) float64 { return n.P99Ms }, "", 0)
	cpu := Row{Key: "ts_server_cpu_per_job", Scenario: "T6. Redis server CPU per job (INFO cpu, enqueue+process)", Unit: "µs/job", Better: "lower",
		SDK: ts["enqueue_process"].ServerCPUUsPerJob, Asynq: bq["enqueue_process"].ServerCPUUsPerJob}
	cpu.Ratio = ratio(cpu.SDK, cpu.Asynq)
	rows = append(rows, cpu)
	return rows
}
