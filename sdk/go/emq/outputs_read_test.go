package emq_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// The reads of echomq 2.4.0 against a real server. The writes that set
// them up run the 2.4 scripts through their generated calls (package
// wire): the idiomatic write API is another change's.

// outputsEnv is a client, a queue and the 2.4 writes through wire calls.
type outputsEnv struct {
	t *testing.T
	c *emq.Client
	q *emq.Queue
	k wire.QueueKeys
}

func newOutputsEnv(t *testing.T) *outputsEnv {
	t.Helper()
	srv := redistest.Start(t)
	return outputsOn(t, connect(t, srv), "outputs")
}

func outputsOn(t *testing.T, c *emq.Client, name string) *outputsEnv {
	t.Helper()
	q := queue(t, c, name)
	return &outputsEnv{t: t, c: c, q: q, k: q.Keys()}
}

func (e *outputsEnv) row(id emq.ID) string {
	e.t.Helper()
	row, err := e.k.Row(id)
	if err != nil {
		e.t.Fatal(err)
	}
	return row
}

// claimed pushes a job and claims it, returning its token.
func (e *outputsEnv) claimed(payload string) (emq.ID, int64) {
	e.t.Helper()
	id := mint(e.t, e.c, emq.WorkKind)
	if _, err := e.q.Push(ctxT(e.t), id, []byte(payload)); err != nil {
		e.t.Fatal(err)
	}
	return id, e.claim(id)
}

func (e *outputsEnv) claim(id emq.ID) int64 {
	e.t.Helper()
	js, err := e.q.ClaimIDs(ctxT(e.t), time.Minute, []emq.ID{id})
	if err != nil || len(js) != 1 {
		e.t.Fatalf("ClaimIDs(%s) = %v, %v", id, js, err)
	}
	return js[0].Token
}

func (e *outputsEnv) progress(id emq.ID, token int64, p string) {
	e.t.Helper()
	call := wire.ProgressCall{Row: e.row(id), ProgressKey: e.k.Progress, Events: e.k.Events, ID: id, Token: token, Progress: p, EventsMax: 100}
	if _, err := call.Exec(ctxT(e.t), e.c.Redis()); err != nil {
		e.t.Fatalf("progress: %v", err)
	}
}

func (e *outputsEnv) complete(id emq.ID, token int64, result string, keep int64) {
	e.t.Helper()
	call := wire.CompleteResultClaimIDsCall{Row: e.row(id), Active: e.k.Active, Pending: e.k.Pending, Wake: e.k.Wake,
		Results: e.k.Results, ResultTimes: e.k.ResultTimes, Progress: e.k.Progress, Failures: e.k.Failures, Options: e.k.Options,
		Events: e.k.Events, Counters: e.k.Counters, ID: id, Token: token, LeaseMS: 60000, Result: result, Keep: keep, EventsMax: 100}
	if _, err := call.Exec(ctxT(e.t), e.c.Redis()); err != nil {
		e.t.Fatalf("complete_result_claim_ids: %v", err)
	}
}

func (e *outputsEnv) fail(id emq.ID, token int64, msg string, maxAttempts int64) wire.FailReply {
	e.t.Helper()
	call := wire.FailCall{Active: e.k.Active, Row: e.row(id), Schedule: e.k.Schedule, Dead: e.k.Dead, Wake: e.k.Wake,
		Failures: e.k.Failures, Options: e.k.Options, Events: e.k.Events, Counters: e.k.Counters,
		ID: id, Token: token, Class: emq.FailureClassError, Worker: "w1", Error: msg, MaxAttempts: maxAttempts,
		Backoff: emq.BackoffFixed, BackoffMS: 0, EventsMax: 100}
	r, err := call.Exec(ctxT(e.t), e.c.Redis())
	if err != nil {
		e.t.Fatalf("fail: %v", err)
	}
	return r
}

func near(t *testing.T, what string, got time.Time) {
	t.Helper()
	if d := time.Since(got); d < -time.Minute || d > time.Minute {
		t.Errorf("%s = %v, want about now", what, got)
	}
}

// Get answers a job's last progress report with its row, and once it is
// completed with a kept record, the record beside ok false; Output reads
// the same alone. A completion that keeps nothing leaves nothing to read.
func TestGetProgressAndCompletion(t *testing.T) {
	e := newOutputsEnv(t)
	ctx := ctxT(t)
	id, tok := e.claimed("work")

	info, ok, err := e.q.Get(ctx, id)
	if err != nil || !ok || info.Progress != nil || info.Completed != nil {
		t.Fatalf("Get before progress = %+v, %v, %v", info, ok, err)
	}
	e.progress(id, tok, "10%")
	e.progress(id, tok, "40%")
	info, ok, err = e.q.Get(ctx, id)
	if err != nil || !ok || string(info.Progress) != "40%" || info.State != emq.StateActive || info.Completed != nil {
		t.Fatalf("Get = %+v, %v, %v; want active with progress 40%%", info, ok, err)
	}
	out, err := e.q.Output(ctx, id)
	if err != nil || string(out.Progress) != "40%" || out.Completed != nil {
		t.Fatalf("Output = %+v, %v", out, err)
	}

	result := "answer\x00\xff" // any bytes
	e.complete(id, tok, result, 10)
	info, ok, err = e.q.Get(ctx, id)
	if err != nil || ok {
		t.Fatalf("Get after completion = %+v, %v, %v; want not found", info, ok, err)
	}
	if info.ID != id || info.Progress != nil || info.Completed == nil {
		t.Fatalf("Get after completion = %+v; want the completion record", info)
	}
	if c := info.Completed; c.Attempt != tok || !bytes.Equal(c.Result, []byte(result)) {
		t.Errorf("Completed = %+v, want attempt %d and result %q", c, tok, result)
	}
	near(t, "Completed.At", info.Completed.At)
	out, err = e.q.Output(ctx, id)
	if err != nil || out.Completed == nil || !out.Completed.At.Equal(info.Completed.At) || string(out.Completed.Result) != result {
		t.Fatalf("Output after completion = %+v, %v", out, err)
	}

	// Kept nothing, never enqueued: nothing to read.
	other, tok := e.claimed("other")
	e.complete(other, tok, "discarded", 0)
	never := mint(t, e.c, emq.WorkKind)
	for _, id := range []emq.ID{other, never} {
		info, ok, err := e.q.Get(ctx, id)
		if err != nil || ok || info.Completed != nil || info.Progress != nil {
			t.Errorf("Get(%s) = %+v, %v, %v; want nothing", id, info, ok, err)
		}
		if out, err := e.q.Output(ctx, id); err != nil || out.Completed != nil || out.Progress != nil {
			t.Errorf("Output(%s) = %+v, %v; want nothing", id, out, err)
		}
	}
	if _, err := e.q.Output(ctx, emq.ID{}); !errors.Is(err, emq.ErrID) {
		t.Errorf("Output(zero ID) = %v, want ErrID", err)
	}
}

// Get sends the output script beside the failures script in its one
// round trip, and sends both again (EVAL_RO) when the server has
// forgotten them.
func TestGetAfterScriptFlush(t *testing.T) {
	e := newOutputsEnv(t)
	ctx := ctxT(t)
	id, tok := e.claimed("work")
	e.fail(id, tok, "first", 0)
	if _, err := e.q.PromoteIDs(ctx, []emq.ID{id}); err != nil {
		t.Fatal(err)
	}
	tok = e.claim(id)
	e.progress(id, tok, "half")
	if err := do(t, e.c, "SCRIPT", "FLUSH").Error(); err != nil {
		t.Fatal(err)
	}
	info, ok, err := e.q.Get(ctx, id)
	if err != nil || !ok || string(info.Progress) != "half" || len(info.Failures) != 1 || info.Failures[0].Message != "first" {
		t.Fatalf("Get after SCRIPT FLUSH = %+v, %v, %v", info, ok, err)
	}
}

// Counters answers the totals and the last minutes, the current first;
// minutes out of range are refused before anything is sent.
func TestCounters(t *testing.T) {
	e := newOutputsEnv(t)
	ctx := ctxT(t)
	c, err := e.q.Counters(ctx, 3)
	if err != nil || c.Totals != (emq.SettleCounts{}) || len(c.Minutes) != 3 {
		t.Fatalf("Counters of a fresh queue = %+v, %v", c, err)
	}
	a, tok := e.claimed("a")
	if r := e.fail(a, tok, "boom", 0); r.Outcome != emq.EventRetried {
		t.Fatalf("fail = %+v", r)
	}
	if n, err := e.q.PromoteIDs(ctx, []emq.ID{a}); err != nil || n != 1 {
		t.Fatalf("PromoteIDs = %d, %v", n, err)
	}
	tok = e.claim(a)
	if r := e.fail(a, tok, "boom again", 2); r.Outcome != emq.EventDead {
		t.Fatalf("fail = %+v", r)
	}
	b, tok := e.claimed("b")
	e.complete(b, tok, "", 0)

	c, err = e.q.Counters(ctx, emq.MaxCounterMinutes)
	if err != nil {
		t.Fatal(err)
	}
	want := emq.SettleCounts{Completed: 1, Failed: 2, Retried: 1, Dead: 1}
	if c.Totals != want {
		t.Errorf("Totals = %+v, want %+v", c.Totals, want)
	}
	if len(c.Minutes) != emq.MaxCounterMinutes {
		t.Fatalf("%d minutes, want %d", len(c.Minutes), emq.MaxCounterMinutes)
	}
	var sum emq.SettleCounts
	for i, m := range c.Minutes {
		if m.Minute.UnixMilli()%60000 != 0 || (i > 0 && !m.Minute.Equal(c.Minutes[i-1].Minute.Add(-time.Minute))) {
			t.Fatalf("minute %d starts at %v after %v", i, m.Minute, c.Minutes[max(i-1, 0)].Minute)
		}
		sum.Completed, sum.Failed, sum.Retried, sum.Dead = sum.Completed+m.Completed, sum.Failed+m.Failed, sum.Retried+m.Retried, sum.Dead+m.Dead
	}
	if sum != want {
		t.Errorf("the minutes sum to %+v, want %+v", sum, want)
	}
	near(t, "the current minute", c.Minutes[0].Minute)

	if c, err := e.q.Counters(ctx, 0); err != nil || c.Totals != want || len(c.Minutes) != 0 {
		t.Errorf("Counters(0) = %+v, %v", c, err)
	}
	for _, n := range []int{-1, emq.MaxCounterMinutes + 1} {
		if _, err := e.q.Counters(ctx, n); !errors.Is(err, emq.ErrArgument) {
			t.Errorf("Counters(%d) = %v, want ErrArgument", n, err)
		}
	}
}

// EventsPage reads the stream in pages after a stream id, with each
// event's fields; a word the vocabulary does not know is kept; a bad page
// is refused before anything is sent.
func TestEventsPage(t *testing.T) {
	e := newOutputsEnv(t)
	ctx := ctxT(t)
	if evs, err := e.q.EventsPage(ctx, "", 10); err != nil || len(evs) != 0 {
		t.Fatalf("EventsPage of no stream = %v, %v", evs, err)
	}
	id, tok := e.claimed("life")
	e.progress(id, tok, "1/2")
	f := e.fail(id, tok, "boom", 0)
	if _, err := e.q.PromoteIDs(ctx, []emq.ID{id}); err != nil {
		t.Fatal(err)
	}
	tok = e.claim(id)
	e.complete(id, tok, "ok", 1)
	// A later minor's word, and an entry the events script does not name
	// (skipped).
	if err := do(t, e.c, "XADD", e.k.Events, "*", "e", "frobbed", "j", id.String(), "a", "2").Error(); err != nil {
		t.Fatal(err)
	}
	if err := do(t, e.c, "XADD", e.k.Events, "*", "zz", "1").Error(); err != nil {
		t.Fatal(err)
	}

	all, err := e.q.EventsPage(ctx, "", emq.MaxEventsPage)
	if err != nil {
		t.Fatal(err)
	}
	want := []emq.Event{emq.EventProgress, emq.EventFailed, emq.EventRetried, emq.EventCompleted, "frobbed"}
	if len(all) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(all), len(want), all)
	}
	for i, ev := range all {
		if ev.Event != want[i] || ev.ID != id || ev.StreamID == "" {
			t.Errorf("event %d = %+v, want %s of %s", i, ev, want[i], id)
		}
	}
	if p := all[0]; string(p.Progress) != "1/2" || p.Attempt != 1 {
		t.Errorf("progress event = %+v", p)
	}
	if fl := all[1]; fl.Class != emq.FailureClassError || fl.Error != "boom" || fl.Attempt != 1 || !fl.RunAt.IsZero() {
		t.Errorf("failed event = %+v", fl)
	}
	if r := all[2]; r.RunAt.UnixMilli() != f.RunAtMS {
		t.Errorf("retried event = %+v, want run-at %d", r, f.RunAtMS)
	}
	if c := all[3]; c.Attempt != 2 || c.Class != "" || c.Progress != nil {
		t.Errorf("completed event = %+v", c)
	}
	if all[4].Event.Registered() {
		t.Errorf("%q is registered", all[4].Event)
	}

	// Pages of two, each after the last one's last id.
	var paged []emq.JobEvent
	var after emq.StreamID
	for {
		page, err := e.q.EventsPage(ctx, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		paged, after = append(paged, page...), page[len(page)-1].StreamID
	}
	if len(paged) != len(all) {
		t.Errorf("pages of two read %d events, one page %d", len(paged), len(all))
	}

	for _, bad := range []struct {
		after emq.StreamID
		count int
	}{{"", 0}, {"", emq.MaxEventsPage + 1}, {"not-an-id", 1}, {"12", 1}, {"1-2-3", 1}} {
		if _, err := e.q.EventsPage(ctx, bad.after, bad.count); !errors.Is(err, emq.ErrArgument) {
			t.Errorf("EventsPage(%q, %d) = %v, want ErrArgument", bad.after, bad.count, err)
		}
	}
}

// Events delivers every event in order: those already kept, then those
// written while it waits on the stream, resuming after the last one; it
// returns nil when ctx ends and a handler's error when it fails.
func TestEventsListener(t *testing.T) {
	e := newOutputsEnv(t)
	id, tok := e.claimed("listened")
	e.progress(id, tok, "before")

	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	got := make(chan emq.JobEvent, 100)
	done := make(chan error, 1)
	go func() {
		done <- e.q.Events(ctx, "", func(_ context.Context, ev emq.JobEvent) error {
			got <- ev
			return nil
		}, emq.EventsWait(30*time.Second), emq.EventsPageSize(1))
	}()
	next := func() emq.JobEvent {
		t.Helper()
		select {
		case ev := <-got:
			return ev
		case err := <-done:
			t.Fatalf("Events returned %v", err)
		case <-time.After(30 * time.Second):
			t.Fatal("no event within 30s")
		}
		return emq.JobEvent{}
	}
	if ev := next(); ev.Event != emq.EventProgress || string(ev.Progress) != "before" {
		t.Fatalf("first event = %+v", ev)
	}
	// Written while the listener waits (or reads): it wakes at once,
	// long before its 30 s wait passes.
	e.progress(id, tok, "during")
	if ev := next(); ev.Event != emq.EventProgress || string(ev.Progress) != "during" {
		t.Fatalf("second event = %+v", ev)
	}
	e.complete(id, tok, "", 0)
	last := next()
	if last.Event != emq.EventCompleted {
		t.Fatalf("third event = %+v", last)
	}
	// An entry the events script skips does not wake the listener for
	// ever: the next event still arrives, and nothing else does.
	if err := do(t, e.c, "XADD", e.k.Events, "*", "zz", "1").Error(); err != nil {
		t.Fatal(err)
	}
	other, tok := e.claimed("other")
	e.progress(other, tok, "after")
	if ev := next(); ev.ID != other {
		t.Fatalf("fourth event = %+v", ev)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Events after cancel = %v, want nil", err)
		}
	case <-time.After(45 * time.Second):
		t.Fatal("Events did not return after cancel")
	}

	// Resuming after the completion delivers what came after it only; a
	// handler's error ends the listener with it.
	stop := errors.New("stop")
	var resumed []emq.JobEvent
	err := e.q.Events(ctxT(t), last.StreamID, func(_ context.Context, ev emq.JobEvent) error {
		resumed = append(resumed, ev)
		return stop
	})
	if !errors.Is(err, stop) || len(resumed) != 1 || resumed[0].ID != other {
		t.Fatalf("resumed Events = %v, %+v", err, resumed)
	}

	for _, bad := range []func() error{
		func() error {
			return e.q.Events(ctxT(t), "x", func(context.Context, emq.JobEvent) error { return nil })
		},
		func() error {
			return e.q.Events(ctxT(t), "", func(context.Context, emq.JobEvent) error { return nil }, emq.EventsPageSize(0))
		},
		func() error {
			return e.q.Events(ctxT(t), "", func(context.Context, emq.JobEvent) error { return nil }, emq.EventsWait(0))
		},
		func() error { return e.q.Events(ctxT(t), "", nil) },
	} {
		if err := bad(); !errors.Is(err, emq.ErrArgument) {
			t.Errorf("Events = %v, want ErrArgument", err)
		}
	}
}

// Events listens to what happens to a queue's jobs, resuming after the
// last event it handled; Get and Counters read a job's progress or kept
// result, and the queue's settle counts.
func ExampleQueue_Events() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := emq.Connect(ctx, emq.Options{Addr: addr})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	q, err := c.Queue("example-events")
	if err != nil {
		log.Fatal(err)
	}
	id, err := c.Mint(emq.WorkKind)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := q.Push(ctx, id, []byte("report 9")); err != nil {
		log.Fatal(err)
	}
	job, _, err := q.Claim(ctx, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	// A 2.4 worker reports progress from its handler; here, the script.
	k := q.Keys()
	row, _ := k.Row(job.ID)
	p := wire.ProgressCall{Row: row, ProgressKey: k.Progress, Events: k.Events, ID: job.ID, Token: job.Token, Progress: "3/4", EventsMax: 1000}
	if _, err := p.Exec(ctx, c.Redis()); err != nil {
		log.Fatal(err)
	}

	info, _, err := q.Get(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: progress %s\n", info.State, info.Progress)

	var last emq.StreamID
	err = q.Events(ctx, "", func(ctx context.Context, ev emq.JobEvent) error {
		fmt.Printf("%s of attempt %d: %s\n", ev.Event, ev.Attempt, ev.Progress)
		last = ev.StreamID
		cancel() // a real listener runs until its context ends
		return nil
	})
	fmt.Println(err, last != "")
	// Output:
	// active: progress 3/4
	// progress of attempt 1: 3/4
	// <nil> true
}

// On a Redis Cluster every read reaches the queue's slot: Get's pipeline
// with the output script, Counters, EventsPage and the listener's XREAD
// wait, for queues on several primaries.
func TestClusterReads(t *testing.T) {
	cl := redistest.StartCluster(t)
	c, err := emq.Connect(ctxT(t), emq.Options{Redis: rueidis.ClientOption{InitAddress: cl.Addrs(), DisableCache: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	for i := range 6 {
		e := outputsOn(t, c, fmt.Sprintf("reads-%d", i))
		ctx := ctxT(t)
		id, tok := e.claimed("work")
		e.progress(id, tok, "half")
		if info, ok, err := e.q.Get(ctx, id); err != nil || !ok || string(info.Progress) != "half" {
			t.Fatalf("%s: Get = %+v, %v, %v", e.q.Name(), info, ok, err)
		}
		lctx, stop := context.WithCancel(ctx)
		got := make(chan emq.JobEvent, 10)
		done := make(chan error, 1)
		go func() {
			done <- e.q.Events(lctx, "", func(_ context.Context, ev emq.JobEvent) error {
				got <- ev
				return nil
			}, emq.EventsWait(30*time.Second))
		}()
		if ev := <-got; ev.Event != emq.EventProgress {
			t.Fatalf("%s: first event %+v", e.q.Name(), ev)
		}
		e.complete(id, tok, "done", 5)
		select {
		case ev := <-got:
			if ev.Event != emq.EventCompleted {
				t.Fatalf("%s: second event %+v", e.q.Name(), ev)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the listener did not wake", e.q.Name())
		}
		stop()
		if err := <-done; err != nil {
			t.Fatalf("%s: Events = %v", e.q.Name(), err)
		}
		if info, ok, err := e.q.Get(ctx, id); err != nil || ok || info.Completed == nil || string(info.Completed.Result) != "done" {
			t.Fatalf("%s: Get after completion = %+v, %v, %v", e.q.Name(), info, ok, err)
		}
		if cs, err := e.q.Counters(ctx, 2); err != nil || cs.Totals.Completed != 1 || cs.Minutes[0].Completed+cs.Minutes[1].Completed != 1 {
			t.Fatalf("%s: Counters = %+v, %v", e.q.Name(), cs, err)
		}
	}
}

// Counters reads the settle counts the server keeps for a queue: the
// totals, and one record per minute, the current minute first. Here one
// job is completed by a 2.4 completion (the script a 2.4 worker runs).
func ExampleQueue_Counters() {
	ctx := context.Background()
	c, err := emq.Connect(ctx, emq.Options{Addr: addr})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	q, err := c.Queue("example-counters")
	if err != nil {
		log.Fatal(err)
	}
	id, err := c.Mint(emq.WorkKind)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := q.Push(ctx, id, []byte("report 9")); err != nil {
		log.Fatal(err)
	}
	job, _, err := q.Claim(ctx, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	k := q.Keys()
	row, _ := k.Row(job.ID)
	done := wire.CompleteResultClaimIDsCall{Row: row, Active: k.Active, Pending: k.Pending, Wake: k.Wake, Results: k.Results,
		ResultTimes: k.ResultTimes, Progress: k.Progress, Failures: k.Failures, Options: k.Options, Events: k.Events,
		Counters: k.Counters, ID: job.ID, Token: job.Token, LeaseMS: 60000, Result: "42 rows", Keep: 100}
	if _, err := done.Exec(ctx, c.Redis()); err != nil {
		log.Fatal(err)
	}

	counts, err := q.Counters(ctx, 5)
	if err != nil {
		log.Fatal(err)
	}
	var recent int64
	for _, m := range counts.Minutes {
		recent += m.Completed
	}
	fmt.Printf("completed %d, failed %d; %d in the last %d minutes\n",
		counts.Totals.Completed, counts.Totals.Failed, recent, len(counts.Minutes))
	info, found, err := q.Get(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("found %v; completed by attempt %d: %s\n", found, info.Completed.Attempt, info.Completed.Result)
	// Output:
	// completed 1, failed 0; 1 in the last 5 minutes
	// found false; completed by attempt 1: 42 rows
}

// With a real 2.4 worker: a listener sees each job's progress and
// completion as the worker reports them, Get reads the kept result, and
// Counters counts the completions.
func TestReadsOfARealWorker(t *testing.T) {
	e := newOutputsEnv(t)
	ctx := ctxT(t)
	const n = 5
	ids := make([]emq.ID, n)
	for i := range ids {
		ids[i] = mint(t, e.c, emq.WorkKind)
		if _, err := e.q.Push(ctx, ids[i], []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	w, err := emq.NewResultWorker(e.q, func(ctx context.Context, j emq.Job) ([]byte, error) {
		if err := emq.ReportProgress(ctx, []byte("half of "+string(j.Payload))); err != nil {
			return nil, err
		}
		return []byte("result of " + string(j.Payload)), nil
	}, emq.WorkerOptions{Concurrency: 2, KeepResults: emq.Retention{Count: 100}})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()

	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	progressed, completed := map[emq.ID]bool{}, map[emq.ID]bool{}
	err = e.q.Events(lctx, "", func(_ context.Context, ev emq.JobEvent) error {
		switch ev.Event {
		case emq.EventProgress:
			progressed[ev.ID] = true
		case emq.EventCompleted:
			if !progressed[ev.ID] {
				t.Errorf("%s completed before its progress event", ev.ID)
			}
			completed[ev.ID] = true
		}
		if len(completed) == n {
			cancel()
		}
		return nil
	})
	if err != nil || len(completed) != n {
		t.Fatalf("Events = %v after %d completions", err, len(completed))
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	for i, id := range ids {
		info, ok, err := e.q.Get(ctx, id)
		if err != nil || ok || info.Completed == nil || string(info.Completed.Result) != fmt.Sprint("result of ", i) || info.Completed.Attempt != 1 {
			t.Errorf("Get(%s) = %+v, %v, %v", id, info, ok, err)
		}
	}
	if c, err := e.q.Counters(ctx, 0); err != nil || c.Totals.Completed != n {
		t.Errorf("Counters = %+v, %v", c, err)
	}
}
