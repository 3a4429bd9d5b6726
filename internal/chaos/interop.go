package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

func init() { Register(Interop{}) }

// Interop is the cross-language scenario: a Go producer (the harness's
// own) and a TypeScript producer (the TypeScript SDK in a node process)
// push to one queue that Go and TypeScript worker processes work together,
// while worker processes of both languages are SIGKILLed (each replaced by
// one of its language) and frozen past their leases. Every job pushed by
// one language and completed by the other is counted, and so is every late
// completion of one language refused with the stale class after the other
// language took the job over. Before the load, a job leased by one SDK,
// reaped and leased again by the other, is completed late by the first:
// the refusal must be the first SDK's typed error of the stale class, in
// both directions.
type Interop struct{}

// Name is "interop".
func (Interop) Name() string { return "interop" }

func interopPlan(cfg Config) *plan {
	p := &plan{
		name: "interop", jobs: 1500, rate: 200, producers: 2, batch: 10, workers: 4,
		worker: WorkerConfig{Concurrency: 10, Lease: 1500 * time.Millisecond, Maintenance: 300 * time.Millisecond,
			HandlerMin: 20 * time.Millisecond, HandlerMax: 250 * time.Millisecond, FailRate: 0.02, Backoff: 100 * time.Millisecond},
		workerLangs: []Lang{LangGo, LangTS}, producerLangs: []Lang{LangGo, LangTS},
		checkEvery: 250 * time.Millisecond, drain: 60 * time.Second,
	}
	if cfg.Long {
		p.jobs, p.rate, p.drain, p.workers = 40_000, 600, 5*time.Minute, 6
		p.worker.Concurrency = 20
		p.worker.HandlerMin, p.worker.HandlerMax = 10*time.Millisecond, 100*time.Millisecond
	}
	if cfg.Jobs > 0 {
		p.jobs = cfg.Jobs
	}
	return p
}

// Run runs the scenario.
func (Interop) Run(ctx context.Context, cfg Config) (Result, error) {
	p := interopPlan(cfg)
	minKills, minFreezes := int64(2), int64(2) // per language: kills; in all: freezes
	if cfg.Long {
		minKills, minFreezes = 8, 6
	}
	freeze := 2*p.worker.Lease + 500*time.Millisecond
	p.faults = func(ctx context.Context, r *run) error {
		// The deterministic cross-language stale checks first, on a queue
		// of their own.
		if err := crossStaleChecks(ctx, r); err != nil {
			return err
		}
		sleepCtx(ctx, 700*time.Millisecond)
		langs := []Lang{LangGo, LangTS}
		for i := 0; ctx.Err() == nil; i++ {
			done := r.get("kills_go") >= minKills && r.get("kills_ts") >= minKills && r.get("freezes") >= minFreezes
			if !r.loading() && done {
				return nil
			}
			lang := langs[i%2]
			if i%3 == 2 || (r.get("kills_go") >= minKills && r.get("kills_ts") >= minKills && r.get("freezes") < minFreezes) {
				proc, err := r.pool.FreezeRandomOf(ctx, r.rng, lang, freeze)
				if err != nil {
					return err
				}
				r.count("freezes", 1)
				r.count("freezes_"+string(proc.Lang), 1)
				r.logf("froze %s worker process %d (pid %d) for %v", proc.Lang, proc.N, proc.Pid(), freeze)
			} else {
				proc, err := r.pool.KillRandomOf(r.rng, lang)
				if err != nil {
					return err
				}
				r.count("kills", 1)
				r.count("kills_"+string(proc.Lang), 1)
				r.logf("SIGKILLed %s worker process %d (pid %d); a %s replacement started", proc.Lang, proc.N, proc.Pid(), proc.Lang)
			}
			sleepCtx(ctx, 800*time.Millisecond+time.Duration(r.rng.Int64N(int64(1500*time.Millisecond))))
		}
		return ctx.Err()
	}
	o, err := execute(ctx, cfg, p)
	if err != nil {
		return Result{}, err
	}
	cross, err := crossLanguage(o.run)
	if err != nil {
		return Result{}, err
	}
	w := p.worker
	load := fmt.Sprintf("%s jobs at ~%.0f/s from a Go and a TypeScript producer; %d worker processes (Go and TypeScript in turn) × %d; lease %v; handlers %v–%v, %.0f%% of first attempts fail",
		thousands(int64(p.jobs)), p.rate, p.workers, w.Concurrency, w.Lease, w.HandlerMin, w.HandlerMax, 100*w.FailRate)
	faults := fmt.Sprintf("%d SIGKILLs of Go and %d of TypeScript worker processes (each replaced in its language); %d SIGSTOPs of a worker process for %v",
		o.run.get("kills_go"), o.run.get("kills_ts"), o.run.get("freezes"), freeze)
	res := o.result("Go and TypeScript together", load, faults)
	for k, v := range cross {
		res.Counts[k] = v
	}
	if res.Counts["stale_probes"] != 2 {
		res.Violations = append(res.Violations, fmt.Sprintf("%d of 2 cross-language stale checks ran", res.Counts["stale_probes"]))
	}
	res.Notes = fmt.Sprintf("completed across languages: %s pushed by Go and completed by TypeScript, %s pushed by TypeScript and completed by Go (%s and %s within a language); %s late completions refused with %s after the other language took the job over, %s within a language; ",
		thousands(cross["go_to_ts"]), thousands(cross["ts_to_go"]), thousands(cross["go_to_go"]), thousands(cross["ts_to_ts"]),
		thousands(cross["stale_cross"]), wire.ClassStale, thousands(cross["stale_same"])) + res.Notes
	res.Details = fmt.Sprintf(`**Injected.** %d worker processes work one queue: Go worker processes (emq.NewWorker) and TypeScript worker processes (the TypeScript SDK's Worker under node, sdk/ts/chaos/worker.ts) in turn, %d handlers each, while a Go producer (the Go SDK in the harness) and a TypeScript producer (the TypeScript SDK's pushBatch, its ids minted by the TypeScript id generator on a node of its own) push %s jobs between them. Every 0.8–2.3 s a worker process is SIGKILLed — Go and TypeScript in turn, each replaced at once by one of its language — or, every third fault, frozen with SIGSTOP for %v (longer than the %v lease) and thawed; handlers ignore their signal, so a thawed worker still tries to complete what it ran.

**Checked.** Both languages' worker processes write the same records, one write(2) per line (the TypeScript worker records each transition's outcome as the server answered it, from a client adapter that wraps the SDK's). The accounting of the crashing-workers scenario holds across languages: every acknowledged job finished exactly once, none lost, the accepted completion carrying the highest token, every other refused; here %s jobs pushed by Go were completed by TypeScript and %s pushed by TypeScript were completed by Go, and %s late completions were refused with %s after a worker of the other language took the job over. Before the load, a job claimed by the TypeScript SDK, reaped and claimed again by the Go SDK was completed late by TypeScript — refused with the TypeScript SDK's StaleError of class %s — and the same the other way round (refused with emq.ErrStale); the new holder's completion was accepted each time.
%s`, p.workers, w.Concurrency, thousands(int64(p.jobs)), freeze, w.Lease,
		thousands(cross["go_to_ts"]), thousands(cross["ts_to_go"]), thousands(cross["stale_cross"]), wire.ClassStale, wire.ClassStale, o.problems())
	return res, nil
}

// crossLanguage reads each worker process's records by language and counts
// the jobs completed by a language other than their producer's, and the
// refused late completions of a language other than the accepted one's.
func crossLanguage(r *run) (map[string]int64, error) {
	completedBy := map[string]Lang{}
	type stale struct {
		id   string
		lang Lang
	}
	var stales []stale
	for _, proc := range r.pool.Procs() {
		f, err := os.Open(proc.Records)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			w := strings.Fields(sc.Text())
			if len(w) < 3 || len(w[0]) != 1 {
				continue
			}
			switch w[0][0] {
			case recCompleted:
				completedBy[w[1]] = proc.Lang
			case recStaleDone:
				stales = append(stales, stale{w[1], proc.Lang})
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	out := map[string]int64{"go_to_ts": 0, "ts_to_go": 0, "go_to_go": 0, "ts_to_ts": 0, "stale_cross": 0, "stale_same": 0}
	r.mu.Lock()
	for id, by := range completedBy {
		if from, ok := r.origin[id]; ok {
			out[string(from)+"_to_"+string(by)]++
		}
	}
	r.mu.Unlock()
	for _, s := range stales {
		by, ok := completedBy[s.id]
		switch {
		case !ok:
		case by != s.lang:
			out["stale_cross"]++
		default:
			out["stale_same"]++
		}
	}
	for _, proc := range r.pool.Procs() {
		out["workers_"+string(proc.Lang)]++
	}
	return out, nil
}

// staleQueue is the queue of the cross-language stale checks.
const staleQueue = "chaos-stale"

// crossStaleChecks runs crossStale on the run's server with its Go client
// and TypeScript driver, counting each check in "stale_probes" and
// recording a failed one as a violation.
func crossStaleChecks(ctx context.Context, r *run) error {
	if r.ts == nil {
		return errors.New("chaos: the cross-language stale checks need the TypeScript driver")
	}
	q, err := r.client.Queue(staleQueue)
	if err != nil {
		return err
	}
	for _, first := range []Lang{LangTS, LangGo} {
		if err := crossStale(ctx, r.client, q, r.ts, first); err != nil {
			r.violate("cross-language stale check (%s first): %v", first, err)
			continue
		}
		r.count("stale_probes", 1)
		r.logf("cross-language stale check (%s first): the late completion was refused with %s", first, wire.ClassStale)
	}
	return nil
}

// crossStale checks one direction of the cross-language lease fence on q
// (its own queue): the SDK of language first claims a fresh job with a
// short lease, the lease expires, the other SDK reaps it and claims the
// job again, and then first's SDK completes it with its old token. That
// late completion must be refused with first's typed error of the stale
// class (emq.ErrStale for Go; for TypeScript the SDK's StaleError, code
// emq.ClassStale), and the new holder's completion accepted.
func crossStale(ctx context.Context, c *emq.Client, q *emq.Queue, ts *tsDriver, first Lang) error {
	const lease = 200 * time.Millisecond
	id, err := c.Mint(emq.WorkKind)
	if err != nil {
		return err
	}
	if _, err := q.Push(ctx, id, []byte("stale check")); err != nil {
		return err
	}
	claimGo := func() (string, int64, error) {
		j, ok, err := q.Claim(ctx, lease)
		if err == nil && !ok {
			err = errors.New("nothing pending")
		}
		return j.ID.String(), j.Token, err
	}
	claimTS := func() (string, int64, error) {
		id, tok, ok, err := ts.Claim(ctx, q.Name(), lease)
		if err == nil && !ok {
			err = errors.New("nothing pending")
		}
		return id, tok, err
	}
	completeGo := func(id string, tok int64) error {
		pid, err := emq.ParseID(id)
		if err != nil {
			return err
		}
		return q.Complete(ctx, pid, tok)
	}
	completeTS := func(id string, tok int64) error { return ts.Complete(ctx, q.Name(), id, tok) }
	reapGo := func() (int, error) { return q.Reap(ctx, 100, 0) }
	reapTS := func() (int, error) { return ts.Reap(ctx, q.Name()) }
	// The second SDK reaps the expired lease and claims the job again.
	claim1, claim2, complete1, complete2, reap2 := claimTS, claimGo, completeTS, completeGo, reapGo
	if first == LangGo {
		claim1, claim2, complete1, complete2, reap2 = claimGo, claimTS, completeGo, completeTS, reapTS
	}
	id1, tok1, err := claim1()
	if err != nil {
		return fmt.Errorf("the first claim (%s): %w", first, err)
	}
	if id1 != id.String() {
		return fmt.Errorf("the first claim (%s) leased %s, not the job pushed (%s)", first, id1, id)
	}
	time.Sleep(2 * lease)
	if n, err := reap2(); err != nil || n != 1 {
		return fmt.Errorf("reaping the expired lease: %d reaped, %v; want 1", n, err)
	}
	id2, tok2, err := claim2()
	if err != nil {
		return fmt.Errorf("the second claim: %w", err)
	}
	if id2 != id1 || tok2 <= tok1 {
		return fmt.Errorf("the second claim leased %s token %d; want %s with a token above %d", id2, tok2, id1, tok1)
	}
	err = complete1(id1, tok1)
	switch {
	case err == nil:
		return fmt.Errorf("the late completion (%s, token %d) was accepted after the other SDK claimed token %d", first, tok1, tok2)
	case first == LangGo && !errors.Is(err, emq.ErrStale):
		return fmt.Errorf("the Go SDK's late completion failed with %v; want emq.ErrStale", err)
	case first == LangTS:
		var te *tsError
		if !errors.As(err, &te) || !te.Stale || te.Code != wire.ClassStale {
			return fmt.Errorf("the TypeScript SDK's late completion failed with %v; want its StaleError of class %s", err, wire.ClassStale)
		}
	}
	if err := complete2(id2, tok2); err != nil {
		return fmt.Errorf("the new holder's completion (token %d): %w", tok2, err)
	}
	return nil
}

// startStaleServer starts a server and the two SDKs' clients for
// crossStale run on its own (see TestCrossStale); close stops everything.
func startStaleServer(ctx context.Context, dir string) (c *emq.Client, q *emq.Queue, ts *tsDriver, close func(), err error) {
	srv, err := redistest.StartServer(redistest.WithDir(filepath.Join(dir, "redis")))
	if err != nil {
		return nil, nil, nil, nil, err
	}
	c, err = emq.Connect(ctx, emq.Options{Redis: rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true}})
	if err != nil {
		srv.Close()
		return nil, nil, nil, nil, err
	}
	ts, err = startTSDriver(ctx, srv.Addr(), filepath.Join(dir, "ts-driver.log"))
	if err != nil {
		c.Close()
		srv.Close()
		return nil, nil, nil, nil, err
	}
	q, err = c.Queue(staleQueue)
	if err != nil {
		ts.Close()
		c.Close()
		srv.Close()
		return nil, nil, nil, nil, err
	}
	return c, q, ts, func() { ts.Close(); c.Close(); srv.Close() }, nil
}
