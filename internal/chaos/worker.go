package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// workerEnv names the environment variable that makes a process a worker
// process of the harness; its value is the WorkerConfig as JSON.
const workerEnv = "EMQCHAOS_WORKER"

// WorkerConfig configures one worker process.
type WorkerConfig struct {
	Addrs            []string      // the server (or cluster nodes) to connect to
	Queue            string        // the queue to work
	Concurrency      int           // handlers at once
	Lease            time.Duration // the worker's lease
	Maintenance      time.Duration // how often the queue is maintained (0: the SDK's default)
	Wait             time.Duration // the longest doorbell wait (0: the SDK's default)
	HandlerMin       time.Duration // a handler sleeps a random time in [HandlerMin, HandlerMax]
	HandlerMax       time.Duration
	FailRate         float64       // the share of first attempts whose handler fails (the job is retried)
	AlwaysFail       float64       `json:",omitempty"` // the share of jobs whose handler fails on every attempt (alwaysFails), so they are buried
	MaxAttempts      int64         `json:",omitempty"` // the worker's MaxAttempts (0: the SDK's default)
	Backoff          time.Duration // the delay before a failed job runs again
	KeepResults      int           `json:",omitempty"` // the Go worker's KeepResults count (0: keep none)
	ConnWriteTimeout time.Duration // rueidis ConnWriteTimeout (0: its default)
	ShutdownTimeout  time.Duration // the worker's graceful shutdown budget (0: 5s)
	Records          string        // the record file
	// Classes are the class words of the refusals this tree's manifest
	// names (wire.Classes): the old side's program (testdata/oldfleet),
	// whose release may know fewer, names a logged error's class by them.
	Classes []string `json:",omitempty"`
	Seed    uint64   // the handler's random durations
}

// IsWorker reports whether this process was started by the harness as a
// worker process. A program that runs scenarios (cmd/emqchaos, the tests
// of this package) must begin with
//
//	if chaos.IsWorker() { os.Exit(chaos.RunWorker()) }
//
// because the harness starts worker processes by running its own
// executable again.
func IsWorker() bool { return os.Getenv(workerEnv) != "" || os.Getenv(schedulerEnv) != "" }

// RunWorker runs a worker process from its environment until SIGTERM or
// SIGINT, then drains gracefully; it returns the exit code. Every handler
// start, handler return and settle outcome goes to the record file, one
// write(2) per line, so that a SIGKILL loses nothing recorded.
func RunWorker() int {
	if raw := os.Getenv(schedulerEnv); raw != "" {
		// A scheduler process (the schedulers scenario).
		var cfg SchedulerConfig
		if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
			fmt.Fprintf(os.Stderr, "emqchaos scheduler: bad %s: %v\n", schedulerEnv, err)
			return 2
		}
		if err := runSchedulerProc(cfg); err != nil {
			fmt.Fprintf(os.Stderr, "emqchaos scheduler: %v\n", err)
			return 1
		}
		return 0
	}
	var cfg WorkerConfig
	if err := json.Unmarshal([]byte(os.Getenv(workerEnv)), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "emqchaos worker: bad %s: %v\n", workerEnv, err)
		return 2
	}
	if err := runWorker(cfg); err != nil {
		fmt.Fprintf(os.Stderr, "emqchaos worker: %v\n", err)
		return 1
	}
	return 0
}

func runWorker(cfg WorkerConfig) error {
	rec, err := openRecorder(cfg.Records)
	if err != nil {
		return err
	}
	defer rec.close()
	rec.text(recHello, strconv.Itoa(os.Getpid()))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	att := &attribution{rec: rec, tally: &emq.Tally{}}
	logger := slog.New(&attribHandler{next: slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}), att: att})
	opt := emq.Options{
		Redis:   rueidis.ClientOption{InitAddress: cfg.Addrs, DisableCache: true, ConnWriteTimeout: cfg.ConnWriteTimeout},
		Metrics: att,
		Logger:  logger,
	}
	var c *emq.Client
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		c, err = emq.Connect(cctx, opt)
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return err
		}
		logger.Warn("emqchaos worker: connect failed; retrying", "err", err)
		time.Sleep(100 * time.Millisecond)
	}
	defer c.Close()
	q, err := c.Queue(cfg.Queue)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(os.Getpid())))
	var rmu sync.Mutex
	handler := func(_ context.Context, j emq.Job) error {
		// The handler ignores ctx on purpose: it finishes its work even
		// after the lease is lost, so that the protocol, not the handler,
		// must refuse the stale completion.
		rmu.Lock()
		d := cfg.HandlerMin
		if span := cfg.HandlerMax - cfg.HandlerMin; span > 0 {
			d += time.Duration(rng.Int64N(int64(span) + 1))
		}
		fail := j.Attempt() == 1 && rng.Float64() < cfg.FailRate
		rmu.Unlock()
		time.Sleep(d)
		if alwaysFails(j.ID.String(), cfg.AlwaysFail) {
			return errors.New("emqchaos: this job always fails")
		}
		if fail {
			return errors.New("emqchaos: a planned failure")
		}
		return nil
	}
	shutdown := cfg.ShutdownTimeout
	if shutdown == 0 {
		shutdown = 5 * time.Second
	}
	backoff := cfg.Backoff
	w, err := emq.NewWorker(q, att.wrap(handler), emq.WorkerOptions{
		Concurrency:     cfg.Concurrency,
		Lease:           cfg.Lease,
		Maintenance:     cfg.Maintenance,
		Wait:            cfg.Wait,
		MaxAttempts:     cfg.MaxAttempts,
		Backoff:         func(int64) time.Duration { return backoff },
		ShutdownTimeout: shutdown,
		KeepResults:     emq.Retention{Count: cfg.KeepResults},
	})
	if err != nil {
		return err
	}
	err = w.Run(ctx)
	var totals []string
	for k, v := range att.tally.Snapshot() {
		totals = append(totals, k+"="+strconv.FormatInt(v, 10))
	}
	rec.text(recTally, totals...)
	return err
}

// alwaysFails reports whether the handlers fail id on every attempt, for
// a share of the jobs: the FNV-1a hash of the id, out of 10,000, is below
// share × 10,000. Every worker process decides alike (the old side's
// program, testdata/oldfleet, has the same function), whoever runs an
// attempt.
func alwaysFails(id string, share float64) bool {
	if share <= 0 {
		return false
	}
	h := fnv.New32a()
	h.Write([]byte(id))
	return float64(h.Sum32()%10000) < share*10000
}

// attribution names the job of each settle count. The SDK's worker runs a
// handler and then settles its job (complete, retry, bury) on the same
// goroutine, and counts the outcome there (Metrics.Add) or logs a failure
// there; attribution remembers which job each goroutine's handler last ran
// and records the outcome against it. It relies on that property of
// emq.Worker, and records an unattributed settle (U) when it does not
// hold, which the verdict reports.
type attribution struct {
	rec   *recorder
	tally *emq.Tally
	cur   sync.Map // goroutine id -> *current
}

type current struct {
	id      string
	token   int64
	ended   bool // the handler returned
	ok      bool // ... nil
	settled bool
}

// wrap records the start and the return of every handler.
func (a *attribution) wrap(h emq.Handler) emq.Handler {
	return func(ctx context.Context, j emq.Job) error {
		g := goid()
		cur := &current{id: j.ID.String(), token: j.Token}
		a.cur.Store(g, cur)
		a.rec.job(recStart, cur.id, cur.token, wordDeadline+strconv.FormatInt(j.Deadline.UnixMilli(), 10)+" "+stamp())
		err := h(ctx, j)
		cur.ended, cur.ok = true, err == nil
		word := "ok"
		if err != nil {
			word = "err"
		}
		a.rec.job(recEnd, cur.id, cur.token, word+" "+stamp())
		return err
	}
}

// settle records kind against the job this goroutine's handler last ran,
// when it returned and is not settled yet; it reports whether it did.
func (a *attribution) settle(kind byte) bool {
	g := goid()
	v, ok := a.cur.Load(g)
	if !ok {
		return false
	}
	cur := v.(*current)
	if !cur.ended || cur.settled {
		return false
	}
	cur.settled = true
	a.cur.Delete(g)
	if kind == recStaleDone && !cur.ok {
		kind = recStaleSettle // the handler failed: the refused transition was a retry or a bury
	}
	a.rec.job(kind, cur.id, cur.token, stamp())
	return true
}

// logged records a warning or an error the SDK logged (a W line): the
// word after "emq: " of its message, and the class of its err attribute:
// WRONGTYPE (a script met a key of another type: on a queue with a policy,
// its tripwire), a refusal's class word, or other.
func (a *attribution) logged(r slog.Record) {
	a.rec.text(recLogged, logOp(r.Message), logClass(r), stamp())
}

// logOp is the first word after "emq: " of a log message, or "other".
func logOp(msg string) string {
	rest, ok := strings.CutPrefix(msg, "emq: ")
	if w := strings.Fields(rest); ok && len(w) > 0 {
		if op := strings.Trim(w[0], ",;:."); op != "" {
			return op
		}
	}
	return "other"
}

// logClass is the class of a log record's err attribute: WRONGTYPE, the
// class word of a refusal the SDK names (wire.Classes), or other.
func logClass(r slog.Record) string {
	class := "other"
	r.Attrs(func(at slog.Attr) bool {
		if at.Key != "err" {
			return true
		}
		text := at.Value.String()
		switch {
		case strings.Contains(text, wrongType):
			class = wrongType
		default:
			for _, c := range wire.Classes() {
				if strings.Contains(text, c) {
					class = c
				}
			}
		}
		return false
	})
	return class
}

// wrongType starts the server's reply to a command on a key of another
// type (Redis's own word, not the protocol's).
const wrongType = "WRONGTYPE"

// Add counts for the process's totals and records the settle outcomes.
func (a *attribution) Add(c emq.Counter, queue string, n int64) {
	a.tally.Add(c, queue, n)
	var kind byte
	switch c {
	case emq.Completed:
		kind = recCompleted
	case emq.Stale:
		kind = recStaleDone
	case emq.Retried:
		kind = recRetried
	case emq.Buried:
		kind = recBuried
	case emq.Reaped:
		a.rec.text(recReaped, strconv.FormatInt(n, 10))
		return
	default:
		return
	}
	if n == 1 && a.settle(kind) {
		return
	}
	if c == emq.Stale {
		a.rec.text(recLeaseLost) // the extender's refusals count on its own goroutine
		return
	}
	a.rec.text(recOther, c.String(), strconv.FormatInt(n, 10))
}

// attribHandler passes log records on, and records an error logged on a
// goroutine whose handler returned and whose job is not settled: the
// settle failed, and the worker does not know whether it took effect.
type attribHandler struct {
	next slog.Handler
	att  *attribution
}

// Enabled admits errors always, to attribute them, and the rest as the
// wrapped handler does.
func (h *attribHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelError || h.next.Enabled(ctx, l)
}

// Handle attributes an error to its goroutine's job and passes the record
// on.
func (h *attribHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		h.att.settle(recFailed)
	}
	if r.Level >= slog.LevelWarn {
		h.att.logged(r)
	}
	if !h.next.Enabled(ctx, r.Level) {
		return nil
	}
	return h.next.Handle(ctx, r)
}

// WithAttrs keeps the attribution under the wrapped handler's attributes.
func (h *attribHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &attribHandler{next: h.next.WithAttrs(attrs), att: h.att}
}

// WithGroup keeps the attribution under the wrapped handler's group.
func (h *attribHandler) WithGroup(name string) slog.Handler {
	return &attribHandler{next: h.next.WithGroup(name), att: h.att}
}

// goid returns the current goroutine's id, read from its stack header
// ("goroutine 17 [running]:").
func goid() int64 {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	b := bytes.TrimPrefix(buf[:n], []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		if id, err := strconv.ParseInt(string(b[:i]), 10, 64); err == nil {
			return id
		}
	}
	panic("chaos: cannot read the goroutine id from " + strings.TrimSpace(string(buf[:n])))
}
