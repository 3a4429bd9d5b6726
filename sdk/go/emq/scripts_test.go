package emq_test

// Every script of the bundle on the wire, mostly through the generated
// typed calls (XxxCall.Exec, DecodeXxx, LuaExec), against a real
// redis-server: each reply and each refusal, and the row and set state after
// each call. Deadlines and run-ats are checked against the server's TIME
// read just before and just after the call, so the window is exact.

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// rig is one test's server, fenced client and queue.
type rig struct {
	t   *testing.T
	srv *redistest.Server
	c   *emq.Client
	q   *emq.Queue
	k   wire.QueueKeys
	ctx context.Context
}

func newWire(t *testing.T) *rig {
	t.Helper()
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "orders")
	return &rig{t: t, srv: srv, c: c, q: q, k: q.Keys(), ctx: ctxT(t)}
}

func (w *rig) rc() rueidis.Client { return w.c.Redis() }

// now is the server's clock in ms, computed as the scripts compute it.
func (w *rig) now() int64 {
	w.t.Helper()
	return wireNow(w.t, w.ctx, w.rc())
}

func wireNow(t testing.TB, ctx context.Context, rc rueidis.Client) int64 {
	t.Helper()
	ts, err := rc.Do(ctx, rc.B().Time().Build()).AsStrSlice()
	if err != nil || len(ts) != 2 {
		t.Fatalf("TIME = %v, %v", ts, err)
	}
	sec, err1 := strconv.ParseInt(ts[0], 10, 64)
	usec, err2 := strconv.ParseInt(ts[1], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("TIME = %v", ts)
	}
	return sec*1000 + usec/1000
}

func (w *rig) mint() emq.ID { w.t.Helper(); return mint(w.t, w.c, emq.WorkKind) }

func (w *rig) row(id emq.ID) string {
	w.t.Helper()
	r, err := w.k.Row(id)
	if err != nil {
		w.t.Fatalf("Row(%v): %v", id, err)
	}
	return r
}

func (w *rig) hash(key string) map[string]string { w.t.Helper(); return hgetall(w.t, w.c, key) }

// score is ZSCORE key member; ok is false when member is not in key.
func (w *rig) score(key string, id emq.ID) (int64, bool) {
	w.t.Helper()
	f, err := do(w.t, w.c, "ZSCORE", key, id.String()).AsFloat64()
	if rueidis.IsRedisNil(err) {
		return 0, false
	}
	if err != nil {
		w.t.Fatalf("ZSCORE %s %v: %v", key, id, err)
	}
	return int64(f), true
}

func (w *rig) card(key string) int64 {
	w.t.Helper()
	n, err := do(w.t, w.c, "ZCARD", key).AsInt64()
	if err != nil {
		w.t.Fatalf("ZCARD %s: %v", key, err)
	}
	return n
}

func (w *rig) exists(key string) bool {
	w.t.Helper()
	n, err := do(w.t, w.c, "EXISTS", key).AsInt64()
	if err != nil {
		w.t.Fatalf("EXISTS %s: %v", key, err)
	}
	return n == 1
}

// wantRow checks the whole row: exactly the three fields with these values.
func (w *rig) wantRow(id emq.ID, state emq.State, attempts, payload string) {
	w.t.Helper()
	want := map[string]string{wire.FieldState: string(state), wire.FieldToken: attempts, wire.FieldPayload: payload}
	if diff := cmp.Diff(want, w.hash(w.row(id))); diff != "" {
		w.t.Errorf("row of %v (-want +got):\n%s", id, diff)
	}
}

// wantOnly checks that id is a member of set s (with the score when
// score >= 0) and of no other set of the queue.
func (w *rig) wantOnly(id emq.ID, s emq.Set, score int64) {
	w.t.Helper()
	for _, o := range wire.Sets() {
		got, in := w.score(w.k.Set(o), id)
		switch {
		case o == s && !in:
			w.t.Errorf("%v is not in %s", id, o)
		case o == s && score >= 0 && got != score:
			w.t.Errorf("%v scores %d in %s; want %d", id, got, o, score)
		case o != s && in:
			w.t.Errorf("%v is in %s too (score %d)", id, o, got)
		}
	}
}

// wantGone checks that nothing of id remains: no row, no set membership.
func (w *rig) wantGone(id emq.ID) {
	w.t.Helper()
	if w.exists(w.row(id)) {
		w.t.Errorf("the row of %v exists: %v", id, w.hash(w.row(id)))
	}
	for _, s := range wire.Sets() {
		if sc, in := w.score(w.k.Set(s), id); in {
			w.t.Errorf("%v is in %s (score %d)", id, s, sc)
		}
	}
}

func (w *rig) enqueue(id emq.ID, payload string) {
	w.t.Helper()
	call := wire.EnqueueCall{Row: w.row(id), Pending: w.k.Pending, ID: id, Payload: payload}
	if n, err := call.Exec(w.ctx, w.rc()); err != nil || n != wire.EnqueueEnqueued {
		w.t.Fatalf("enqueue %v = %d, %v; want %d", id, n, err, wire.EnqueueEnqueued)
	}
}

func (w *rig) claimCall(leaseMS int64) wire.ClaimCall {
	return wire.ClaimCall{Pending: w.k.Pending, Active: w.k.Active, Prefix: w.k.RowPrefix(), LeaseMS: leaseMS}
}

func (w *rig) claim(leaseMS int64) wire.ClaimReply {
	w.t.Helper()
	call := w.claimCall(leaseMS)
	r, ok, err := call.Exec(w.ctx, w.rc())
	if err != nil || !ok {
		w.t.Fatalf("claim = %+v, %v, %v; want a job", r, ok, err)
	}
	return r
}

// active admits a fresh job and claims it (it must be the pending head).
func (w *rig) active(payload string, leaseMS int64) (emq.ID, wire.ClaimReply) {
	w.t.Helper()
	id := w.mint()
	w.enqueue(id, payload)
	r := w.claim(leaseMS)
	if r.ID != id {
		w.t.Fatalf("claimed %v; want %v", r.ID, id)
	}
	return id, r
}

func (w *rig) bury(id emq.ID, token int64) {
	w.t.Helper()
	call := wire.BuryCall{Active: w.k.Active, Row: w.row(id), Dead: w.k.Dead, ID: id, Token: token}
	if n, err := call.Exec(w.ctx, w.rc()); err != nil || n != wire.BuryBuried {
		w.t.Fatalf("bury %v = %d, %v", id, n, err)
	}
}

// within checks lo <= got <= hi.
func within(t *testing.T, what string, got, lo, hi int64) {
	t.Helper()
	if got < lo || got > hi {
		t.Errorf("%s = %d; want within [%d, %d] (server TIME before and after, plus the lease)", what, got, lo, hi)
	}
}

// wantRefusal checks that err is a wire-class refusal of class issued by
// script, with a message, matching its sentinel and not the other one.
func wantRefusal(t *testing.T, err error, class, script string) *emq.ClassError {
	t.Helper()
	var ce *emq.ClassError
	if !errors.As(err, &ce) {
		t.Fatalf("%s: err = %v; want a *ClassError %s", script, err, class)
	}
	if ce.Class != class || ce.Script != script || ce.Message == "" {
		t.Errorf("refusal = {Class %q, Script %q, Message %q}; want class %s from %s with a message", ce.Class, ce.Script, ce.Message, class, script)
	}
	for _, s := range []*emq.ClassError{emq.ErrKind, emq.ErrStale} {
		if got, want := errors.Is(err, s), s.Class == class; got != want {
			t.Errorf("errors.Is(%v, %s sentinel) = %v; want %v", err, s.Class, got, want)
		}
	}
	if !strings.Contains(ce.Error(), class) || !strings.Contains(ce.Error(), script) {
		t.Errorf("Error() = %q does not name the class and the script", ce.Error())
	}
	return ce
}

// wantERR checks that err is a plain server error (an argument guard's
// ERR reply), not a wire class.
func wantERR(t *testing.T, err error, what string) {
	t.Helper()
	var ce *emq.ClassError
	if err == nil || errors.As(err, &ce) {
		t.Fatalf("%s: err = %v; want an ERR reply, not a wire class", what, err)
	}
	re, ok := rueidis.IsRedisErr(err)
	if !ok {
		re, ok = rueidis.IsRedisErr(errors.Unwrap(err))
	}
	// rueidis strips the ERR word; what is left must be no wire class.
	if !ok || re.Error() == "" {
		t.Errorf("%s: err = %v; want a server error", what, err)
		return
	}
	word, _, _ := strings.Cut(re.Error(), " ")
	for _, class := range wire.Classes() {
		if word == class {
			t.Errorf("%s: err = %v; a guard answered a wire class", what, err)
		}
	}
}

func TestScriptEnqueue(t *testing.T) {
	w := newWire(t)
	id := w.mint()
	payload := "first\x00\xff"
	call := wire.EnqueueCall{Row: w.row(id), Pending: w.k.Pending, ID: id, Payload: payload}
	if n, err := call.Exec(w.ctx, w.rc()); err != nil || n != wire.EnqueueEnqueued {
		t.Fatalf("enqueue = %d, %v; want %d", n, err, wire.EnqueueEnqueued)
	}
	w.wantRow(id, emq.StatePending, wire.InitialToken, payload)
	w.wantOnly(id, emq.SetPending, 0)

	dup := wire.EnqueueCall{Row: w.row(id), Pending: w.k.Pending, ID: id, Payload: "second"}
	if n, err := dup.Exec(w.ctx, w.rc()); err != nil || n != wire.EnqueueDuplicate {
		t.Fatalf("duplicate enqueue = %d, %v; want %d", n, err, wire.EnqueueDuplicate)
	}
	w.wantRow(id, emq.StatePending, wire.InitialToken, payload)
	if n := w.card(w.k.Pending); n != 1 {
		t.Errorf("pending holds %d after the duplicate; want 1", n)
	}

	// Policy before existence: a foreign id answers EMQKIND, and nothing is
	// written, even when something already sits at its row key.
	ord := mint(t, w.c, emq.KindORD)
	kind := wire.EnqueueCall{Row: w.row(ord), Pending: w.k.Pending, ID: ord, Payload: "x"}
	_, err := kind.Exec(w.ctx, w.rc())
	wantRefusal(t, err, wire.ClassKind, wire.ScriptEnqueue.Name)
	if w.exists(w.row(ord)) {
		t.Error("the refused enqueue wrote the row")
	}
	if _, in := w.score(w.k.Pending, ord); in || w.card(w.k.Pending) != 1 {
		t.Errorf("the refused enqueue touched pending (size %d)", w.card(w.k.Pending))
	}
	ord2 := mint(t, w.c, emq.KindORD)
	do(t, w.c, "HSET", w.row(ord2), "planted", "foreign")
	kind2 := wire.EnqueueCall{Row: w.row(ord2), Pending: w.k.Pending, ID: ord2, Payload: "x"}
	_, err = kind2.Exec(w.ctx, w.rc())
	wantRefusal(t, err, wire.ClassKind, wire.ScriptEnqueue.Name)

	// The pipelined form: LuaExec through ExecMulti, decoded one by one.
	a, b := w.mint(), w.mint()
	execs := []rueidis.LuaExec{
		(&wire.EnqueueCall{Row: w.row(a), Pending: w.k.Pending, ID: a, Payload: "a"}).LuaExec(),
		(&wire.EnqueueCall{Row: w.row(b), Pending: w.k.Pending, ID: b, Payload: "b"}).LuaExec(),
		(&wire.EnqueueCall{Row: w.row(a), Pending: w.k.Pending, ID: a, Payload: "again"}).LuaExec(),
		kind.LuaExec(),
	}
	res := wire.ScriptEnqueue.Lua().ExecMulti(w.ctx, w.rc(), execs...)
	want := []int64{wire.EnqueueEnqueued, wire.EnqueueEnqueued, wire.EnqueueDuplicate}
	for i, r := range res[:3] {
		if n, err := wire.DecodeEnqueue(r); err != nil || n != want[i] {
			t.Errorf("pipelined enqueue %d = %d, %v; want %d", i, n, err, want[i])
		}
	}
	_, err = wire.DecodeEnqueue(res[3])
	wantRefusal(t, err, wire.ClassKind, wire.ScriptEnqueue.Name)
	w.wantRow(a, emq.StatePending, wire.InitialToken, "a")
	if n := w.card(w.k.Pending); n != 3 {
		t.Errorf("pending holds %d; want 3", n)
	}
}

func TestScriptEnqueueAt(t *testing.T) {
	w := newWire(t)
	id := w.mint()
	at := w.now() + 60_000
	call := wire.EnqueueAtCall{Row: w.row(id), Schedule: w.k.Schedule, ID: id, Payload: "later", RunAtMS: at}
	if n, err := call.Exec(w.ctx, w.rc()); err != nil || n != wire.EnqueueAtEnqueued {
		t.Fatalf("enqueue_at = %d, %v; want %d", n, err, wire.EnqueueAtEnqueued)
	}
	w.wantRow(id, emq.StateScheduled, wire.InitialToken, "later")
	w.wantOnly(id, emq.SetSchedule, at)

	dup := call
	dup.Payload, dup.RunAtMS = "other", at+5
	if n, err := dup.Exec(w.ctx, w.rc()); err != nil || n != wire.EnqueueAtDuplicate {
		t.Fatalf("duplicate enqueue_at = %d, %v; want %d", n, err, wire.EnqueueAtDuplicate)
	}
	w.wantRow(id, emq.StateScheduled, wire.InitialToken, "later")
	w.wantOnly(id, emq.SetSchedule, at)
	// A duplicate across scripts: enqueue of a scheduled id is a duplicate too.
	if n, err := (&wire.EnqueueCall{Row: w.row(id), Pending: w.k.Pending, ID: id, Payload: "x"}).Exec(w.ctx, w.rc()); err != nil || n != wire.EnqueueDuplicate {
		t.Errorf("enqueue of a scheduled id = %d, %v; want duplicate", n, err)
	}
	w.wantOnly(id, emq.SetSchedule, at)

	ord := mint(t, w.c, emq.KindORD)
	kind := wire.EnqueueAtCall{Row: w.row(ord), Schedule: w.k.Schedule, ID: ord, Payload: "x", RunAtMS: at}
	_, err := kind.Exec(w.ctx, w.rc())
	wantRefusal(t, err, wire.ClassKind, wire.ScriptEnqueueAt.Name)
	if w.exists(w.row(ord)) || w.card(w.k.Schedule) != 1 {
		t.Error("the refused enqueue_at wrote something")
	}

	// A run-at that is not a number answers ERR before any write; the kind
	// policy still comes first.
	bad := w.mint()
	badCall := wire.EnqueueAtCall{Row: w.row(bad), Schedule: w.k.Schedule, ID: bad, Payload: "x"}
	_, err = wire.DecodeEnqueueAt(wire.ScriptEnqueueAt.Lua().Exec(w.ctx, w.rc(), badCall.Keys(), []string{bad.String(), "x", "soon"}))
	wantERR(t, err, "enqueue_at with run_at_ms soon")
	if w.exists(w.row(bad)) || w.card(w.k.Schedule) != 1 {
		t.Error("enqueue_at with a non-numeric run-at wrote something")
	}
	_, err = wire.DecodeEnqueueAt(wire.ScriptEnqueueAt.Lua().Exec(w.ctx, w.rc(), kind.Keys(), []string{ord.String(), "x", "soon"}))
	wantRefusal(t, err, wire.ClassKind, wire.ScriptEnqueueAt.Name)

	// Through the queue handle: a past run-at is recorded as given.
	past := w.mint()
	pastAt := time.UnixMilli(w.now() - 10_000)
	if ok, err := w.q.EnqueueAt(w.ctx, past, []byte("p"), pastAt); err != nil || !ok {
		t.Fatalf("EnqueueAt(past) = %v, %v", ok, err)
	}
	w.wantRow(past, emq.StateScheduled, wire.InitialToken, "p")
	w.wantOnly(past, emq.SetSchedule, pastAt.UnixMilli())
	if n := w.card(w.k.Pending); n != 0 {
		t.Errorf("pending holds %d; enqueue_at must not touch it", n)
	}
}

func TestScriptClaim(t *testing.T) {
	w := newWire(t)
	empty := w.claimCall(1000)
	if r, ok, err := empty.Exec(w.ctx, w.rc()); err != nil || ok {
		t.Fatalf("claim on an empty queue = %+v, %v, %v; want ok=false", r, ok, err)
	}
	if w.exists(w.k.Active) {
		t.Error("claim on an empty queue created the active set")
	}

	// Three jobs admitted out of mint order: the claim takes the lex-min.
	orphan, a, b, c := w.mint(), w.mint(), w.mint(), w.mint()
	w.enqueue(c, "c")
	w.enqueue(a, "a\x00bin")
	w.enqueue(b, "b")
	before := w.now()
	r := w.claim(30_000)
	after := w.now()
	if r.ID != a || r.Token != 1 || r.Payload != "a\x00bin" {
		t.Fatalf("claim = %+v; want %v, token 1, its payload", r, a)
	}
	within(t, "claim deadline", r.DeadlineMS, before+30_000, after+30_000)
	w.wantRow(a, emq.StateActive, "1", "a\x00bin")
	w.wantOnly(a, emq.SetActive, r.DeadlineMS)
	if n := w.card(w.k.Pending); n != 2 {
		t.Errorf("pending holds %d after the claim; want 2", n)
	}

	// An orphan (an id in pending without a row) is dropped, not claimed,
	// and no row is made for it.
	do(t, w.c, "ZADD", w.k.Pending, "0", orphan.String())
	r = w.claim(30_000)
	if r.ID != b || r.Token != 1 {
		t.Fatalf("claim over an orphan = %+v; want %v token 1", r, b)
	}
	w.wantGone(orphan)
	r = w.claim(30_000)
	if r.ID != c {
		t.Fatalf("claim = %v; want %v", r.ID, c)
	}
	do(t, w.c, "ZADD", w.k.Pending, "0", orphan.String())
	if r, ok, err := empty.Exec(w.ctx, w.rc()); err != nil || ok {
		t.Fatalf("claim of an orphan-only pending set = %+v, %v, %v; want ok=false", r, ok, err)
	}
	w.wantGone(orphan)
	if n := w.card(w.k.Pending); n != 0 {
		t.Errorf("pending holds %d; want 0", n)
	}

	// The claim increments attempts: a job whose lease lapsed is claimed
	// again with token 2.
	id, r1 := w.active("again", 0)
	if n, err := (&wire.ReapCall{Active: w.k.Active, Pending: w.k.Pending, Dead: w.k.Dead, Prefix: w.k.RowPrefix(), Limit: 10}).Exec(w.ctx, w.rc()); err != nil || n != 1 {
		t.Fatalf("reap = %d, %v; want 1", n, err)
	}
	r2 := w.claim(5_000)
	if r2.ID != id || r1.Token != 1 || r2.Token != 2 {
		t.Fatalf("second claim = %v token %d (first %d); want %v token 2", r2.ID, r2.Token, r1.Token, id)
	}
	w.wantRow(id, emq.StateActive, "2", "again")
	w.wantOnly(id, emq.SetActive, r2.DeadlineMS)

	// Through the queue handle the deadline is the reply's.
	w.enqueue(w.mint(), "q")
	before = w.now()
	job, ok, err := w.q.Claim(w.ctx, 2*time.Second)
	after = w.now()
	if err != nil || !ok || job.Token != 1 {
		t.Fatalf("Queue.Claim = %+v, %v, %v", job, ok, err)
	}
	within(t, "Queue.Claim deadline", job.Deadline.UnixMilli(), before+2000, after+2000)
	w.wantOnly(job.ID, emq.SetActive, job.Deadline.UnixMilli())

	// A lease that is not a number answers ERR before anything is popped.
	pend := w.mint()
	w.enqueue(pend, "p")
	_, _, err = wire.DecodeClaim(wire.ScriptClaim.Lua().Exec(w.ctx, w.rc(), empty.Keys(), []string{w.k.RowPrefix(), "long"}))
	wantERR(t, err, "claim with lease_ms long")
	w.wantRow(pend, emq.StatePending, wire.InitialToken, "p")
	w.wantOnly(pend, emq.SetPending, 0)
}

func TestScriptExtend(t *testing.T) {
	w := newWire(t)
	id, r := w.active("x", 1000)
	call := wire.ExtendCall{Active: w.k.Active, Row: w.row(id), ID: id, Token: r.Token, LeaseMS: 60_000}
	before := w.now()
	d, err := call.Exec(w.ctx, w.rc())
	after := w.now()
	if err != nil {
		t.Fatalf("extend: %v", err)
	}
	within(t, "extend deadline", d, before+60_000, after+60_000)
	if d <= r.DeadlineMS {
		t.Errorf("extend deadline %d is not after the claim's %d", d, r.DeadlineMS)
	}
	w.wantRow(id, emq.StateActive, "1", "x")
	w.wantOnly(id, emq.SetActive, d)

	// The queue handle answers the same deadline as a time.
	until, err := w.q.Extend(w.ctx, id, r.Token, 90*time.Second)
	if err != nil {
		t.Fatalf("Queue.Extend: %v", err)
	}
	w.wantOnly(id, emq.SetActive, until.UnixMilli())

	// A wrong token: refused, the lease untouched.
	wrong := call
	wrong.Token = r.Token + 1
	_, err = wrong.Exec(w.ctx, w.rc())
	mismatch := wantRefusal(t, err, wire.ClassStale, wire.ScriptExtend.Name)
	w.wantRow(id, emq.StateActive, "1", "x")
	w.wantOnly(id, emq.SetActive, until.UnixMilli())
	if _, err := w.q.Extend(w.ctx, id, 0, time.Minute); !errors.Is(err, emq.ErrStale) {
		t.Errorf("Queue.Extend with token 0 = %v; want ErrStale", err)
	}

	// A lease that is not a number answers ERR and moves nothing.
	_, err = wire.DecodeExtend(wire.ScriptExtend.Lua().Exec(w.ctx, w.rc(), call.Keys(), []string{id.String(), "1", "forever"}))
	wantERR(t, err, "extend with lease_ms forever")
	w.wantOnly(id, emq.SetActive, until.UnixMilli())

	// The right token on a row that is no longer active.
	w.bury(id, r.Token)
	_, err = call.Exec(w.ctx, w.rc())
	notActive := wantRefusal(t, err, wire.ClassStale, wire.ScriptExtend.Name)
	if mismatch.Message == notActive.Message {
		t.Errorf("token mismatch and not active answer the same message %q", notActive.Message)
	}
	w.wantRow(id, emq.StateDead, "1", "x")
	w.wantOnly(id, emq.SetDead, 0)

	// A missing row: refused, and no row or lease is made for it.
	ghost := w.mint()
	ghostCall := wire.ExtendCall{Active: w.k.Active, Row: w.row(ghost), ID: ghost, Token: 1, LeaseMS: 1000}
	_, err = ghostCall.Exec(w.ctx, w.rc())
	wantRefusal(t, err, wire.ClassStale, wire.ScriptExtend.Name)
	w.wantGone(ghost)
}

// staleChecks runs the two EMQSTALE refusals every transition on an active
// job shares: a token that is not the row's (on an active row and on a
// missing row), and the right token on a row that is not active. exec
// runs the script for id with token; toInactive makes the active job
// (token 1) inactive with its attempts unchanged and returns the state it
// left it in.
func staleChecks(t *testing.T, w *rig, script string, exec func(id emq.ID, token int64) error, toInactive func(id emq.ID, token int64) emq.State) {
	t.Helper()
	id, r := w.active("held", 60_000)
	err := exec(id, r.Token+1)
	mismatch := wantRefusal(t, err, wire.ClassStale, script)
	w.wantRow(id, emq.StateActive, "1", "held")
	w.wantOnly(id, emq.SetActive, r.DeadlineMS)
	err = exec(id, r.Token-1)
	wantRefusal(t, err, wire.ClassStale, script)
	w.wantRow(id, emq.StateActive, "1", "held")
	w.wantOnly(id, emq.SetActive, r.DeadlineMS)

	st := toInactive(id, r.Token)
	before := w.hash(w.row(id))
	scores := map[emq.Set]int64{}
	for _, s := range wire.Sets() {
		if sc, in := w.score(w.k.Set(s), id); in {
			scores[s] = sc
		}
	}
	err = exec(id, r.Token)
	notActive := wantRefusal(t, err, wire.ClassStale, script)
	if mismatch.Message == notActive.Message {
		t.Errorf("%s: token mismatch and not active answer the same message %q", script, notActive.Message)
	}
	if diff := cmp.Diff(before, w.hash(w.row(id))); diff != "" || before[wire.FieldState] != string(st) {
		t.Errorf("%s: the refused call touched the %s row (-before +after):\n%s", script, st, diff)
	}
	for _, s := range wire.Sets() {
		sc, in := w.score(w.k.Set(s), id)
		if want, wantIn := scores[s]; in != wantIn || sc != want {
			t.Errorf("%s: the refused call moved %v in %s: score %d (in %v); want %d (in %v)", script, id, s, sc, in, want, wantIn)
		}
	}

	ghost := w.mint()
	err = exec(ghost, 1)
	wantRefusal(t, err, wire.ClassStale, script)
	w.wantGone(ghost)
}

func TestScriptComplete(t *testing.T) {
	w := newWire(t)
	exec := func(id emq.ID, token int64) error {
		_, err := (&wire.CompleteCall{Active: w.k.Active, Row: w.row(id), ID: id, Token: token}).Exec(w.ctx, w.rc())
		return err
	}
	id, r := w.active("done", 60_000)
	other, _ := w.active("other", 60_000)
	if n, err := (&wire.CompleteCall{Active: w.k.Active, Row: w.row(id), ID: id, Token: r.Token}).Exec(w.ctx, w.rc()); err != nil || n != wire.CompleteCompleted {
		t.Fatalf("complete = %d, %v; want %d", n, err, wire.CompleteCompleted)
	}
	w.wantGone(id)
	w.wantRow(other, emq.StateActive, "1", "other")
	if n := w.card(w.k.Active); n != 1 {
		t.Errorf("active holds %d; want 1 (the other job)", n)
	}
	// Completed means gone: the same call again is stale.
	wantRefusal(t, exec(id, r.Token), wire.ClassStale, wire.ScriptComplete.Name)
	w.wantGone(id)

	staleChecks(t, w, wire.ScriptComplete.Name, exec, func(id emq.ID, token int64) emq.State {
		w.bury(id, token)
		return emq.StateDead
	})
}

func TestScriptRetry(t *testing.T) {
	w := newWire(t)
	exec := func(id emq.ID, token int64) error {
		_, err := (&wire.RetryCall{Active: w.k.Active, Row: w.row(id), Schedule: w.k.Schedule, ID: id, Token: token, DelayMS: 5000}).Exec(w.ctx, w.rc())
		return err
	}
	id, r := w.active("again", 60_000)
	call := wire.RetryCall{Active: w.k.Active, Row: w.row(id), Schedule: w.k.Schedule, ID: id, Token: r.Token, DelayMS: 45_000}
	before := w.now()
	at, err := call.Exec(w.ctx, w.rc())
	after := w.now()
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	within(t, "retry run-at", at, before+45_000, after+45_000)
	w.wantRow(id, emq.StateScheduled, "1", "again")
	w.wantOnly(id, emq.SetSchedule, at)

	// Retried means no longer active: the same token is now stale.
	wantRefusal(t, exec(id, r.Token), wire.ClassStale, wire.ScriptRetry.Name)
	w.wantOnly(id, emq.SetSchedule, at)

	// The queue handle with no delay: run-at is now.
	id2, r2 := w.active("now", 60_000)
	before = w.now()
	runAt, err := w.q.Retry(w.ctx, id2, r2.Token, 0)
	after = w.now()
	if err != nil {
		t.Fatalf("Queue.Retry: %v", err)
	}
	within(t, "Queue.Retry run-at", runAt.UnixMilli(), before, after)
	w.wantOnly(id2, emq.SetSchedule, runAt.UnixMilli())

	// A delay that is not a number answers ERR before any write.
	id3, r3 := w.active("guard", 60_000)
	_, err = wire.DecodeRetry(wire.ScriptRetry.Lua().Exec(w.ctx, w.rc(), (&wire.RetryCall{Active: w.k.Active, Row: w.row(id3), Schedule: w.k.Schedule}).Keys(), []string{id3.String(), "1", "later"}))
	wantERR(t, err, "retry with delay_ms later")
	w.wantRow(id3, emq.StateActive, "1", "guard")
	w.wantOnly(id3, emq.SetActive, r3.DeadlineMS)

	staleChecks(t, w, wire.ScriptRetry.Name, exec, func(id emq.ID, token int64) emq.State {
		w.bury(id, token)
		return emq.StateDead
	})
}

func TestScriptBury(t *testing.T) {
	w := newWire(t)
	exec := func(id emq.ID, token int64) error {
		_, err := (&wire.BuryCall{Active: w.k.Active, Row: w.row(id), Dead: w.k.Dead, ID: id, Token: token}).Exec(w.ctx, w.rc())
		return err
	}
	id, r := w.active("morgue", 60_000)
	if n, err := (&wire.BuryCall{Active: w.k.Active, Row: w.row(id), Dead: w.k.Dead, ID: id, Token: r.Token}).Exec(w.ctx, w.rc()); err != nil || n != wire.BuryBuried {
		t.Fatalf("bury = %d, %v; want %d", n, err, wire.BuryBuried)
	}
	w.wantRow(id, emq.StateDead, "1", "morgue")
	w.wantOnly(id, emq.SetDead, 0)
	wantRefusal(t, exec(id, r.Token), wire.ClassStale, wire.ScriptBury.Name)
	w.wantOnly(id, emq.SetDead, 0)

	staleChecks(t, w, wire.ScriptBury.Name, exec, func(id emq.ID, token int64) emq.State {
		if _, err := w.q.Retry(w.ctx, id, token, time.Hour); err != nil {
			t.Fatalf("Retry: %v", err)
		}
		return emq.StateScheduled
	})
}

func TestScriptPromote(t *testing.T) {
	w := newWire(t)
	now := w.now()
	ids := make([]emq.ID, 5)
	for i := range ids {
		ids[i] = w.mint()
	}
	// Run-ats: two well past, one at the server's present (due: run-at <=
	// now is inclusive), one in the future; the last id is an orphan.
	runAt := []int64{now - 2000, now - 1000, now, now + 60_000}
	for i, at := range runAt {
		call := wire.EnqueueAtCall{Row: w.row(ids[i]), Schedule: w.k.Schedule, ID: ids[i], Payload: strconv.Itoa(i), RunAtMS: at}
		if n, err := call.Exec(w.ctx, w.rc()); err != nil || n != wire.EnqueueAtEnqueued {
			t.Fatalf("enqueue_at %d = %d, %v", i, n, err)
		}
	}
	call := wire.PromoteCall{Schedule: w.k.Schedule, Pending: w.k.Pending, Prefix: w.k.RowPrefix(), Limit: 2}
	if n, err := call.Exec(w.ctx, w.rc()); err != nil || n != 2 {
		t.Fatalf("promote limit 2 = %d, %v; want 2", n, err)
	}
	for i := 0; i < 2; i++ { // the earliest run-ats go first
		w.wantRow(ids[i], emq.StatePending, wire.InitialToken, strconv.Itoa(i))
		w.wantOnly(ids[i], emq.SetPending, 0)
	}
	w.wantOnly(ids[2], emq.SetSchedule, now)
	w.wantOnly(ids[3], emq.SetSchedule, now+60_000)

	// An orphan in schedule is dropped without a row and not counted.
	do(t, w.c, "ZADD", w.k.Schedule, strconv.FormatInt(now-5000, 10), ids[4].String())
	call.Limit = 10
	if n, err := call.Exec(w.ctx, w.rc()); err != nil || n != 1 {
		t.Fatalf("promote = %d, %v; want 1 (the job due now, not the orphan, not the future one)", n, err)
	}
	w.wantRow(ids[2], emq.StatePending, wire.InitialToken, "2")
	w.wantOnly(ids[2], emq.SetPending, 0)
	w.wantGone(ids[4])
	w.wantRow(ids[3], emq.StateScheduled, wire.InitialToken, "3")
	w.wantOnly(ids[3], emq.SetSchedule, now+60_000)
	if n, err := call.Exec(w.ctx, w.rc()); err != nil || n != 0 {
		t.Errorf("promote with nothing due = %d, %v; want 0", n, err)
	}
	if n, err := w.q.Promote(w.ctx, 100); err != nil || n != 0 {
		t.Errorf("Queue.Promote with nothing due = %d, %v; want 0", n, err)
	}

	_, err := wire.DecodePromote(wire.ScriptPromote.Lua().Exec(w.ctx, w.rc(), call.Keys(), []string{w.k.RowPrefix(), "all"}))
	wantERR(t, err, "promote with limit all")
	w.wantOnly(ids[3], emq.SetSchedule, now+60_000)
}

func TestScriptReap(t *testing.T) {
	w := newWire(t)
	reap := func(limit, maxAttempts int64) int64 {
		t.Helper()
		call := wire.ReapCall{Active: w.k.Active, Pending: w.k.Pending, Dead: w.k.Dead, Prefix: w.k.RowPrefix(), Limit: limit, MaxAttempts: maxAttempts}
		n, err := call.Exec(w.ctx, w.rc())
		if err != nil {
			t.Fatalf("reap(%d, %d): %v", limit, maxAttempts, err)
		}
		return n
	}
	a, _ := w.active("a", 1)
	b, _ := w.active("b", 1)
	c, _ := w.active("c", 1)
	long, rl := w.active("long", 60_000)
	time.Sleep(5 * time.Millisecond)

	if n := reap(2, 0); n != 2 {
		t.Fatalf("reap limit 2 = %d; want 2", n)
	}
	for _, id := range []emq.ID{a, b} { // earliest deadlines first
		w.wantOnly(id, emq.SetPending, 0)
		if got := w.hash(w.row(id)); got[wire.FieldState] != string(emq.StatePending) || got[wire.FieldToken] != "1" {
			t.Errorf("reaped row %v = %v; want pending, attempts kept at 1", id, got)
		}
	}
	w.wantOnly(c, emq.SetActive, -1)
	if n := reap(10, 0); n != 1 {
		t.Fatalf("reap = %d; want 1", n)
	}
	w.wantOnly(c, emq.SetPending, 0)
	w.wantRow(long, emq.StateActive, "1", "long")
	w.wantOnly(long, emq.SetActive, rl.DeadlineMS)

	// max_attempts: attempts >= max buries, below max goes back to pending;
	// 0 never buries (above). An unexpired lease is never reaped, whatever
	// its attempts.
	for _, want := range []emq.ID{a, b, c} {
		if r := w.claim(60_000); r.ID != want || r.Token != 2 {
			t.Fatalf("claim = %v token %d; want %v token 2", r.ID, r.Token, want)
		}
	}
	if n := reap(10, 1); n != 0 {
		t.Fatalf("reap with nothing expired = %d; want 0", n)
	}
	w2 := *w
	w2.q = queue(t, w.c, "reap-max")
	w2.k = w2.q.Keys()
	x, _ := w2.active("x", 1)
	time.Sleep(3 * time.Millisecond)
	reap2 := func(limit, maxAttempts int64) int64 {
		t.Helper()
		call := wire.ReapCall{Active: w2.k.Active, Pending: w2.k.Pending, Dead: w2.k.Dead, Prefix: w2.k.RowPrefix(), Limit: limit, MaxAttempts: maxAttempts}
		n, err := call.Exec(w.ctx, w.rc())
		if err != nil {
			t.Fatalf("reap: %v", err)
		}
		return n
	}
	if n := reap2(10, 2); n != 1 {
		t.Fatalf("reap = %d; want 1", n)
	}
	w2.wantOnly(x, emq.SetPending, 0) // attempts 1 < 2
	if r := w2.claim(1); r.ID != x || r.Token != 2 {
		t.Fatalf("claim = %v token %d; want %v token 2", r.ID, r.Token, x)
	}
	y, _ := w2.active("y", 1)
	orphan := w2.mint()
	do(t, w.c, "ZADD", w2.k.Active, "1", orphan.String())
	time.Sleep(3 * time.Millisecond)
	if n := reap2(10, 2); n != 2 {
		t.Fatalf("reap with max 2 = %d; want 2 (the orphan is not counted)", n)
	}
	w2.wantRow(x, emq.StateDead, "2", "x")
	w2.wantOnly(x, emq.SetDead, 0)
	w2.wantRow(y, emq.StatePending, "1", "y")
	w2.wantOnly(y, emq.SetPending, 0)
	w2.wantGone(orphan)
	if n := w.card(w.k.Active); n != 4 {
		t.Errorf("the first queue's active holds %d; reaping another queue touched it", n)
	}

	_, err := wire.DecodeReap(wire.ScriptReap.Lua().Exec(w.ctx, w.rc(), (&wire.ReapCall{Active: w.k.Active, Pending: w.k.Pending, Dead: w.k.Dead}).Keys(), []string{w.k.RowPrefix(), "10", "many"}))
	wantERR(t, err, "reap with max_attempts many")
}

func TestScriptRevive(t *testing.T) {
	w := newWire(t)
	call := func(id emq.ID) *wire.ReviveCall {
		return &wire.ReviveCall{Dead: w.k.Dead, Pending: w.k.Pending, Row: w.row(id), ID: id}
	}
	id, r := w.active("lazarus", 60_000)
	w.bury(id, r.Token)
	c := call(id)
	if n, err := c.Exec(w.ctx, w.rc()); err != nil || n != wire.ReviveRevived {
		t.Fatalf("revive = %d, %v; want %d", n, err, wire.ReviveRevived)
	}
	w.wantRow(id, emq.StatePending, "1", "lazarus")
	w.wantOnly(id, emq.SetPending, 0)
	if n, err := c.Exec(w.ctx, w.rc()); err != nil || n != wire.ReviveNotDead {
		t.Errorf("revive of a pending job = %d, %v; want %d", n, err, wire.ReviveNotDead)
	}
	w.wantRow(id, emq.StatePending, "1", "lazarus")
	w.wantOnly(id, emq.SetPending, 0)
	if r := w.claim(60_000); r.ID != id || r.Token != 2 {
		t.Fatalf("claim after revive = %v token %d; want %v token 2 (attempts kept)", r.ID, r.Token, id)
	}
	if n, err := c.Exec(w.ctx, w.rc()); err != nil || n != wire.ReviveNotDead {
		t.Errorf("revive of an active job = %d, %v; want %d", n, err, wire.ReviveNotDead)
	}
	w.wantRow(id, emq.StateActive, "2", "lazarus")

	ghost := w.mint()
	if n, err := call(ghost).Exec(w.ctx, w.rc()); err != nil || n != wire.ReviveNotDead {
		t.Errorf("revive of a missing job = %d, %v; want %d", n, err, wire.ReviveNotDead)
	}
	w.wantGone(ghost)
	// An id in dead without a row is not revived into pending.
	do(t, w.c, "ZADD", w.k.Dead, "0", ghost.String())
	if n, err := call(ghost).Exec(w.ctx, w.rc()); err != nil || n != wire.ReviveNotDead {
		t.Errorf("revive of an orphan in dead = %d, %v; want %d", n, err, wire.ReviveNotDead)
	}
	if w.exists(w.row(ghost)) {
		t.Error("revive made a row for an orphan")
	}
	if _, in := w.score(w.k.Pending, ghost); in {
		t.Error("revive put an orphan in pending")
	}
	if ok, err := w.q.Revive(w.ctx, ghost); err != nil || ok {
		t.Errorf("Queue.Revive(orphan) = %v, %v; want false", ok, err)
	}
}

// rawClient is a rueidis client that does not fence, to drive the fence
// script by hand on a fresh keyspace.
func rawClient(t *testing.T, srv *redistest.Server) rueidis.Client {
	t.Helper()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	return rc
}

// record returns the version record and semver of major.minor.patch.
func record(major, minor, patch int) (rec, semver string) {
	semver = fmt.Sprintf("%d.%d.%d", major, minor, patch)
	return strings.TrimSuffix(wire.VersionRecord, emq.Version) + semver, semver
}

func TestScriptFence(t *testing.T) {
	srv := redistest.Start(t)
	rc := rawClient(t, srv)
	ctx := ctxT(t)
	get := func(args ...string) string {
		t.Helper()
		v, err := rc.Do(ctx, rc.B().Arbitrary(args...).Build()).ToString()
		if rueidis.IsRedisNil(err) {
			return "(nil)"
		}
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return v
	}
	run := func(args ...string) {
		t.Helper()
		if err := rc.Do(ctx, rc.B().Arbitrary(args...).Build()).Error(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	fence := func(rec, semver, bundle string) wire.FenceReply {
		t.Helper()
		call := wire.FenceCall{VersionKey: wire.KeyVersion, BundleKey: wire.KeyBundle, Version: rec, Semver: semver, Bundle: bundle}
		r, err := call.Exec(ctx, rc)
		if err != nil {
			t.Fatalf("fence(%s): %v", rec, err)
		}
		return r
	}

	// A fresh keyspace is claimed, and the bundle recorded for the version.
	if r := fence(wire.VersionRecord, emq.Version, wire.BundleDigest); r.Version != wire.VersionRecord || r.Bundle != wire.BundleDigest {
		t.Fatalf("fence on a fresh keyspace = %+v; want %s, %s", r, wire.VersionRecord, wire.BundleDigest)
	}
	if v := get("GET", wire.KeyVersion); v != wire.VersionRecord {
		t.Errorf("version record %q; want %q", v, wire.VersionRecord)
	}
	if v := get("HGET", wire.KeyBundle, emq.Version); v != wire.BundleDigest {
		t.Errorf("bundle recorded for %s = %q; want %q", emq.Version, v, wire.BundleDigest)
	}

	// A client of a higher minor raises the record (and records its own bundle).
	up, upSemver := record(wire.VersionMajor, wire.VersionMinor+1, 0)
	upBundle := strings.Repeat("1", len(wire.BundleDigest))
	if r := fence(up, upSemver, upBundle); r.Version != up || r.Bundle != upBundle {
		t.Fatalf("fence of a higher minor = %+v; want %s, %s", r, up, upBundle)
	}
	if v := get("GET", wire.KeyVersion); v != up {
		t.Errorf("version record %q after a higher minor fenced; want %q", v, up)
	}
	// A higher patch of that minor raises it again.
	upPatch, upPatchSemver := record(wire.VersionMajor, wire.VersionMinor+1, 1)
	if r := fence(upPatch, upPatchSemver, upBundle); r.Version != upPatch {
		t.Fatalf("fence of a higher patch = %+v; want %s", r, upPatch)
	}
	// Never lowered: this client answers the record it found, and its own bundle.
	if r := fence(wire.VersionRecord, emq.Version, wire.BundleDigest); r.Version != upPatch || r.Bundle != wire.BundleDigest {
		t.Fatalf("fence of the lower minor = %+v; want %s, %s", r, upPatch, wire.BundleDigest)
	}
	if r := fence(up, upSemver, upBundle); r.Version != upPatch {
		t.Fatalf("fence of a lower patch = %+v; want %s", r, upPatch)
	}
	if v := get("GET", wire.KeyVersion); v != upPatch {
		t.Errorf("version record %q; a lower client lowered it from %q", v, upPatch)
	}
	c, err := emq.Connect(ctx, options(srv))
	if err != nil {
		t.Fatalf("Connect on a keyspace ahead: %v", err)
	}
	if c.VersionFound() != upPatch {
		t.Errorf("VersionFound = %q; want %q", c.VersionFound(), upPatch)
	}
	c.Close()

	// Another major (higher or lower) or a foreign value is answered as found,
	// with an empty bundle, and left untouched; nothing is recorded.
	next, nextSemver := record(wire.VersionMajor+1, 0, 0)
	prev, _ := record(wire.VersionMajor-1, 3, 0)
	for _, planted := range []string{next, prev, "garbage"} {
		run("SET", wire.KeyVersion, planted)
		run("DEL", wire.KeyBundle)
		if r := fence(wire.VersionRecord, emq.Version, wire.BundleDigest); r.Version != planted || r.Bundle != "" {
			t.Errorf("fence over %q = %+v; want %q and an empty bundle", planted, r, planted)
		}
		if v := get("GET", wire.KeyVersion); v != planted {
			t.Errorf("fence changed a foreign record %q to %q", planted, v)
		}
		if n, _ := rc.Do(ctx, rc.B().Exists().Key(wire.KeyBundle).Build()).AsInt64(); n != 0 {
			t.Errorf("fence over %q recorded a bundle", planted)
		}
	}
	// ... and a client of that other major is refused the same way here.
	run("SET", wire.KeyVersion, wire.VersionRecord)
	if r := fence(next, nextSemver, upBundle); r.Version != wire.VersionRecord || r.Bundle != "" {
		t.Errorf("fence of the next major over %s = %+v; want the record found and an empty bundle", wire.VersionRecord, r)
	}
	if v := get("GET", wire.KeyVersion); v != wire.VersionRecord {
		t.Errorf("the next major's fence changed the record to %q", v)
	}
}

func TestScriptFenceBundle(t *testing.T) {
	srv := redistest.Start(t)
	rc := rawClient(t, srv)
	ctx := ctxT(t)
	planted := strings.Repeat("0", len(wire.BundleDigest)) // another bundle under this version number
	if err := rc.Do(ctx, rc.B().Hset().Key(wire.KeyBundle).FieldValue().FieldValue(emq.Version, planted).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	call := wire.FenceCall{VersionKey: wire.KeyVersion, BundleKey: wire.KeyBundle, Version: wire.VersionRecord, Semver: emq.Version, Bundle: wire.BundleDigest}
	r, err := call.Exec(ctx, rc)
	if err != nil || r.Version != wire.VersionRecord || r.Bundle != planted {
		t.Fatalf("fence over a planted bundle = %+v, %v; want %s and the recorded %s", r, err, wire.VersionRecord, planted)
	}
	if v, _ := rc.Do(ctx, rc.B().Hget().Key(wire.KeyBundle).Field(emq.Version).Build()).ToString(); v != planted {
		t.Errorf("HSETNX overwrote the recorded bundle with %q", v)
	}

	c, err := emq.Connect(ctx, options(srv))
	if err == nil {
		c.Close()
		t.Fatal("Connect over another bundle of this version succeeded")
	}
	var be *emq.BundleError
	if !errors.As(err, &be) || !errors.Is(err, emq.ErrBundle) {
		t.Fatalf("Connect = %v; want a *BundleError matching ErrBundle", err)
	}
	if be.Version != emq.Version || be.Found != planted || be.Want != wire.BundleDigest {
		t.Errorf("BundleError = %+v; want version %s, found %s, want %s", be, emq.Version, planted, wire.BundleDigest)
	}
	if errors.Is(err, emq.ErrVersionFence) {
		t.Error("a bundle refusal matches ErrVersionFence")
	}
}

func TestScriptLock(t *testing.T) {
	w := newWire(t)
	name := wire.LockMaintenance(w.q.Name())
	lock := func(owner string, ttl int64) int64 {
		t.Helper()
		d, err := (&wire.LockCall{Locks: wire.KeyLocks, Name: name, Owner: owner, TTLMS: ttl}).Exec(w.ctx, w.rc())
		if err != nil {
			t.Fatalf("lock(%s): %v", owner, err)
		}
		return d
	}
	value := func() string {
		t.Helper()
		v, err := do(t, w.c, "HGET", wire.KeyLocks, name).ToString()
		if rueidis.IsRedisNil(err) {
			return "(nil)"
		}
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// The lock value is "<owner> <deadline_ms>" on the server's clock.
	holds := func(owner string, deadline int64) string { return owner + " " + strconv.FormatInt(deadline, 10) }

	before := w.now()
	d := lock("worker-a", 60_000)
	after := w.now()
	if d == wire.LockHeld || d <= after {
		t.Fatalf("lock of a free lock = %d; want a deadline after now %d", d, after)
	}
	within(t, "lock deadline", d, before+60_000, after+60_000)
	if v := value(); v != holds("worker-a", d) {
		t.Errorf("lock value %q; want %q", v, holds("worker-a", d))
	}

	if got := lock("worker-b", 60_000); got != wire.LockHeld {
		t.Errorf("lock by another owner = %d; want LockHeld", got)
	}
	if v := value(); v != holds("worker-a", d) {
		t.Errorf("the refused lock changed the value to %q", v)
	}

	d2 := lock("worker-a", 120_000)
	if d2 <= d {
		t.Errorf("renewal deadline %d is not after %d", d2, d)
	}
	if v := value(); v != holds("worker-a", d2) {
		t.Errorf("renewed value %q; want %q", v, holds("worker-a", d2))
	}

	// An expired lock is free for another owner.
	short := wire.LockProbe(w.q.Name())
	if got, err := (&wire.LockCall{Locks: wire.KeyLocks, Name: short, Owner: "worker-a", TTLMS: 1}).Exec(w.ctx, w.rc()); err != nil || got == wire.LockHeld {
		t.Fatalf("lock ttl 1ms = %d, %v", got, err)
	}
	time.Sleep(5 * time.Millisecond)
	before = w.now()
	got, err := (&wire.LockCall{Locks: wire.KeyLocks, Name: short, Owner: "worker-b", TTLMS: 30_000}).Exec(w.ctx, w.rc())
	if err != nil || got == wire.LockHeld || got < before+30_000 {
		t.Fatalf("lock of an expired lock by another owner = %d, %v; want a deadline >= %d", got, err, before+30_000)
	}
	if v, _ := do(t, w.c, "HGET", wire.KeyLocks, short).ToString(); v != holds("worker-b", got) {
		t.Errorf("the taken-over lock is %q; want %q", v, holds("worker-b", got))
	}

	// The client's own node lease is a lock like any other.
	nodeCall := wire.LockCall{Locks: wire.KeyLocks, Name: wire.LockNode(w.c.Node()), Owner: "worker-b", TTLMS: 1000}
	if n, err := nodeCall.Exec(w.ctx, w.rc()); err != nil || n != wire.LockHeld {
		t.Errorf("lock of the client's leased node = %d, %v; want LockHeld", n, err)
	}

	// A ttl that is not a number answers ERR and takes nothing.
	guard := wire.LockProbe("guard")
	_, err = wire.DecodeLock(wire.ScriptLock.Lua().Exec(w.ctx, w.rc(), []string{wire.KeyLocks}, []string{guard, "worker-a", "a-while"}))
	wantERR(t, err, "lock with ttl_ms a-while")
	if n, _ := do(t, w.c, "HEXISTS", wire.KeyLocks, guard).AsInt64(); n != 0 {
		t.Error("the refused lock wrote its field")
	}
}

func TestScriptUnlock(t *testing.T) {
	w := newWire(t)
	name := wire.LockMaintenance(w.q.Name())
	unlock := func(owner string) int64 {
		t.Helper()
		n, err := (&wire.UnlockCall{Locks: wire.KeyLocks, Name: name, Owner: owner}).Exec(w.ctx, w.rc())
		if err != nil {
			t.Fatalf("unlock(%s): %v", owner, err)
		}
		return n
	}
	hexists := func() bool {
		n, _ := do(t, w.c, "HEXISTS", wire.KeyLocks, name).AsInt64()
		return n == 1
	}
	if n := unlock("worker-a"); n != wire.UnlockNotOwner {
		t.Errorf("unlock of a free lock = %d; want %d", n, wire.UnlockNotOwner)
	}
	if hexists() {
		t.Error("unlock of a free lock wrote it")
	}
	if d, err := (&wire.LockCall{Locks: wire.KeyLocks, Name: name, Owner: "worker a", TTLMS: 60_000}).Exec(w.ctx, w.rc()); err != nil || d == wire.LockHeld {
		t.Fatalf("lock = %d, %v", d, err)
	}
	for _, other := range []string{"worker-b", "worker", "a", ""} {
		if n := unlock(other); n != wire.UnlockNotOwner {
			t.Errorf("unlock by %q = %d; want %d", other, n, wire.UnlockNotOwner)
		}
	}
	if !hexists() {
		t.Fatal("another owner released the lock")
	}
	if n := unlock("worker a"); n != wire.UnlockReleased { // an owner with a space in it
		t.Errorf("unlock by the owner = %d; want %d", n, wire.UnlockReleased)
	}
	if hexists() {
		t.Error("the released lock remains")
	}
	if n := unlock("worker a"); n != wire.UnlockNotOwner {
		t.Errorf("second unlock = %d; want %d", n, wire.UnlockNotOwner)
	}
	// The client's node lease: released by Close, and only by its owner.
	node := wire.LockNode(w.c.Node())
	if n, err := (&wire.UnlockCall{Locks: wire.KeyLocks, Name: node, Owner: "worker-b"}).Exec(w.ctx, w.rc()); err != nil || n != wire.UnlockNotOwner {
		t.Errorf("unlock of the client's node by a stranger = %d, %v", n, err)
	}
	c2 := connect(t, w.srv)
	node2 := wire.LockNode(c2.Node())
	c2.Close()
	if n, _ := do(t, w.c, "HEXISTS", wire.KeyLocks, node2).AsInt64(); n != 0 {
		t.Errorf("Close left the node lease %s", node2)
	}
}

// scriptCalls is how many EVAL and EVALSHA calls the server has run.
func scriptCalls(t *testing.T, c *emq.Client) int64 {
	t.Helper()
	info, err := do(t, c, "INFO", "commandstats").ToString()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "cmdstat_eval" && name != "cmdstat_evalsha") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		v, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			t.Fatalf("INFO commandstats line %q", line)
		}
		n += v
	}
	return n
}

// The SDK refuses malformed input before any command is sent.
func TestScriptRefusedBeforeSending(t *testing.T) {
	w := newWire(t)
	calls := scriptCalls(t, w.c)
	keys, _ := do(t, w.c, "DBSIZE").AsInt64()

	if q, err := w.c.Queue("Bad{name}"); !errors.Is(err, emq.ErrQueueName) || q != nil {
		t.Errorf("Queue(Bad{name}) = %v, %v; want ErrQueueName", q, err)
	}
	var zero emq.ID
	for what, err := range map[string]error{
		"Enqueue":   func() error { _, err := w.q.Enqueue(w.ctx, zero, []byte("x")); return err }(),
		"EnqueueAt": func() error { _, err := w.q.EnqueueAt(w.ctx, zero, []byte("x"), time.Now()); return err }(),
		"Extend":    func() error { _, err := w.q.Extend(w.ctx, zero, 1, time.Second); return err }(),
		"Complete":  w.q.Complete(w.ctx, zero, 1),
		"Retry":     func() error { _, err := w.q.Retry(w.ctx, zero, 1, 0); return err }(),
		"Bury":      w.q.Bury(w.ctx, zero, 1),
		"Revive":    func() error { _, err := w.q.Revive(w.ctx, zero); return err }(),
	} {
		if !errors.Is(err, emq.ErrID) {
			t.Errorf("%s(zero ID) = %v; want ErrID", what, err)
		}
	}
	id := w.mint()
	for what, err := range map[string]error{
		"Claim(0)":        func() error { _, _, err := w.q.Claim(w.ctx, 0); return err }(),
		"Claim(500µs)":    func() error { _, _, err := w.q.Claim(w.ctx, 500*time.Microsecond); return err }(),
		"Claim(-1s)":      func() error { _, _, err := w.q.Claim(w.ctx, -time.Second); return err }(),
		"Extend(0)":       func() error { _, err := w.q.Extend(w.ctx, id, 1, 0); return err }(),
		"Retry(-1s)":      func() error { _, err := w.q.Retry(w.ctx, id, 1, -time.Second); return err }(),
		"Promote(0)":      func() error { _, err := w.q.Promote(w.ctx, 0); return err }(),
		"Reap(0, 0)":      func() error { _, err := w.q.Reap(w.ctx, 0, 0); return err }(),
		"Reap(1, -1)":     func() error { _, err := w.q.Reap(w.ctx, 1, -1); return err }(),
		"Browse(n=0)":     func() error { _, err := w.q.Browse(w.ctx, emq.SetPending, 0); return err }(),
		"Size(bogus set)": func() error { _, err := w.q.Size(w.ctx, emq.Set("bogus")); return err }(),
	} {
		if !errors.Is(err, emq.ErrArgument) {
			t.Errorf("%s = %v; want ErrArgument", what, err)
		}
	}
	if got := scriptCalls(t, w.c); got != calls {
		t.Errorf("the refused calls ran %d scripts on the server", got-calls)
	}
	if n, _ := do(t, w.c, "DBSIZE").AsInt64(); n != keys {
		t.Errorf("the refused calls wrote keys: DBSIZE %d -> %d", keys, n)
	}
}

// NOSCRIPT is handled: after SCRIPT FLUSH the typed calls fall back from
// EVALSHA to EVAL, which caches the script again.
func TestScriptNoScriptFallback(t *testing.T) {
	w := newWire(t)
	loaded := func(s *wire.Script) bool {
		t.Helper()
		v, err := do(t, w.c, "SCRIPT", "EXISTS", s.SHA1).AsIntSlice()
		if err != nil || len(v) != 1 {
			t.Fatalf("SCRIPT EXISTS: %v, %v", v, err)
		}
		return v[0] == 1
	}
	noscripts := func() int64 {
		t.Helper()
		info, _ := do(t, w.c, "INFO", "errorstats").ToString()
		for _, line := range strings.Split(info, "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "errorstat_NOSCRIPT:count="); ok {
				n, _ := strconv.ParseInt(rest, 10, 64)
				return n
			}
		}
		return 0
	}
	if ok, err := w.q.Enqueue(w.ctx, w.mint(), []byte("before")); err != nil || !ok {
		t.Fatalf("Enqueue = %v, %v", ok, err)
	}
	if !loaded(wire.ScriptEnqueue) || !loaded(wire.ScriptFence) {
		t.Fatal("the scripts run so far are not cached on the server")
	}
	do(t, w.c, "SCRIPT", "FLUSH")
	if loaded(wire.ScriptEnqueue) {
		t.Fatal("SCRIPT FLUSH left the script")
	}
	misses := noscripts()
	id := w.mint()
	if ok, err := w.q.Enqueue(w.ctx, id, []byte("after")); err != nil || !ok {
		t.Fatalf("Enqueue after SCRIPT FLUSH = %v, %v", ok, err)
	}
	// At least the enqueue's EVALSHA missed (a fence run on a connection
	// the client has just dialed may miss too).
	if got := noscripts(); got < misses+1 {
		t.Errorf("NOSCRIPT errors %d -> %d; want an EVALSHA miss before the EVAL", misses, got)
	}
	if !loaded(wire.ScriptEnqueue) {
		t.Error("the EVAL fallback did not cache the script")
	}
	w.wantRow(id, emq.StatePending, wire.InitialToken, "after")
	job, ok, err := w.q.Claim(w.ctx, time.Minute)
	if err != nil || !ok || job.Token != 1 {
		t.Fatalf("Claim after SCRIPT FLUSH = %+v, %v, %v", job, ok, err)
	}
	if err := w.q.Complete(w.ctx, job.ID, job.Token); err != nil {
		t.Fatalf("Complete after SCRIPT FLUSH: %v", err)
	}
}

// The bundle the SDK runs is the bundle it names: each script's SHA1 is its
// source's (and the server's), the source is the file in sdk/lua, each typed
// call has the script's KEYS and ARGV arity, and BundleDigest is the SHA-1
// of the SHA-1s in manifest order.
func TestScriptBundleDigest(t *testing.T) {
	srv := redistest.Start(t)
	rc := rawClient(t, srv)
	ctx := ctxT(t)
	arity := map[*wire.Script][2]int{}
	for s, call := range map[*wire.Script]interface {
		Keys() []string
		Args() []string
	}{
		wire.ScriptEnqueue: &wire.EnqueueCall{}, wire.ScriptEnqueueAt: &wire.EnqueueAtCall{}, wire.ScriptClaim: &wire.ClaimCall{},
		wire.ScriptExtend: &wire.ExtendCall{}, wire.ScriptComplete: &wire.CompleteCall{}, wire.ScriptRetry: &wire.RetryCall{},
		wire.ScriptBury: &wire.BuryCall{}, wire.ScriptPromote: &wire.PromoteCall{}, wire.ScriptReap: &wire.ReapCall{},
		wire.ScriptRevive: &wire.ReviveCall{}, wire.ScriptFence: &wire.FenceCall{}, wire.ScriptLock: &wire.LockCall{},
		wire.ScriptUnlock: &wire.UnlockCall{}, wire.ScriptPush: &wire.PushCall{}, wire.ScriptClaimMany: &wire.ClaimManyCall{},
		wire.ScriptCompleteClaim: &wire.CompleteClaimCall{}, wire.ScriptRing: &wire.RingCall{}, wire.ScriptPurge: &wire.PurgeCall{},
		// The 2.2.0 calls with one id each: a repeated group is one name
		// among the script's KEYS and ARGV, and one entry of it one value.
		wire.ScriptPushMany:         &wire.PushManyCall{Rows: []string{""}, Entries: []wire.PushManyEntry{{}}},
		wire.ScriptClaimIDs:         &wire.ClaimIDsCall{Rows: []string{""}, IDs: []wire.ID{{}}},
		wire.ScriptCompleteClaimIDs: &wire.CompleteClaimIDsCall{Rows: []string{""}, IDs: []wire.ID{{}}},
		wire.ScriptPromoteIDs:       &wire.PromoteIDsCall{Rows: []string{""}, IDs: []wire.ID{{}}},
		wire.ScriptReapIDs:          &wire.ReapIDsCall{Rows: []string{""}, IDs: []wire.ID{{}}},
		wire.ScriptRetryFailed:      &wire.RetryFailedCall{}, wire.ScriptBuryFailed: &wire.BuryFailedCall{},
		wire.ScriptFailures:       &wire.FailuresCall{},
		wire.ScriptReapFailedIDs:  &wire.ReapFailedIDsCall{Rows: []string{""}, IDs: []wire.ID{{}}},
		wire.ScriptForgetFailures: &wire.ForgetFailuresCall{Rows: []string{""}, IDs: []wire.ID{{}}},
		// 2.4.0.
		wire.ScriptAddMany:                &wire.AddManyCall{Rows: []string{""}, Entries: []wire.AddManyEntry{{}}},
		wire.ScriptCompleteResultClaimIDs: &wire.CompleteResultClaimIDsCall{Rows: []string{""}, IDs: []wire.ID{{}}},
		wire.ScriptFail:                   &wire.FailCall{},
		wire.ScriptReapRecordedIDs:        &wire.ReapRecordedIDsCall{Rows: []string{""}, IDs: []wire.ID{{}}},
		wire.ScriptProgress:               &wire.ProgressCall{},
		wire.ScriptReviveRecorded:         &wire.ReviveRecordedCall{},
		wire.ScriptOutput:                 &wire.OutputCall{},
		wire.ScriptCounters:               &wire.CountersCall{},
		wire.ScriptEvents:                 &wire.EventsCall{},
		wire.ScriptForgetIDs:              &wire.ForgetIDsCall{Rows: []string{""}, IDs: []wire.ID{{}}},
		// 2.5.0.
		wire.ScriptAddDedup:     &wire.AddDedupCall{Rows: []string{""}, Entries: []wire.AddDedupEntry{{}}},
		wire.ScriptReplaceDedup: &wire.ReplaceDedupCall{},
		wire.ScriptDedupEntries: &wire.DedupEntriesCall{DedupKeys: []string{""}},
		wire.ScriptSweepDedup:   &wire.SweepDedupCall{},
		wire.ScriptCancelIDs:    &wire.CancelIDsCall{Rows: []string{""}, IDs: []wire.ID{{}}},
		// 2.6.0.
		wire.ScriptUpsertScheduler:  &wire.UpsertSchedulerCall{},
		wire.ScriptRemoveSchedulers: &wire.RemoveSchedulersCall{Schedulers: []string{""}},
		wire.ScriptPauseSchedulers:  &wire.PauseSchedulersCall{Schedulers: []string{""}},
		wire.ScriptSchedulerEntries: &wire.SchedulerEntriesCall{Schedulers: []string{""}},
		wire.ScriptListSchedulers:   &wire.ListSchedulersCall{},
		wire.ScriptDueSchedulers:    &wire.DueSchedulersCall{},
		wire.ScriptFireSchedulers:   &wire.FireSchedulersCall{Rows: []string{""}, Entries: []wire.FireSchedulersEntry{{}}},
		// 2.7.0.
		wire.ScriptClaimPolicyIDs:     &wire.ClaimPolicyIDsCall{Rows: []string{""}, IDs: []wire.ID{{}}},
		wire.ScriptCompletePolicyIDs:  &wire.CompletePolicyIDsCall{Rows: []string{""}, IDs: []wire.ID{{}}},
		wire.ScriptFailPolicy:         &wire.FailPolicyCall{},
		wire.ScriptReapPolicyIDs:      &wire.ReapPolicyIDsCall{Rows: []string{""}, IDs: []wire.ID{{}}},
		wire.ScriptExtendPolicy:       &wire.ExtendPolicyCall{},
		wire.ScriptCancelPolicyIDs:    &wire.CancelPolicyIDsCall{Rows: []string{""}, IDs: []wire.ID{{}}},
		wire.ScriptAddDedupPolicy:     &wire.AddDedupPolicyCall{Rows: []string{""}, Entries: []wire.AddDedupPolicyEntry{{}}},
		wire.ScriptReplaceDedupPolicy: &wire.ReplaceDedupPolicyCall{},
		wire.ScriptDedupPolicyEntries: &wire.DedupPolicyEntriesCall{DedupKeys: []string{""}},
		wire.ScriptSweepDedupPolicy:   &wire.SweepDedupPolicyCall{},
		wire.ScriptRetryPolicy:        &wire.RetryPolicyCall{},
		wire.ScriptBuryPolicy:         &wire.BuryPolicyCall{},
		wire.ScriptSetPolicy:          &wire.SetPolicyCall{},
		wire.ScriptQueuePolicy:        &wire.QueuePolicyCall{},
		// 2.8.0.
		wire.ScriptClaimRateIDs:    &wire.ClaimRateIDsCall{Rows: []string{""}, IDs: []wire.ID{{}}},
		wire.ScriptCompleteRateIDs: &wire.CompleteRateIDsCall{Rows: []string{""}, IDs: []wire.ID{{}}},
		wire.ScriptConfigurePolicy: &wire.ConfigurePolicyCall{},
		wire.ScriptReadPolicy:      &wire.ReadPolicyCall{},
	} {
		arity[s] = [2]int{len(call.Keys()), len(call.Args())}
	}
	scripts := wire.Scripts()
	if len(scripts) != len(arity) {
		t.Fatalf("%d scripts in the bundle; the typed calls cover %d", len(scripts), len(arity))
	}
	var all strings.Builder
	for _, s := range scripts {
		sum := sha1.Sum([]byte(s.Source))
		if got := hex.EncodeToString(sum[:]); got != s.SHA1 {
			t.Errorf("%s: SHA1 %s; its source hashes to %s", s.Name, s.SHA1, got)
		}
		if got, err := rc.Do(ctx, rc.B().ScriptLoad().Script(s.Source).Build()).ToString(); err != nil || got != s.SHA1 {
			t.Errorf("%s: SCRIPT LOAD = %s, %v; want %s", s.Name, got, err, s.SHA1)
		}
		if wire.ScriptNamed(s.Name) != s {
			t.Errorf("ScriptNamed(%q) is not the bundle's script", s.Name)
		}
		if a, ok := arity[s]; !ok || a != [2]int{len(s.Keys), len(s.Argv)} || len(s.KeyTypes) != len(s.Keys) || len(s.ArgTypes) != len(s.Argv) {
			t.Errorf("%s: typed call arity %v; the script has %d KEYS and %d ARGV", s.Name, a, len(s.Keys), len(s.Argv))
		}
		if file, err := os.ReadFile(filepath.Join("..", "..", "lua", s.Name+".lua")); err != nil || string(file) != s.Source {
			t.Errorf("%s: sdk/lua/%s.lua differs from the embedded source (err %v)", s.Name, s.Name, err)
		}
		all.WriteString(s.SHA1 + "\n")
	}
	sum := sha1.Sum([]byte(all.String()))
	if got := hex.EncodeToString(sum[:]); got != wire.BundleDigest {
		t.Errorf("BundleDigest = %s; the SHA-1 of the scripts' SHA-1s is %s", wire.BundleDigest, got)
	}
}
