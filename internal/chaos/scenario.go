// Package chaos is the fault harness of the reliability campaign: it runs
// the SDK's producers and workers against real redis-server processes
// (single node, AOF, cluster), injects faults (SIGKILLed workers, SIGKILLed
// and restarted servers, SIGSTOPped servers, primary failover), checks the
// protocol's invariants while the load flows, and accounts for every job:
// acknowledged, finished, lost, finished twice, stale completions refused.
//
// cmd/emqchaos runs every scenario and writes docs/reliability.md; the
// tests of this package run the quick variants.
package chaos

import (
	"context"
	"time"
)

// Config sizes a run.
type Config struct {
	// Long selects the full load (e.g. 100,000 jobs) instead of the quick
	// variant CI runs.
	Long bool
	// Jobs overrides the scenario's job count when > 0.
	Jobs int
	// Seed makes the fault schedule repeatable; 0 picks one (reported).
	Seed uint64
	// Dir is a scratch directory for servers, logs and records.
	Dir string
	// Log receives progress lines; nil discards them.
	Log func(format string, args ...any)
}

// Result is one row of docs/reliability.md.
type Result struct {
	Scenario     string        // e.g. "crashing workers"
	Load         string        // e.g. "100,000 jobs, 4 worker processes × 20"
	Faults       string        // e.g. "37 SIGKILLs of worker processes"
	Acknowledged int64         // enqueues the server acknowledged
	Finished     int64         // jobs completed or buried, each counted once
	Lost         int64         // acknowledged jobs neither finished nor still queued at the end
	Twice        int64         // jobs whose completion was accepted more than once
	StaleRefused int64         // completions refused with EMQSTALE
	Promised     bool          // whether the protocol promises Lost == Twice == 0 here
	Notes        string        // what the figures mean, honestly
	Seed         uint64        // the seed of the fault schedule
	Took         time.Duration // wall time
	// Violations are invariant breaches the checker saw while the load ran
	// (row/set invariant, attempts decreasing); empty when none.
	Violations []string
	// Counts are the harness's own tallies by name: faults injected
	// ("kills", "restarts", "pauses", ...), leases "reaped", completions
	// "in_doubt", checker "passes"; nil when the scenario keeps none.
	Counts map[string]int64
	// Details is the scenario's section of docs/reliability.md, in
	// Markdown: what was injected and what was checked. Empty: the report
	// shows Faults and Notes instead.
	Details string
}

// Scenario is one fault scenario.
type Scenario interface {
	// Name is stable and short: workers, restarts, pause, failover, interop.
	Name() string
	// Run runs the scenario to completion and accounts for every job.
	Run(ctx context.Context, cfg Config) (Result, error)
}
