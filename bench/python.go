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
	"strings"
)

// hintPython is what a run without the Python half's interpreters says.
const hintPython = "the Python half of the benchmark needs python3 and its locked packages: bench/python/setup.sh installs arq and RQ (bench/python/requirements.lock) into bench/python/.venv; the SDK side runs in the Python SDK's own virtualenv, sdk/python/.venv; ./test.sh creates both"

// pySides are the sides of the Python half, in the order they run: the
// Python SDK first, then its peers.
var pySides = []string{"emq", "arq", "rq"}

// PythonReport is what the Python half (bench/python/bench.py, one process
// per side) measured against the same redis-server: the Python SDK
// ("emq"), arq and RQ, scenario by scenario, plus the rows built from
// them.
type PythonReport struct {
	Python   string                           `json:"python"`
	Sides    []string                         `json:"sides"`
	Versions map[string]string                `json:"versions"`
	Notes    map[string]string                `json:"notes"`
	Results  map[string]map[string]NodeResult `json:"results"`
	Rows     []PyRow                          `json:"rows"`
	// Missing says why a side was not measured (the SDK side before its
	// package exists), "" when every side was.
	Missing string `json:"missing,omitempty"`
}

// PyRow is one line of the Python table: the SDK's figure beside arq's and
// RQ's, with the ratios SDK ÷ peer (0 when a side was not measured).
type PyRow struct {
	Key      string  `json:"key"`
	Scenario string  `json:"scenario"`
	Unit     string  `json:"unit"`
	Better   string  `json:"better"`
	SDK      float64 `json:"sdk,omitempty"`
	Arq      float64 `json:"arq"`
	RQ       float64 `json:"rq"`
	RatioArq float64 `json:"ratio_arq,omitempty"`
	RatioRQ  float64 `json:"ratio_rq,omitempty"`
	Target   string  `json:"target,omitempty"`
	Met      *bool   `json:"met,omitempty"`
	Note     string  `json:"note,omitempty"`
}

// pyReport is what bench.py prints for one side.
type pyReport struct {
	Python  string                `json:"python"`
	Side    string                `json:"side"`
	Version string                `json:"version"`
	Notes   string                `json:"notes"`
	Results map[string]NodeResult `json:"results"`
}

// pyScenarios are the scenarios of bench.py, in the order they run.
var pyScenarios = []string{"enqueue_one", "enqueue_batched", "drain", "enqueue_process", "latency"}

// runPySide runs bench.py for one side and one scenario.
func runPySide(ctx context.Context, cfg *config, side, scenario, addr string, log io.Writer) (*pyReport, error) {
	abs, err := filepath.Abs(pyInterpreter(cfg, side))
	if err != nil {
		return nil, err
	}
	args := []string{"bench.py", "--side", side, "--addr", addr, "--scenarios", scenario,
		"--jobs", strconv.Itoa(cfg.PythonJobs), "--producers", strconv.Itoa(cfg.Producers),
		"--concurrency", strconv.Itoa(cfg.Concurrency), "--batch", strconv.Itoa(cfg.Batch),
		"--runs", strconv.Itoa(cfg.Runs), "--latency-samples", strconv.Itoa(cfg.PythonLatencySamples),
		"--latency-budget-ms", strconv.FormatInt(cfg.PythonLatencyBudget.Milliseconds(), 10),
		"--rq-workers", strconv.Itoa(cfg.RQWorkers)}
	cmd := exec.CommandContext(ctx, abs, args...)
	cmd.Dir = cfg.PythonDir
	if side == "emq" {
		// The SDK runs from its source tree, as its own tests do
		// (pyproject's pythonpath = src): nothing is installed.
		src, err := filepath.Abs(filepath.Join(cfg.PythonSDKDir, "src"))
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(filepath.Join(src, "echomq", "__init__.py")); err != nil {
			return nil, fmt.Errorf("%s has no echomq package: %s", src, hintPython)
		}
		cmd.Env = append(os.Environ(), "PYTHONPATH="+src)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, log
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("python bench.py --side %s --scenarios %s: %w", side, scenario, err)
	}
	r := new(pyReport)
	if err := json.Unmarshal(out.Bytes(), r); err != nil {
		return nil, fmt.Errorf("python bench.py --side %s printed no report: %w", side, err)
	}
	return r, nil
}

// pyInterpreter is the python of side's virtualenv, relative to bench/.
func pyInterpreter(cfg *config, side string) string {
	if side == "emq" {
		return filepath.Join(cfg.PythonSDKDir, ".venv", "bin", "python")
	}
	return filepath.Join(cfg.PythonDir, ".venv", "bin", "python")
}

// runPython runs bench/python/bench.py for every scenario and every side
// of cfg.PythonSides (one process each, the sides of a scenario one after
// the other) against the server at addr with cfg's load, and returns the
// sides' results with the rows built. A missing interpreter or package fails
// with the install hint: the Python rows are part of the benchmark, never
// silently left out.
func runPython(ctx context.Context, cfg *config, addr string, reset func(context.Context) error, log io.Writer) (*PythonReport, error) {
	rep := &PythonReport{Versions: map[string]string{}, Notes: map[string]string{}, Results: map[string]map[string]NodeResult{}}
	for _, side := range cfg.PythonSides {
		if _, err := os.Stat(pyInterpreter(cfg, side)); err != nil {
			return nil, fmt.Errorf("%s is missing: %s", pyInterpreter(cfg, side), hintPython)
		}
		rep.Sides = append(rep.Sides, side)
		rep.Results[side] = map[string]NodeResult{}
	}
	// Scenario by scenario, side after side: the sides of one scenario run
	// within a minute or two of each other, so that a load that changes
	// over the run disturbs them alike.
	for _, sc := range pyScenarios {
		for _, side := range cfg.PythonSides {
			if err := reset(ctx); err != nil {
				return nil, err
			}
			r, err := runPySide(ctx, cfg, side, sc, addr, log)
			if err != nil {
				return nil, err
			}
			res, ok := r.Results[sc]
			if !ok {
				return nil, fmt.Errorf("python bench.py: no %s result for %s", sc, side)
			}
			rep.Python = r.Python
			rep.Versions[side], rep.Notes[side], rep.Results[side][sc] = r.Version, r.Notes, res
		}
	}
	if len(rep.Sides) < len(pySides) {
		var left []string
		for _, s := range pySides {
			if !contains(rep.Sides, s) {
				left = append(left, s)
			}
		}
		rep.Missing = "not measured in this run: " + strings.Join(left, ", ") + " (-python-sides " + strings.Join(cfg.PythonSides, ",") + ")"
	}
	rep.Rows = pyRows(cfg, rep)
	return rep, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// pyRows turns the Python half's results into table rows, with the
// targets the Python SDK is held to (judged only when it was measured).
func pyRows(cfg *config, rep *PythonReport) []PyRow {
	sdk, arq, rq := rep.Results["emq"], rep.Results["arq"], rep.Results["rq"]
	var rows []PyRow
	row := func(r PyRow) PyRow {
		r.RatioArq, r.RatioRQ = ratio(r.SDK, r.Arq), ratio(r.SDK, r.RQ)
		return r
	}
	through := func(key, scenario, sc, target string, want float64, note string) {
		r := row(PyRow{Key: "py_" + key, Scenario: scenario, Unit: "jobs/s", Better: "higher",
			SDK: sdk[sc].JobsPerSec, Arq: arq[sc].JobsPerSec, RQ: rq[sc].JobsPerSec, Target: target, Note: note})
		if want > 0 && sdk != nil {
			r.Met = met(r.RatioArq >= want)
		}
		rows = append(rows, r)
	}
	through("enqueue_one", fmt.Sprintf("P1. enqueue, one job per call (%d producers)", cfg.Producers), "enqueue_one", "", 0, "queue.push vs arq enqueue_job vs RQ Queue.enqueue")
	through("enqueue_batch", fmt.Sprintf("P2. enqueue, batched (%d per call)", cfg.Batch), "enqueue_batched", "", 0,
		"queue.push_batch vs RQ enqueue_many; arq has no batched enqueue: its figure is one enqueue_job per job, measured again")
	through("drain", fmt.Sprintf("P3. drain a pre-filled queue (concurrency %d)", cfg.Concurrency), "drain", "≥ 2× arq", 2, fmt.Sprintf("RQ: %d SimpleWorker processes", cfg.RQWorkers))
	through("enqueue_process", "P4. enqueue and process at once", "enqueue_process", "≥ 2× arq", 2, fmt.Sprintf("RQ: %d SimpleWorker processes", cfg.RQWorkers))
	lat := func(key, scenario string, get func(NodeResult) float64, target string, limit float64) {
		r := row(PyRow{Key: "py_" + key, Scenario: scenario, Unit: "ms", Better: "lower",
			SDK: get(sdk["latency"]), Arq: get(arq["latency"]), RQ: get(rq["latency"]), Target: target,
			Note: fmt.Sprintf("samples: SDK %d, arq %d, RQ %d", sdk["latency"].Samples, arq["latency"].Samples, rq["latency"].Samples)})
		if limit > 0 && sdk != nil {
			r.Met = met(r.SDK <= limit)
		}
		rows = append(rows, r)
	}
	lat("latency_p50", "P5. enqueue → handler start, idle worker, p50", func(n NodeResult) float64 { return n.P50Ms }, "≤ 5 ms", 5)
	lat("latency_p99", "P5. enqueue → handler start, idle worker, p99", func(n NodeResult) float64 { return n.P99Ms }, "", 0)
	rows = append(rows, row(PyRow{Key: "py_server_cpu_per_job", Scenario: "P6. Redis server CPU per job (INFO cpu, enqueue+process)", Unit: "µs/job", Better: "lower",
		SDK: sdk["enqueue_process"].ServerCPUUsPerJob, Arq: arq["enqueue_process"].ServerCPUUsPerJob, RQ: rq["enqueue_process"].ServerCPUUsPerJob,
		Note: "RQ's job also sends INCR (and RPUSH when timing latency) so that the driver sees it done"}))
	rows = append(rows, row(PyRow{Key: "py_client_cpu_per_job", Scenario: "P7. client CPU per job (the side's processes, enqueue+process)", Unit: "µs/job", Better: "lower",
		SDK: sdk["enqueue_process"].ClientCPUUsPerJob, Arq: arq["enqueue_process"].ClientCPUUsPerJob, RQ: rq["enqueue_process"].ClientCPUUsPerJob,
		Note: "the driver process (producers, and the worker for the SDK and arq) plus RQ's worker processes"}))
	return rows
}

// errNoPythonSides is returned for an empty or unknown -python-sides.
var errNoPythonSides = errors.New("-python-sides takes a comma-separated list of emq, arq, rq")

// parsePySides parses -python-sides.
func parsePySides(s string) ([]string, error) {
	var out []string
	for _, x := range strings.Split(s, ",") {
		x = strings.TrimSpace(x)
		if !contains(pySides, x) || contains(out, x) {
			return nil, errNoPythonSides
		}
		out = append(out, x)
	}
	return out, nil
}
