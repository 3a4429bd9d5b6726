package emq_test

// The scripts of 2.1.0 on the wire — push, claim_many, complete_claim and
// ring — through the generated typed calls, against a real redis-server, in
// the style of scripts_test.go: each reply and each refusal, the row and set
// state after each call, and the queue's doorbell (the wake key: a list
// holding at most one marker).

import (
	"errors"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// wakeMarker is the one value the doorbell ever holds. The manifest states
// it only inside the script bodies (RPUSH <wake> '1'); the generated code
// exports no name for it, so the tests keep it here, once.
const wakeMarker = "1"

// doorbell returns what the queue's wake key holds, checking that it is a
// list (or absent) and never holds more than one marker.
func (w *rig) doorbell() []string {
	w.t.Helper()
	return doorbellOf(w.t, w.c, w.k.Wake)
}

func doorbellOf(t *testing.T, c *emq.Client, key string) []string {
	t.Helper()
	typ, err := do(t, c, "TYPE", key).ToString()
	if err != nil {
		t.Fatalf("TYPE %s: %v", key, err)
	}
	if typ != "list" && typ != "none" {
		t.Fatalf("the doorbell %s is a %s; want a list", key, typ)
	}
	v, err := do(t, c, "LRANGE", key, "0", "-1").AsStrSlice()
	if err != nil {
		t.Fatalf("LRANGE %s: %v", key, err)
	}
	if len(v) > 1 {
		t.Errorf("the doorbell %s holds %d markers %q; want at most one", key, len(v), v)
	}
	for _, m := range v {
		if m != wakeMarker {
			t.Errorf("the doorbell %s holds %q; want only the marker %q", key, m, wakeMarker)
		}
	}
	return v
}

// wantRung checks that the doorbell holds exactly one marker (rung) or
// nothing at all.
func (w *rig) wantRung(rung bool, what string) {
	w.t.Helper()
	got := w.doorbell()
	if rung && !cmp.Equal(got, []string{wakeMarker}) {
		w.t.Errorf("%s: the doorbell holds %q; want the one marker", what, got)
	}
	if !rung && len(got) != 0 {
		w.t.Errorf("%s: the doorbell holds %q; want it silent", what, got)
	}
}

// answer takes the doorbell as an idle worker does (LPOP instead of BLPOP).
func (w *rig) answer() {
	w.t.Helper()
	if err := do(w.t, w.c, "LPOP", w.k.Wake).Error(); err != nil && !rueidis.IsRedisNil(err) {
		w.t.Fatalf("LPOP %s: %v", w.k.Wake, err)
	}
}

func (w *rig) pushCall(id emq.ID, payload string) wire.PushCall {
	return wire.PushCall{Row: w.row(id), Pending: w.k.Pending, Wake: w.k.Wake, ID: id, Payload: payload}
}

func (w *rig) claimManyCall(leaseMS, count int64) wire.ClaimManyCall {
	return wire.ClaimManyCall{Pending: w.k.Pending, Active: w.k.Active, Wake: w.k.Wake, Prefix: w.k.RowPrefix(), LeaseMS: leaseMS, Count: count}
}

func (w *rig) completeClaimCall(id emq.ID, token, leaseMS, count int64) wire.CompleteClaimCall {
	return wire.CompleteClaimCall{Row: w.row(id), Active: w.k.Active, Pending: w.k.Pending, Wake: w.k.Wake, ID: id, Token: token, Prefix: w.k.RowPrefix(), LeaseMS: leaseMS, Count: count}
}

// pendingIDs is the pending set in claim order (lex-min first).
func (w *rig) pendingIDs() []string {
	w.t.Helper()
	v, err := do(w.t, w.c, "ZRANGE", w.k.Pending, "0", "-1").AsStrSlice()
	if err != nil {
		w.t.Fatalf("ZRANGE %s: %v", w.k.Pending, err)
	}
	return v
}

// wantLeased checks records leased by one call against the jobs they must
// be (in order): ids, tokens minted from the attempts before the call,
// payloads, one deadline for the whole batch inside [lo, hi], and each row
// active and scored in active with that deadline.
func (w *rig) wantLeased(what string, got []wire.ClaimManyReply, want []emq.ID, attemptsBefore []int64, payloads []string, lo, hi int64) {
	w.t.Helper()
	ids := make([]emq.ID, len(got))
	for i, r := range got {
		ids[i] = r.ID
	}
	if !cmp.Equal(ids, want, cmp.Comparer(func(a, b emq.ID) bool { return a == b })) {
		w.t.Fatalf("%s leased %v; want %v (oldest first)", what, ids, want)
	}
	for i, r := range got {
		if r.Token != attemptsBefore[i]+1 {
			w.t.Errorf("%s: %v token %d; want %d (attempts + 1)", what, r.ID, r.Token, attemptsBefore[i]+1)
		}
		if r.Payload != payloads[i] {
			w.t.Errorf("%s: %v payload %q; want %q", what, r.ID, r.Payload, payloads[i])
		}
		if r.DeadlineMS != got[0].DeadlineMS {
			w.t.Errorf("%s: %v deadline %d differs from the batch's %d", what, r.ID, r.DeadlineMS, got[0].DeadlineMS)
		}
		within(w.t, what+" deadline", r.DeadlineMS, lo, hi)
		w.wantRow(r.ID, emq.StateActive, strconv.FormatInt(r.Token, 10), payloads[i])
		w.wantOnly(r.ID, emq.SetActive, r.DeadlineMS)
	}
}

func ccRecords(rs []wire.CompleteClaimReply) []wire.ClaimManyReply {
	out := make([]wire.ClaimManyReply, len(rs))
	for i, r := range rs {
		out[i] = wire.ClaimManyReply(r)
	}
	return out
}

// wantEmptyArray checks a raw reply is an empty array: not nil, not an error.
func wantEmptyArray(t *testing.T, what string, res rueidis.RedisResult) {
	t.Helper()
	m, err := res.ToMessage()
	if err != nil {
		t.Fatalf("%s: %v; want an empty array", what, err)
	}
	if m.IsNil() || !m.IsArray() {
		t.Fatalf("%s: reply %v is not an array (nil %v); want an empty array", what, m, m.IsNil())
	}
	if arr, _ := m.ToArray(); len(arr) != 0 {
		t.Fatalf("%s: reply holds %d elements; want none", what, len(arr))
	}
}

func TestScriptPush(t *testing.T) {
	w := newWire(t)
	w.wantRung(false, "a fresh queue")
	id := w.mint()
	payload := "first\x00\xff"
	call := w.pushCall(id, payload)
	if n, err := call.Exec(w.ctx, w.rc()); err != nil || n != wire.PushEnqueued {
		t.Fatalf("push = %d, %v; want %d", n, err, wire.PushEnqueued)
	}
	w.wantRow(id, emq.StatePending, wire.InitialToken, payload)
	w.wantOnly(id, emq.SetPending, 0)
	w.wantRung(true, "after a push")

	// A duplicate: 0, the row untouched, pending holds 1, and the doorbell
	// is not rung for it (answered first, so that a ring would show).
	w.answer()
	dup := w.pushCall(id, "second")
	if n, err := dup.Exec(w.ctx, w.rc()); err != nil || n != wire.PushDuplicate {
		t.Fatalf("duplicate push = %d, %v; want %d", n, err, wire.PushDuplicate)
	}
	w.wantRow(id, emq.StatePending, wire.InitialToken, payload)
	w.wantOnly(id, emq.SetPending, 0)
	if n := w.card(w.k.Pending); n != 1 {
		t.Errorf("pending holds %d after the duplicate; want 1", n)
	}
	w.wantRung(false, "after a duplicate push")

	// A duplicate of an active job leaves its lease alone.
	r := w.claim(60_000)
	if r.ID != id {
		t.Fatalf("claimed %v; want %v", r.ID, id)
	}
	if n, err := dup.Exec(w.ctx, w.rc()); err != nil || n != wire.PushDuplicate {
		t.Fatalf("push of an active id = %d, %v; want %d", n, err, wire.PushDuplicate)
	}
	w.wantRow(id, emq.StateActive, "1", payload)
	w.wantOnly(id, emq.SetActive, r.DeadlineMS)
	w.wantRung(false, "after a duplicate push of an active job")

	// Across scripts: push and enqueue answer each other's ids as duplicates.
	old := w.mint()
	w.enqueue(old, "enqueued")
	w.wantRung(false, "after a 2.0.0 enqueue")
	if n, err := (&wire.PushCall{Row: w.row(old), Pending: w.k.Pending, Wake: w.k.Wake, ID: old, Payload: "x"}).Exec(w.ctx, w.rc()); err != nil || n != wire.PushDuplicate {
		t.Errorf("push of an enqueued id = %d, %v; want duplicate", n, err)
	}
	w.wantRow(old, emq.StatePending, wire.InitialToken, "enqueued")
	pushed := w.mint()
	if n, err := (&wire.PushCall{Row: w.row(pushed), Pending: w.k.Pending, Wake: w.k.Wake, ID: pushed, Payload: "pushed"}).Exec(w.ctx, w.rc()); err != nil || n != wire.PushEnqueued {
		t.Fatalf("push = %d, %v", n, err)
	}
	if n, err := (&wire.EnqueueCall{Row: w.row(pushed), Pending: w.k.Pending, ID: pushed, Payload: "x"}).Exec(w.ctx, w.rc()); err != nil || n != wire.EnqueueDuplicate {
		t.Errorf("enqueue of a pushed id = %d, %v; want duplicate", n, err)
	}
	w.wantRow(pushed, emq.StatePending, wire.InitialToken, "pushed")

	// Policy before existence: a foreign id answers EMQKIND and nothing is
	// written — no row, no pending member, no marker — even when something
	// sits at its row key.
	w.answer()
	pend := w.card(w.k.Pending)
	for _, k := range []emq.Kind{emq.KindORD, emq.KindARC} {
		foreign := mint(t, w.c, k)
		kind := w.pushCall(foreign, "x")
		_, err := kind.Exec(w.ctx, w.rc())
		wantRefusal(t, err, wire.ClassKind, wire.ScriptPush.Name)
		if w.exists(w.row(foreign)) {
			t.Errorf("the refused push of %v wrote the row", foreign)
		}
		if _, in := w.score(w.k.Pending, foreign); in || w.card(w.k.Pending) != pend {
			t.Errorf("the refused push of %v touched pending (size %d; want %d)", foreign, w.card(w.k.Pending), pend)
		}
		w.wantRung(false, "after a refused push")
		if w.exists(w.k.Wake) {
			t.Error("the refused push created the doorbell")
		}
	}
	planted := mint(t, w.c, emq.KindORD)
	do(t, w.c, "HSET", w.row(planted), "planted", "foreign")
	_, err := (&wire.PushCall{Row: w.row(planted), Pending: w.k.Pending, Wake: w.k.Wake, ID: planted, Payload: "x"}).Exec(w.ctx, w.rc())
	wantRefusal(t, err, wire.ClassKind, wire.ScriptPush.Name)
	if got := w.hash(w.row(planted)); !cmp.Equal(got, map[string]string{"planted": "foreign"}) {
		t.Errorf("the refused push changed the planted key: %v", got)
	}
	w.wantRung(false, "after a refused push over a planted key")

	// Many pushes, pipelined: the doorbell is rung once and stays one marker.
	var execs []rueidis.LuaExec
	var ids []emq.ID
	for i := 0; i < 50; i++ {
		id := w.mint()
		ids = append(ids, id)
		c := w.pushCall(id, strconv.Itoa(i))
		execs = append(execs, c.LuaExec())
	}
	execs = append(execs, (&wire.PushCall{Row: w.row(ids[0]), Pending: w.k.Pending, Wake: w.k.Wake, ID: ids[0], Payload: "again"}).LuaExec())
	res := wire.ScriptPush.Lua().ExecMulti(w.ctx, w.rc(), execs...)
	for i, r := range res {
		want := wire.PushEnqueued
		if i == len(res)-1 {
			want = wire.PushDuplicate
		}
		if n, err := wire.DecodePush(r); err != nil || n != want {
			t.Errorf("pipelined push %d = %d, %v; want %d", i, n, err, want)
		}
	}
	w.wantRung(true, "after 50 pushes")
	if n, _ := do(t, w.c, "LLEN", w.k.Wake).AsInt64(); n != 1 {
		t.Errorf("LLEN of the doorbell after 50 pushes = %d; want 1", n)
	}
	w.wantRow(ids[0], emq.StatePending, wire.InitialToken, "0")
	for i, id := range ids {
		if i%10 == 0 {
			w.wantOnly(id, emq.SetPending, 0)
		}
	}
	// Answered, the next push rings again; and another queue's doorbell is
	// not this one's.
	w.answer()
	next := w.mint()
	if n, err := (&wire.PushCall{Row: w.row(next), Pending: w.k.Pending, Wake: w.k.Wake, ID: next, Payload: "n"}).Exec(w.ctx, w.rc()); err != nil || n != wire.PushEnqueued {
		t.Fatalf("push = %d, %v", n, err)
	}
	w.wantRung(true, "after a push on an answered doorbell")
	other := queue(t, w.c, "other").Keys()
	if got := doorbellOf(t, w.c, other.Wake); len(got) != 0 {
		t.Errorf("another queue's doorbell holds %q", got)
	}
}

func TestScriptRing(t *testing.T) {
	w := newWire(t)
	call := wire.RingCall{Wake: w.k.Wake}
	if n, err := call.Exec(w.ctx, w.rc()); err != nil || n != wire.RingRung {
		t.Fatalf("ring of a silent doorbell = %d, %v; want %d", n, err, wire.RingRung)
	}
	w.wantRung(true, "after ring")
	for i := 0; i < 3; i++ {
		if n, err := call.Exec(w.ctx, w.rc()); err != nil || n != wire.RingAlreadyRung {
			t.Fatalf("ring of a rung doorbell = %d, %v; want %d", n, err, wire.RingAlreadyRung)
		}
	}
	w.wantRung(true, "after ringing a rung doorbell")
	if n, _ := do(t, w.c, "LLEN", w.k.Wake).AsInt64(); n != 1 {
		t.Errorf("LLEN of the doorbell = %d; want 1", n)
	}
	w.answer()
	w.wantRung(false, "after the answer")
	res := wire.ScriptRing.Lua().ExecMulti(w.ctx, w.rc(), call.LuaExec(), call.LuaExec(), call.LuaExec())
	for i, r := range res {
		want := wire.RingAlreadyRung
		if i == 0 {
			want = wire.RingRung
		}
		if n, err := wire.DecodeRing(r); err != nil || n != want {
			t.Errorf("pipelined ring %d = %d, %v; want %d", i, n, err, want)
		}
	}
	w.wantRung(true, "after pipelined rings")
	// Ringing touches nothing but the doorbell.
	for _, s := range wire.Sets() {
		if w.exists(w.k.Set(s)) {
			t.Errorf("ring created %s", s)
		}
	}
	other := queue(t, w.c, "other").Keys()
	if got := doorbellOf(t, w.c, other.Wake); len(got) != 0 {
		t.Errorf("ringing one queue rang another: %q", got)
	}
}

func TestScriptClaimMany(t *testing.T) {
	w := newWire(t)

	// An empty queue: an empty array (not nil), nothing created, no ring.
	empty := w.claimManyCall(1000, 5)
	wantEmptyArray(t, "claim_many on an empty queue", wire.ScriptClaimMany.Lua().Exec(w.ctx, w.rc(), empty.Keys(), empty.Args()))
	got, err := empty.Exec(w.ctx, w.rc())
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("claim_many on an empty queue = %#v, %v; want an empty, non-nil slice", got, err)
	}
	if w.exists(w.k.Active) || w.exists(w.k.Pending) {
		t.Error("claim_many on an empty queue created a set")
	}
	w.wantRung(false, "claim_many on an empty queue")

	// Five jobs admitted out of mint order (with 2.0.0 enqueue, which never
	// rings): the batch takes the lex-min first.
	ids := make([]emq.ID, 5)
	for i := range ids {
		ids[i] = w.mint()
	}
	for _, i := range []int{3, 0, 4, 2, 1} {
		w.enqueue(ids[i], "p"+strconv.Itoa(i))
	}
	w.wantRung(false, "after 2.0.0 enqueues")
	call := w.claimManyCall(30_000, 2)
	before := w.now()
	got, err = call.Exec(w.ctx, w.rc())
	after := w.now()
	if err != nil {
		t.Fatalf("claim_many: %v", err)
	}
	w.wantLeased("claim_many count 2", got, ids[:2], []int64{0, 0}, []string{"p0", "p1"}, before+30_000, after+30_000)
	for i := 2; i < 5; i++ {
		w.wantRow(ids[i], emq.StatePending, wire.InitialToken, "p"+strconv.Itoa(i))
		w.wantOnly(ids[i], emq.SetPending, 0)
	}
	w.wantRung(true, "claim_many left jobs pending")

	// Rung already: pending remains and the doorbell stays one marker.
	call.Count = 1
	before = w.now()
	got, err = call.Exec(w.ctx, w.rc())
	after = w.now()
	if err != nil {
		t.Fatalf("claim_many: %v", err)
	}
	w.wantLeased("claim_many count 1", got, ids[2:3], []int64{0}, []string{"p2"}, before+30_000, after+30_000)
	w.wantRung(true, "claim_many on a rung doorbell")

	// A count larger than pending takes all there is and, with nothing
	// left, does not ring (answered first so that a ring would show)...
	w.answer()
	call.Count = 100
	before = w.now()
	got, err = call.Exec(w.ctx, w.rc())
	after = w.now()
	if err != nil {
		t.Fatalf("claim_many: %v", err)
	}
	w.wantLeased("claim_many count 100", got, ids[3:], []int64{0, 0}, []string{"p3", "p4"}, before+30_000, after+30_000)
	if n := w.card(w.k.Pending); n != 0 {
		t.Errorf("pending holds %d; want 0", n)
	}
	w.wantRung(false, "claim_many drained pending")
	if n := w.card(w.k.Active); n != 5 {
		t.Errorf("active holds %d; want 5", n)
	}
	// ... nor does it answer the doorbell: a marker is a hint, left for the
	// worker that reads it.
	do(t, w.c, "RPUSH", w.k.Wake, wakeMarker)
	if got, err := call.Exec(w.ctx, w.rc()); err != nil || len(got) != 0 {
		t.Fatalf("claim_many of a drained queue = %+v, %v; want none", got, err)
	}
	w.wantRung(true, "claim_many on an empty queue with a marker")
	w.answer()

	// Tokens: a job whose lease lapsed is leased again with token 2.
	d1 := w.claimManyCall(0, 1)
	lapsed := w.mint()
	w.enqueue(lapsed, "lapsed")
	if got, err := d1.Exec(w.ctx, w.rc()); err != nil || len(got) != 1 || got[0].ID != lapsed || got[0].Token != 1 {
		t.Fatalf("claim_many = %+v, %v; want %v token 1", got, err, lapsed)
	}
	if n, err := (&wire.ReapCall{Active: w.k.Active, Pending: w.k.Pending, Dead: w.k.Dead, Prefix: w.k.RowPrefix(), Limit: 10}).Exec(w.ctx, w.rc()); err != nil || n != 1 {
		t.Fatalf("reap = %d, %v; want 1", n, err)
	}
	fresh := w.mint()
	w.enqueue(fresh, "fresh")
	call.Count = 2
	before = w.now()
	got, err = call.Exec(w.ctx, w.rc())
	after = w.now()
	if err != nil {
		t.Fatalf("claim_many: %v", err)
	}
	w.wantLeased("claim_many after reap", got, []emq.ID{lapsed, fresh}, []int64{1, 0}, []string{"lapsed", "fresh"}, before+30_000, after+30_000)

	// Orphans (ids in pending without a row) are dropped and do not count:
	// count 2 over [o1, o2, x, y, z] leases x and y, and rings for z.
	o1, o2 := w.mint(), w.mint()
	x, y, z := w.mint(), w.mint(), w.mint()
	for _, id := range []emq.ID{x, y, z} {
		w.enqueue(id, id.String())
	}
	do(t, w.c, "ZADD", w.k.Pending, "0", o1.String(), "0", o2.String())
	before = w.now()
	got, err = call.Exec(w.ctx, w.rc())
	after = w.now()
	if err != nil {
		t.Fatalf("claim_many over orphans: %v", err)
	}
	w.wantLeased("claim_many over orphans", got, []emq.ID{x, y}, []int64{0, 0}, []string{x.String(), y.String()}, before+30_000, after+30_000)
	w.wantGone(o1)
	w.wantGone(o2)
	w.wantOnly(z, emq.SetPending, 0)
	w.wantRung(true, "claim_many over orphans left z")
	w.answer()
	// Orphans only: an empty reply, the orphans dropped, no ring.
	z2 := w.claimManyCall(30_000, 1)
	if got, err := z2.Exec(w.ctx, w.rc()); err != nil || len(got) != 1 || got[0].ID != z {
		t.Fatalf("claim_many = %+v, %v; want %v", got, err, z)
	}
	do(t, w.c, "ZADD", w.k.Pending, "0", o1.String())
	res := wire.ScriptClaimMany.Lua().Exec(w.ctx, w.rc(), call.Keys(), call.Args())
	wantEmptyArray(t, "claim_many of an orphan-only pending set", res)
	w.wantGone(o1)
	if n := w.card(w.k.Pending); n != 0 {
		t.Errorf("pending holds %d; want 0", n)
	}
	w.wantRung(false, "claim_many of orphans only")

	// Pipelined: two batches from one round trip are disjoint.
	a, b, c := w.mint(), w.mint(), w.mint()
	for _, id := range []emq.ID{a, b, c} {
		w.enqueue(id, "m")
	}
	two := w.claimManyCall(30_000, 2)
	rs := wire.ScriptClaimMany.Lua().ExecMulti(w.ctx, w.rc(), two.LuaExec(), two.LuaExec(), two.LuaExec())
	var seen []emq.ID
	for i, r := range rs {
		got, err := wire.DecodeClaimMany(r)
		if err != nil {
			t.Fatalf("pipelined claim_many %d: %v", i, err)
		}
		for _, g := range got {
			seen = append(seen, g.ID)
		}
		if want := []int{2, 1, 0}[i]; len(got) != want {
			t.Errorf("pipelined claim_many %d leased %d; want %d", i, len(got), want)
		}
	}
	if !cmp.Equal(seen, []emq.ID{a, b, c}, cmp.Comparer(func(p, q emq.ID) bool { return p == q })) {
		t.Errorf("pipelined claim_many leased %v; want %v", seen, []emq.ID{a, b, c})
	}
}

// The argument guards of claim_many: a lease or count that is not a decimal
// integer, and a count below 1, answer ERR before anything is popped or rung.
func TestScriptClaimManyGuards(t *testing.T) {
	w := newWire(t)
	a, b := w.mint(), w.mint()
	w.enqueue(a, "a")
	w.enqueue(b, "b")
	call := w.claimManyCall(30_000, 1)
	unchanged := func(what string) {
		t.Helper()
		w.wantRow(a, emq.StatePending, wire.InitialToken, "a")
		w.wantRow(b, emq.StatePending, wire.InitialToken, "b")
		w.wantOnly(a, emq.SetPending, 0)
		w.wantOnly(b, emq.SetPending, 0)
		if w.exists(w.k.Active) {
			t.Errorf("%s created the active set", what)
		}
		w.wantRung(false, what)
	}
	for _, bad := range []string{"nan", "inf", "-inf", "1.5", "0x10", "1e3", "", " 1", "1 ", "+1", "two"} {
		_, err := wire.DecodeClaimMany(wire.ScriptClaimMany.Lua().Exec(w.ctx, w.rc(), call.Keys(), []string{w.k.RowPrefix(), "30000", bad}))
		wantERR(t, err, "claim_many with count "+strconv.Quote(bad))
		unchanged("claim_many with count " + strconv.Quote(bad))
		_, err = wire.DecodeClaimMany(wire.ScriptClaimMany.Lua().Exec(w.ctx, w.rc(), call.Keys(), []string{w.k.RowPrefix(), bad, "1"}))
		wantERR(t, err, "claim_many with lease_ms "+strconv.Quote(bad))
		unchanged("claim_many with lease_ms " + strconv.Quote(bad))
	}
	for _, count := range []int64{0, -1, -100} {
		c := w.claimManyCall(30_000, count)
		got, err := c.Exec(w.ctx, w.rc())
		wantERR(t, err, "claim_many with count "+strconv.FormatInt(count, 10))
		if got != nil {
			t.Errorf("claim_many with count %d leased %+v", count, got)
		}
		unchanged("claim_many with count " + strconv.FormatInt(count, 10))
	}
	_, err := wire.DecodeClaimMany(wire.ScriptClaimMany.Lua().Exec(w.ctx, w.rc(), call.Keys(), []string{w.k.RowPrefix(), "30000", "-0"}))
	wantERR(t, err, "claim_many with count -0")
	unchanged("claim_many with count -0")
	// The guards fired; the same call with count 1 leases the head.
	if got, err := call.Exec(w.ctx, w.rc()); err != nil || len(got) != 1 || got[0].ID != a {
		t.Fatalf("claim_many = %+v, %v; want %v", got, err, a)
	}
}

func TestScriptCompleteClaim(t *testing.T) {
	w := newWire(t)

	// Complete, then lease the two oldest of four pending — a lapsed job
	// first, leased with its next token — and ring for the other two.
	id, r := w.active("done", 60_000)
	bystander, rb := w.active("other", 60_000)
	lapsed, rl := w.active("lapsed", 0)
	if n, err := (&wire.ReapCall{Active: w.k.Active, Pending: w.k.Pending, Dead: w.k.Dead, Prefix: w.k.RowPrefix(), Limit: 10}).Exec(w.ctx, w.rc()); err != nil || n != 1 {
		t.Fatalf("reap = %d, %v; want 1", n, err)
	}
	next := []emq.ID{w.mint(), w.mint(), w.mint()}
	for i, n := range next {
		w.enqueue(n, "n"+strconv.Itoa(i))
	}
	call := w.completeClaimCall(id, r.Token, 45_000, 2)
	before := w.now()
	got, err := call.Exec(w.ctx, w.rc())
	after := w.now()
	if err != nil {
		t.Fatalf("complete_claim: %v", err)
	}
	w.wantGone(id)
	w.wantLeased("complete_claim count 2", ccRecords(got), []emq.ID{lapsed, next[0]}, []int64{rl.Token, 0}, []string{"lapsed", "n0"}, before+45_000, after+45_000)
	for i := 1; i < 3; i++ {
		w.wantRow(next[i], emq.StatePending, wire.InitialToken, "n"+strconv.Itoa(i))
		w.wantOnly(next[i], emq.SetPending, 0)
	}
	w.wantRow(bystander, emq.StateActive, "1", "other")
	w.wantOnly(bystander, emq.SetActive, rb.DeadlineMS)
	w.wantRung(true, "complete_claim left jobs pending")

	// Completed means gone: the same call again is stale, and leases nothing.
	w.answer()
	_, err = call.Exec(w.ctx, w.rc())
	wantRefusal(t, err, wire.ClassStale, wire.ScriptCompleteClaim.Name)
	if !errors.Is(err, emq.ErrStale) {
		t.Errorf("errors.Is(%v, ErrStale) = false", err)
	}
	w.wantGone(id)
	for i := 1; i < 3; i++ {
		w.wantRow(next[i], emq.StatePending, wire.InitialToken, "n"+strconv.Itoa(i))
		w.wantOnly(next[i], emq.SetPending, 0)
	}
	w.wantRung(false, "a refused complete_claim")

	// Count 0 only completes: the pending jobs stay, no ring, an empty array.
	c0 := w.completeClaimCall(lapsed, got[0].Token, 45_000, 0)
	wantEmptyArray(t, "complete_claim count 0", wire.ScriptCompleteClaim.Lua().Exec(w.ctx, w.rc(), c0.Keys(), c0.Args()))
	w.wantGone(lapsed)
	w.wantRung(false, "complete_claim count 0")
	c0 = w.completeClaimCall(next[0], got[1].Token, 45_000, 0)
	if got, err := c0.Exec(w.ctx, w.rc()); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("complete_claim count 0 = %#v, %v; want an empty, non-nil slice", got, err)
	}
	w.wantGone(next[0])
	for i := 1; i < 3; i++ {
		w.wantRow(next[i], emq.StatePending, wire.InitialToken, "n"+strconv.Itoa(i))
		w.wantOnly(next[i], emq.SetPending, 0)
	}
	w.wantRung(false, "complete_claim count 0")

	// A count larger than pending: everything is leased, orphans are
	// dropped without counting, and with nothing left nothing rings.
	orphan := w.mint()
	do(t, w.c, "ZADD", w.k.Pending, "0", orphan.String())
	call = w.completeClaimCall(bystander, rb.Token, 5_000, 10)
	before = w.now()
	got, err = call.Exec(w.ctx, w.rc())
	after = w.now()
	if err != nil {
		t.Fatalf("complete_claim count 10: %v", err)
	}
	w.wantGone(bystander)
	w.wantLeased("complete_claim count 10", ccRecords(got), next[1:], []int64{0, 0}, []string{"n1", "n2"}, before+5_000, after+5_000)
	w.wantGone(orphan)
	if n := w.card(w.k.Pending); n != 0 {
		t.Errorf("pending holds %d; want 0", n)
	}
	w.wantRung(false, "complete_claim drained pending")
	// An empty queue: the completion alone, an empty array.
	call = w.completeClaimCall(next[1], got[0].Token, 5_000, 3)
	wantEmptyArray(t, "complete_claim on an empty queue", wire.ScriptCompleteClaim.Lua().Exec(w.ctx, w.rc(), call.Keys(), call.Args()))
	w.wantGone(next[1])
	w.wantRow(next[2], emq.StateActive, strconv.FormatInt(got[1].Token, 10), "n2")
	w.wantRung(false, "complete_claim on an empty queue")
	// Pipelined: a stale call between two good ones is refused alone.
	a, ra := w.active("a", 60_000)
	pa, pb := w.mint(), w.mint()
	w.enqueue(pa, "pa")
	w.enqueue(pb, "pb")
	good1 := w.completeClaimCall(next[2], got[1].Token, 60_000, 1)
	stale := w.completeClaimCall(a, ra.Token+1, 60_000, 1)
	good2 := w.completeClaimCall(a, ra.Token, 60_000, 1)
	res := wire.ScriptCompleteClaim.Lua().ExecMulti(w.ctx, w.rc(), good1.LuaExec(), stale.LuaExec(), good2.LuaExec())
	var seen []emq.ID
	for i, r := range res {
		got, err := wire.DecodeCompleteClaim(r)
		if i == 1 {
			wantRefusal(t, err, wire.ClassStale, wire.ScriptCompleteClaim.Name)
			continue
		}
		if err != nil || len(got) != 1 {
			t.Fatalf("pipelined complete_claim %d = %+v, %v; want one job", i, got, err)
		}
		seen = append(seen, got[0].ID)
	}
	if len(seen) != 2 || seen[0] != pa || seen[1] != pb {
		t.Errorf("pipelined complete_claim leased %v; want %v, %v", seen, pa, pb)
	}
	w.wantGone(next[2])
	w.wantGone(a)
	w.wantRung(true, "the first pipelined complete_claim left pb pending")
	// Clean up: complete the two leased jobs so pending and active are empty.
	for _, id := range []emq.ID{pa, pb} {
		tok, _ := strconv.ParseInt(w.hash(w.row(id))[wire.FieldToken], 10, 64)
		if _, err := (&wire.CompleteCall{Active: w.k.Active, Row: w.row(id), ID: id, Token: tok}).Exec(w.ctx, w.rc()); err != nil {
			t.Fatalf("complete %v: %v", id, err)
		}
	}
	w.answer()

	// The two EMQSTALE refusals, each leasing nothing: exec puts a bait job
	// in pending, runs complete_claim with count 5, and checks the bait was
	// not leased and the doorbell not rung before taking the bait away.
	exec := func(id emq.ID, token int64) error {
		bait := w.mint()
		w.enqueue(bait, "bait")
		_, err := (&wire.CompleteClaimCall{Row: w.row(id), Active: w.k.Active, Pending: w.k.Pending, Wake: w.k.Wake, ID: id, Token: token, Prefix: w.k.RowPrefix(), LeaseMS: 60_000, Count: 5}).Exec(w.ctx, w.rc())
		if err != nil {
			w.wantRow(bait, emq.StatePending, wire.InitialToken, "bait")
			w.wantOnly(bait, emq.SetPending, 0)
			w.wantRung(false, "a refused complete_claim")
			if !errors.Is(err, emq.ErrStale) {
				t.Errorf("complete_claim refusal %v does not match ErrStale", err)
			}
		}
		do(t, w.c, "DEL", w.row(bait))
		do(t, w.c, "ZREM", w.k.Pending, bait.String())
		return err
	}
	staleChecks(t, w, wire.ScriptCompleteClaim.Name, exec, func(id emq.ID, token int64) emq.State {
		w.bury(id, token)
		return emq.StateDead
	})
	staleChecks(t, w, wire.ScriptCompleteClaim.Name, exec, func(id emq.ID, token int64) emq.State {
		if _, err := (&wire.RetryCall{Active: w.k.Active, Row: w.row(id), Schedule: w.k.Schedule, ID: id, Token: token, DelayMS: 3_600_000}).Exec(w.ctx, w.rc()); err != nil {
			t.Fatalf("retry: %v", err)
		}
		return emq.StateScheduled
	})
	// The refusals share complete's messages, so a caller can treat both alike.
	sid, sr := w.active("s", 60_000)
	_, errCC := (&wire.CompleteClaimCall{Row: w.row(sid), Active: w.k.Active, Pending: w.k.Pending, Wake: w.k.Wake, ID: sid, Token: sr.Token + 1, Prefix: w.k.RowPrefix(), LeaseMS: 1, Count: 1}).Exec(w.ctx, w.rc())
	_, errC := (&wire.CompleteCall{Active: w.k.Active, Row: w.row(sid), ID: sid, Token: sr.Token + 1}).Exec(w.ctx, w.rc())
	var ccE, cE *emq.ClassError
	if !errors.As(errCC, &ccE) || !errors.As(errC, &cE) || ccE.Message != cE.Message {
		t.Errorf("complete_claim refusal %v; complete's %v: want the same message", errCC, errC)
	}
	w.wantRow(sid, emq.StateActive, "1", "s")
	w.wantOnly(sid, emq.SetActive, sr.DeadlineMS)
}

// The argument guards of complete_claim: a lease or count that is not a
// decimal integer, and a negative count, answer ERR before the job is
// completed or anything is leased — even with the current token.
func TestScriptCompleteClaimGuards(t *testing.T) {
	w := newWire(t)
	id, r := w.active("held", 60_000)
	p := w.mint()
	w.enqueue(p, "p")
	call := w.completeClaimCall(id, r.Token, 30_000, 1)
	unchanged := func(what string) {
		t.Helper()
		w.wantRow(id, emq.StateActive, "1", "held")
		w.wantOnly(id, emq.SetActive, r.DeadlineMS)
		w.wantRow(p, emq.StatePending, wire.InitialToken, "p")
		w.wantOnly(p, emq.SetPending, 0)
		w.wantRung(false, what)
	}
	args := func(lease, count string) []string {
		return []string{id.String(), strconv.FormatInt(r.Token, 10), w.k.RowPrefix(), lease, count}
	}
	for _, bad := range []string{"nan", "inf", "-inf", "1.5", "0x10", "1e3", "", " 1", "+1", "all"} {
		_, err := wire.DecodeCompleteClaim(wire.ScriptCompleteClaim.Lua().Exec(w.ctx, w.rc(), call.Keys(), args("30000", bad)))
		wantERR(t, err, "complete_claim with count "+strconv.Quote(bad))
		unchanged("complete_claim with count " + strconv.Quote(bad))
		_, err = wire.DecodeCompleteClaim(wire.ScriptCompleteClaim.Lua().Exec(w.ctx, w.rc(), call.Keys(), args(bad, "1")))
		wantERR(t, err, "complete_claim with lease_ms "+strconv.Quote(bad))
		unchanged("complete_claim with lease_ms " + strconv.Quote(bad))
	}
	for _, count := range []int64{-1, -50} {
		c := w.completeClaimCall(id, r.Token, 30_000, count)
		got, err := c.Exec(w.ctx, w.rc())
		wantERR(t, err, "complete_claim with count "+strconv.FormatInt(count, 10))
		if got != nil {
			t.Errorf("complete_claim with count %d leased %+v", count, got)
		}
		unchanged("complete_claim with count " + strconv.FormatInt(count, 10))
	}
	// Guards come before the token check: a stale token with a bad count
	// is answered ERR, not EMQSTALE.
	stale := w.completeClaimCall(id, r.Token+1, 30_000, -1)
	_, err := stale.Exec(w.ctx, w.rc())
	wantERR(t, err, "complete_claim with a stale token and count -1")
	unchanged("complete_claim with a stale token and count -1")
	// The guards fired; the same call with count 1 completes and leases p.
	before := w.now()
	got, err := call.Exec(w.ctx, w.rc())
	after := w.now()
	if err != nil {
		t.Fatalf("complete_claim: %v", err)
	}
	w.wantGone(id)
	w.wantLeased("complete_claim", ccRecords(got), []emq.ID{p}, []int64{0}, []string{"p"}, before+30_000, after+30_000)
}

// A count that passes the integer guard but that Redis cannot take as a
// ZPOPMIN count (1e17 and above: Lua hands the number to Redis in exponent
// form) must not leave a half-done call behind: either the whole call
// happens or nothing does. claim_many fails before any write; complete_claim
// deletes the row and its active member before ZPOPMIN fails, so its caller
// sees an error for a job that was in fact completed (a known bug, reported;
// the test skips on it until the script is fixed).
func TestScriptCompleteClaimHugeCount(t *testing.T) {
	w := newWire(t)
	const huge = 100_000_000_000_000_000
	id, r := w.active("held", 60_000)
	p := w.mint()
	w.enqueue(p, "p")

	cm := w.claimManyCall(30_000, huge)
	got, err := cm.Exec(w.ctx, w.rc())
	switch {
	case err != nil: // refused: nothing happened
		w.wantRow(p, emq.StatePending, wire.InitialToken, "p")
		w.wantOnly(p, emq.SetPending, 0)
		w.wantRung(false, "a failed claim_many")
	case len(got) != 1 || got[0].ID != p:
		t.Fatalf("claim_many with a huge count = %+v; want %v", got, p)
	default: // served: admit another pending job for complete_claim
		p = w.mint()
		w.enqueue(p, "p")
	}

	cc := w.completeClaimCall(id, r.Token, 30_000, huge)
	ccGot, err := cc.Exec(w.ctx, w.rc())
	if err == nil {
		w.wantGone(id)
		if len(ccGot) != 1 || ccGot[0].ID != p {
			t.Errorf("complete_claim with a huge count leased %+v; want %v", ccGot, p)
		}
		return
	}
	if !w.exists(w.row(id)) {
		t.Fatalf("complete_claim with count %d answered %v after completing the job: the row is gone, nothing leased", cc.Count, err)
	}
	w.wantRow(id, emq.StateActive, "1", "held")
	w.wantOnly(id, emq.SetActive, r.DeadlineMS)
	w.wantRow(p, emq.StatePending, wire.InitialToken, "p")
	w.wantOnly(p, emq.SetPending, 0)
}

// purge (added to 2.1.0 alongside the inspection API): a dead job is
// deleted for good; anything that is not dead is left alone.
func TestScriptPurge(t *testing.T) {
	w := newWire(t)
	call := func(id emq.ID) *wire.PurgeCall { return &wire.PurgeCall{Dead: w.k.Dead, Row: w.row(id), ID: id} }
	id, r := w.active("morgue", 60_000)
	w.bury(id, r.Token)
	if n, err := call(id).Exec(w.ctx, w.rc()); err != nil || n != wire.PurgePurged {
		t.Fatalf("purge of a dead job = %d, %v; want %d", n, err, wire.PurgePurged)
	}
	w.wantGone(id)
	if n, err := call(id).Exec(w.ctx, w.rc()); err != nil || n != wire.PurgeNotDead {
		t.Errorf("second purge = %d, %v; want %d", n, err, wire.PurgeNotDead)
	}

	// Not dead: pending, active, scheduled, missing — nothing is deleted.
	pend := w.mint()
	w.enqueue(pend, "p")
	if n, err := call(pend).Exec(w.ctx, w.rc()); err != nil || n != wire.PurgeNotDead {
		t.Errorf("purge of a pending job = %d, %v; want %d", n, err, wire.PurgeNotDead)
	}
	w.wantRow(pend, emq.StatePending, wire.InitialToken, "p")
	w.wantOnly(pend, emq.SetPending, 0)
	act := w.claim(60_000)
	if n, err := call(act.ID).Exec(w.ctx, w.rc()); err != nil || n != wire.PurgeNotDead {
		t.Errorf("purge of an active job = %d, %v; want %d", n, err, wire.PurgeNotDead)
	}
	w.wantRow(act.ID, emq.StateActive, "1", "p")
	w.wantOnly(act.ID, emq.SetActive, act.DeadlineMS)
	at := w.now() + 60_000
	sched := w.mint()
	if n, err := (&wire.EnqueueAtCall{Row: w.row(sched), Schedule: w.k.Schedule, ID: sched, Payload: "s", RunAtMS: at}).Exec(w.ctx, w.rc()); err != nil || n != wire.EnqueueAtEnqueued {
		t.Fatalf("enqueue_at = %d, %v", n, err)
	}
	if n, err := call(sched).Exec(w.ctx, w.rc()); err != nil || n != wire.PurgeNotDead {
		t.Errorf("purge of a scheduled job = %d, %v; want %d", n, err, wire.PurgeNotDead)
	}
	w.wantOnly(sched, emq.SetSchedule, at)
	ghost := w.mint()
	if n, err := call(ghost).Exec(w.ctx, w.rc()); err != nil || n != wire.PurgeNotDead {
		t.Errorf("purge of a missing job = %d, %v; want %d", n, err, wire.PurgeNotDead)
	}
	w.wantGone(ghost)
	// An id in dead whose row says otherwise is not purged: neither is
	// touched.
	do(t, w.c, "ZADD", w.k.Dead, "0", pend.String())
	if n, err := call(pend).Exec(w.ctx, w.rc()); err != nil || n != wire.PurgeNotDead {
		t.Errorf("purge of a dead member with an active row = %d, %v; want %d", n, err, wire.PurgeNotDead)
	}
	w.wantRow(pend, emq.StateActive, "1", "p")
	if _, in := w.score(w.k.Dead, pend); !in {
		t.Error("purge removed a member whose row is not dead")
	}
	w.wantRung(false, "purge")
}
