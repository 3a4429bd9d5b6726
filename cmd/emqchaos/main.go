// Command emqchaos runs the reliability campaign's fault scenarios against
// real redis-server processes and writes docs/reliability.md.
//
//	go run ./cmd/emqchaos [-long] [-only NAMES] [-seed N] [-out docs/reliability.md]
//
// Each scenario (internal/chaos: workers, restarts, pause, and any other
// registered, such as failover and interop — Go, TypeScript and Python
// producers and worker processes on one queue) runs producers, real worker processes
// and an invariant checker, injects its faults, and accounts for every
// acknowledged job. Without -long it runs the quick variants CI runs.
// emqchaos exits 1 when a scenario fails to run, or loses or finishes
// twice a job it promises not to, or sees an invariant violation.
//
// The harness starts its worker processes by running this binary again
// (with the environment variable EMQCHAOS_WORKER set); the hidden
// subcommand `worker` is what they run. The interop scenario's TypeScript
// worker processes and producer run the TypeScript SDK's chaos programs
// (sdk/ts/chaos, built to sdk/ts/dist/chaos) under node: build sdk/ts
// first (cd sdk/ts && npm ci && npx tsc -p tsconfig.json). Its Python ones
// run the Python SDK's (sdk/python/chaos) in the SDK's virtual environment
// sdk/python/.venv, which ./test.sh makes; so do the TypeScript and
// Python scheduler processes of the jobschedulers scenario
// (sdk/ts/chaos/scheduler.ts, sdk/python/chaos/scheduler.py), whose Go
// ones are this binary again, as for workers. The mixed scenario's old side
// (producer and worker processes of the frozen 2.2.1 release) is built
// from git history (internal/chaos/testdata/oldfleet against the 2.2.1
// commit's sdk/go): it needs a clone with history (not shallow) and go on
// PATH, and caches the program under the user's cache directory
// ($EMQCHAOS_CACHE overrides it); so are the old sides of mixed23,
// mixed24, mixed25, mixed26policy and mixed27rate (the 2.3.0, 2.4.0, 2.5.0,
// 2.6.1 and 2.7.0 releases). The policies scenario (this tree's Go workers
// while a controller pauses, resumes and caps the queue) and mixed26policy
// (2.6.1 workers beside them, refused on the queue's tripwire) judge each
// lease's claim time against the policy in force; `go run ./cmd/emqchaos
// -long -only policies,mixed26policy` runs their long variants. The rates
// scenario (this tree's Go workers on a queue with a rate limit) and
// mixed27rate (2.7.0 workers beside them while a limit is set and removed:
// their claims refused, their settles accepted) judge every window of the
// limit's period and the saturated start rate; `go run ./cmd/emqchaos
// -long -only rates,mixed27rate` runs their long variants.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/echomq/echomq/internal/chaos"
)

func main() {
	if chaos.IsWorker() {
		os.Exit(chaos.RunWorker())
	}
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) > 0 && args[0] == "worker" {
		fmt.Fprintln(os.Stderr, "emqchaos: the worker subcommand is started by the harness itself")
		return 2
	}
	fs := flag.NewFlagSet("emqchaos", flag.ContinueOnError)
	long := fs.Bool("long", false, "run the long variants (e.g. 100,000 jobs) instead of the quick ones")
	only := fs.String("only", "", "comma-separated scenario names to run (default: all registered)")
	seed := fs.Uint64("seed", 0, "seed of the fault schedules (0 picks one; it is reported)")
	out := fs.String("out", "docs/reliability.md", "where to write the report (- for stdout, empty for none)")
	jobs := fs.Int("jobs", 0, "override every scenario's job count")
	dir := fs.String("dir", "", "keep servers' data, records and logs under this directory (default: a temporary one, removed)")
	list := fs.Bool("list", false, "list the registered scenarios and exit")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: emqchaos [-long] [-only NAMES] [-seed N] [-out docs/reliability.md] [-jobs N] [-dir DIR] [-list]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	all := chaos.Scenarios()
	if *list {
		for _, s := range all {
			fmt.Println(s.Name())
		}
		return 0
	}
	scenarios := all
	if *only != "" {
		scenarios = nil
		for _, name := range strings.Split(*only, ",") {
			s := chaos.Lookup(strings.TrimSpace(name))
			if s == nil {
				var names []string
				for _, s := range all {
					names = append(names, s.Name())
				}
				fmt.Fprintf(os.Stderr, "emqchaos: no scenario %q (registered: %s)\n", name, strings.Join(names, ", "))
				return 2
			}
			scenarios = append(scenarios, s)
		}
	}
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())>>1 | 1
	}
	if *dir == "" {
		// One temporary directory for the whole run, removed at its end: a
		// scenario reads its worker processes' records after its load is
		// torn down (interop, reshard), so a directory per scenario removed
		// when the load ends would be gone by then.
		d, err := os.MkdirTemp("", "emqchaos-")
		if err != nil {
			fmt.Fprintf(os.Stderr, "emqchaos: %v\n", err)
			return 1
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	start := time.Now()
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%7.1fs  %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	rep := &chaos.Report{
		Date: start, Machine: chaos.Machine(), Redis: chaos.RedisVersion(), Go: runtime.Version(),
		Command: command(args), Seed: *seed, Long: *long, Failed: map[string]error{},
	}
	logf("emqchaos: seed %d; %s; %s", *seed, rep.Redis, rep.Machine)
	failed := false
	for _, s := range scenarios {
		if ctx.Err() != nil {
			break
		}
		logf("== %s", s.Name())
		cfg := chaos.Config{Long: *long, Jobs: *jobs, Seed: *seed, Dir: *dir, Log: logf}
		res, err := s.Run(ctx, cfg)
		if err != nil {
			logf("%s: did not run to a verdict: %v", s.Name(), err)
			rep.Failed[s.Name()] = err
			failed = true
			continue
		}
		rep.Results = append(rep.Results, res)
		logf("%s: acknowledged %d, finished %d, lost %d, finished twice %d, stale completes refused %d, %d violations, took %v",
			s.Name(), res.Acknowledged, res.Finished, res.Lost, res.Twice, res.StaleRefused, len(res.Violations), res.Took.Round(time.Second))
		for _, v := range res.Violations {
			logf("%s: violation: %s", s.Name(), v)
		}
		if len(res.Violations) > 0 || res.Promised && (res.Lost != 0 || res.Twice != 0 || res.Finished != res.Acknowledged) {
			failed = true
		}
	}
	if ctx.Err() != nil {
		logf("emqchaos: interrupted; no report written")
		return 1
	}
	if *out != "" {
		var buf bytes.Buffer
		if err := rep.Write(&buf); err != nil {
			fmt.Fprintf(os.Stderr, "emqchaos: writing the report: %v\n", err)
			return 1
		}
		if *out == "-" {
			_, _ = os.Stdout.Write(buf.Bytes())
		} else if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "emqchaos: %v\n", err)
			return 1
		} else {
			logf("emqchaos: wrote %s", *out)
		}
	}
	if failed {
		return 1
	}
	return 0
}

// command is the command line as it is run from the repository root.
func command(args []string) string {
	return strings.TrimSpace("go run ./cmd/emqchaos " + strings.Join(args, " "))
}
