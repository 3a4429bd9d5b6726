package chaos

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

func init() { Register(Restarts{}) }

// Restarts is the server-restart scenario: redis-server runs with an
// append-only file fsynced on every write, and is SIGKILLed and started
// again on the same data directory several times while producers push and
// workers work.
type Restarts struct{}

// Name is "restarts".
func (Restarts) Name() string { return "restarts" }

func restartsPlan(cfg Config) *plan {
	p := &plan{
		name: "restarts", jobs: 4000, rate: 250, producers: 2, batch: 10, workers: 3,
		worker: WorkerConfig{Concurrency: 10, Lease: 2 * time.Second, Maintenance: 500 * time.Millisecond,
			HandlerMin: 10 * time.Millisecond, HandlerMax: 100 * time.Millisecond, FailRate: 0.02, Backoff: 100 * time.Millisecond},
		serverArgs: []string{"--appendonly", "yes", "--appendfsync", "always"},
		checkEvery: 250 * time.Millisecond, drain: 90 * time.Second,
	}
	if cfg.Long {
		p.jobs, p.rate, p.drain = 30_000, 500, 5*time.Minute
	}
	if cfg.Jobs > 0 {
		p.jobs = cfg.Jobs
	}
	return p
}

// Run runs the scenario.
func (Restarts) Run(ctx context.Context, cfg Config) (Result, error) {
	p := restartsPlan(cfg)
	minRestarts := int64(3)
	if cfg.Long {
		minRestarts = 10
	}
	p.faults = func(ctx context.Context, r *run) error {
		for ctx.Err() == nil {
			if !r.loading() && r.get("restarts") >= minRestarts {
				return nil
			}
			sleepCtx(ctx, 2*time.Second+time.Duration(r.rng.Int64N(int64(2*time.Second))))
			if ctx.Err() != nil {
				break
			}
			down := time.Duration(r.rng.Int64N(int64(time.Second)))
			if err := r.srv.Signal(syscall.SIGKILL); err != nil {
				return err
			}
			sleepCtx(ctx, down)
			start := time.Now()
			if err := r.srv.Relaunch(); err != nil {
				return err
			}
			r.count("restarts", 1)
			r.logf("SIGKILLed redis-server, down %v, restarted from its AOF in %v", down.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
			r.verifyFence(ctx)
		}
		return ctx.Err()
	}
	o, err := execute(ctx, cfg, p)
	if err != nil {
		return Result{}, err
	}
	w := p.worker
	load := fmt.Sprintf("%s jobs at ~%.0f/s; %d worker processes × %d; lease %v; handlers %v–%v; AOF, appendfsync always",
		thousands(int64(p.jobs)), p.rate, p.workers, w.Concurrency, w.Lease, w.HandlerMin, w.HandlerMax)
	restarts := o.run.get("restarts")
	faults := fmt.Sprintf("%d SIGKILLs of redis-server, each restarted on its data directory after 0–1 s down", restarts)
	res := o.result("server restarts (AOF)", load, faults)
	res.Notes = fmt.Sprintf("%s pushes retried with the same id; version fence and bundle re-verified after %d of %d restarts; %s completion attempts in doubt (the connection died first); ",
		thousands(res.Counts["producer_retries"]), res.Counts["fence_verified"], restarts, thousands(res.Counts["in_doubt"])) + res.Notes
	res.Details = fmt.Sprintf(`**Injected.** redis-server runs with appendonly yes and appendfsync always. Every 2–4 s it is SIGKILLed, left down for 0–1 s, and started again on the same port and data directory (%d times here), while two producers push %s jobs and %d worker processes (%d handlers each) work them.

**Checked.** A producer counts an enqueue acknowledged only when the server replied to it; a push that failed is pushed again with the same id and payload until it is (enqueue is idempotent by id). Every acknowledged job must be finished exactly once, nothing lost. After each restart the harness checks that the SDK fenced the keyspace again: the fence script is back in the restarted server's script cache (it was emptied by the restart, so an SDK client ran it after reconnecting; scripts are reloaded on NOSCRIPT), the reserve's version record is %s and the bundle recorded for %s is this bundle. The invariant checker runs throughout (its passes fail while the server is down and resume after).
%s`, restarts, thousands(int64(p.jobs)), p.workers, w.Concurrency, wire.VersionRecord, emq.Version, o.problems())
	return res, nil
}

// verifyFence checks, after a restart, that an SDK client fenced the
// keyspace again: the fence script is in the fresh server's script cache,
// the version record is this client's and the bundle identity is this
// bundle's.
func (r *run) verifyFence(ctx context.Context) {
	rc := r.chk.Client()
	ok := waitUntil(ctx, 15*time.Second, func(ctx context.Context) bool {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		exists, err := rc.Do(cctx, rc.B().ScriptExists().Sha1(wire.ScriptFence.SHA1).Build()).AsIntSlice()
		if err != nil || len(exists) != 1 || exists[0] != 1 {
			return false
		}
		version, err := rc.Do(cctx, rc.B().Get().Key(wire.KeyVersion).Build()).ToString()
		if err != nil || version != wire.VersionRecord {
			return false
		}
		bundle, err := rc.Do(cctx, rc.B().Hget().Key(wire.KeyBundle).Field(emq.Version).Build()).ToString()
		return err == nil && bundle == wire.BundleDigest
	})
	switch {
	case ok && r.client.VersionFound() == wire.VersionRecord:
		r.count("fence_verified", 1)
	case ctx.Err() == nil:
		r.violate("after restart %d the keyspace was not fenced again within 15s (fence script cached, version %s, bundle %s)", r.get("restarts"), wire.VersionRecord, wire.BundleDigest)
	}
}
