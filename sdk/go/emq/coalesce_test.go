package emq_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// debugServer is a server that takes DEBUG SLEEP from loopback, so that a
// test can hold a batch in flight for as long as it needs.
func debugServer(t *testing.T, opts ...redistest.Option) *redistest.Server {
	return redistest.Start(t, append([]redistest.Option{redistest.WithArgs("--enable-debug-command", "local")}, opts...)...)
}

// connectPush connects with the test defaults and the push options of o,
// on a fixed snowflake node.
func connectPush(t *testing.T, srv *redistest.Server, o emq.Options) *emq.Client {
	t.Helper()
	opt := options(srv)
	opt.DisableCoalescing, opt.PushLinger, opt.PushMaxBatch, opt.Metrics = o.DisableCoalescing, o.PushLinger, o.PushMaxBatch, o.Metrics
	node := 1
	opt.Node = &node // no node lease to renew: every script call counted is a push's
	c, err := emq.Connect(ctxT(t), opt)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// pushCalls is how many script calls (EVALSHA and EVAL) the server ran,
// less the fences among them (a fresh connection is fenced; the fence
// script is the only one that runs STRLEN, once a call): with a queue's
// pushes and nothing else, the push and push_many calls.
func pushCalls(t *testing.T, srv *redistest.Server) int64 {
	t.Helper()
	s := commandStats(t, srv)
	return s["evalsha"] + s["eval"] - s["strlen"]
}

// warmScripts loads push and push_many on the server (one Push, one
// PushBatch of two), so that later script calls are counted once each
// rather than NOSCRIPT plus EVAL, and waits until the coalescer is idle.
func warmScripts(t *testing.T, c *emq.Client, q *emq.Queue) {
	t.Helper()
	ctx := ctxT(t)
	if _, err := q.Push(ctx, mint(t, c, emq.WorkKind), []byte("warm")); err != nil {
		t.Fatal(err)
	}
	if _, err := q.PushBatch(ctx, []emq.NewJob{{ID: mint(t, c, emq.WorkKind)}, {ID: mint(t, c, emq.WorkKind)}}); err != nil {
		t.Fatal(err)
	}
	waitPushIdle(t, q)
}

// waitPushBusy waits until q's coalescer has a batch in flight.
func waitPushBusy(t *testing.T, q *emq.Queue) {
	t.Helper()
	for start := time.Now(); emq.PushIdle(q); time.Sleep(time.Millisecond) {
		if time.Since(start) > 5*time.Second {
			t.Fatal("the coalescer never sent the push")
		}
	}
}

// waitPushIdle waits until q's coalescer has nothing in flight: a batch's
// sender answers its callers before it counts the batch done.
func waitPushIdle(t *testing.T, q *emq.Queue) {
	t.Helper()
	for start := time.Now(); !emq.PushIdle(q); time.Sleep(time.Millisecond) {
		if time.Since(start) > 5*time.Second {
			t.Fatal("the coalescer stayed busy")
		}
	}
}

// sleepServer blocks the server for d (DEBUG SLEEP on a connection of its
// own) and returns once it sleeps, that is once a PING on a fresh
// connection goes unanswered; wait returns when DEBUG SLEEP answered.
func sleepServer(t *testing.T, srv *redistest.Server, d time.Duration) (wait func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := srv.Do("DEBUG", "SLEEP", fmt.Sprintf("%.3f", d.Seconds()))
		done <- err
	}()
	wait = func() {
		if err := <-done; err != nil {
			t.Fatalf("DEBUG SLEEP: %v", err)
		}
	}
	for start := time.Now(); time.Since(start) < d/2; {
		if !answers(srv.Addr(), 20*time.Millisecond) {
			return wait
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("the server never went to sleep within %v", d/2)
	return nil
}

// answers reports whether the server at addr answers a PING within d.
func answers(addr string, d time.Duration) bool {
	conn, err := net.DialTimeout("tcp", addr, d)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(d))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	buf := make([]byte, 7)
	_, err = io.ReadFull(conn, buf)
	return err == nil
}

// pushResult is one caller's answer.
type pushResult struct {
	id  emq.ID
	ok  bool
	err error
}

// pushAll pushes every id from a goroutine of its own, concurrently, and
// returns each caller's answer in the order of ids.
func pushAll(ctx context.Context, q *emq.Queue, ids []emq.ID) []pushResult {
	out := make([]pushResult, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := q.Push(ctx, id, []byte(id.String()))
			out[i] = pushResult{id, ok, err}
		}()
	}
	wg.Wait()
	return out
}

// checkDuplicates asserts, for every id pushed several times among rs,
// that exactly one caller got true and the others false, without error,
// and that every id pushed once got true; it returns how many were
// enqueued.
func checkDuplicates(t *testing.T, rs []pushResult, skip func(pushResult) bool) int {
	t.Helper()
	got := map[emq.ID]int{}
	pushed := map[emq.ID]int{}
	for _, r := range rs {
		if skip != nil && skip(r) {
			continue
		}
		if r.err != nil {
			t.Fatalf("Push(%s): %v", r.id, r.err)
		}
		pushed[r.id]++
		if r.ok {
			got[r.id]++
		}
	}
	for id, n := range pushed {
		if got[id] != 1 {
			t.Errorf("id %s pushed %d times: %d callers got enqueued, want exactly 1", id, n, got[id])
		}
	}
	return len(got)
}

// Pushes that wait behind a batch in flight go together in one push_many
// call, and each caller gets its own answer: a second push of an id in the
// same batch is a duplicate. When push_many refuses the whole batch (an id
// of another kind among good ones), the batch is pushed job by job: only
// that caller gets ErrKind, the others are admitted, the duplicates still
// found.
func TestPushCoalescedBatchAnswersEachCaller(t *testing.T) {
	for _, withForeign := range []bool{false, true} {
		t.Run(fmt.Sprintf("foreign=%v", withForeign), func(t *testing.T) {
			srv := debugServer(t)
			tally := &emq.Tally{}
			c := connectPush(t, srv, emq.Options{PushLinger: time.Minute, PushMaxBatch: 1000, Metrics: tally})
			q := queue(t, c, "coalesce")
			ctx := ctxT(t)
			warmScripts(t, c, q)
			before := pushCalls(t, srv)

			var ids []emq.ID
			for i := 0; i < 30; i++ {
				ids = append(ids, mint(t, c, emq.WorkKind))
			}
			for i := 0; i < 10; i++ { // ten ids pushed twice, by two callers
				ids = append(ids, ids[i])
			}
			var foreign emq.ID
			if withForeign {
				foreign = mint(t, c, emq.KindORD)
				ids = append(ids, foreign)
			}
			first := mint(t, c, emq.WorkKind)
			wait := sleepServer(t, srv, 500*time.Millisecond)
			firstDone := make(chan error, 1)
			go func() { // sent at once: the batch in flight while the others arrive
				_, err := q.Push(ctx, first, nil)
				firstDone <- err
			}()
			waitPushBusy(t, q)
			rs := pushAll(ctx, q, ids)
			wait()
			if err := <-firstDone; err != nil {
				t.Fatal(err)
			}
			isForeign := func(r pushResult) bool { return r.id == foreign && withForeign }
			for _, r := range rs {
				if isForeign(r) && !errors.Is(r.err, emq.ErrKind) {
					t.Fatalf("Push of the %s id: %v, %v; want ErrKind", foreign.Kind(), r.ok, r.err)
				}
			}
			if n := checkDuplicates(t, rs, isForeign); n != 30 {
				t.Fatalf("%d ids enqueued, want 30", n)
			}
			calls := pushCalls(t, srv) - before
			want := int64(2) // the first push, then one push_many for all that waited
			if withForeign {
				want = 2 + int64(len(ids)) // the refused push_many, then one push per job
			}
			if calls != want {
				t.Fatalf("%d script calls for %d pushes, want %d", calls, len(ids)+1, want)
			}
			if n := zcard(t, srv, q.Keys().Pending); n != "34" { // 30, the first, and 3 of warmScripts
				t.Fatalf("pending holds %s, want 34", n)
			}
			if n := tally.Get(emq.Enqueued); n != 34 {
				t.Fatalf("Enqueued counted %d, want 34", n)
			}
			if withForeign {
				if n := zcard(t, srv, "emq:{coalesce}:job:"+foreign.String()); n == "1" {
					t.Fatal("unreachable")
				}
				if ok, _, _ := func() (bool, emq.Job, error) { _, ok, err := q.Get(ctx, foreign); return ok, emq.Job{}, err }(); ok {
					t.Fatal("the refused id has a row")
				}
			}
		})
	}
}

// Many goroutines pushing at once on one client form batches: the server
// runs far fewer script calls than there are pushes, every push is
// answered enqueued, and each job is there once. With coalescing off every
// push is a call of its own.
func TestPushCoalescingFormsBatches(t *testing.T) {
	const producers, each = 64, 60
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("disabled=%v", off), func(t *testing.T) {
			srv := redistest.Start(t)
			tally := &emq.Tally{}
			c := connectPush(t, srv, emq.Options{DisableCoalescing: off, Metrics: tally})
			q := queue(t, c, "formed")
			ctx := ctxT(t)
			warmScripts(t, c, q)
			before := pushCalls(t, srv)
			var failed atomic.Int64
			var wg sync.WaitGroup
			for p := 0; p < producers; p++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < each; i++ {
						id, err := c.Mint(emq.WorkKind)
						if err != nil {
							failed.Add(1)
							continue
						}
						if ok, err := q.Push(ctx, id, []byte("x")); err != nil || !ok {
							t.Errorf("Push: %v, %v", ok, err)
							failed.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			if failed.Load() > 0 {
				t.Fatalf("%d pushes failed", failed.Load())
			}
			pushes := int64(producers * each)
			calls := pushCalls(t, srv) - before
			t.Logf("%d pushes in %d script calls (%.1f jobs per call)", pushes, calls, float64(pushes)/float64(calls))
			switch {
			case off && calls != pushes:
				t.Fatalf("coalescing off: %d script calls for %d pushes, want one each", calls, pushes)
			case !off && calls*4 > pushes:
				t.Fatalf("coalescing on: %d script calls for %d pushes, want at most a quarter", calls, pushes)
			}
			if n := zcard(t, srv, q.Keys().Pending); n != fmt.Sprint(pushes+3) {
				t.Fatalf("pending holds %s, want %d", n, pushes+3)
			}
			if n := tally.Get(emq.Enqueued); n != pushes+3 {
				t.Fatalf("Enqueued counted %d, want %d", n, pushes+3)
			}
		})
	}
}

// PushMaxBatch caps a batch: pushes waiting behind a batch in flight are
// sent as soon as that many wait, in calls of that many; the rest wait for
// the batches in flight.
func TestPushMaxBatch(t *testing.T) {
	srv := debugServer(t)
	c := connectPush(t, srv, emq.Options{PushLinger: time.Minute, PushMaxBatch: 4})
	q := queue(t, c, "maxbatch")
	ctx := ctxT(t)
	warmScripts(t, c, q)
	before := pushCalls(t, srv)
	first := mint(t, c, emq.WorkKind)
	var ids []emq.ID
	for i := 0; i < 9; i++ {
		ids = append(ids, mint(t, c, emq.WorkKind))
	}
	wait := sleepServer(t, srv, 500*time.Millisecond)
	firstDone := make(chan error, 1)
	go func() { _, err := q.Push(ctx, first, nil); firstDone <- err }()
	waitPushBusy(t, q)
	rs := pushAll(ctx, q, ids)
	wait()
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	if n := checkDuplicates(t, rs, nil); n != 9 {
		t.Fatalf("%d enqueued, want 9", n)
	}
	// The first push; two full batches of 4 sent while the server slept;
	// the ninth push after every batch in flight returned.
	if calls := pushCalls(t, srv) - before; calls != 4 {
		t.Fatalf("%d script calls, want 4 (1 + 4 + 4 + 1 jobs)", calls)
	}
}

// A caller whose ctx ends while its push waits behind a batch in flight
// gets ctx.Err() at once and its job is never sent; a caller whose ctx
// ends after its batch was sent gets ctx.Err() too, and the job it sent is
// admitted.
func TestPushCoalescedCancellation(t *testing.T) {
	srv := debugServer(t)
	c := connectPush(t, srv, emq.Options{PushLinger: time.Minute})
	q := queue(t, c, "cancel")
	warmScripts(t, c, q)
	sent, dropped, kept := mint(t, c, emq.WorkKind), mint(t, c, emq.WorkKind), mint(t, c, emq.WorkKind)
	// The server sleeps far longer than any deadline below, so "before the
	// batch in flight returned" holds however long the machine takes to
	// schedule the goroutines (the bounds are fractions of the sleep).
	const asleep = 2 * time.Second
	before := pushCalls(t, srv)
	wait := sleepServer(t, srv, asleep)

	// The deadline passes while the call is in flight (the server sleeps
	// four times as long), and leaves the call far longer than any
	// scheduling delay of a loaded machine to be written first: at 150 ms
	// a push was at times not yet written at load 8, and so never landed.
	sentCtx, cancelSent := context.WithTimeout(context.Background(), asleep/4)
	defer cancelSent()
	sentDone := make(chan error, 1)
	start := time.Now()
	go func() { _, err := q.Push(sentCtx, sent, nil); sentDone <- err }()
	waitPushBusy(t, q)

	dropCtx, cancelDrop := context.WithCancel(context.Background())
	dropDone := make(chan error, 1)
	go func() { _, err := q.Push(dropCtx, dropped, nil); dropDone <- err }()
	keptDone := make(chan error, 1)
	go func() { _, err := q.Push(ctxT(t), kept, nil); keptDone <- err }()
	time.Sleep(50 * time.Millisecond)
	cancelDrop()
	select {
	case err := <-dropDone:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a push cancelled while waiting: %v, want context.Canceled", err)
		}
	case <-time.After(asleep / 2):
		t.Fatal("a push cancelled while waiting did not return before the batch in flight")
	}
	select {
	case err := <-sentDone:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a push whose deadline passed in flight: %v, want DeadlineExceeded", err)
		}
		if d := time.Since(start); d > asleep*3/4 {
			t.Fatalf("the push in flight returned after %v, not at its deadline (the server slept %v)", d, asleep)
		}
	case <-time.After(asleep):
		t.Fatal("a push whose deadline passed in flight did not return")
	}
	wait()
	if err := <-keptDone; err != nil {
		t.Fatalf("the push waiting with it: %v", err)
	}
	// The push in flight landed exactly when its call reached the server:
	// its deadline passed while the server slept, with the call written or
	// (on a loaded machine, at times) still waiting on the client's side
	// to be written. kept's batch is one call; dropped's none.
	calls := pushCalls(t, srv) - before
	if calls != 1 && calls != 2 {
		t.Fatalf("%d push calls reached the server; want kept's and perhaps the one in flight", calls)
	}
	if calls == 1 {
		t.Logf("the push in flight was not written before its deadline (load); it must not have landed")
	}
	ctx := ctxT(t)
	for id, want := range map[emq.ID]bool{sent: calls == 2, dropped: false, kept: true} {
		if _, ok, err := q.Get(ctx, id); err != nil || ok != want {
			t.Fatalf("row of %s (sent %s, dropped %s, kept %s): %v, %v; want present=%v", id, sent, dropped, kept, ok, err, want)
		}
	}
}

// PushBatch sends its jobs in push_many calls of PushMaxBatch, pipelined;
// a chunk refused as a whole (an id of another kind in it) is pushed job
// by job, and only that job's error is reported.
func TestPushBatchChunks(t *testing.T) {
	srv := redistest.Start(t)
	c := connectPush(t, srv, emq.Options{PushMaxBatch: 50})
	q := queue(t, c, "chunks")
	ctx := ctxT(t)
	warmScripts(t, c, q)
	jobs := make([]emq.NewJob, 120)
	for i := range jobs {
		jobs[i] = emq.NewJob{ID: mint(t, c, emq.WorkKind), Payload: []byte{byte(i)}}
	}
	jobs[10].ID = jobs[3].ID // a duplicate inside the first chunk
	before := pushCalls(t, srv)
	oks, err := q.PushBatch(ctx, jobs)
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range oks {
		if ok == (i == 10) {
			t.Fatalf("job %d: enqueued=%v", i, ok)
		}
	}
	if calls := pushCalls(t, srv) - before; calls != 3 {
		t.Fatalf("%d script calls for 120 jobs in chunks of 50, want 3", calls)
	}

	more := make([]emq.NewJob, 120)
	for i := range more {
		more[i] = emq.NewJob{ID: mint(t, c, emq.WorkKind)}
	}
	more[70].ID = mint(t, c, emq.KindORD) // in the second chunk
	before = pushCalls(t, srv)
	oks, err = q.PushBatch(ctx, more)
	var be *emq.BatchError
	if !errors.As(err, &be) || !errors.Is(err, emq.ErrKind) {
		t.Fatalf("PushBatch with a foreign id: %v, want a *BatchError with ErrKind", err)
	}
	for i, e := range be.Errs {
		if (e != nil) != (i == 70) || (i != 70 && !oks[i]) {
			t.Fatalf("job %d: %v, %v", i, oks[i], e)
		}
	}
	if calls := pushCalls(t, srv) - before; calls != 3+50 {
		t.Fatalf("%d script calls, want 53 (3 chunks, then the refused one job by job)", calls)
	}
}

// A SIGKILL and restart (AOF, fsync always) in the middle of a coalesced
// load loses no acknowledged push: every push answered without error is in
// the queue afterwards, and every failure matches ErrConnection (never a
// bare EOF).
func TestPushCoalescedRestartLosesNothing(t *testing.T) {
	srv := aof(t)
	c := connect(t, srv)
	q := queue(t, c, "restart")
	ctx := ctxT(t)
	var (
		mu    sync.Mutex
		acked []emq.ID
		fails []error
		after atomic.Int64 // pushes acknowledged after the restart
	)
	var restarted atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for p := 0; p < 16; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				id, err := c.Mint(emq.WorkKind)
				if err != nil {
					time.Sleep(time.Millisecond)
					continue
				}
				_, err = q.Push(ctx, id, []byte("load"))
				mu.Lock()
				if err == nil {
					acked = append(acked, id)
					if restarted.Load() {
						after.Add(1)
					}
				} else {
					fails = append(fails, err)
				}
				mu.Unlock()
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	srv.Restart()
	restarted.Store(true)
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	for _, err := range fails {
		if !errors.Is(err, emq.ErrConnection) {
			t.Fatalf("a push failed with %v, want ErrConnection", err)
		}
	}
	if after.Load() == 0 {
		t.Fatal("no push was acknowledged after the restart")
	}
	t.Logf("%d pushes acknowledged (%d after the restart), %d failed in transport", len(acked), after.Load(), len(fails))
	rc := c.Redis()
	for i := 0; i < len(acked); i += 500 {
		batch := acked[i:min(i+500, len(acked))]
		cmds := make(rueidis.Commands, len(batch))
		for j, id := range batch {
			cmds[j] = rc.B().Zscore().Key(q.Keys().Pending).Member(id.String()).Build()
		}
		for j, r := range rc.DoMulti(ctx, cmds...) {
			if _, err := r.AsFloat64(); err != nil {
				t.Fatalf("acknowledged push %s is not pending after the restart: %v", batch[j], err)
			}
		}
	}
}

// Pushes made at once from many goroutines on one client are coalesced
// into a few push_many calls (a batch waits at most PushLinger behind the
// one in flight, and holds at most PushMaxBatch jobs); each caller still
// gets its own answer, here one duplicate among them.
func ExampleQueue_Push_coalesced() {
	ctx := context.Background()
	c, err := emq.Connect(ctx, emq.Options{Addr: addr, PushLinger: 500 * time.Microsecond, PushMaxBatch: 64})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	q, err := c.Queue("coalesced")
	if err != nil {
		log.Fatal(err)
	}
	ids := make([]emq.ID, 100)
	for i := range ids {
		if ids[i], err = c.Mint(emq.WorkKind); err != nil {
			log.Fatal(err)
		}
	}
	ids = append(ids, ids[0]) // the same job pushed twice
	var enqueued, duplicates atomic.Int64
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := q.Push(ctx, id, []byte("payload"))
			switch {
			case err != nil:
				log.Print(err)
			case ok:
				enqueued.Add(1)
			default:
				duplicates.Add(1)
			}
		}()
	}
	wg.Wait()
	fmt.Println(enqueued.Load(), "enqueued,", duplicates.Load(), "duplicate")
	// Output: 100 enqueued, 1 duplicate
}
