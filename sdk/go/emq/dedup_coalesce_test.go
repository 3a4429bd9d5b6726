package emq_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// dedupPush is one PushDedup caller: what it pushed and its answer.
type dedupPush struct {
	id  emq.ID
	key string
	pol emq.DedupPolicy
	res emq.DedupResult
	err error
}

// pushDedupAll runs every push of ps from a goroutine of its own,
// concurrently, and fills in each answer.
func pushDedupAll(ctx context.Context, q *emq.Queue, ps []*dedupPush) {
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.res, p.err = q.PushDedup(ctx, p.id, []byte(p.id.String()), p.key, emq.WithDedup(p.pol))
		}()
	}
	wg.Wait()
}

// warmDedup loads push, push_many, add_dedup and replace_dedup on the
// server, so that later script calls are counted once each, and waits
// until the coalescer is idle.
func warmDedup(t *testing.T, c *emq.Client, q *emq.Queue) {
	t.Helper()
	warmScripts(t, c, q)
	id := mint(t, c, emq.WorkKind)
	if _, err := q.PushDedup(ctxT(t), id, nil, "warm-"+id.String()); err != nil {
		t.Fatal(err)
	}
	id = mint(t, c, emq.WorkKind)
	if _, err := q.ReplaceDedup(ctxT(t), id, nil, "warm-"+id.String(), id, 0); err != nil {
		t.Fatal(err)
	}
	waitPushIdle(t, q)
}

// holdBatch sends a plain Push at once, while the server sleeps, so that
// the pushes made next wait behind it; done waits for the sleep and the
// push to return.
func holdBatch(t *testing.T, srv *redistest.Server, c *emq.Client, q *emq.Queue, d time.Duration) (done func()) {
	t.Helper()
	wait := sleepServer(t, srv, d)
	first := make(chan error, 1)
	id := mint(t, c, emq.WorkKind)
	go func() {
		_, err := q.Push(ctxT(t), id, nil)
		first <- err
	}()
	waitPushBusy(t, q)
	return func() {
		wait()
		if err := <-first; err != nil {
			t.Fatal(err)
		}
	}
}

// Concurrent PushDedup calls of one policy that wait behind a batch in
// flight go together in one add_dedup call, and each caller gets its own
// answer: a caller whose key an earlier caller of the batch took meets it
// as a later admission would (until_done: a duplicate naming the holder);
// with an id of another kind among them, the refused call is sent again
// job by job and only that caller gets ErrKind.
func TestPushDedupCoalescedBatch(t *testing.T) {
	for _, withForeign := range []bool{false, true} {
		t.Run(fmt.Sprintf("foreign=%v", withForeign), func(t *testing.T) {
			srv := debugServer(t)
			tally := &emq.Tally{}
			c := connectPush(t, srv, emq.Options{PushLinger: time.Minute, PushMaxBatch: 1000, Metrics: tally})
			q := queue(t, c, "dcoalesce")
			ctx := ctxT(t)
			warmDedup(t, c, q)
			before := pushCalls(t, srv)
			enqueued := tally.Get(emq.Enqueued)

			var ps []*dedupPush
			for i := 0; i < 20; i++ { // 20 keys, each pushed by one caller
				ps = append(ps, &dedupPush{id: mint(t, c, emq.WorkKind), key: fmt.Sprintf("key-%d", i)})
			}
			for i := 0; i < 8; i++ { // 4 keys pushed by 3 callers in all
				ps = append(ps, &dedupPush{id: mint(t, c, emq.WorkKind), key: fmt.Sprintf("key-%d", i%4)})
			}
			var foreign *dedupPush
			if withForeign {
				foreign = &dedupPush{id: mint(t, c, emq.KindORD), key: "key-foreign"}
				ps = append(ps, foreign)
			}
			done := holdBatch(t, srv, c, q, 500*time.Millisecond)
			pushDedupAll(ctx, q, ps)
			done()

			holders := map[string]emq.ID{}
			for _, p := range ps {
				if p == foreign {
					if !errors.Is(p.err, emq.ErrKind) {
						t.Fatalf("PushDedup of the %s id: %+v, %v; want ErrKind", p.id.Kind(), p.res, p.err)
					}
					continue
				}
				if p.err != nil {
					t.Fatalf("PushDedup(%s, %s): %v", p.id, p.key, p.err)
				}
				if p.res.Outcome == emq.AdmissionAdmitted {
					if p.res.ID != p.id {
						t.Fatalf("admitted %s names %s", p.id, p.res.ID)
					}
					if h, ok := holders[p.key]; ok {
						t.Fatalf("key %s admitted twice: %s and %s", p.key, h, p.id)
					}
					holders[p.key] = p.id
				}
			}
			if len(holders) != 20 {
				t.Fatalf("%d keys admitted, want 20", len(holders))
			}
			for _, p := range ps {
				if p == foreign || p.res.Outcome == emq.AdmissionAdmitted {
					continue
				}
				if p.res.Outcome != emq.AdmissionDuplicate || p.res.ID != holders[p.key] {
					t.Fatalf("PushDedup(%s, %s) = %+v, want a duplicate of %s", p.id, p.key, p.res, holders[p.key])
				}
			}
			es, err := q.DedupEntries(ctx, "key-0", "key-19", "key-foreign")
			if err != nil {
				t.Fatal(err)
			}
			if es[0].Holder != holders["key-0"] || es[1].Holder != holders["key-19"] || !es[2].Holder.IsZero() {
				t.Fatalf("entries %+v, want holders %s, %s and none", es, holders["key-0"], holders["key-19"])
			}
			calls := pushCalls(t, srv) - before
			want := int64(2) // the held push, then one add_dedup for all that waited
			if withForeign {
				want = 2 + int64(len(ps)) // the refused add_dedup, then one per job
			}
			if calls != want {
				t.Fatalf("%d script calls for %d pushes, want %d", calls, len(ps)+1, want)
			}
			if n := tally.Get(emq.Enqueued) - enqueued; n != 21 { // 20 and the held push
				t.Fatalf("Enqueued counted %d, want 21", n)
			}
		})
	}
}

// Under debounce, callers of one key in one batch meet each other as
// later admissions would: the first takes the key, each later one is
// deferred by add_dedup and resolved by its own replace_dedup call,
// replacing the holder's payload. Pushes of another policy go in a batch
// of their own.
func TestPushDedupCoalescedPolicies(t *testing.T) {
	srv := debugServer(t)
	c := connectPush(t, srv, emq.Options{PushLinger: time.Minute, PushMaxBatch: 1000})
	q := queue(t, c, "dpolicies")
	ctx := ctxT(t)
	warmDedup(t, c, q)
	debounce := emq.DedupPolicy{Mode: emq.DedupDebounce}
	throttle := emq.DedupPolicy{Mode: emq.DedupThrottle, TTL: time.Hour}
	var ps []*dedupPush
	for i := 0; i < 4; i++ {
		ps = append(ps, &dedupPush{id: mint(t, c, emq.WorkKind), key: "debounced", pol: debounce})
	}
	for i := 0; i < 3; i++ {
		ps = append(ps, &dedupPush{id: mint(t, c, emq.WorkKind), key: fmt.Sprintf("throttled-%d", i%2), pol: throttle})
	}
	before := pushCalls(t, srv)
	done := holdBatch(t, srv, c, q, 500*time.Millisecond)
	pushDedupAll(ctx, q, ps)
	done()

	var holder emq.ID
	replaced := 0
	for _, p := range ps[:4] {
		switch {
		case p.err != nil:
			t.Fatalf("PushDedup(%s, debounce): %v", p.id, p.err)
		case p.res.Outcome == emq.AdmissionAdmitted:
			if !holder.IsZero() {
				t.Fatalf("debounce admitted twice: %s and %s", holder, p.id)
			}
			holder = p.id
		case p.res.Outcome == emq.AdmissionReplaced:
			replaced++
		default:
			t.Fatalf("PushDedup(%s, debounce) = %+v", p.id, p.res)
		}
	}
	if holder.IsZero() || replaced != 3 {
		t.Fatalf("debounce: holder %s, %d replaced; want one admitted and 3 replacing it", holder, replaced)
	}
	for _, p := range ps[:4] {
		if p.res.Outcome == emq.AdmissionReplaced && p.res.ID != holder {
			t.Fatalf("PushDedup(%s) replaced %s, want the holder %s", p.id, p.res.ID, holder)
		}
	}
	admitted := map[string]int{}
	for _, p := range ps[4:] {
		if p.err != nil {
			t.Fatalf("PushDedup(%s, throttle): %v", p.id, p.err)
		}
		if p.res.Enqueued() {
			admitted[p.key]++
		}
	}
	if admitted["throttled-0"] != 1 || admitted["throttled-1"] != 1 {
		t.Fatalf("throttle admitted %v, want one per key", admitted)
	}
	// The held push; one add_dedup per policy; one replace_dedup per
	// replacement (each names the holder, which no replacement changes).
	if calls := pushCalls(t, srv) - before; calls != 6 {
		t.Fatalf("%d script calls, want 6 (1 + 2 add_dedup + 3 replace_dedup)", calls)
	}
}

// A PushDedup whose ctx ends while it waits behind a batch in flight gets
// ctx.Err() at once and is never sent: its key takes no entry; the others
// of its batch are admitted.
func TestPushDedupCoalescedCancellation(t *testing.T) {
	srv := debugServer(t)
	c := connectPush(t, srv, emq.Options{PushLinger: time.Minute})
	q := queue(t, c, "dcancel")
	warmDedup(t, c, q)
	const asleep = 2 * time.Second
	done := holdBatch(t, srv, c, q, asleep)
	dropCtx, cancelDrop := context.WithCancel(context.Background())
	dropDone := make(chan error, 1)
	dropped := mint(t, c, emq.WorkKind)
	go func() {
		_, err := q.PushDedup(dropCtx, dropped, nil, "dropped")
		dropDone <- err
	}()
	kept := &dedupPush{id: mint(t, c, emq.WorkKind), key: "kept"}
	keptDone := make(chan struct{})
	go func() {
		defer close(keptDone)
		pushDedupAll(ctxT(t), q, []*dedupPush{kept})
	}()
	time.Sleep(50 * time.Millisecond)
	cancelDrop()
	select {
	case err := <-dropDone:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a PushDedup cancelled while waiting: %v, want context.Canceled", err)
		}
	case <-time.After(asleep / 2):
		t.Fatal("a PushDedup cancelled while waiting did not return before the batch in flight")
	}
	done()
	<-keptDone
	if kept.err != nil || kept.res.Outcome != emq.AdmissionAdmitted {
		t.Fatalf("the PushDedup kept: %+v, %v", kept.res, kept.err)
	}
	es, err := q.DedupEntries(ctxT(t), "dropped", "kept")
	if err != nil {
		t.Fatal(err)
	}
	if !es[0].Holder.IsZero() || es[1].Holder != kept.id {
		t.Fatalf("entries %+v: the cancelled push's key holds, or the kept one's does not", es)
	}
}

// Many goroutines calling PushDedup at once on one client form batches:
// far fewer script calls than pushes, each fresh key admitted once. With
// coalescing off every PushDedup is an add_dedup call of its own.
func TestPushDedupCoalescingFormsBatches(t *testing.T) {
	const producers, each = 32, 40
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("disabled=%v", off), func(t *testing.T) {
			srv := redistest.Start(t)
			tally := &emq.Tally{}
			c := connectPush(t, srv, emq.Options{DisableCoalescing: off, Metrics: tally})
			q := queue(t, c, "dformed")
			ctx := ctxT(t)
			warmDedup(t, c, q)
			before := pushCalls(t, srv)
			enqueued := tally.Get(emq.Enqueued)
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
						// Every key twice: the second push of a key is a duplicate.
						key := fmt.Sprintf("k-%d-%d", p, i/2)
						r, err := q.PushDedup(ctx, id, []byte("x"), key)
						if err != nil || (i%2 == 0) != (r.Outcome == emq.AdmissionAdmitted) {
							t.Errorf("PushDedup(%s) #%d: %+v, %v", key, i%2, r, err)
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
			t.Logf("%d dedup pushes in %d script calls (%.1f jobs per call)", pushes, calls, float64(pushes)/float64(calls))
			switch {
			case off && calls != pushes:
				t.Fatalf("coalescing off: %d script calls for %d pushes, want one each", calls, pushes)
			case !off && calls*4 > pushes:
				t.Fatalf("coalescing on: %d script calls for %d pushes, want at most a quarter", calls, pushes)
			}
			if n := tally.Get(emq.Enqueued) - enqueued; n != pushes/2 {
				t.Fatalf("Enqueued counted %d, want %d", n, pushes/2)
			}
		})
	}
}
