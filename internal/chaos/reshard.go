package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/echomq/sdk/go/redistest"
)

func init() { Register(Reshard{}) }

// Reshard is the slot-migration scenario: the queue lives on a local Redis
// Cluster of three primaries, Go and TypeScript producers push to it and
// worker processes (migrationWorkers) work it, while the queue's slot is
// moved from primary to primary again and again as redis-cli resharding
// moves a slot: SETSLOT IMPORTING and MIGRATING, MIGRATE ... KEYS in small
// batches with a pause after each, the keys in one of four orders in turn
// (see orderServer), so that the load runs into the split slot (ASK for a
// key already moved, TRYAGAIN for a script whose keys lie on both sides),
// then SETSLOT NODE on every primary. The promise: every acknowledged job
// completed exactly once, none dropped. It holds because every script the
// workers run declares every key it touches (echomq 2.2.0): the cluster
// refuses a call whose keys are split (TRYAGAIN, resent by the SDKs)
// instead of letting a script miss a row that already moved and drop its
// job.
type Reshard struct{}

// Name is "reshard".
func (Reshard) Name() string { return "reshard" }

// migrationShape is the migration schedule of a run.
type migrationShape struct {
	batch int           // keys per MIGRATE
	pause time.Duration // after each MIGRATE, the slot split
	gap   time.Duration // between migrations, the slot settled
	// settle, when set, makes the gap at least as long as the migration
	// before it: the load, held still while the slot is split, then runs
	// as long again before the next split.
	settle bool
	min    int // migrations at least, even once the load is pushed
}

// migrationWorkers are the languages of the scenario's worker processes,
// in turn: both SDKs' workers run only the declared-key scripts of 2.2.0
// (with the 2.1 pop path, claim_many and complete_claim, the same run lost
// 81 of 2,000 jobs with Go workers and 493 of 2,000 with TypeScript ones).
var migrationWorkers = []Lang{LangTS, LangGo}

func migrationPlan(cfg Config) (*plan, migrationShape) {
	p := &plan{
		// The producers outrun the workers, so that the slot holds a
		// backlog of rows when it is split.
		name: "reshard", jobs: 2000, rate: 1500, producers: 2, batch: 10, workers: 4, cluster: true,
		worker: WorkerConfig{Concurrency: 4, Lease: 5 * time.Second, Maintenance: 500 * time.Millisecond,
			HandlerMin: 5 * time.Millisecond, HandlerMax: 25 * time.Millisecond, FailRate: 0.02, Backoff: 50 * time.Millisecond},
		workerLangs: migrationWorkers, producerLangs: []Lang{LangGo, LangTS},
		checkEvery: 250 * time.Millisecond, drain: 60 * time.Second,
	}
	m := migrationShape{batch: 4, pause: 10 * time.Millisecond, gap: 100 * time.Millisecond, min: 4}
	if cfg.Long {
		// Batches of 20 keys: a split slot stalls the load (every call of
		// the queue meets TRYAGAIN until the slot settles), so migrations of
		// a backlog of thousands of keys in batches of 4 would hold it
		// still for most of the run.
		p.jobs, p.rate, p.drain, p.workers = 20_000, 1500, 5*time.Minute, 6
		m.batch, m.min, m.settle = 20, 20, true
	}
	if cfg.Jobs > 0 {
		p.jobs = cfg.Jobs
	}
	return p, m
}

// Run runs the scenario.
func (Reshard) Run(ctx context.Context, cfg Config) (Result, error) {
	p, m := migrationPlan(cfg)
	p.faults = func(ctx context.Context, r *run) (err error) {
		defer redistest.CatchFailure(&err)
		slot := r.cl.KeySlot(r.queue.Keys().Pending)
		sleepCtx(ctx, 300*time.Millisecond)
		for i := 0; ctx.Err() == nil; i++ {
			if !r.loading() && r.get("migrations") >= int64(m.min) {
				return nil
			}
			from := r.cl.NodeForSlot(slot)
			prim := r.cl.Primaries()
			var to string
			for j := range prim {
				if cand := prim[(i+j)%len(prim)]; cand != from {
					to = cand
					break
				}
			}
			ord := i % orders
			arrange := func(ks []string) []string {
				isRow := func(k string) bool { return strings.HasPrefix(k, r.queue.Keys().RowPrefix()) }
				switch ord {
				case orderSetsFirst:
					slices.SortStableFunc(ks, func(a, b string) int { return cmpBool(isRow(a), isRow(b)) })
				case orderRowsFirst:
					slices.SortStableFunc(ks, func(a, b string) int { return cmpBool(!isRow(a), !isRow(b)) })
				case orderShuffled:
					r.rng.Shuffle(len(ks), func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
				}
				return ks
			}
			start := time.Now()
			keys, batches, err := migrateSlot(ctx, r.cl, slot, from, to, m.batch, m.pause, arrange)
			if err != nil {
				return err
			}
			r.count("migrations", 1)
			r.count("migrations_"+strings.ReplaceAll(orderNames[ord], " ", "_"), 1)
			r.count("keys_migrated", int64(keys))
			r.count("migrate_batches", int64(batches))
			took := time.Since(start)
			r.logf("migrated slot %d from %s to %s (%s): %d keys in %d batches of %d in %v", slot, from, to, orderNames[ord], keys, batches, m.batch, took.Round(time.Millisecond))
			if m.settle {
				sleepCtx(ctx, max(m.gap, took))
			} else {
				sleepCtx(ctx, m.gap)
			}
		}
		return ctx.Err()
	}
	o, err := execute(ctx, cfg, p)
	if err != nil {
		return Result{}, err
	}
	cross, err := crossLanguage(o.run, []Lang{LangGo, LangTS})
	if err != nil {
		return Result{}, err
	}
	r, w := o.run, p.worker
	load := fmt.Sprintf("%s jobs at ~%.0f/s from a Go and a TypeScript producer on one queue of a 3-primary cluster; %d worker processes (%s) × %d; lease %v; handlers %v–%v, %.0f%% of first attempts fail",
		thousands(int64(p.jobs)), p.rate, p.workers, workerNames(p.workerLangs), w.Concurrency, w.Lease, w.HandlerMin, w.HandlerMax, 100*w.FailRate)
	faults := fmt.Sprintf("%d migrations of the queue's slot (%s keys in %s MIGRATE batches of ≤ %d, %v apart)",
		r.get("migrations"), thousands(r.get("keys_migrated")), thousands(r.get("migrate_batches")), m.batch, m.pause)
	res := o.result("slot migration", load, faults)
	for k, v := range cross {
		res.Counts[k] = v
	}
	res.Notes = fmt.Sprintf("completed across languages: %s pushed by Go and completed by TypeScript, %s pushed by TypeScript and completed by Go; ",
		thousands(cross["go_to_ts"]), thousands(cross["ts_to_go"])) + res.Notes
	res.Details = fmt.Sprintf(`**Injected.** A local Redis Cluster of three primaries (redis-server processes, no replicas, no persistence). One queue; a Go producer (the Go SDK in the harness) and a TypeScript producer (the TypeScript SDK's pushBatch through its cluster adapter) push %s jobs between them while %d worker processes (%s) work the queue, %d handlers each. Meanwhile the queue's slot is moved from primary to primary %d times, as redis-cli resharding moves a slot: CLUSTER SETSLOT IMPORTING on the target, MIGRATING on the source, then MIGRATE ... KEYS of at most %d keys at a time (%s keys in %s batches), %v apart — the keys in the order CLUSTER GETKEYSINSLOT lists them (newest first, as redis-cli moves them), the queue's sets before its rows, its rows before its sets, or shuffled, in turn — so that producers and workers run into a split slot — a key already moved is answered ASK, a script whose keys lie on both sides TRYAGAIN — and finally SETSLOT NODE on every primary.

**Checked.** Every worker process records each lease's outcome as the server answered it (one write(2) per line); the accounting of the crashing-workers scenario: every acknowledged job finished exactly once, none lost, every other completion attempt refused. It holds because the scripts the workers run (claim_ids, complete_claim_ids, promote_ids, reap_ids, push_many: echomq 2.2.0) declare every key they touch, rows included: the cluster refuses a call whose keys are split and both SDKs resend it after a short backoff, where the 2.1 pop scripts reached rows through a prefix the cluster could not see, and dropped a job whose row had already moved.
%s`, thousands(int64(p.jobs)), p.workers, workerNames(p.workerLangs), w.Concurrency, r.get("migrations"), m.batch,
		thousands(r.get("keys_migrated")), thousands(r.get("migrate_batches")), m.pause, o.problems())
	return res, nil
}

// The orders a migration moves the slot's keys in, in turn: the order
// CLUSTER GETKEYSINSLOT lists them (what redis-cli resharding does: newest
// keys first, so mostly rows before the queue's sets), the queue's sets
// (pending, active, schedule, dead, wake) before its rows, the rows before
// the sets, and a seeded shuffle.
const (
	orderServer = iota
	orderSetsFirst
	orderRowsFirst
	orderShuffled
	orders
)

var orderNames = [orders]string{"server order", "sets first", "rows first", "shuffled"}

// migrateSlot moves slot from the primary at from to the primary at to in
// batches of at most batch keys, sleeping pause after each, and returns the
// keys moved and the batches sent: CLUSTER SETSLOT IMPORTING on to, SETSLOT
// MIGRATING on from, then MIGRATE ... KEYS of the keys CLUSTER
// GETKEYSINSLOT lists on from, arranged by arrange, and again of what it
// lists afterwards until it lists none (keys made while the slot is split
// are made on to), then SETSLOT NODE to on to, on from and on every other
// primary.
func migrateSlot(ctx context.Context, cl *redistest.Cluster, slot int, from, to string, batch int, pause time.Duration, arrange func([]string) []string) (keys, batches int, err error) {
	src, dst := cl.Node(from), cl.Node(to)
	if src == nil || dst == nil || src == dst {
		return 0, 0, fmt.Errorf("chaos: migrating slot %d from %s to %s", slot, from, to)
	}
	do := func(addr string, args ...string) (string, error) {
		r, err := cl.Do(addr, args...)
		if err != nil {
			return "", fmt.Errorf("chaos: %s on %s: %w", strings.Join(args, " "), addr, err)
		}
		return r, nil
	}
	list := func(n int) ([]string, error) {
		r, err := do(from, "CLUSTER", "GETKEYSINSLOT", strconv.Itoa(slot), strconv.Itoa(n))
		if err != nil || r == "" {
			return nil, err
		}
		return strings.Split(r, "\n"), nil
	}
	s := strconv.Itoa(slot)
	if _, err := do(to, "CLUSTER", "SETSLOT", s, "IMPORTING", src.ID()); err != nil {
		return 0, 0, err
	}
	if _, err := do(from, "CLUSTER", "SETSLOT", s, "MIGRATING", dst.ID()); err != nil {
		return 0, 0, err
	}
	host, port, _ := net.SplitHostPort(to)
	all, err := list(1 << 20)
	if err != nil {
		return 0, 0, err
	}
	all = arrange(all)
	for ctx.Err() == nil {
		var ks []string
		if len(all) > 0 {
			n := min(batch, len(all))
			ks, all = all[:n], all[n:]
		} else if ks, err = list(batch); err != nil {
			return keys, batches, err
		} else if len(ks) == 0 {
			break
		}
		args := append([]string{"MIGRATE", host, port, "", "0", "5000", "KEYS"}, ks...)
		if r, err := do(from, args...); err != nil {
			return keys, batches, err
		} else if r != "OK" && r != "NOKEY" { // NOKEY: every key of the batch was deleted meanwhile
			return keys, batches, fmt.Errorf("chaos: MIGRATE of %d keys of slot %d answered %q", len(ks), slot, r)
		}
		keys += len(ks)
		batches++
		sleepCtx(ctx, pause)
	}
	if err := ctx.Err(); err != nil {
		return keys, batches, errors.Join(err, fmt.Errorf("chaos: slot %d left split between %s and %s", slot, from, to))
	}
	order := []string{to, from}
	for _, addr := range cl.Primaries() {
		if addr != to && addr != from {
			order = append(order, addr)
		}
	}
	for _, addr := range order {
		if _, err := do(addr, "CLUSTER", "SETSLOT", s, "NODE", dst.ID()); err != nil {
			return keys, batches, err
		}
	}
	return keys, batches, nil
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// workerNames says which worker processes langs makes.
func workerNames(langs []Lang) string {
	switch {
	case slices.Equal(langs, []Lang{LangTS}):
		return "TypeScript: the SDK's Worker on ClusterAdapter"
	case slices.Equal(langs, []Lang{LangGo}):
		return "Go: emq.NewWorker"
	}
	return "Go (emq.NewWorker) and TypeScript (the SDK's Worker on ClusterAdapter) in turn"
}
