package chaos

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

func init() { Register(Failover{}) }

// Failover is the cluster-failover scenario: a local Redis Cluster of three
// primaries with one replica each; producers push to a queue whose slot a
// chosen primary serves — half of the jobs with plain Push, half with
// PushDurable and WAIT 1 — while in-process workers run them; the primary
// serving the queue is SIGKILLed mid-run, the cluster fails it after the
// node timeout and promotes its replica, the SDK follows the new slot
// owner, and the killed node is restarted (empty: nodes persist nothing)
// to rejoin as the new primary's replica. Every acknowledged job is
// accounted for, plain and WAIT separately.
//
// Redis replication is asynchronous, so the protocol cannot promise
// Lost == Twice == 0 here: Promised is false, and the notes say what
// replication does and does not promise.
type Failover struct{}

// Name is "failover".
func (Failover) Name() string { return "failover" }

// failoverPlan sizes a run of the scenario.
type failoverPlan struct {
	jobs        int           // jobs in all, half plain, half durable
	produce     time.Duration // the planned length of the pushing
	producers   int           // goroutines per kind of push
	kills       int           // primaries SIGKILLed, one after the other
	workers     int           // in-process workers, one handler each
	nodeTimeout time.Duration // cluster-node-timeout
	lease       time.Duration
	maintenance time.Duration
	handlerMin  time.Duration
	handlerMax  time.Duration
	durability  emq.Durability
	down        time.Duration // how long a killed node stays down (at least until the failover)
	nodeArgs    []string      // redis-server arguments of every node
	drain       time.Duration // the longest wait for the queue to drain
	giveUp      time.Duration // a push unacknowledged this long is given up
}

func failoverSizing(cfg Config) failoverPlan {
	p := failoverPlan{
		jobs: 4000, produce: 8 * time.Second, producers: 2, kills: 1, workers: 8,
		nodeTimeout: time.Second, lease: 2 * time.Second, maintenance: 250 * time.Millisecond,
		handlerMin: 10 * time.Millisecond, handlerMax: 30 * time.Millisecond, down: 4 * time.Second,
		nodeArgs:   []string{"--repl-disable-tcp-nodelay", "yes"},
		durability: emq.Durability{Replicas: 1, Timeout: 500 * time.Millisecond},
		drain:      30 * time.Second, giveUp: 30 * time.Second,
	}
	if cfg.Long {
		p.jobs, p.produce, p.producers, p.kills, p.workers = 100_000, 2*time.Minute, 4, 3, 24
		p.nodeTimeout, p.down, p.drain, p.giveUp = 2*time.Second, 10*time.Second, 3*time.Minute, 2*time.Minute
	}
	if cfg.Jobs > 0 {
		p.jobs = cfg.Jobs
	}
	return p
}

// failoverKind tells plain pushes from durable ones.
type failoverKind int

const (
	failoverPlain   failoverKind = iota // Push
	failoverDurable                     // PushDurable, WAIT 1
)

func (k failoverKind) String() string {
	if k == failoverDurable {
		return "WAIT 1"
	}
	return "plain"
}

// failoverAck is one acknowledged push.
type failoverAck struct {
	kind  failoverKind
	after bool // acknowledged after the first failover was observed
}

// failoverLedger is the run's account: what the producers saw
// acknowledged and what the workers saw of each lease (id, token).
type failoverLedger struct {
	mu        sync.Mutex
	acked     map[string]failoverAck
	order     []string
	starts    map[string]map[int64]int // handler starts per lease
	ranOK     map[string]int           // handlers that returned nil, per id
	completes map[string][]int64       // accepted completions, by token
	buries    map[string][]int64
	doubts    map[string][]int64 // completions whose outcome the worker never learned
	retried   int64
	pushErrs  map[string]int64 // push errors by kind of push and class
	pushes    map[string]int   // push attempts per id
	// unconfirmed holds the ids whose durable push ended in a
	// *DurabilityError: enqueued on the primary, not acknowledged.
	unconfirmed map[string]bool
	ackedAt     []time.Time // when each acknowledgement came, in order
	doneAt      []time.Time // when each accepted completion was counted, in order

	stale, leaseLost, reaped, unattributed atomic.Int64
	durabilityErrors, retries, gave        atomic.Int64
}

func newFailoverLedger() *failoverLedger {
	return &failoverLedger{
		acked: map[string]failoverAck{}, starts: map[string]map[int64]int{}, ranOK: map[string]int{},
		completes: map[string][]int64{}, buries: map[string][]int64{}, doubts: map[string][]int64{},
		pushErrs: map[string]int64{}, pushes: map[string]int{}, unconfirmed: map[string]bool{},
	}
}

func (l *failoverLedger) ack(id string, a failoverAck) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.acked[id]; !ok {
		l.acked[id] = a
		l.order = append(l.order, id)
		l.ackedAt = append(l.ackedAt, time.Now())
	}
}

func (l *failoverLedger) start(id string, token int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.starts[id]
	if m == nil {
		m = map[int64]int{}
		l.starts[id] = m
	}
	m[token]++
}

func (l *failoverLedger) record(m map[string][]int64, id string, token int64) {
	l.mu.Lock()
	m[id] = append(m[id], token)
	l.mu.Unlock()
}

func (l *failoverLedger) acks() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.order)
}

// failoverWorker attributes a worker's settle outcomes to its job. Each
// worker runs one handler (Concurrency 1), and the SDK's worker settles a
// job on the goroutine that ran its handler, right after it: a Completed,
// Stale, Buried or Retried count, or an error logged, after the handler
// returned and before the next handler starts, is that job's. A Stale
// count while the handler runs is a refused lease extension.
type failoverWorker struct {
	led   *failoverLedger
	tally *emq.Tally

	mu      sync.Mutex
	id      string
	token   int64
	ended   bool
	settled bool
}

func (w *failoverWorker) wrap(h emq.Handler) emq.Handler {
	return func(ctx context.Context, j emq.Job) error {
		id := j.ID.String()
		w.mu.Lock()
		w.id, w.token, w.ended, w.settled = id, j.Token, false, false
		w.mu.Unlock()
		w.led.start(id, j.Token)
		err := h(ctx, j)
		w.mu.Lock()
		w.ended = true
		w.mu.Unlock()
		if err == nil {
			w.led.mu.Lock()
			w.led.ranOK[id]++
			w.led.mu.Unlock()
		}
		return err
	}
}

// settle returns the job whose handler returned and is not settled yet,
// and marks it settled.
func (w *failoverWorker) settle() (string, int64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.id == "" || !w.ended || w.settled {
		return "", 0, false
	}
	w.settled = true
	return w.id, w.token, true
}

// Add counts for the run's totals and records the settle outcomes.
func (w *failoverWorker) Add(c emq.Counter, queue string, n int64) {
	w.tally.Add(c, queue, n)
	l := w.led
	switch c {
	case emq.Reaped:
		l.reaped.Add(n)
		return
	case emq.Completed, emq.Stale, emq.Buried, emq.Retried:
	default:
		return
	}
	id, token, ok := w.settle()
	switch {
	case !ok && c == emq.Stale:
		l.leaseLost.Add(n)
	case !ok:
		l.unattributed.Add(n)
	case c == emq.Completed:
		l.record(l.completes, id, token)
		l.mu.Lock()
		l.doneAt = append(l.doneAt, time.Now())
		l.mu.Unlock()
	case c == emq.Buried:
		l.record(l.buries, id, token)
	case c == emq.Stale:
		l.stale.Add(1)
	default:
		l.mu.Lock()
		l.retried++
		l.mu.Unlock()
	}
}

// failoverLog passes a worker's log records on, and records an error
// logged after the handler returned and before its job was settled: the
// completion failed, and the worker does not know whether it took effect.
type failoverLog struct {
	next slog.Handler
	w    *failoverWorker
}

func (h *failoverLog) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelError || h.next.Enabled(ctx, l)
}

func (h *failoverLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		if id, token, ok := h.w.settle(); ok {
			h.w.led.record(h.w.led.doubts, id, token)
		}
	}
	if !h.next.Enabled(ctx, r.Level) {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h *failoverLog) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &failoverLog{next: h.next.WithAttrs(attrs), w: h.w}
}

func (h *failoverLog) WithGroup(name string) slog.Handler {
	return &failoverLog{next: h.next.WithGroup(name), w: h.w}
}

// failoverEvent is one fault of the run and how the cluster answered it.
type failoverEvent struct {
	victim, replica string
	reserve         bool  // the victim also served the reserve's slot ({emq}: fence, node leases, locks)
	pending         int64 // jobs pending when it was killed, -1 when unknown
	killed          time.Time
	promoted        time.Duration // from the kill until the replica answered ROLE as a primary
	promotedAt      time.Time
	agreed          time.Duration // ... until every running node agreed the replica serves the slot
	restarted       time.Duration // ... until the killed node was back as a replica and the cluster healthy
}

// failoverRun is the state of one run.
type failoverRun struct {
	p     failoverPlan
	logf  func(format string, args ...any)
	cl    *redistest.Cluster
	slot  int
	queue *emq.Queue // the workers' handle, for sizes
	led   *failoverLedger
	tally *emq.Tally
	// firstFailover is when the first failover was observed (Unix ns), 0
	// before.
	firstFailover atomic.Int64

	mu     sync.Mutex
	events []failoverEvent
}

// Run runs the scenario. Every process it starts is killed before it
// returns, on every path.
func (Failover) Run(ctx context.Context, cfg Config) (res Result, err error) {
	start := time.Now()
	p := failoverSizing(cfg)
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()>>1 | 1
	}
	h := fnv.New64a()
	h.Write([]byte("failover"))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	r := &failoverRun{p: p, led: newFailoverLedger(), tally: &emq.Tally{}}
	r.logf = func(format string, args ...any) {
		if cfg.Log != nil {
			cfg.Log("failover: "+format, args...)
		}
	}
	base := cfg.Dir
	if base == "" {
		d, err := os.MkdirTemp("", "emqchaos-")
		if err != nil {
			return Result{}, err
		}
		base = d
		defer os.RemoveAll(d)
	}
	dir := filepath.Join(base, "failover")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Result{}, err
	}
	r.logf("seed %d, scratch %s", seed, dir)

	defer redistest.CatchFailure(&err)
	r.cl, err = redistest.NewCluster(filepath.Join(dir, "cluster"),
		redistest.WithReplicas(1), redistest.WithNodeTimeout(p.nodeTimeout), redistest.WithNodeArgs(p.nodeArgs...))
	if err != nil {
		return Result{}, err
	}
	defer r.cl.Close()
	r.logf("cluster of %d primaries with a replica each up in %v", len(r.cl.Primaries()), time.Since(start).Round(time.Millisecond))

	// The queue lands on a primary the seed picks.
	primaries := r.cl.Primaries()
	victim := primaries[rng.IntN(len(primaries))]
	name := ""
	for i := 0; name == "" && i < 10000; i++ {
		n := fmt.Sprintf("failover-%d", i)
		keys, err := wire.NewQueueKeys(n)
		if err != nil {
			return Result{}, err
		}
		if s := r.cl.KeySlot(keys.Pending); r.cl.NodeForSlot(s) == victim {
			name, r.slot = n, s
		}
	}
	if name == "" {
		return Result{}, fmt.Errorf("chaos: failover: no queue name lands on %s", victim)
	}

	logFile, err := os.Create(filepath.Join(dir, "harness.log"))
	if err != nil {
		return Result{}, err
	}
	defer logFile.Close()
	var logMu sync.Mutex
	logOut := &lockedWriter{w: logFile, mu: &logMu}
	connect := func(role string, m emq.Metrics) (*emq.Client, error) {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return emq.Connect(cctx, emq.Options{
			Redis:   rueidis.ClientOption{InitAddress: r.cl.Addrs(), DisableCache: true},
			Metrics: m,
			Logger:  slog.New(slog.NewTextHandler(logOut, nil)).With("client", role),
		})
	}
	plainC, err := connect("plain producers", r.tally)
	if err != nil {
		return Result{}, err
	}
	defer plainC.Close()
	durableC, err := connect("durable producers", r.tally)
	if err != nil {
		return Result{}, err
	}
	defer durableC.Close()
	workC, err := connect("workers", r.tally)
	if err != nil {
		return Result{}, err
	}
	defer workC.Close()
	qPlain, err := plainC.Queue(name)
	if err != nil {
		return Result{}, err
	}
	qDurable, _ := durableC.Queue(name)
	qWork, _ := workC.Queue(name)
	r.queue = qWork

	// Workers, producers and the fault injector run until stopped; they are
	// stopped and waited for before anything is closed.
	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	loadCtx, stopLoad := context.WithCancel(ctx)
	var workers, loaders sync.WaitGroup
	defer func() {
		stopLoad()
		loaders.Wait()
		stopWork()
		workers.Wait()
	}()
	handlerRng := rand.New(rand.NewPCG(seed, 1))
	var rngMu sync.Mutex
	handler := func(context.Context, emq.Job) error {
		rngMu.Lock()
		d := p.handlerMin + time.Duration(handlerRng.Int64N(int64(p.handlerMax-p.handlerMin)+1))
		rngMu.Unlock()
		time.Sleep(d)
		return nil
	}
	for i := 0; i < p.workers; i++ {
		fw := &failoverWorker{led: r.led, tally: r.tally}
		w, err := emq.NewWorker(qWork, fw.wrap(handler), emq.WorkerOptions{
			Concurrency: 1, Lease: p.lease, Maintenance: p.maintenance, Wait: 250 * time.Millisecond,
			Backoff: func(int64) time.Duration { return 100 * time.Millisecond }, ShutdownTimeout: 5 * time.Second,
			Metrics: fw,
			Logger:  slog.New(&failoverLog{next: slog.NewTextHandler(logOut, nil), w: fw}).With("worker", i),
		})
		if err != nil {
			return Result{}, err
		}
		workers.Add(1)
		go func() {
			defer workers.Done()
			_ = w.Run(workCtx)
		}()
	}

	produced := make(chan struct{})
	loaders.Add(1)
	go func() {
		defer loaders.Done()
		defer close(produced)
		var prod sync.WaitGroup
		for _, pk := range []struct {
			kind failoverKind
			c    *emq.Client
			q    *emq.Queue
		}{{failoverPlain, plainC, qPlain}, {failoverDurable, durableC, qDurable}} {
			kind := pk.kind
			jobs := p.jobs / 2
			if kind == failoverPlain {
				jobs = p.jobs - jobs
			}
			for g := 0; g < p.producers; g++ {
				share := jobs / p.producers
				if g < jobs%p.producers {
					share++
				}
				prod.Add(1)
				go func() {
					defer prod.Done()
					r.produce(loadCtx, pk.c, pk.q, kind, share, float64(jobs)/p.produce.Seconds()/float64(p.producers))
				}()
			}
		}
		prod.Wait()
	}()
	faultErr := make(chan error, 1)
	loaders.Add(1)
	go func() {
		defer loaders.Done()
		faultErr <- r.inject(loadCtx, rng)
	}()
	progressCtx, stopProgress := context.WithCancel(ctx)
	defer stopProgress()
	loaders.Add(1)
	go func() {
		defer loaders.Done()
		r.progress(progressCtx, qWork)
	}()

	var ferr error
	select {
	case ferr = <-faultErr:
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	if ferr != nil {
		return Result{}, fmt.Errorf("chaos: failover: injecting the fault: %w", ferr)
	}
	select {
	case <-produced:
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	r.logf("load pushed: %d acknowledged; draining", r.led.acks())
	var violations []string
	if err := r.drain(ctx, qWork); err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		violations = append(violations, fmt.Sprintf("the queue did not drain: %v", err))
	}
	stopProgress()
	stopWork()
	workers.Wait()
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	final, err := failoverFinal(fctx, qWork)
	if err != nil {
		return Result{}, err
	}
	res, err = r.judge(fctx, qWork, final)
	if err != nil {
		return Result{}, err
	}
	res.Violations = append(violations, res.Violations...)
	res.Seed, res.Took = seed, time.Since(start)
	return res, nil
}

// lockedWriter serialises writes of several log handlers to one file.
type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (lw *lockedWriter) Write(b []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.w.Write(b)
}

// produce pushes jobs at rate per second, each until it is acknowledged or
// given up: plain Push, or PushDurable with the plan's durability. A push
// that failed without an answer (the connection, CLUSTERDOWN, a timeout)
// is pushed again with the same id, as a producer would: a job still
// queued or running is a duplicate, left untouched, and an acknowledgement
// after a failed attempt is an acknowledgement of the job — but a job that
// already ran and was retired is enqueued anew, and runs again. A durable
// push answered with a *DurabilityError is enqueued but unconfirmed, and is
// not pushed again.
func (r *failoverRun) produce(ctx context.Context, c *emq.Client, q *emq.Queue, kind failoverKind, jobs int, rate float64) {
	every := time.Duration(float64(time.Second) / rate)
	begin := time.Now()
	for k := 0; k < jobs && ctx.Err() == nil; k++ {
		if d := time.Until(begin.Add(time.Duration(k) * every)); d > 0 {
			failoverSleep(ctx, d)
		}
		id, err := c.Mint(emq.WorkKind)
		for err != nil && ctx.Err() == nil {
			failoverSleep(ctx, 50*time.Millisecond)
			id, err = c.Mint(emq.WorkKind)
		}
		if err != nil {
			return
		}
		payload := []byte(kind.String() + " " + id.String())
		since := time.Now()
		pause := 20 * time.Millisecond
		for attempt := 0; ; attempt++ {
			if attempt > 0 {
				r.led.retries.Add(1)
			}
			r.led.mu.Lock()
			r.led.pushes[id.String()]++
			r.led.mu.Unlock()
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			if kind == failoverDurable {
				_, err = q.PushDurable(pctx, id, payload, r.p.durability)
			} else {
				_, err = q.Push(pctx, id, payload)
			}
			cancel()
			if err == nil {
				r.led.ack(id.String(), failoverAck{kind: kind, after: r.firstFailover.Load() != 0})
				break
			}
			r.led.mu.Lock()
			r.led.pushErrs[failoverErrClass(kind, err)]++
			r.led.mu.Unlock()
			var de *emq.DurabilityError
			if errors.As(err, &de) {
				// Enqueued, but not acknowledged by a replica. Pushing it
				// again would check again while the job is queued, but
				// would enqueue anew a job that already ran and was
				// retired: the producer leaves it unconfirmed.
				r.led.durabilityErrors.Add(1)
				r.led.mu.Lock()
				r.led.unconfirmed[id.String()] = true
				r.led.mu.Unlock()
				break
			}
			if ctx.Err() != nil || time.Since(since) > r.p.giveUp {
				r.led.gave.Add(1)
				r.logf("%s producer: gave up %s after %v: %v", kind, id, time.Since(since).Round(time.Millisecond), err)
				break
			}
			failoverSleep(ctx, pause)
			pause = min(2*pause, 500*time.Millisecond)
		}
	}
}

// inject kills the primary serving the queue's slot at the planned points
// of the load, waits for its replica to be promoted and for the nodes to
// agree, and restarts the killed node, which rejoins as a replica.
func (r *failoverRun) inject(ctx context.Context, rng *rand.Rand) (err error) {
	defer redistest.CatchFailure(&err)
	begin := time.Now()
	for k := 0; k < r.p.kills; k++ {
		at := float64(k+1) / float64(r.p.kills+1) * 0.8 // spread over the first 80% of the load
		at += (rng.Float64() - 0.5) * 0.1
		failoverSleep(ctx, time.Until(begin.Add(time.Duration(at*float64(r.p.produce)))))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		victim := r.cl.NodeForSlot(r.slot)
		reps := r.cl.ReplicasOf(victim)
		if len(reps) != 1 {
			return fmt.Errorf("the primary %s serving slot %d has replicas %v", victim, r.slot, reps)
		}
		ev := failoverEvent{victim: victim, replica: reps[0], pending: -1}
		ev.reserve = r.cl.NodeForKey(wire.KeyVersion) == victim
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		if n, err := r.queue.Size(sctx, emq.SetPending); err == nil {
			ev.pending = n
		}
		cancel()
		ev.killed = time.Now()
		r.cl.Kill(victim)
		r.logf("SIGKILLed the primary %s serving slot %d (%d acknowledged so far, %d pending; it served the reserve's slot too: %v); its replica is %s", victim, r.slot, r.led.acks(), ev.pending, ev.reserve, ev.replica)
		deadline := time.Now().Add(30*time.Second + 10*r.p.nodeTimeout)
		for {
			role, err := r.cl.Do(ev.replica, "ROLE")
			if err == nil && strings.HasPrefix(role, "master\n") {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the replica %s was not promoted within %v of the kill (ROLE: %q, %v)", ev.replica, time.Since(ev.killed).Round(time.Millisecond), role, err)
			}
			failoverSleep(ctx, 10*time.Millisecond)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		ev.promotedAt = time.Now()
		ev.promoted = ev.promotedAt.Sub(ev.killed)
		r.firstFailover.CompareAndSwap(0, time.Now().UnixNano())
		for {
			if owner, err := r.owner(); err == nil && owner == ev.replica {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the nodes did not agree that %s serves slot %d within %v of the kill", ev.replica, r.slot, time.Since(ev.killed).Round(time.Millisecond))
			}
			failoverSleep(ctx, 10*time.Millisecond)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		ev.agreed = time.Since(ev.killed)
		r.logf("failover: %s promoted %v after the kill; the nodes agreed after %v", ev.replica, ev.promoted.Round(time.Millisecond), ev.agreed.Round(time.Millisecond))
		failoverSleep(ctx, time.Until(ev.killed.Add(r.p.down)))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.cl.Restart(ev.victim)
		if reps := r.cl.ReplicasOf(ev.replica); len(reps) != 1 || reps[0] != ev.victim {
			return fmt.Errorf("the restarted node %s did not rejoin as the replica of %s (its replicas: %v)", ev.victim, ev.replica, reps)
		}
		ev.restarted = time.Since(ev.killed)
		r.logf("%s restarted, empty, and rejoined as the replica of %s, %v after the kill", ev.victim, ev.replica, ev.restarted.Round(time.Millisecond))
		r.mu.Lock()
		r.events = append(r.events, ev)
		r.mu.Unlock()
	}
	return nil
}

// owner returns the primary the running nodes agree serves the queue's
// slot, or an error while they disagree.
func (r *failoverRun) owner() (addr string, err error) {
	defer redistest.CatchFailure(&err)
	return r.cl.NodeForSlot(r.slot), nil
}

// progress logs the run's figures every few seconds.
func (r *failoverRun) progress(ctx context.Context, q *emq.Queue) {
	t := time.NewTicker(3 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		sizes, err := q.Sizes(sctx)
		cancel()
		s := fmt.Sprintf("sizes unavailable (%v)", err)
		if err == nil {
			s = fmt.Sprintf("pending %d, active %d, schedule %d, dead %d", sizes[emq.SetPending], sizes[emq.SetActive], sizes[emq.SetSchedule], sizes[emq.SetDead])
		}
		r.logf("acknowledged %d/%d; completed %d; %s", r.led.acks(), r.p.jobs, r.tally.Get(emq.Completed), s)
	}
}

// drain waits until nothing is pending, active or scheduled, twice in a
// row, for up to the plan's drain time.
func (r *failoverRun) drain(ctx context.Context, q *emq.Queue) error {
	deadline := time.Now().Add(r.p.drain)
	empty := 0
	var last error
	for time.Now().Before(deadline) {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		sizes, err := q.Sizes(sctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			last, empty = err, 0
		case sizes[emq.SetPending]+sizes[emq.SetActive]+sizes[emq.SetSchedule] == 0:
			if empty++; empty == 2 {
				return nil
			}
		default:
			last, empty = fmt.Errorf("pending %d, active %d, schedule %d", sizes[emq.SetPending], sizes[emq.SetActive], sizes[emq.SetSchedule]), 0
		}
		failoverSleep(ctx, 200*time.Millisecond)
	}
	if last == nil {
		last = errors.New("timed out")
	}
	return fmt.Errorf("after %v: %w", r.p.drain, last)
}

// failoverFinal reads which set holds each id of the queue at the end.
func failoverFinal(ctx context.Context, q *emq.Queue) (map[string]emq.Set, error) {
	out := map[string]emq.Set{}
	for _, s := range wire.Sets() {
		var cur emq.Cursor
		for {
			ids, next, err := q.Page(ctx, s, cur, 1000)
			if err != nil {
				return nil, err
			}
			for _, id := range ids {
				out[id.String()] = s
			}
			if next == "" {
				break
			}
			cur = next
		}
	}
	return out, nil
}

// failoverFigures are the accounted jobs of one kind of push (or all).
type failoverFigures struct {
	acked, finished, lost, queued, twice, reran, inferred, afterAcked, afterFinished int64
}

// failoverFate is what became of one job.
type failoverFate struct {
	finished, lost, queued, twice, reran, inferred bool
}

func (f *failoverFigures) add(x failoverFate, after bool) {
	b := func(v bool) int64 {
		if v {
			return 1
		}
		return 0
	}
	f.acked++
	f.finished += b(x.finished)
	f.lost += b(x.lost)
	f.queued += b(x.queued)
	f.twice += b(x.twice)
	f.reran += b(x.reran)
	f.inferred += b(x.inferred)
	if after {
		f.afterAcked++
		f.afterFinished += b(x.finished)
	}
}

// judge accounts for every acknowledged job, and for every durable push
// left unconfirmed, and writes the Result. A job is finished when a
// completion (or burial) of it was accepted — or, when none was seen, its
// handler returned nil, the completion's reply never came and its row is
// gone at the end —, lost when it is not finished and in no set at the
// end, queued when it is still in a set, and finished twice when more than
// one completion was accepted.
func (r *failoverRun) judge(ctx context.Context, q *emq.Queue, final map[string]emq.Set) (Result, error) {
	l := r.led
	l.mu.Lock()
	defer l.mu.Unlock()
	var problems []string
	problem := func(format string, args ...any) {
		if len(problems) < 20 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	pushedAgain := func(id string) string {
		if n := l.pushes[id]; n > 1 {
			return fmt.Sprintf("; pushed %d times: a push repeated after a failed attempt enqueues anew a job already retired", n)
		}
		return ""
	}
	var doubleLeases, resurrected, orphans, inDoubt, repushed int64
	for id, starts := range l.starts {
		for tok, n := range starts {
			if n < 2 {
				continue
			}
			doubleLeases++
			why := pushedAgain(id)
			if why == "" {
				why = "; the claim that minted it was lost in the failover, and the promoted replica minted it again"
			}
			problem("%s: token %d was leased to %d handlers%s", id, tok, n, why)
		}
	}
	for _, d := range l.doubts {
		inDoubt += int64(len(d))
	}
	for _, n := range l.pushes {
		if n > 1 {
			repushed++
		}
	}
	fate := func(id, what string) (failoverFate, error) {
		var x failoverFate
		finishes := len(l.completes[id]) + len(l.buries[id])
		set, inSet := final[id]
		switch {
		case finishes == 0 && !inSet && len(l.doubts[id]) > 0:
			finishes, x.inferred = 1, true
		case finishes == 0 && inSet && set == emq.SetDead:
			finishes = 1 // maintenance buried it out of attempts
		}
		switch {
		case finishes == 0 && !inSet:
			info, found, err := q.Get(ctx, emq.MustParseID(id))
			if err != nil {
				return x, fmt.Errorf("chaos: failover: reading %s: %w", id, err)
			}
			if found {
				orphans++
				x.queued = true
				problem("%s (%s): a row in state %s, in no set, at the end", id, what, info.State)
				return x, nil
			}
			x.lost = true
			problem("%s (%s) lost: never run to completion, in no set at the end; handler starts by token %v%s", id, what, l.starts[id], pushedAgain(id))
			return x, nil
		case finishes == 0:
			x.queued = true
			problem("%s (%s) not finished: still in %s at the end", id, what, set)
			return x, nil
		}
		x.finished = true
		x.reran = l.ranOK[id] > 1
		if finishes > 1 {
			x.twice = true
			problem("%s (%s) finished twice: completions accepted at tokens %v%s", id, what, l.completes[id], pushedAgain(id))
		}
		if len(l.completes[id]) > 0 && inSet && set != emq.SetDead {
			resurrected++
			problem("%s (%s) completed, yet in %s at the end", id, what, set)
		}
		return x, nil
	}
	var all, unc failoverFigures
	byKind := map[failoverKind]*failoverFigures{failoverPlain: {}, failoverDurable: {}}
	for _, id := range l.order {
		a := l.acked[id]
		x, err := fate(id, a.kind.String()+" push")
		if err != nil {
			return Result{}, err
		}
		byKind[a.kind].add(x, a.after)
		all.add(x, a.after)
	}
	for _, id := range sortedIDs(l.unconfirmed) {
		if _, ok := l.acked[id]; ok {
			continue
		}
		x, err := fate(id, "unconfirmed WAIT push")
		if err != nil {
			return Result{}, err
		}
		unc.add(x, false)
	}
	unacked := int64(0)
	for id := range l.starts {
		if _, ok := l.acked[id]; !ok && !l.unconfirmed[id] {
			unacked++
		}
	}

	r.mu.Lock()
	events := append([]failoverEvent(nil), r.events...)
	r.mu.Unlock()
	p := r.p
	pl, du := byKind[failoverPlain], byKind[failoverDurable]
	res := Result{
		Scenario:     "cluster failover",
		Load:         fmt.Sprintf("%s jobs over ~%v on one queue of a 3-primary cluster with 1 replica each (%s): half plain Push, half PushDurable (WAIT %d, %v); %d workers × 1; lease %v", failoverThousands(int64(p.jobs)), p.produce, strings.Join(p.nodeArgs, " "), p.durability.Replicas, p.durability.Timeout, p.workers, p.lease),
		Acknowledged: all.acked,
		Finished:     all.finished,
		Lost:         all.lost,
		Twice:        all.twice,
		StaleRefused: l.stale.Load(),
		Promised:     false,
		Counts:       map[string]int64{},
	}
	var faults, resumes []string
	reserve := int64(0)
	for i, ev := range events {
		f := fmt.Sprintf("%d pending at the kill, replica promoted after %v, nodes agreed after %v, killed node back as a replica after %v",
			ev.pending, ev.promoted.Round(10*time.Millisecond), ev.agreed.Round(10*time.Millisecond), ev.restarted.Round(100*time.Millisecond))
		ack, done := failoverFirstAfter(l.ackedAt, ev.promotedAt), failoverFirstAfter(l.doneAt, ev.promotedAt)
		resumes = append(resumes, fmt.Sprintf("failover %d: first push acknowledged %s, first completion accepted %s after the promotion", i+1, failoverAfter(ack), failoverAfter(done)))
		if i == 0 {
			res.Counts["producers_resumed_ms"], res.Counts["workers_resumed_ms"] = ack.Milliseconds(), done.Milliseconds()
		}
		if ev.reserve {
			f += " (it served the reserve's slot too)"
			reserve++
		}
		faults = append(faults, f)
	}
	res.Faults = fmt.Sprintf("%d SIGKILL(s) of the primary serving the queue (node timeout %v): %s", len(events), p.nodeTimeout, strings.Join(faults, "; "))
	for k, n := range map[string]int64{
		"kills": int64(len(events)), "failovers": int64(len(events)), "restarts": int64(len(events)),
		"plain_acknowledged": pl.acked, "plain_finished": pl.finished, "plain_lost": pl.lost, "plain_twice": pl.twice,
		"wait_acknowledged": du.acked, "wait_finished": du.finished, "wait_lost": du.lost, "wait_twice": du.twice,
		"acked_after_failover": all.afterAcked, "finished_after_failover": all.afterFinished,
		"queued": all.queued, "reran": all.reran, "inferred": all.inferred, "in_doubt": inDoubt,
		"double_leases": doubleLeases, "resurrected": resurrected, "orphan_rows": orphans, "unacknowledged": unacked,
		"reaped": l.reaped.Load(), "lease_lost": l.leaseLost.Load(), "unattributed": l.unattributed.Load(),
		"retried": l.retried, "completed": r.tally.Get(emq.Completed), "buried": r.tally.Get(emq.Buried),
		"durability_errors": l.durabilityErrors.Load(), "wait_unconfirmed": unc.acked,
		"wait_unconfirmed_finished": unc.finished, "wait_unconfirmed_lost": unc.lost, "repushed": repushed,
		"producer_retries": l.retries.Load(), "gave_up": l.gave.Load(), "kills_of_reserve_primary": reserve,
	} {
		res.Counts[k] = n
	}
	for k, n := range l.pushErrs {
		res.Counts[k] = n
	}
	if len(events) > 0 {
		res.Counts["failover_ms"] = events[0].promoted.Milliseconds()
	}
	if doubleLeases > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("%d leases (id, token) handed to two handlers: attempts went back across the failover, so the fencing token was minted twice", doubleLeases))
	}
	if resurrected > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("%d completed jobs are queued again at the end", resurrected))
	}
	if orphans > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("%d acknowledged jobs have a row in no set at the end", orphans))
	}
	if n := l.unattributed.Load(); n > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("%d settle outcomes could not be attributed to a job", n))
	}

	notes := []string{
		fmt.Sprintf("plain Push: %d acknowledged, %d lost, %d finished twice; PushDurable, WAIT %d: %d acknowledged, %d lost, %d finished twice, and %d enqueued but unconfirmed (WAIT fell short while the new primary had no replica yet; not pushed again, as that would enqueue anew a job already run: %d of them finished, %d lost)",
			pl.acked, pl.lost, pl.twice, p.durability.Replicas, du.acked, du.lost, du.twice, unc.acked, unc.finished, unc.lost),
		"not promised: replication is asynchronous, so a push acknowledged but not yet shipped when the primary dies is lost; WAIT 1 reports a push once the replica applied it, and with one replica per primary that replica is the one promoted — but WAIT is not consensus (with more replicas the promoted one may lack the write) and rolls nothing back",
		"on one host the window is narrow (the kernel of a SIGKILLed primary still delivers what it had written to the replica's socket); the nodes run with repl-disable-tcp-nodelay yes to widen it, and the figures understate the risk of a real network, a power cut or a partition",
		fmt.Sprintf("jobs active on the dead primary: %d completions in doubt, %d leases reaped from the promoted replica's copy, %d acknowledged jobs run more than once; claims and completions are not WAITed for: %d jobs finished twice, %d fencing tokens minted twice", inDoubt, l.reaped.Load(), all.reran, all.twice, doubleLeases),
		fmt.Sprintf("after the failover the SDK followed the promoted replica: %d jobs acknowledged, %d of them finished; %s (the workers' claim backoff grows to 5 s)", all.afterAcked, all.afterFinished, strings.Join(resumes, "; ")),
	}
	if reserve > 0 {
		notes = append(notes, "the killed primary served the reserve's slot too (the version fence every reconnect runs, node leases, maintenance locks), so every client stalled until the failover")
	}
	if all.inferred > 0 {
		notes = append(notes, fmt.Sprintf("%d jobs counted finished from a completion whose reply never came and a row gone at the end (the work was done; the row may be gone because the push itself was lost)", all.inferred))
	}
	if n := l.gave.Load(); n > 0 {
		notes = append(notes, fmt.Sprintf("%d pushes were never acknowledged and are not counted", n))
	}
	res.Notes = strings.Join(notes, "; ")

	var b strings.Builder
	fmt.Fprintf(&b, "**Injected.** A local Redis Cluster of three primaries, each with one replica (redis-server processes, cluster-node-timeout %v, no persistence, %s). One queue lives in a slot of a primary the seed picks. %d producer goroutines push with plain `Push` and %d with `PushDurable` (WAIT %d, timeout %v), %s jobs in all over ~%v, each push that failed without an answer repeated with the same id until acknowledged (a durable push whose WAIT fell short is left unconfirmed); %d in-process workers (one handler each, %v–%v per job, lease %v, maintenance every %v) run them. ", p.nodeTimeout, strings.Join(p.nodeArgs, " "), p.producers, p.producers, p.durability.Replicas, p.durability.Timeout, failoverThousands(int64(p.jobs)), p.produce, p.workers, p.handlerMin, p.handlerMax, p.lease, p.maintenance)
	fmt.Fprintf(&b, "%d time(s) mid-load the primary serving the queue is SIGKILLed; the harness waits for its replica to answer ROLE as a primary and for every node to agree, then restarts the killed node, which rejoins, empty, as the new primary's replica.\n\n", len(events))
	b.WriteString("| push | acknowledged | finished | lost | finished twice |\n|---|---:|---:|---:|---:|\n")
	fmt.Fprintf(&b, "| plain `Push` | %d | %d | %d | %d |\n| `PushDurable`, WAIT %d | %d | %d | %d | %d |\n\n", pl.acked, pl.finished, pl.lost, pl.twice, p.durability.Replicas, du.acked, du.finished, du.lost, du.twice)
	b.WriteString("**Checked.** Every push the server acknowledged is accounted for: finished (a completion accepted, or inferred from a completion whose reply was lost and a row that is gone), lost (never finished and in no set at the end), or still queued; a job whose completion was accepted more than once is finished twice. Each worker runs one handler, so every settle outcome the SDK counts is attributed to its lease (id, token); a token handed to two handlers means attempts went back across the failover, or that a push repeated after a failed attempt re-created a job already retired (the examples say which).\n\n")
	b.WriteString("**What Redis promises here, and what it does not.** Replication is asynchronous: a primary acknowledges a write before any replica has it, and a failover promotes whatever the replica had received. A plain push acknowledged in that window is lost. On one host the window is narrow — the kernel of a SIGKILLed primary still delivers what it had written to the replica's socket, unless the socket is reset — so the nodes run with `repl-disable-tcp-nodelay yes`, which lets TCP hold replication back up to ~40 ms as a slower link would; a power cut or a partition loses whatever is in flight, and these figures understate that risk. WAIT 1 after the push (the SDK sends it on the push's connection, in the same round trip) reports the push only once the replica applied it, and with one replica per primary that replica is the one promoted, so a WAIT-acknowledged push survives the failover; WAIT is not consensus (with several replicas the promoted one may lack it), a replica that restarts without persistence forgets what it acknowledged, and a WAIT that falls short rolls nothing back. Claims and completions are not WAITed for: a completion the dead primary accepted but had not shipped reappears as an active lease on the promoted replica, is reaped and runs again; a lost claim leaves the job pending there, and its next claim mints the same fencing token again.\n")
	if len(problems) > 0 {
		b.WriteString("\nExamples of what the accounting found:\n\n")
		sort.Strings(problems)
		for _, pr := range problems {
			fmt.Fprintf(&b, "- %s\n", pr)
		}
	}
	res.Details = b.String()
	return res, nil
}

// failoverSleep sleeps for d or until ctx ends.
func failoverSleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// failoverFirstAfter returns how long after t the first of times (in
// order) came, or -1 when none did.
func failoverFirstAfter(times []time.Time, t time.Time) time.Duration {
	i := sort.Search(len(times), func(i int) bool { return times[i].After(t) })
	if i == len(times) {
		return -1
	}
	return times[i].Sub(t)
}

// failoverAfter formats a duration of failoverFirstAfter.
func failoverAfter(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return d.Round(10 * time.Millisecond).String()
}

// failoverThousands formats n with thousands separators.
func failoverThousands(n int64) string {
	if n < 0 {
		return "-" + failoverThousands(-n)
	}
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// failoverErrClass names the class of a push error for the counts:
// plain_/wait_ then durability, moved, clusterdown, tryagain, redis (other
// server errors), timeout or conn (the connection failed).
func failoverErrClass(kind failoverKind, err error) string {
	prefix := "plain_err_"
	if kind == failoverDurable {
		prefix = "wait_err_"
	}
	var de *emq.DurabilityError
	if errors.As(err, &de) {
		if de.Err != nil {
			return prefix + "durability_unknown"
		}
		return prefix + "durability"
	}
	if re, ok := rueidis.IsRedisErr(errors.Unwrap(err)); ok || rueidis.IsRedisBusyGroup(err) {
		if re == nil {
			return prefix + "redis"
		}
		switch _, moved := re.IsMoved(); {
		case moved:
			return prefix + "moved"
		case re.IsClusterDown():
			return prefix + "clusterdown"
		case re.IsTryAgain():
			return prefix + "tryagain"
		}
		return prefix + "redis"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return prefix + "timeout"
	}
	return prefix + "conn"
}

// sortedIDs returns the keys of m, sorted.
func sortedIDs(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}
