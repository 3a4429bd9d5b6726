package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

func init() { Register(Interop{}) }

// interopLangs are the languages of the interop scenario's worker
// processes and producers, in turn.
var interopLangs = []Lang{LangGo, LangTS, LangPy}

// Interop is the cross-language scenario: a Go producer (the harness's
// own), a TypeScript producer (the TypeScript SDK in a node process) and a
// Python producer (the Python SDK in a python process) push to one queue
// that Go, TypeScript and Python worker processes work together, while
// worker processes of every language are SIGKILLed (each replaced by one
// of its language) and frozen past their leases. Every job pushed by one
// language and completed by another is counted, and so is every late
// completion of one language refused with the stale class after another
// language took the job over. Before the load, a job leased by one SDK,
// reaped and leased again by another, is completed late by the first: the
// refusal must be the first SDK's typed error of the stale class, for
// every ordered pair of languages.
type Interop struct{}

// Name is "interop".
func (Interop) Name() string { return "interop" }

func interopPlan(cfg Config) *plan {
	p := &plan{
		name: "interop", jobs: 3000, rate: 200, producers: 3, batch: 10, workers: 6,
		worker: WorkerConfig{Concurrency: 10, Lease: 1500 * time.Millisecond, Maintenance: 300 * time.Millisecond,
			HandlerMin: 20 * time.Millisecond, HandlerMax: 250 * time.Millisecond, FailRate: 0.02, Backoff: 100 * time.Millisecond},
		workerLangs: interopLangs, producerLangs: interopLangs,
		checkEvery: 250 * time.Millisecond, drain: 60 * time.Second,
	}
	if cfg.Long {
		p.jobs, p.rate, p.drain, p.workers = 40_000, 600, 5*time.Minute, 9
		p.worker.Concurrency = 20
		p.worker.HandlerMin, p.worker.HandlerMax = 10*time.Millisecond, 100*time.Millisecond
	}
	if cfg.Jobs > 0 {
		p.jobs = cfg.Jobs
	}
	return p
}

// langPairs returns every ordered pair of distinct languages of langs.
func langPairs(langs []Lang) [][2]Lang {
	var out [][2]Lang
	for _, a := range langs {
		for _, b := range langs {
			if a != b {
				out = append(out, [2]Lang{a, b})
			}
		}
	}
	return out
}

// Run runs the scenario.
func (Interop) Run(ctx context.Context, cfg Config) (Result, error) {
	p := interopPlan(cfg)
	// Per language: kills; in all: freezes (the languages in turn, so each
	// is frozen at least once).
	minKills, minFreezes := int64(2), int64(len(p.workerLangs))
	if cfg.Long {
		minKills, minFreezes = 8, 6
	}
	freeze := 2*p.worker.Lease + 500*time.Millisecond
	langs := p.workerLangs
	pairs := langPairs(langs)
	p.faults = func(ctx context.Context, r *run) error {
		// The deterministic cross-language stale checks first, on a queue
		// of their own.
		if err := crossStaleChecks(ctx, r, pairs); err != nil {
			return err
		}
		sleepCtx(ctx, 700*time.Millisecond)
		return killAndFreeze(ctx, r, langs, minKills, minFreezes, freeze)
	}
	// The worker processes' records are read after execute returns:
	// keep them in a scratch directory of this run's own until then.
	cleanup, err := scratchDir(&cfg)
	if err != nil {
		return Result{}, err
	}
	defer cleanup()
	o, err := execute(ctx, cfg, p)
	if err != nil {
		return Result{}, err
	}
	cross, err := crossLanguage(o.run, langs)
	if err != nil {
		return Result{}, err
	}
	w := p.worker
	names := make([]string, len(langs))
	for i, l := range langs {
		names[i] = langName(l)
	}
	all := strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	load := fmt.Sprintf("%s jobs at ~%.0f/s from a %s producer; %d worker processes (%s in turn) × %d; lease %v; handlers %v–%v, %.0f%% of first attempts fail",
		thousands(int64(p.jobs)), p.rate, strings.Join(names[:len(names)-1], ", a ")+" and a "+names[len(names)-1], p.workers, all, w.Concurrency, w.Lease, w.HandlerMin, w.HandlerMax, 100*w.FailRate)
	var kills []string
	for _, l := range langs {
		kills = append(kills, fmt.Sprintf("%d of %s", o.run.get("kills_"+string(l)), langName(l)))
	}
	faults := fmt.Sprintf("SIGKILLs of worker processes: %s (each replaced in its language); %d SIGSTOPs of a worker process for %v",
		strings.Join(kills, ", "), o.run.get("freezes"), freeze)
	res := o.result(all+" together", load, faults)
	for k, v := range cross {
		res.Counts[k] = v
	}
	if res.Counts["stale_probes"] != int64(len(pairs)) {
		res.Violations = append(res.Violations, fmt.Sprintf("%d of %d cross-language stale checks ran", res.Counts["stale_probes"], len(pairs)))
	}
	var across []string
	var within int64
	for _, a := range langs {
		for _, b := range langs {
			n := cross[string(a)+"_to_"+string(b)]
			if a == b {
				within += n
				continue
			}
			across = append(across, fmt.Sprintf("%s pushed by %s and completed by %s", thousands(n), langName(a), langName(b)))
		}
	}
	res.Notes = fmt.Sprintf("completed across languages: %s (%s within a language); %s late completions refused with %s after another language took the job over, %s within a language; ",
		strings.Join(across, ", "), thousands(within), thousands(cross["stale_cross"]), wire.ClassStale, thousands(cross["stale_same"])) + res.Notes
	res.Details = fmt.Sprintf(`**Injected.** %d worker processes work one queue: Go worker processes (emq.NewWorker), TypeScript worker processes (the TypeScript SDK's Worker under node, sdk/ts/chaos/worker.ts) and Python worker processes (the Python SDK under its virtual environment, sdk/python/chaos/worker.py) in turn, %d handlers each, while a Go producer (the Go SDK in the harness), a TypeScript producer (the TypeScript SDK's pushBatch) and a Python producer (the Python SDK's push_batch), the last two with ids minted by their SDK's id generator on a node of its own, push %s jobs between them. First one worker process of each language in turn is frozen with SIGSTOP for %v (longer than the %v lease) and thawed, back to back while the load flows; then every 0.8–2.3 s a worker process is SIGKILLed — the languages in turn, each replaced at once by one of its language — or, every third fault, frozen likewise; handlers ignore their signal, so a thawed worker still tries to complete what it ran.

**Checked.** Every language's worker processes write the same records, one write(2) per line (the TypeScript worker records each transition's outcome as the server answered it, from a client adapter that wraps the SDK's; the Python worker records the answer of each Queue call it settles with). The accounting of the crashing-workers scenario holds across languages: every acknowledged job finished exactly once, none lost, the accepted completion carrying the highest token, every other refused; here %s, and %s late completions were refused with %s after a worker of another language took the job over. Before the load, for every ordered pair of languages (%d), a job claimed by the first SDK, reaped and claimed again by the second was completed late by the first — refused with the first SDK's typed error of class %s (emq.ErrStale, the TypeScript SDK's StaleError, echomq.StaleError) — and the new holder's completion was accepted each time.
%s`, p.workers, w.Concurrency, thousands(int64(p.jobs)), freeze, w.Lease,
		strings.Join(across, ", "), thousands(cross["stale_cross"]), wire.ClassStale, len(pairs), wire.ClassStale, o.problems())
	return res, nil
}

// crossLanguage reads each worker process's records by language and counts
// the jobs completed by a language other than their producer's, and the
// refused late completions of a language other than the accepted one's.
func crossLanguage(r *run, langs []Lang) (map[string]int64, error) {
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
	out := map[string]int64{"stale_cross": 0, "stale_same": 0}
	for _, a := range langs {
		out["workers_"+string(a)] = 0
		for _, b := range langs {
			out[string(a)+"_to_"+string(b)] = 0
		}
	}
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

// staleSDK is what a cross-language stale check does with one SDK on the
// stale queue: claim, complete, reap, and judge a refusal.
type staleSDK struct {
	lang     Lang
	claim    func(ctx context.Context, lease time.Duration) (id string, token int64, ok bool, err error)
	complete func(ctx context.Context, id string, token int64) error
	reap     func(ctx context.Context) (int, error)
}

// goStale is the Go SDK's side of the stale checks, on q.
func goStale(q *emq.Queue) staleSDK {
	return staleSDK{
		lang: LangGo,
		claim: func(ctx context.Context, lease time.Duration) (string, int64, bool, error) {
			j, ok, err := q.Claim(ctx, lease)
			if err != nil || !ok {
				return "", 0, false, err
			}
			return j.ID.String(), j.Token, true, nil
		},
		complete: func(ctx context.Context, id string, tok int64) error {
			pid, err := emq.ParseID(id)
			if err != nil {
				return err
			}
			return q.Complete(ctx, pid, tok)
		},
		reap: func(ctx context.Context) (int, error) { return q.Reap(ctx, 100, 0) },
	}
}

// driverStale is a driven SDK's side of the stale checks, on queue.
func driverStale(d *sdkDriver, queue string) staleSDK {
	return staleSDK{
		lang: d.lang,
		claim: func(ctx context.Context, lease time.Duration) (string, int64, bool, error) {
			return d.Claim(ctx, queue, lease)
		},
		complete: func(ctx context.Context, id string, tok int64) error { return d.Complete(ctx, queue, id, tok) },
		reap:     func(ctx context.Context) (int, error) { return d.Reap(ctx, queue) },
	}
}

// staleRefusal returns nil when err is lang's SDK's typed error of the
// stale class: emq.ErrStale for Go; for a driven SDK its StaleError
// (TypeScript's StaleError, echomq.StaleError) whose class word is
// emq.ClassStale.
func staleRefusal(lang Lang, err error) error {
	if lang == LangGo {
		if !errors.Is(err, emq.ErrStale) {
			return fmt.Errorf("the Go SDK's late completion failed with %v; want emq.ErrStale", err)
		}
		return nil
	}
	var de *driverError
	if !errors.As(err, &de) || !de.Stale || de.Code != wire.ClassStale {
		return fmt.Errorf("the %s SDK's late completion failed with %v; want its StaleError of class %s", langName(lang), err, wire.ClassStale)
	}
	return nil
}

// staleSDKs returns the stale-check side of every language of langs on
// the run: the Go SDK's on the harness's client, the others' on their
// drivers (started when the producers did not start them).
func (r *run) staleSDKs(ctx context.Context, langs []Lang) (map[Lang]staleSDK, error) {
	q, err := r.client.Queue(staleQueue)
	if err != nil {
		return nil, err
	}
	out := map[Lang]staleSDK{}
	for _, l := range langs {
		if l == LangGo {
			out[l] = goStale(q)
			continue
		}
		d, err := r.driver(ctx, l, []string{r.srv.Addr()})
		if err != nil {
			return nil, fmt.Errorf("chaos: the cross-language stale checks need the %s driver: %w", langName(l), err)
		}
		out[l] = driverStale(d, staleQueue)
	}
	return out, nil
}

// crossStaleChecks runs crossStale on the run's server for every pair
// (first, second) of pairs, counting each check that passed in
// "stale_probes" and recording a failed one as a violation.
func crossStaleChecks(ctx context.Context, r *run, pairs [][2]Lang) error {
	var langs []Lang
	for _, pr := range pairs {
		for _, l := range pr {
			if !slices.Contains(langs, l) {
				langs = append(langs, l)
			}
		}
	}
	sdks, err := r.staleSDKs(ctx, langs)
	if err != nil {
		return err
	}
	q, err := r.client.Queue(staleQueue)
	if err != nil {
		return err
	}
	for _, pr := range pairs {
		if err := crossStale(ctx, r.client, q, sdks[pr[0]], sdks[pr[1]]); err != nil {
			r.violate("cross-language stale check (%s first, then %s): %v", pr[0], pr[1], err)
			continue
		}
		r.count("stale_probes", 1)
		r.logf("cross-language stale check (%s first, then %s): the late completion was refused with %s", pr[0], pr[1], wire.ClassStale)
	}
	return nil
}

// crossStale checks one direction of the cross-language lease fence on q
// (its own queue): the SDK first claims a fresh job (pushed by the Go
// client c) with a short lease, the lease expires, the SDK second reaps
// it and claims the job again, and then first completes it with its old
// token. That late completion must be refused with first's typed error of
// the stale class (staleRefusal), and the new holder's completion
// accepted.
func crossStale(ctx context.Context, c *emq.Client, q *emq.Queue, first, second staleSDK) error {
	const lease = 200 * time.Millisecond
	id, err := c.Mint(emq.WorkKind)
	if err != nil {
		return err
	}
	if _, err := q.Push(ctx, id, []byte("stale check")); err != nil {
		return err
	}
	id1, tok1, ok, err := first.claim(ctx, lease)
	if err == nil && !ok {
		err = errors.New("nothing pending")
	}
	if err != nil {
		return fmt.Errorf("the first claim (%s): %w", first.lang, err)
	}
	if id1 != id.String() {
		return fmt.Errorf("the first claim (%s) leased %s, not the job pushed (%s)", first.lang, id1, id)
	}
	time.Sleep(2 * lease)
	// The second SDK reaps the expired lease and claims the job again.
	if n, err := second.reap(ctx); err != nil || n != 1 {
		return fmt.Errorf("reaping the expired lease (%s): %d reaped, %v; want 1", second.lang, n, err)
	}
	id2, tok2, ok, err := second.claim(ctx, lease*50)
	if err == nil && !ok {
		err = errors.New("nothing pending")
	}
	if err != nil {
		return fmt.Errorf("the second claim (%s): %w", second.lang, err)
	}
	if id2 != id1 || tok2 <= tok1 {
		return fmt.Errorf("the second claim (%s) leased %s token %d; want %s with a token above %d", second.lang, id2, tok2, id1, tok1)
	}
	err = first.complete(ctx, id1, tok1)
	if err == nil {
		return fmt.Errorf("the late completion (%s, token %d) was accepted after the %s SDK claimed token %d", first.lang, tok1, second.lang, tok2)
	}
	if err := staleRefusal(first.lang, err); err != nil {
		return err
	}
	if err := second.complete(ctx, id2, tok2); err != nil {
		return fmt.Errorf("the new holder's completion (%s, token %d): %w", second.lang, tok2, err)
	}
	return nil
}

// startStaleServer starts a server, the Go SDK's client and the drivers of
// the other languages of langs for crossStale run on its own (see
// TestCrossStale); close stops everything.
func startStaleServer(ctx context.Context, dir string, langs []Lang) (c *emq.Client, q *emq.Queue, sdks map[Lang]staleSDK, drivers map[Lang]*sdkDriver, close func(), err error) {
	srv, err := redistest.StartServer(redistest.WithDir(filepath.Join(dir, "redis")))
	if err != nil {
		return nil, nil, nil, nil, nil, err
	}
	drivers = map[Lang]*sdkDriver{}
	stop := func() {
		for _, d := range drivers {
			d.Close()
		}
		if c != nil {
			c.Close()
		}
		srv.Close()
	}
	c, err = emq.Connect(ctx, emq.Options{Redis: rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true}})
	if err != nil {
		stop()
		return nil, nil, nil, nil, nil, err
	}
	if q, err = c.Queue(staleQueue); err != nil {
		stop()
		return nil, nil, nil, nil, nil, err
	}
	sdks = map[Lang]staleSDK{}
	for _, l := range langs {
		if l == LangGo {
			sdks[l] = goStale(q)
			continue
		}
		d, err := startDriver(ctx, l, []string{srv.Addr()}, filepath.Join(dir, string(l)+"-driver.log"))
		if err != nil {
			stop()
			return nil, nil, nil, nil, nil, err
		}
		drivers[l] = d
		sdks[l] = driverStale(d, staleQueue)
	}
	return c, q, sdks, drivers, stop, nil
}

// killAndFreeze injects the worker faults of the interop scenarios while
// the load flows: first one freeze (SIGSTOP for freeze, then SIGCONT) of a
// worker process of each language of langs in turn, back to back; then
// every 0.8–2.3 s a SIGKILL of a worker process (the languages in turn,
// each replaced by one of its language) or, every third fault, a freeze;
// until the load is pushed, each language had minKills kills and there
// were minFreezes freezes in all. It counts kills, freezes, and both per
// language ("kills_<lang>", "freezes_<lang>").
func killAndFreeze(ctx context.Context, r *run, langs []Lang, minKills, minFreezes int64, freeze time.Duration) error {
	killed := func() bool {
		for _, l := range langs {
			if r.get("kills_"+string(l)) < minKills {
				return false
			}
		}
		return true
	}
	kills, freezes := 0, 0
	freezeOne := func() error {
		lang := langs[freezes%len(langs)]
		freezes++
		proc, err := r.pool.FreezeRandomOf(ctx, r.rng, lang, freeze)
		if err != nil {
			return err
		}
		r.count("freezes", 1)
		r.count("freezes_"+string(proc.Lang), 1)
		r.logf("froze %s worker process %d (pid %d) for %v", proc.Lang, proc.N, proc.Pid(), freeze)
		return nil
	}
	// One freeze per language first, back to back while the load flows
	// (a freeze while jobs are being run is what makes late
	// completions meet the fence; spread among the kills, as before,
	// the later freezes fell after the load on a loaded machine and a
	// run could refuse none).
	for range langs {
		if ctx.Err() != nil || !r.loading() {
			break
		}
		if err := freezeOne(); err != nil {
			return err
		}
		sleepCtx(ctx, 300*time.Millisecond)
	}
	for i := 1; ctx.Err() == nil; i++ {
		if !r.loading() && killed() && r.get("freezes") >= minFreezes {
			return nil
		}
		// Then every third fault is a freeze; kills and freezes each
		// take the languages in turn.
		if i%3 == 0 || (killed() && r.get("freezes") < minFreezes) {
			if err := freezeOne(); err != nil {
				return err
			}
		} else {
			lang := langs[kills%len(langs)]
			kills++
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
