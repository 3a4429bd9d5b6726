package emq_test

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// aof is a server that writes every command to its append-only file before
// answering, so a SIGKILL loses nothing it acknowledged.
func aof(t *testing.T) *redistest.Server {
	return redistest.Start(t, redistest.WithArgs("--appendonly", "yes", "--appendfsync", "always"))
}

// keyList is every key of the server, sorted.
func keyList(t *testing.T, srv *redistest.Server) []string {
	t.Helper()
	out, err := srv.Do("KEYS", "*")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, k := range strings.Split(strings.TrimSpace(out), "\n") {
		if k != "" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

func zcard(t *testing.T, srv *redistest.Server, key string) string {
	t.Helper()
	n, err := srv.Do("ZCARD", key)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// After a SIGKILL and a restart (AOF on), the first call of each idempotent
// kind succeeds without the caller seeing the lost connection, and a job
// pushed across it is there exactly once.
func TestIdempotentCallsSurviveRestart(t *testing.T) {
	for run := 0; run < 4; run++ {
		srv := aof(t)
		c := connect(t, srv)
		q := queue(t, c, "reconnect")
		ctx := ctxT(t)
		before := mint(t, c, emq.WorkKind)
		if _, err := q.Push(ctx, before, []byte("before")); err != nil {
			t.Fatal(err)
		}
		// Touch every pipelined connection, so that each is stale after
		// the restart.
		var wg sync.WaitGroup
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() { defer wg.Done(); _, _ = q.Sizes(ctx) }()
		}
		wg.Wait()

		srv.Restart()
		id := mint(t, c, emq.WorkKind)
		var ok bool
		var err error
		switch run % 4 {
		case 0:
			ok, err = q.Push(ctx, id, []byte("after"))
		case 1:
			ok, err = q.Enqueue(ctx, id, []byte("after"))
		case 2:
			var oks []bool
			oks, err = q.PushBatch(ctx, []emq.NewJob{{ID: id, Payload: []byte("after")}})
			ok = len(oks) == 1 && oks[0]
		case 3:
			if _, err = q.Sizes(ctx); err != nil {
				t.Fatalf("run %d: the first Sizes after a restart: %v", run, err)
			}
			if _, _, err = q.Page(ctx, emq.SetPending, "", 10); err != nil {
				t.Fatalf("run %d: Page after a restart: %v", run, err)
			}
			ok, err = q.Push(ctx, id, []byte("after"))
		}
		if err != nil || !ok {
			t.Fatalf("run %d: the first call after a restart = %v, %v; want enqueued, no error", run, ok, err)
		}
		if n := zcard(t, srv, q.Keys().Pending); n != "2" {
			t.Fatalf("run %d: pending holds %s ids, want 2 (the job before the restart, and the one after, once)", run, n)
		}
		info, found, err := q.Get(ctx, id)
		if err != nil || !found || string(info.Payload) != "after" || len(info.In) != 1 {
			t.Fatalf("run %d: Get = %+v, %v, %v", run, info, found, err)
		}
		srv.Stop()
	}
}

// A connection killed under a stream of pushes (CLIENT KILL TYPE normal,
// again and again) costs no push an error, and every job is there once.
func TestPushSurvivesKilledConnections(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "killed")
	ctx := ctxT(t)
	var stop atomic.Bool
	kills := 0
	var mu sync.Mutex
	var failures []error
	pushed, dups := 0, 0
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				id := mint(t, c, emq.WorkKind)
				ok, err := q.Push(ctx, id, []byte("x"))
				mu.Lock()
				pushed++
				if err != nil {
					failures = append(failures, err)
				}
				if !ok {
					// The attempt the kill cut short had admitted the job:
					// its resend found it (documented on Push).
					dups++
				}
				mu.Unlock()
			}
		}()
	}
	for kills < 20 {
		time.Sleep(15 * time.Millisecond)
		if _, err := srv.Do("CLIENT", "KILL", "TYPE", "normal"); err != nil {
			t.Fatal(err)
		}
		kills++
	}
	stop.Store(true)
	wg.Wait()
	n := pushed
	if n < 100 {
		t.Fatalf("only %d pushes ran across %d kills", n, kills)
	}
	if len(failures) > 0 {
		t.Fatalf("%d of %d pushes failed under killed connections; first: %v", len(failures), n, failures[0])
	}
	// Every id pushed is there, once (ids are unique: a job admitted twice
	// would be a second row under another id, which no push makes).
	if got := zcard(t, srv, q.Keys().Pending); got != strconv.Itoa(n) {
		t.Fatalf("pending holds %s ids, want %d", got, n)
	}
	t.Logf("%d pushes across %d kills; %d resends found their job admitted by the attempt cut short", n, kills, dups)
	// The next push after one more kill succeeds too.
	if _, err := srv.Do("CLIENT", "KILL", "TYPE", "normal"); err != nil {
		t.Fatal(err)
	}
	if ok, err := q.Push(ctx, mint(t, c, emq.WorkKind), []byte("x")); err != nil || !ok {
		t.Fatalf("push after CLIENT KILL = %v, %v", ok, err)
	}
}

// During an outage the calls that are not idempotent are never resent once
// written, and one that finds no connection waits for one only as long as
// its context allows: each fails with ErrConnection — not a fence error —
// when its deadline passes, and the job's state is what it was; a call
// whose context has no deadline gives up within the bounded resend policy.
// After the server is back they succeed.
func TestNonIdempotentCallsFailTypedDuringOutage(t *testing.T) {
	srv := aof(t)
	c := connect(t, srv)
	q := queue(t, c, "outage")
	ctx := ctxT(t)
	id := mint(t, c, emq.WorkKind)
	if _, err := q.Push(ctx, id, []byte("x")); err != nil {
		t.Fatal(err)
	}
	job, ok, err := q.Claim(ctx, time.Minute)
	if err != nil || !ok {
		t.Fatalf("claim = %v, %v", ok, err)
	}
	srv.Stop()
	var fe *emq.FenceError
	calls := map[string]func(ctx context.Context) error{
		"complete": func(ctx context.Context) error { return q.Complete(ctx, job.ID, job.Token) },
		"claim":    func(ctx context.Context) error { _, _, err := q.Claim(ctx, time.Minute); return err },
		"extend":   func(ctx context.Context) error { _, err := q.Extend(ctx, job.ID, job.Token, time.Minute); return err },
		"retry":    func(ctx context.Context) error { _, err := q.Retry(ctx, job.ID, job.Token, 0); return err },
		"bury":     func(ctx context.Context) error { return q.Bury(ctx, job.ID, job.Token) },
		"promote":  func(ctx context.Context) error { _, err := q.Promote(ctx, 10); return err },
		"reap":     func(ctx context.Context) error { _, err := q.Reap(ctx, 10, 0); return err },
		"revive":   func(ctx context.Context) error { _, err := q.Revive(ctx, job.ID); return err },
		"purge":    func(ctx context.Context) error { _, err := q.Purge(ctx, job.ID); return err },
		"completeclaim": func(ctx context.Context) error {
			_, err := q.CompleteClaim(ctx, job.ID, job.Token, time.Minute, 1)
			return err
		},
	}
	for name, call := range calls {
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		start := time.Now()
		err := call(short)
		cancel()
		if !errors.Is(err, emq.ErrConnection) || errors.As(err, &fe) || errors.Is(err, emq.ErrVersionFence) {
			t.Fatalf("%s during the outage = %v; want ErrConnection, not a fence error", name, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("%s took %v to fail, past its 300ms deadline", name, d)
		}
	}
	// Without a deadline a call gives up within the bounded resend policy.
	free, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	if _, _, err := q.Claim(free, time.Minute); !errors.Is(err, emq.ErrConnection) || errors.As(err, &fe) {
		t.Fatalf("claim without a deadline during the outage = %v; want ErrConnection", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("claim without a deadline took %v to give up", d)
	}
	// The fence step itself fails in transport now (every call fences
	// first after a failure): still ErrConnection, never a FenceError.
	err = q.Complete(free, job.ID, job.Token)
	if !errors.Is(err, emq.ErrConnection) || errors.As(err, &fe) || !strings.Contains(err.Error(), "fence") {
		t.Fatalf("complete whose fence cannot run = %v; want ErrConnection from the fence step", err)
	}
	// An idempotent call gives up within its bounded backoff, typed too.
	start = time.Now()
	if _, err := q.Push(free, mint(t, c, emq.WorkKind), []byte("y")); !errors.Is(err, emq.ErrConnection) || errors.As(err, &fe) {
		t.Fatalf("push during a long outage = %v; want ErrConnection", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("push took %v to give up", d)
	}
	srv.Restart()
	info, found, err := q.Get(ctx, job.ID)
	if err != nil || !found || info.State != emq.StateActive || info.Attempts != job.Token {
		t.Fatalf("after the outage the job is %+v (found %v, %v); want still active with its token", info, found, err)
	}
	if err := q.Complete(ctx, job.ID, job.Token); err != nil {
		t.Fatalf("complete after the outage: %v", err)
	}
}

// Connect to a server that is not there fails with ErrConnection, not a
// fence error.
func TestConnectUnreachableIsConnectionError(t *testing.T) {
	srv := redistest.Start(t)
	srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := emq.Connect(ctx, options(srv))
	var fe *emq.FenceError
	if !errors.Is(err, emq.ErrConnection) || errors.As(err, &fe) || errors.Is(err, emq.ErrVersionFence) {
		t.Fatalf("connect to a stopped server = %v; want ErrConnection", err)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("connect to a stopped server = %v; want it to wrap ECONNREFUSED", err)
	}
}

// A fence that runs on a fresh connection but gets no answer (the server
// accepts, then is frozen) fails in transport: ErrConnection, never a
// *FenceError. Thawed, the next push succeeds.
func TestFenceTimeoutIsConnectionError(t *testing.T) {
	srv := redistest.Start(t)
	opt := options(srv)
	opt.Redis.ConnWriteTimeout = 300 * time.Millisecond
	c, err := emq.Connect(ctxT(t), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	q := queue(t, c, "frozen")
	if _, err := srv.Do("CLIENT", "KILL", "TYPE", "normal"); err != nil {
		t.Fatal(err)
	}
	if err := srv.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			_ = srv.Signal(syscall.SIGCONT)
		}
	}
	t.Cleanup(thaw)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = q.Push(ctx, mint(t, c, emq.WorkKind), []byte("x"))
	var fe *emq.FenceError
	if !errors.Is(err, emq.ErrConnection) || errors.As(err, &fe) || errors.Is(err, emq.ErrVersionFence) {
		t.Fatalf("push while the fence gets no answer = %v; want ErrConnection", err)
	}
	thaw()
	if ok, err := q.Push(ctx, mint(t, c, emq.WorkKind), []byte("x")); err != nil || !ok {
		t.Fatalf("push after the thaw = %v, %v", ok, err)
	}
}

// A foreign major planted while the server restarted: the first call after
// it, idempotent or not, write or read, gets the fence's refusal — no
// transport error — and nothing is written.
func TestForeignMajorPlantedDuringRestart(t *testing.T) {
	calls := []struct {
		name   string
		resent bool // an idempotent call: the refusal alone, no connection error
		call   func(ctx context.Context, c *emq.Client, q *emq.Queue) error
	}{
		{"push", true, func(ctx context.Context, c *emq.Client, q *emq.Queue) error {
			_, err := q.Push(ctx, mint(t, c, emq.WorkKind), []byte("x"))
			return err
		}},
		{"pushbatch", true, func(ctx context.Context, c *emq.Client, q *emq.Queue) error {
			_, err := q.PushBatch(ctx, []emq.NewJob{{ID: mint(t, c, emq.WorkKind), Payload: []byte("x")}})
			return err
		}},
		{"claim", false, func(ctx context.Context, c *emq.Client, q *emq.Queue) error {
			_, _, err := q.Claim(ctx, time.Minute)
			return err
		}},
		{"sizes", true, func(ctx context.Context, c *emq.Client, q *emq.Queue) error {
			_, err := q.Sizes(ctx)
			return err
		}},
	}
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			srv := aof(t)
			c := connect(t, srv)
			q := queue(t, c, "planted")
			ctx := ctxT(t)
			if _, err := q.Push(ctx, mint(t, c, emq.WorkKind), []byte("before")); err != nil {
				t.Fatal(err)
			}
			srv.Restart()
			foreign := "echomq:9.0.0"
			if _, err := srv.Do("SET", wire.KeyVersion, foreign); err != nil {
				t.Fatal(err)
			}
			want := keyList(t, srv)
			dump := func() []string {
				var out []string
				for _, k := range want {
					v, _ := srv.Do("DUMP", k)
					out = append(out, v)
				}
				return out
			}
			dumped := dump()
			start := time.Now()
			err := tc.call(ctx, c, q)
			var fe *emq.FenceError
			// A call that is not resent may have met the lost connection
			// first: its error then joins the connection error to the
			// refusal.
			if !errors.As(err, &fe) || fe.Found != foreign || (tc.resent && errors.Is(err, emq.ErrConnection)) {
				t.Fatalf("the first %s after the plant = %v; want a *FenceError finding %q", tc.name, err, foreign)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("the refusal took %v", d)
			}
			if got := keyList(t, srv); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("the keyspace changed: %v, want %v", got, want)
			}
			if got := dump(); strings.Join(got, "\x00") != strings.Join(dumped, "\x00") {
				t.Fatal("a key of the refused keyspace changed")
			}
		})
	}
}

// The worker's loops carry on across a SIGKILL and restart: jobs pushed
// after it are processed.
func TestWorkerSurvivesRestart(t *testing.T) {
	srv := aof(t)
	c := connect(t, srv)
	q := queue(t, c, "worker-restart")
	ctx := ctxT(t)
	var mu sync.Mutex
	seen := map[emq.ID]int{}
	w, err := emq.NewWorker(q, func(ctx context.Context, j emq.Job) error {
		mu.Lock()
		seen[j.ID]++
		mu.Unlock()
		return nil
	}, emq.WorkerOptions{Concurrency: 2, Wait: 200 * time.Millisecond, Maintenance: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() {
		stop()
		<-done
	}()
	processed := func(ids []emq.ID) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			if seen[id] == 0 {
				return false
			}
		}
		return true
	}
	waitFor := func(ids []emq.ID, what string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !processed(ids) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not every job was processed", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	push := func(n int) []emq.ID {
		var ids []emq.ID
		for i := 0; i < n; i++ {
			id := mint(t, c, emq.WorkKind)
			if _, err := q.Push(ctx, id, []byte("x")); err != nil {
				t.Fatalf("push: %v", err)
			}
			ids = append(ids, id)
		}
		return ids
	}
	waitFor(push(5), "before the restart")
	srv.Restart()
	waitFor(push(5), "after the restart")
	srv.Restart()
	time.Sleep(300 * time.Millisecond)
	waitFor(push(5), "after a second restart")
}
