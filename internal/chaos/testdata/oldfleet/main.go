// Command oldfleet is the OLD side of the mixed-fleet scenario
// (internal/chaos, mixed.go): a worker process and a producer driver
// built against the Go SDK of the frozen 2.2.1 release, extracted from
// git history by the harness (see oldfleet.go). It uses only API the
// 2.2.1 SDK had, and it must keep compiling against that SDK alone: it
// imports nothing of this repository but sdk/go/emq.
//
//	oldfleet worker   a worker process: the WorkerConfig (JSON) in
//	                  EMQCHAOS_WORKER, the harness's record file format
//	oldfleet driver   JSON lines on stdin/stdout, the requests of the
//	                  harness's drivers (connect, mint, push, claim,
//	                  complete, reap, close) and retry {queue, id,
//	                  token, delayMs}, bury {queue, id, token}
package main

import (
	"bufio"
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
)

const workerEnv = "EMQCHAOS_WORKER"

// workerConfig is the harness's WorkerConfig, field for field (JSON).
type workerConfig struct {
	Addrs            []string
	Queue            string
	Concurrency      int
	Lease            time.Duration
	Maintenance      time.Duration
	Wait             time.Duration
	HandlerMin       time.Duration
	HandlerMax       time.Duration
	FailRate         float64
	AlwaysFail       float64
	MaxAttempts      int64
	Backoff          time.Duration
	ConnWriteTimeout time.Duration
	ShutdownTimeout  time.Duration
	Records          string
	Seed             uint64
	Classes          []string // the harness's class words (its wire.Classes): a logged error's class
}

// The record kinds of the harness (records.go).
const (
	recHello       = 'H'
	recStart       = 'S'
	recEnd         = 'E'
	recCompleted   = 'C'
	recStaleDone   = 'Z'
	recStaleSettle = 'Y'
	recRetried     = 'T'
	recBuried      = 'B'
	recFailed      = 'F'
	recLeaseLost   = 'L'
	recReaped      = 'P'
	recOther       = 'U'
	recTally       = 'Q'
	recLogged      = 'W'
)

// stamp is the harness's t= word (records.go): the wall time, unix µs.
func stamp() string { return "t=" + strconv.FormatInt(time.Now().UnixMicro(), 10) }

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: oldfleet worker|driver")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "worker":
		var cfg workerConfig
		if err := json.Unmarshal([]byte(os.Getenv(workerEnv)), &cfg); err != nil {
			fmt.Fprintf(os.Stderr, "oldfleet worker: bad %s: %v\n", workerEnv, err)
			os.Exit(2)
		}
		err = runWorker(cfg)
	case "driver":
		err = runDriver()
	default:
		fmt.Fprintln(os.Stderr, "usage: oldfleet worker|driver")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "oldfleet %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// alwaysFails is the harness's choice of the jobs whose handler fails on
// every attempt (mixed.go): the FNV-1a hash of the id, out of 10,000,
// below share × 10,000.
func alwaysFails(id string, share float64) bool {
	h := fnv.New32a()
	h.Write([]byte(id))
	return float64(h.Sum32()%10000) < share*10000
}

type recorder struct{ f *os.File }

func (r *recorder) job(kind byte, id string, token int64, word string) {
	b := make([]byte, 0, 48)
	b = append(b, kind, ' ')
	b = append(b, id...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, token, 10)
	if word != "" {
		b = append(b, ' ')
		b = append(b, word...)
	}
	b = append(b, '\n')
	_, _ = r.f.Write(b)
}

func (r *recorder) text(kind byte, words ...string) {
	_, _ = r.f.Write([]byte(string(kind) + " " + strings.Join(words, " ") + "\n"))
}

func runWorker(cfg workerConfig) error {
	f, err := os.OpenFile(cfg.Records, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	rec := &recorder{f: f}
	rec.text(recHello, strconv.Itoa(os.Getpid()))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	att := &attribution{rec: rec, tally: &emq.Tally{}, classes: cfg.Classes}
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
		logger.Warn("oldfleet worker: connect failed; retrying", "err", err)
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
		// The handler ignores ctx, as the harness's does: a thawed worker
		// still tries to settle what it ran.
		rmu.Lock()
		d := cfg.HandlerMin
		if span := cfg.HandlerMax - cfg.HandlerMin; span > 0 {
			d += time.Duration(rng.Int64N(int64(span) + 1))
		}
		fail := j.Attempt() == 1 && rng.Float64() < cfg.FailRate
		rmu.Unlock()
		time.Sleep(d)
		if alwaysFails(j.ID.String(), cfg.AlwaysFail) {
			return errors.New("oldfleet: this job always fails")
		}
		if fail {
			return errors.New("oldfleet: a planned failure")
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

// attribution names the job of each settle count, as the harness's does
// (worker.go): the 2.2.1 worker settles on the goroutine that ran the
// handler.
type attribution struct {
	rec     *recorder
	tally   *emq.Tally
	classes []string // the harness's class words
	cur     sync.Map // goroutine id -> *current
}

type current struct {
	id      string
	token   int64
	ended   bool
	ok      bool
	settled bool
}

func (a *attribution) wrap(h emq.Handler) emq.Handler {
	return func(ctx context.Context, j emq.Job) error {
		g := goid()
		cur := &current{id: j.ID.String(), token: j.Token}
		a.cur.Store(g, cur)
		a.rec.job(recStart, cur.id, cur.token, "d="+strconv.FormatInt(j.Deadline.UnixMilli(), 10)+" "+stamp())
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
		kind = recStaleSettle
	}
	a.rec.job(kind, cur.id, cur.token, stamp())
	return true
}

// logged records a warning or an error the SDK logged, as the harness's
// worker does (worker.go): W <op> <class> t=<µs>, op the word after
// "emq: " of the message, class WRONGTYPE when the err attribute says so
// (on a queue with a policy: the tripwire met), else the harness's class
// word it names (a refusal's class: EMQPOLICY, say), else other.
func (a *attribution) logged(r slog.Record) {
	op := "other"
	if rest, ok := strings.CutPrefix(r.Message, "emq: "); ok {
		if w := strings.Fields(rest); len(w) > 0 && strings.Trim(w[0], ",;:.") != "" {
			op = strings.Trim(w[0], ",;:.")
		}
	}
	class := "other"
	r.Attrs(func(at slog.Attr) bool {
		if at.Key == "err" {
			text := at.Value.String()
			if strings.Contains(text, "WRONGTYPE") {
				class = "WRONGTYPE"
				return false
			}
			for _, c := range a.classes {
				if strings.Contains(text, c) {
					class = c
				}
			}
			return false
		}
		return true
	})
	a.rec.text(recLogged, op, class, stamp())
}

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
		a.rec.text(recLeaseLost)
		return
	}
	a.rec.text(recOther, c.String(), strconv.FormatInt(n, 10))
}

type attribHandler struct {
	next slog.Handler
	att  *attribution
}

func (h *attribHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelError || h.next.Enabled(ctx, l)
}

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

func (h *attribHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &attribHandler{next: h.next.WithAttrs(attrs), att: h.att}
}

func (h *attribHandler) WithGroup(name string) slog.Handler {
	return &attribHandler{next: h.next.WithGroup(name), att: h.att}
}

func goid() int64 {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	b := bytes.TrimPrefix(buf[:n], []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		if id, err := strconv.ParseInt(string(b[:i]), 10, 64); err == nil {
			return id
		}
	}
	panic("oldfleet: cannot read the goroutine id")
}

// The driver: the requests of the harness's drivers (internal/chaos,
// driver.go; sdk/ts/chaos/driver.ts describes them).

type request struct {
	Seq     int64  `json:"seq"`
	Op      string `json:"op"`
	URL     string `json:"url"`
	N       int    `json:"n"`
	Queue   string `json:"queue"`
	LeaseMS int64  `json:"leaseMs"`
	DelayMS int64  `json:"delayMs"`
	ID      string `json:"id"`
	Token   int64  `json:"token"`
	Jobs    []struct {
		ID   string `json:"id"`
		Data string `json:"data"`
	} `json:"jobs"`
}

type errorReport struct {
	Name    string `json:"name"`
	Message string `json:"message"`
	Code    string `json:"code"`
	Stale   bool   `json:"stale"`
}

type pushResult struct {
	Enqueued bool         `json:"enqueued"`
	Error    *errorReport `json:"error,omitempty"`
}

type jobReply struct {
	ID    string `json:"id"`
	Token int64  `json:"token"`
}

type reply struct {
	Seq     int64        `json:"seq"`
	Error   *errorReport `json:"error,omitempty"`
	Node    int          `json:"node"`
	IDs     []string     `json:"ids,omitempty"`
	N       int          `json:"n"`
	Results []pushResult `json:"pushed,omitempty"`
	Job     *jobReply    `json:"job,omitempty"`
}

func report(err error) *errorReport {
	r := &errorReport{Name: fmt.Sprintf("%T", err), Message: err.Error(), Stale: errors.Is(err, emq.ErrStale)}
	var ce *emq.ClassError
	if errors.As(err, &ce) {
		r.Code = ce.Class
	}
	return r
}

func runDriver() error {
	var (
		mu  sync.Mutex // the output
		cmu sync.Mutex // the client
		c   *emq.Client
		wg  sync.WaitGroup
	)
	out := bufio.NewWriter(os.Stdout)
	send := func(r reply) {
		b, _ := json.Marshal(r)
		mu.Lock()
		out.Write(append(b, '\n'))
		out.Flush()
		mu.Unlock()
	}
	client := func() (*emq.Client, error) {
		cmu.Lock()
		defer cmu.Unlock()
		if c == nil {
			return nil, errors.New("oldfleet driver: not connected")
		}
		return c, nil
	}
	ctx := context.Background()
	handle := func(req request) reply {
		rep := reply{Seq: req.Seq}
		fail := func(err error) reply { rep.Error = report(err); return rep }
		if req.Op == "connect" {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			nc, err := emq.Connect(cctx, emq.Options{Redis: rueidis.ClientOption{InitAddress: []string{strings.TrimPrefix(req.URL, "redis://")}, DisableCache: true}})
			if err != nil {
				return fail(err)
			}
			cmu.Lock()
			c = nc
			cmu.Unlock()
			rep.Node = nc.Node()
			return rep
		}
		c, err := client()
		if err != nil {
			return fail(err)
		}
		if req.Op == "mint" {
			for range req.N {
				id, err := c.Mint(emq.WorkKind)
				if err != nil {
					return fail(err)
				}
				rep.IDs = append(rep.IDs, id.String())
			}
			return rep
		}
		q, err := c.Queue(req.Queue)
		if err != nil {
			return fail(err)
		}
		switch req.Op {
		case "push":
			jobs := make([]emq.NewJob, len(req.Jobs))
			for i, j := range req.Jobs {
				if jobs[i].ID, err = emq.ParseID(j.ID); err != nil {
					return fail(err)
				}
				jobs[i].Payload = []byte(j.Data)
			}
			enq, err := q.PushBatch(ctx, jobs)
			var be *emq.BatchError
			if err != nil && !errors.As(err, &be) {
				return fail(err)
			}
			for i := range jobs {
				r := pushResult{}
				if be != nil && i < len(be.Errs) && be.Errs[i] != nil {
					r.Error = report(be.Errs[i])
				} else if i < len(enq) {
					r.Enqueued = enq[i]
				}
				rep.Results = append(rep.Results, r)
			}
		case "claim":
			j, ok, err := q.Claim(ctx, time.Duration(req.LeaseMS)*time.Millisecond)
			if err != nil {
				return fail(err)
			}
			if ok {
				rep.Job = &jobReply{ID: j.ID.String(), Token: j.Token}
			}
		case "complete":
			id, err := emq.ParseID(req.ID)
			if err != nil {
				return fail(err)
			}
			if err := q.Complete(ctx, id, req.Token); err != nil {
				return fail(err)
			}
		case "retry":
			id, err := emq.ParseID(req.ID)
			if err != nil {
				return fail(err)
			}
			if _, err := q.Retry(ctx, id, req.Token, time.Duration(req.DelayMS)*time.Millisecond); err != nil {
				return fail(err)
			}
		case "bury":
			id, err := emq.ParseID(req.ID)
			if err != nil {
				return fail(err)
			}
			if err := q.Bury(ctx, id, req.Token); err != nil {
				return fail(err)
			}
		case "reap":
			n, err := q.Reap(ctx, 100, 0)
			if err != nil {
				return fail(err)
			}
			rep.N = n
		default:
			return fail(fmt.Errorf("oldfleet driver: unknown op %q", req.Op))
		}
		return rep
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var req request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			continue
		}
		if req.Op == "close" {
			wg.Wait()
			if c != nil {
				c.Close()
			}
			send(reply{Seq: req.Seq})
			return nil
		}
		if req.Op == "connect" {
			send(handle(req)) // before any other request runs
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			send(handle(req))
		}()
	}
	wg.Wait()
	return sc.Err()
}
