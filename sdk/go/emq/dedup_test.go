package emq_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// pushKey is PushDedup of a fresh job under key, failing the test on an
// error.
func pushKey(t *testing.T, c *emq.Client, q *emq.Queue, key, payload string, opts ...emq.PushOption) (emq.ID, emq.DedupResult) {
	t.Helper()
	id := mint(t, c, emq.WorkKind)
	r, err := q.PushDedup(ctxT(t), id, []byte(payload), key, opts...)
	if err != nil {
		t.Fatalf("PushDedup(%q): %v", key, err)
	}
	return id, r
}

func wantOutcome(t *testing.T, what string, r emq.DedupResult, outcome emq.Admission, id emq.ID) {
	t.Helper()
	if r.Outcome != outcome || r.ID != id {
		t.Fatalf("%s: %s %s; want %s %s", what, r.Outcome, r.ID, outcome, id)
	}
}

// claimID claims the head of pending, which must be id.
func claimID(t *testing.T, q *emq.Queue, id emq.ID, lease time.Duration) emq.Job {
	t.Helper()
	j, ok, err := q.Claim(ctxT(t), lease)
	if err != nil || !ok || j.ID != id {
		t.Fatalf("Claim = %v, %v, %v; want %s", j, ok, err, id)
	}
	return j
}

// An until_done key is held while its holder is pending, scheduled or
// active, and released by whatever settles it: complete, bury (unless
// held while dead, then until the purge), cancel, and a reap to dead.
func TestDedupUntilDoneReleased(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "dedup")
	ctx := ctxT(t)
	settles := []struct {
		name   string
		policy emq.DedupPolicy
		settle func(t *testing.T, id emq.ID) // leaves the holder settled
		held   bool                          // the key is still held after settle
		then   func(t *testing.T, id emq.ID) // releases it then
	}{
		{name: "complete", settle: func(t *testing.T, id emq.ID) {
			j := claimID(t, q, id, time.Minute)
			if err := q.Complete(ctx, j.ID, j.Token); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "bury", settle: func(t *testing.T, id emq.ID) {
			j := claimID(t, q, id, time.Minute)
			if err := q.Bury(ctx, j.ID, j.Token); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "bury_hold_dead_then_purge", policy: emq.DedupPolicy{HoldWhileDead: true}, settle: func(t *testing.T, id emq.ID) {
			j := claimID(t, q, id, time.Minute)
			if err := q.Bury(ctx, j.ID, j.Token); err != nil {
				t.Fatal(err)
			}
		}, held: true, then: func(t *testing.T, id emq.ID) {
			if ok, err := q.Purge(ctx, id); err != nil || !ok {
				t.Fatalf("Purge = %v, %v", ok, err)
			}
		}},
		{name: "cancel_pending", settle: func(t *testing.T, id emq.ID) {
			if s, err := q.CancelIDs(ctx, []emq.ID{id}, 0); err != nil || !slices.Equal(s, []emq.State{emq.StatePending}) {
				t.Fatalf("CancelIDs = %v, %v", s, err)
			}
		}},
		{name: "cancel_active", settle: func(t *testing.T, id emq.ID) {
			claimID(t, q, id, time.Minute)
			if s, err := q.CancelIDs(ctx, []emq.ID{id}, 0); err != nil || !slices.Equal(s, []emq.State{emq.StateActive}) {
				t.Fatalf("CancelIDs = %v, %v", s, err)
			}
		}},
		{name: "reap_to_dead", settle: func(t *testing.T, id emq.ID) {
			claimID(t, q, id, time.Millisecond)
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				n, err := q.ReapIDs(ctx, []emq.ID{id}, 1)
				if err != nil {
					t.Fatal(err)
				}
				if n == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the expired lease was not reaped within 10s")
				}
			}
			if info, _, _ := q.Get(ctx, id); info.State != emq.StateDead {
				t.Fatalf("reaped to %s; want dead", info.State)
			}
		}},
	}
	for _, tc := range settles {
		t.Run(tc.name, func(t *testing.T) {
			key := "k-" + tc.name
			opt := emq.WithDedup(tc.policy)
			holder, r := pushKey(t, c, q, key, "first", opt)
			wantOutcome(t, "the first push", r, emq.AdmissionAdmitted, holder)
			_, r = pushKey(t, c, q, key, "second", opt)
			wantOutcome(t, "a push while pending", r, emq.AdmissionDuplicate, holder)
			tc.settle(t, holder)
			if tc.held {
				_, r = pushKey(t, c, q, key, "third", opt)
				wantOutcome(t, "a push after "+tc.name, r, emq.AdmissionDuplicate, holder)
				tc.then(t, holder)
			}
			id, r := pushKey(t, c, q, key, "next", opt)
			wantOutcome(t, "a push after the holder settled", r, emq.AdmissionAdmitted, id)
			// leave the queue empty for the next case
			if _, err := q.CancelIDs(ctx, []emq.ID{id}, 0); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A completion record kept does not hold the key, unless the admission
// said HoldWhileResultKept.
func TestDedupResultKept(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "dedup")
	ctx := ctxT(t)
	for _, hold := range []bool{false, true} {
		key := fmt.Sprintf("result-%v", hold)
		opt := emq.WithDedup(emq.DedupPolicy{HoldWhileResultKept: hold})
		holder, _ := pushKey(t, c, q, key, "x", opt)
		j := claimID(t, q, holder, time.Minute)
		if _, err := q.CompleteResult(ctx, j.ID, j.Token, time.Minute, nil, emq.Completion{Result: []byte("done"), Keep: emq.Retention{Count: 10}}); err != nil {
			t.Fatal(err)
		}
		id, r := pushKey(t, c, q, key, "y", opt)
		if hold {
			wantOutcome(t, "a push with the result kept and held", r, emq.AdmissionDuplicate, holder)
		} else {
			wantOutcome(t, "a push with the result kept", r, emq.AdmissionAdmitted, id)
			if _, err := q.CancelIDs(ctx, []emq.ID{id}, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A throttle of 200 ms holds the key whatever the holder's fate, and
// expires after it.
func TestDedupThrottleSubSecond(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "dedup")
	opt := emq.WithDedup(emq.DedupPolicy{Mode: emq.DedupThrottle, TTL: 200 * time.Millisecond})
	begin := time.Now()
	holder, _ := pushKey(t, c, q, "t", "a", opt)
	if _, err := q.CancelIDs(ctxT(t), []emq.ID{holder}, 0); err != nil { // the holder gone: a throttle still holds
		t.Fatal(err)
	}
	_, r := pushKey(t, c, q, "t", "b", opt)
	if time.Since(begin) < 200*time.Millisecond {
		wantOutcome(t, "a push within the throttle", r, emq.AdmissionDuplicate, holder)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		id, r := pushKey(t, c, q, "t", "c", opt)
		if r.Outcome == emq.AdmissionAdmitted && r.ID == id {
			if took := time.Since(begin); took < 200*time.Millisecond {
				t.Fatalf("admitted %v after the first push; want after 200ms", took)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the throttle did not expire within 10s")
		}
	}
	if _, err := q.PushDedup(ctxT(t), mint(t, c, emq.WorkKind), nil, "t", emq.WithDedup(emq.DedupPolicy{Mode: emq.DedupThrottle})); !errors.Is(err, emq.ErrArgument) {
		t.Errorf("throttle without a TTL = %v; want ErrArgument", err)
	}
}

// debounce replaces the waiting holder's payload and moves its run-at
// back; an active holder is never touched: a new job takes the key.
func TestDedupDebounce(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "dedup")
	ctx := ctxT(t)
	opt := []emq.PushOption{emq.WithDedup(emq.DedupPolicy{Mode: emq.DedupDebounce, EventsMax: 100}), emq.Delay(time.Hour)}
	holder, r := pushKey(t, c, q, "d", "v1", opt...)
	wantOutcome(t, "the first push", r, emq.AdmissionAdmitted, holder)
	first := r.RunAt
	time.Sleep(5 * time.Millisecond)
	_, r = pushKey(t, c, q, "d", "v2", opt...)
	wantOutcome(t, "a debounced push", r, emq.AdmissionReplaced, holder)
	if !r.RunAt.After(first) {
		t.Errorf("run-at %v after the replacement; want after %v", r.RunAt, first)
	}
	info, _, err := q.Get(ctx, holder)
	if err != nil || string(info.Payload) != "v2" || info.State != emq.StateScheduled {
		t.Fatalf("the holder: %+v, %v; want v2 scheduled", info, err)
	}
	evs, err := q.EventsPage(ctx, "", 100)
	if err != nil || len(evs) != 1 || evs[0].Event != emq.EventReplaced || evs[0].ID != holder {
		t.Errorf("events %+v, %v; want one replaced of the holder", evs, err)
	}
	// made pending without delay, then active: a new push takes the key.
	_, r = pushKey(t, c, q, "d", "v3", emq.WithDedup(emq.DedupPolicy{Mode: emq.DedupDebounce}))
	wantOutcome(t, "a push without delay", r, emq.AdmissionReplaced, holder)
	j := claimID(t, q, holder, time.Minute)
	if string(j.Payload) != "v3" {
		t.Fatalf("claimed %q; want v3", j.Payload)
	}
	next, r := pushKey(t, c, q, "d", "v4", opt...)
	wantOutcome(t, "a push while the holder is active", r, emq.AdmissionAdmitted, next)
	if info, _, _ := q.Get(ctx, holder); info.State != emq.StateActive || string(info.Payload) != "v3" {
		t.Errorf("the active holder was touched: %+v", info)
	}
}

// keep_last parks a job behind an active holder (a later push replaces
// the parked payload); a worker's maintenance sweep makes it due once the
// holder completes, and it runs.
func TestDedupKeepLastParksAndRuns(t *testing.T) {
	e := newWorkerEnv(t)
	ctx := ctxT(t)
	opt := emq.WithDedup(emq.DedupPolicy{Mode: emq.DedupKeepLast})
	started := make(chan emq.ID, 4)
	release := make(chan struct{})
	var mu sync.Mutex
	var ran []string
	e.run(func(ctx context.Context, j emq.Job) error {
		started <- j.ID
		if string(j.Payload) == "holder" {
			<-release
		}
		mu.Lock()
		ran = append(ran, string(j.Payload))
		mu.Unlock()
		return nil
	}, emq.WorkerOptions{Maintenance: 50 * time.Millisecond, Wait: 100 * time.Millisecond})
	holder, _ := pushKey(t, e.c, e.q, "kl", "holder", opt)
	select {
	case id := <-started:
		if id != holder {
			t.Fatalf("started %s; want %s", id, holder)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the holder did not start within 10s")
	}
	parked, r := pushKey(t, e.c, e.q, "kl", "parked-1", opt)
	wantOutcome(t, "a push behind the active holder", r, emq.AdmissionParked, parked)
	_, r = pushKey(t, e.c, e.q, "kl", "parked-2", opt)
	wantOutcome(t, "a second push behind it", r, emq.AdmissionReplaced, parked)
	es, err := e.q.DedupEntries(ctx, "kl", "none")
	if err != nil || es[0].Holder != holder || es[0].Parked != parked || !es[0].Held || es[0].State != emq.StateActive || es[1] != (emq.DedupEntry{}) {
		t.Fatalf("entries %+v, %v", es, err)
	}
	close(release)
	select {
	case id := <-started:
		if id != parked {
			t.Fatalf("started %s; want the parked %s", id, parked)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the parked job did not run within 10s of its holder's completion")
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(ran)
		mu.Unlock()
		if n == 2 || time.Now().After(deadline) {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(ran, []string{"holder", "parked-2"}) {
		t.Errorf("ran %q; want the holder, then the last parked payload", ran)
	}
}

// N concurrent pushes of one key, from several clients, admit exactly one
// job; every other push names it.
func TestDedupConcurrentAdmitOne(t *testing.T) {
	srv := redistest.Start(t)
	clients := []*emq.Client{connect(t, srv), connect(t, srv), connect(t, srv)}
	const n = 30
	results := make([]emq.DedupResult, n)
	ids := make([]emq.ID, n)
	var wg sync.WaitGroup
	for i := range n {
		c := clients[i%len(clients)]
		q := queue(t, c, "dedup")
		ids[i] = mint(t, c, emq.WorkKind)
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := q.PushDedup(context.Background(), ids[i], []byte("x"), "one")
			if err != nil {
				t.Error(err)
			}
			results[i] = r
		}()
	}
	wg.Wait()
	admitted := 0
	var holder emq.ID
	for i, r := range results {
		if r.Outcome == emq.AdmissionAdmitted {
			admitted++
			holder = ids[i]
		}
	}
	if admitted != 1 {
		t.Fatalf("%d admitted; want 1 (%+v)", admitted, results)
	}
	for _, r := range results {
		if r.ID != holder {
			t.Errorf("%s names %s; want the holder %s", r.Outcome, r.ID, holder)
		}
	}
	if n, err := queue(t, clients[0], "dedup").Size(ctxT(t), emq.SetPending); err != nil || n != 1 {
		t.Errorf("pending %d, %v; want 1", n, err)
	}
}

// A batch with keys: a later job of the batch meets the key an earlier
// one took; a deferred replacement is resolved.
func TestDedupBatch(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "dedup")
	ctx := ctxT(t)
	holder, _ := pushKey(t, c, q, "b", "old", emq.WithDedup(emq.DedupPolicy{Mode: emq.DedupDebounce}))
	jobs := []emq.NewJob{
		{ID: mint(t, c, emq.WorkKind), Payload: []byte("x1"), DedupKey: "x"},
		{ID: mint(t, c, emq.WorkKind), Payload: []byte("x2"), DedupKey: "x"},
		{ID: mint(t, c, emq.WorkKind), Payload: []byte("new"), DedupKey: "b"},
		{ID: mint(t, c, emq.WorkKind), Payload: []byte("plain")},
	}
	// add_dedup alone answers deferred for the replacement
	raw, err := q.AddDedup(ctx, jobs[2:3], emq.WithDedup(emq.DedupPolicy{Mode: emq.DedupDebounce}))
	if err != nil || raw[0].Outcome != emq.AdmissionDeferred || raw[0].ID != holder {
		t.Fatalf("AddDedup = %+v, %v; want deferred to %s", raw, err, holder)
	}
	rs, err := q.PushBatchDedup(ctx, jobs, emq.WithDedup(emq.DedupPolicy{Mode: emq.DedupDebounce}))
	if err != nil {
		t.Fatal(err)
	}
	want := []emq.DedupResult{{Outcome: emq.AdmissionAdmitted, ID: jobs[0].ID}, {Outcome: emq.AdmissionReplaced, ID: jobs[0].ID},
		{Outcome: emq.AdmissionReplaced, ID: holder}, {Outcome: emq.AdmissionAdmitted, ID: jobs[3].ID}}
	if !slices.Equal(rs, want) {
		t.Fatalf("PushBatchDedup = %+v; want %+v", rs, want)
	}
	if info, _, _ := q.Get(ctx, holder); string(info.Payload) != "new" {
		t.Errorf("the holder's payload %q; want new", info.Payload)
	}
	oks, err := q.PushBatchWith(ctx, []emq.NewJob{{ID: mint(t, c, emq.WorkKind), DedupKey: "x"}})
	if err != nil || !slices.Equal(oks, []bool{false}) {
		t.Errorf("PushBatchWith of a held key = %v, %v; want false", oks, err)
	}
	if _, err := q.PushBatchDedup(ctx, jobs, emq.WithDedup(emq.DedupPolicy{Mode: "never"})); !errors.Is(err, emq.ErrArgument) {
		t.Errorf("an unknown mode = %v; want ErrArgument", err)
	}
}

// CancelIDs cancels pending and scheduled jobs, and leaves dead and
// unknown ones; CancelKey cancels a key's holder and the job parked
// behind it; each is reported as an event.
func TestCancelPendingScheduledAndByKey(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "cancel")
	ctx := ctxT(t)
	pending, scheduled, dead, never := mint(t, c, emq.WorkKind), mint(t, c, emq.WorkKind), mint(t, c, emq.WorkKind), mint(t, c, emq.WorkKind)
	if _, err := q.Push(ctx, dead, nil); err != nil {
		t.Fatal(err)
	}
	j := claimID(t, q, dead, time.Minute)
	if err := q.Bury(ctx, j.ID, j.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Push(ctx, pending, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := q.PushWith(ctx, scheduled, nil, emq.Delay(time.Hour), emq.Attempts(3)); err != nil {
		t.Fatal(err)
	}
	states, err := q.CancelIDs(ctx, []emq.ID{pending, scheduled, dead, never, pending}, 100)
	if err != nil || !slices.Equal(states, []emq.State{emq.StatePending, emq.StateScheduled, "", "", ""}) {
		t.Fatalf("CancelIDs = %v, %v", states, err)
	}
	for _, id := range []emq.ID{pending, scheduled} {
		if _, found, _ := q.Get(ctx, id); found {
			t.Errorf("%s still has a row", id)
		}
	}
	if n := hgetall(t, c, q.Keys().Options); len(n) != 0 {
		t.Errorf("options left %v", n)
	}
	evs, err := q.EventsPage(ctx, "", 100)
	var cancelled []emq.ID
	for _, e := range evs {
		if e.Event == emq.EventCancelled {
			cancelled = append(cancelled, e.ID)
		}
	}
	if err != nil || !slices.Equal(cancelled, []emq.ID{pending, scheduled}) {
		t.Errorf("cancelled events of %v, %v", cancelled, err)
	}
	if _, err := q.CancelIDs(ctx, make([]emq.ID, emq.MaxCancelIDs+1), 0); !errors.Is(err, emq.ErrArgument) {
		t.Errorf("too many ids = %v; want ErrArgument", err)
	}

	opt := emq.WithDedup(emq.DedupPolicy{Mode: emq.DedupKeepLast})
	holder, _ := pushKey(t, c, q, "ck", "h", opt)
	claimID(t, q, holder, time.Minute)
	parked, r := pushKey(t, c, q, "ck", "p", opt)
	wantOutcome(t, "parked", r, emq.AdmissionParked, parked)
	got, err := q.CancelKey(ctx, "ck", 0)
	if want := []emq.CancelledJob{{ID: holder, State: emq.StateActive}, {ID: parked, State: emq.StateScheduled}}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("CancelKey = %+v, %v; want %+v", got, err, want)
	}
	if got, err := q.CancelKey(ctx, "ck", 0); err != nil || len(got) != 0 {
		t.Errorf("CancelKey again = %+v, %v; want none", got, err)
	}
	sw, err := q.SweepDedup(ctx, "", 100)
	if err != nil || sw.Cursor != "0" || sw.Dropped != 1 {
		t.Errorf("SweepDedup = %+v, %v; want the entry dropped", sw, err)
	}
}

// A running job cancelled from another client has its handler's context
// cancelled at once (cause ErrCancelled); it is not retried, leaves no
// row, and the worker logs no error.
func TestCancelRunningFromAnotherClient(t *testing.T) {
	e := newWorkerEnv(t)
	other := connect(t, e.srv)
	oq := queue(t, other, e.q.Name())
	ctx := ctxT(t)
	started := make(chan emq.ID, 1)
	causes := make(chan error, 4)
	e.run(func(ctx context.Context, j emq.Job) error {
		started <- j.ID
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return context.Cause(ctx)
	}, emq.WorkerOptions{Lease: 30 * time.Second, Maintenance: 50 * time.Millisecond})
	var lat []time.Duration
	for round := range 5 {
		id := mint(t, e.c, emq.WorkKind)
		if _, err := e.q.Push(ctx, id, []byte("long")); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-started:
			if got != id {
				t.Fatalf("started %s; want %s", got, id)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the job did not start within 10s")
		}
		events := make(chan emq.JobEvent, 8)
		ectx, stopEvents := context.WithCancel(ctx)
		go func() {
			_ = oq.Events(ectx, "", func(_ context.Context, ev emq.JobEvent) error {
				if ev.ID == id {
					events <- ev
				}
				return nil
			}, emq.EventsWait(100*time.Millisecond))
		}()
		begin := time.Now()
		states, err := oq.CancelIDs(ctx, []emq.ID{id}, 100)
		if err != nil || !slices.Equal(states, []emq.State{emq.StateActive}) {
			t.Fatalf("CancelIDs = %v, %v", states, err)
		}
		select {
		case cause := <-causes:
			lat = append(lat, time.Since(begin))
			if !errors.Is(cause, emq.ErrCancelled) {
				t.Fatalf("the handler's cause %v; want ErrCancelled", cause)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the handler was not cancelled within 10s")
		}
		select {
		case ev := <-events:
			if ev.Event != emq.EventCancelled {
				t.Errorf("event %s; want cancelled", ev.Event)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no cancelled event within 10s")
		}
		stopEvents()
		for deadline := time.Now().Add(10 * time.Second); e.tally.Get(emq.Cancelled) != int64(round+1); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("cancelled count %d; want %d", e.tally.Get(emq.Cancelled), round+1)
			}
		}
		if _, found, err := e.q.Get(ctx, id); err != nil || found {
			t.Errorf("the cancelled job's row: found %v, %v", found, err)
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	t.Logf("cancel call to handler cancelled: min %v, median %v, max %v", lat[0], lat[len(lat)/2], lat[len(lat)-1])
	sizes, err := e.q.Sizes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for s, n := range sizes {
		if n != 0 {
			t.Errorf("%s holds %d; want every set empty (nothing retried)", s, n)
		}
	}
	if got := e.tally.Get(emq.Retried) + e.tally.Get(emq.Buried) + e.tally.Get(emq.Completed); got != 0 {
		t.Errorf("retried+buried+completed = %d; want 0", got)
	}
	if log := e.log.String(); strings.Contains(log, "level=ERROR") || strings.Contains(log, "level=WARN") {
		t.Errorf("the worker logged a warning or an error:\n%s", log)
	}
}

// A job whose row went without a message the worker heard (a missed
// cancellation) is learned at the next extend: the handler's context is
// cancelled.
func TestCancelLearnedAtExtend(t *testing.T) {
	e := newWorkerEnv(t)
	ctx := ctxT(t)
	started := make(chan emq.Job, 1)
	causes := make(chan error, 1)
	e.run(func(ctx context.Context, j emq.Job) error {
		started <- j
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil
	}, emq.WorkerOptions{Lease: 300 * time.Millisecond, Maintenance: -1})
	id := mint(t, e.c, emq.WorkKind)
	if _, err := e.q.Push(ctx, id, nil); err != nil {
		t.Fatal(err)
	}
	j := <-started
	// delete the row behind the worker's back without a message: what a
	// missed message leaves
	row, _ := e.q.Keys().Row(j.ID)
	do(t, e.c, "DEL", row)
	do(t, e.c, "ZREM", e.q.Keys().Active, j.ID.String())
	select {
	case cause := <-causes:
		if !errors.Is(cause, emq.ErrLeaseLost) {
			t.Errorf("cause %v; want ErrLeaseLost", cause)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler was not cancelled at its next extend")
	}
}
