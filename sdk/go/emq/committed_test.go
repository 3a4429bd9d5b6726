package emq_test

// The committed lines of spec section 10, reproduced against a real
// redis-server: J1-J5, the token walk-through and the fence's 8 checks.

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// J1 surface: enqueue, browse, pending_size; scripts and key shapes are
// nobody's business — no method of the queue handle takes a key or a script.
func TestJ1Surface(t *testing.T) {
	typ := reflect.TypeOf(&emq.Queue{})
	for _, name := range []string{"Enqueue", "Browse", "PendingSize"} {
		if _, ok := typ.MethodByName(name); !ok {
			t.Errorf("the queue handle has no %s", name)
		}
	}
	// The strings a caller gives that are neither a key nor a script
	// (echomq 2.5.0): a deduplication key is the caller's own value, which
	// the scripts hash into a field; a sweep's cursor is the one the last
	// page answered.
	// A job scheduler's id (2.6.0) is the caller's name for it, a field
	// of the schedulers hash.
	values := map[string]int{"PushDedup": 4, "ReplaceDedup": 4, "CancelKey": 2, "SweepDedup": 2, "UpsertScheduler": 2}
	for i := 0; i < typ.NumMethod(); i++ {
		m := typ.Method(i)
		for j := 1; j < m.Type.NumIn(); j++ {
			if m.Type.In(j) == reflect.TypeOf("") && values[m.Name] != j {
				t.Errorf("Queue.%s takes a string (argument %d): the caller never builds a key or names a script", m.Name, j)
			}
		}
	}
}

// J2 idempotent: first call enqueued, second answered duplicate, the row
// untouched and pending holds 1.
func TestJ2Idempotent(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "orders")
	ctx := ctxT(t)
	id := mint(t, c, emq.WorkKind)
	first, err := q.Enqueue(ctx, id, []byte("first"))
	if err != nil || !first {
		t.Fatalf("first Enqueue = %v, %v; want true, nil", first, err)
	}
	second, err := q.Enqueue(ctx, id, []byte("second"))
	if err != nil || second {
		t.Fatalf("second Enqueue = %v, %v; want false (duplicate), nil", second, err)
	}
	row, _ := q.Keys().Row(id)
	want := map[string]string{wire.FieldState: string(emq.StatePending), wire.FieldToken: wire.InitialToken, wire.FieldPayload: "first"}
	if diff := cmp.Diff(want, hgetall(t, c, row)); diff != "" {
		t.Errorf("row after the duplicate (-want +got):\n%s", diff)
	}
	if n, err := q.PendingSize(ctx); err != nil || n != 1 {
		t.Errorf("PendingSize = %d, %v; want 1", n, err)
	}
}

// J3 kind: an ORD id in the job position answers EMQKIND on the wire — the
// key let it pass, the law did not.
func TestJ3Kind(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "orders")
	ctx := ctxT(t)
	ord := emq.MustParseID("ORD0Nt6z93U3dY")
	row, err := q.Keys().Row(ord)
	if err != nil {
		t.Fatalf("the key builder refused a well-formed ORD id: %v", err)
	}
	ok, err := q.Enqueue(ctx, ord, []byte("x"))
	if ok || !errors.Is(err, emq.ErrKind) {
		t.Fatalf("Enqueue(ORD id) = %v, %v; want false, ErrKind", ok, err)
	}
	var ce *emq.ClassError
	if !errors.As(err, &ce) || ce.Class != wire.ClassKind || ce.Script != "enqueue" || ce.Message == "" {
		t.Fatalf("errors.As(*ClassError) = %+v; want class %s from enqueue with a message", ce, wire.ClassKind)
	}
	if errors.Is(err, emq.ErrStale) {
		t.Error("an EMQKIND refusal matches ErrStale")
	}
	if n, _ := do(t, c, "EXISTS", row).AsInt64(); n != 0 {
		t.Error("the refused enqueue wrote the row")
	}
	if n, _ := q.PendingSize(ctx); n != 0 {
		t.Errorf("PendingSize = %d after a refusal; want 0", n)
	}
}

// J4 dividend: after 301 enqueues, newest-first browse over the ids returns
// the last five minted in reverse mint order; the very first job sits at
// the head; no second index anywhere.
func TestJ4Dividend(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "orders")
	ctx := ctxT(t)
	var ids []emq.ID
	for i := 0; i < 301; i++ {
		id := mint(t, c, emq.WorkKind)
		if _, err := q.Enqueue(ctx, id, []byte("x")); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	got, err := q.Browse(ctx, emq.SetPending, 5)
	if err != nil {
		t.Fatal(err)
	}
	want := []emq.ID{ids[300], ids[299], ids[298], ids[297], ids[296]}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b emq.ID) bool { return a == b })); diff != "" {
		t.Errorf("newest-first browse (-want +got):\n%s", diff)
	}
	if n, _ := q.PendingSize(ctx); n != 301 {
		t.Errorf("PendingSize = %d; want 301", n)
	}
	job, ok, err := q.Claim(ctx, time.Minute)
	if err != nil || !ok || job.ID != ids[0] {
		t.Errorf("the head claimed is %v (ok %v, err %v); want the very first job %v", job.ID, ok, err, ids[0])
	}
	// No second index: every key is a row, a set of the queue, or a reserve member.
	keys, err := do(t, c, "KEYS", "*").AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, k := range keys {
		switch {
		case strings.HasPrefix(k, q.Keys().RowPrefix()):
			rows++
		case k == q.Keys().Pending || k == q.Keys().Active || k == wire.KeyVersion || k == wire.KeyBundle || k == wire.KeyLocks:
		default:
			t.Errorf("unexpected key %q: a second index", k)
		}
	}
	if rows != 301 {
		t.Errorf("%d rows; want 301", rows)
	}
}

// order is a payload as a producer writes it: other ids travel as values.
type order struct {
	Order emq.ID `json:"order"`
	Qty   int    `json:"qty"`
}

// J5 cargo: the payload carries ORD0Nt6z93U3dY and a quantity, never a row —
// decoded and re-parsed on the far side of the wire.
func TestJ5Cargo(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "orders")
	ctx := ctxT(t)
	payload, err := json.Marshal(order{Order: emq.MustParseID("ORD0Nt6z93U3dY"), Qty: 3})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(payload), q.Keys().RowPrefix()) {
		t.Fatal("the payload carries a row key")
	}
	if _, err := q.Enqueue(ctx, mint(t, c, emq.WorkKind), payload); err != nil {
		t.Fatal(err)
	}
	job, ok, err := q.Claim(ctx, time.Minute)
	if err != nil || !ok {
		t.Fatalf("Claim = %v, %v", ok, err)
	}
	var got order
	if err := json.Unmarshal(job.Payload, &got); err != nil {
		t.Fatalf("decoding the payload: %v", err)
	}
	if got.Order.String() != "ORD0Nt6z93U3dY" || got.Order.Kind() != emq.KindORD || got.Qty != 3 {
		t.Errorf("far side decoded %+v; want ORD0Nt6z93U3dY (kind ORD) and 3", got)
	}
	if want := time.Date(2026, 6, 11, 9, 1, 41, 949e6, time.UTC); !got.Order.Time().Equal(want) || got.Order.Node() != 7 {
		t.Errorf("the re-parsed id says %v node %d; want %v node 7", got.Order.Time(), got.Order.Node(), want)
	}
	var bad order
	if err := json.Unmarshal([]byte(`{"order":"ORD0Nt6z93U3d!","qty":1}`), &bad); !errors.Is(err, emq.ErrID) {
		t.Errorf("a malformed id in the payload decoded with err %v; want ErrID", err)
	}
}

// Token: claim mints token 1; complete with token 1 retires the row; a
// stale token earns EMQSTALE and the lease holder's work survives the
// zombie's complete; across retry -> promote -> claim the next token is 2.
func TestTokenWalkthrough(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "orders")
	ctx := ctxT(t)

	id := mint(t, c, emq.WorkKind)
	row, _ := q.Keys().Row(id)
	if _, err := q.Enqueue(ctx, id, []byte("p")); err != nil {
		t.Fatal(err)
	}
	job, _, err := q.Claim(ctx, time.Minute)
	if err != nil || job.Token != 1 {
		t.Fatalf("claim minted token %d (err %v); want 1", job.Token, err)
	}
	if err := q.Complete(ctx, id, 2); !errors.Is(err, emq.ErrStale) {
		t.Fatalf("complete with token 2 = %v; want ErrStale", err)
	}
	if got := hgetall(t, c, row); got[wire.FieldState] != string(emq.StateActive) || got[wire.FieldToken] != "1" {
		t.Fatalf("after the stale complete the row is %v; want active with attempts 1", got)
	}
	if err := q.Complete(ctx, id, 1); err != nil {
		t.Fatalf("complete with token 1: %v", err)
	}
	if n, _ := do(t, c, "EXISTS", row).AsInt64(); n != 0 {
		t.Fatal("complete left the row")
	}
	if n, _ := q.Size(ctx, emq.SetActive); n != 0 {
		t.Fatalf("active holds %d after complete; want 0", n)
	}

	// The zombie: its lease expires and is reaped, another worker claims
	// (token 2), and the zombie's late complete with token 1 is refused.
	id2 := mint(t, c, emq.WorkKind)
	if _, err := q.Enqueue(ctx, id2, []byte("p")); err != nil {
		t.Fatal(err)
	}
	zombie, _, _ := q.Claim(ctx, time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	if n, err := q.Reap(ctx, 10, 0); err != nil || n != 1 {
		t.Fatalf("Reap = %d, %v; want 1", n, err)
	}
	holder, _, _ := q.Claim(ctx, time.Minute)
	if holder.ID != id2 || holder.Token != 2 {
		t.Fatalf("the second claim got %v token %d; want %v token 2", holder.ID, holder.Token, id2)
	}
	if err := q.Complete(ctx, id2, zombie.Token); !errors.Is(err, emq.ErrStale) {
		t.Fatalf("the zombie's complete = %v; want ErrStale", err)
	}
	row2, _ := q.Keys().Row(id2)
	if got := hgetall(t, c, row2); got[wire.FieldState] != string(emq.StateActive) || got[wire.FieldToken] != "2" {
		t.Fatalf("the lease holder's work did not survive the zombie: %v", got)
	}
	if err := q.Complete(ctx, id2, holder.Token); err != nil {
		t.Fatalf("the holder's complete: %v", err)
	}

	// retry -> promote -> claim: one job, two lives, one counter.
	id3 := mint(t, c, emq.WorkKind)
	if _, err := q.Enqueue(ctx, id3, []byte("p")); err != nil {
		t.Fatal(err)
	}
	j, _, _ := q.Claim(ctx, time.Minute)
	if _, err := q.Retry(ctx, id3, j.Token, 0); err != nil {
		t.Fatalf("Retry: %v", err)
	}
	if n, err := q.Promote(ctx, 10); err != nil || n != 1 {
		t.Fatalf("Promote = %d, %v; want 1", n, err)
	}
	j2, ok, err := q.Claim(ctx, time.Minute)
	if err != nil || !ok || j2.ID != id3 || j2.Token != 2 {
		t.Fatalf("after retry -> promote the claim got %v token %d (ok %v, err %v); want %v token 2", j2.ID, j2.Token, ok, err, id3)
	}
}

// Fence: claimed on a fresh keyspace; planted mismatch refused with the
// typed error, fatal at boot; restart re-fences and serves. PASS 8/8.
func TestFence(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxT(t)
	get := func() string {
		v, err := srv.Do("GET", wire.KeyVersion)
		if err != nil {
			t.Fatalf("GET %s: %v", wire.KeyVersion, err)
		}
		return v
	}
	pass := 0
	check := func(name string, ok bool, format string, args ...any) {
		t.Helper()
		if ok {
			pass++
			t.Logf("fence %-40s ok", name)
			return
		}
		t.Errorf("fence %s: "+format, append([]any{name}, args...)...)
	}

	check("fresh keyspace has no record", get() == "(nil)", "found %q", get())
	c := connect(t, srv)
	check("claimed on a fresh keyspace", get() == wire.VersionRecord && c.VersionFound() == wire.VersionRecord, "record %q, client found %q", get(), c.VersionFound())
	v, err := c.Redis().Do(ctx, c.Redis().B().Get().Key(wire.KeyVersion).Build()).ToString()
	check("read back through the fenced client", err == nil && v == wire.VersionRecord, "GET = %q, %v", v, err)
	c2, err := emq.Connect(ctx, options(srv))
	check("a second client is admitted, record unchanged", err == nil && get() == wire.VersionRecord, "err %v, record %q", err, get())
	if c2 != nil {
		c2.Close()
	}

	// A planted record of another major is refused with the typed error, and left as found.
	planted := "echomq:1.3.0"
	if _, err := srv.Do("SET", wire.KeyVersion, planted); err != nil {
		t.Fatal(err)
	}
	_, err = emq.Connect(ctx, options(srv))
	var fe *emq.FenceError
	check("planted mismatch refused, typed, fatal at boot", errors.As(err, &fe) && fe.Found == planted && fe.Want == wire.VersionRecord && errors.Is(err, emq.ErrVersionFence) && get() == planted,
		"Connect = %v, record %q", err, get())

	// A higher minor of this major is admitted as ahead and never lowered.
	ahead := strings.TrimSuffix(wire.VersionRecord, emq.Version) + strconv.Itoa(wire.VersionMajor) + "." + strconv.Itoa(wire.VersionMinor+1) + ".0"
	if _, err := srv.Do("SET", wire.KeyVersion, ahead); err != nil {
		t.Fatal(err)
	}
	c3, err := emq.Connect(ctx, options(srv))
	check("a higher minor is admitted, not lowered", err == nil && c3.VersionFound() == ahead && get() == ahead, "Connect = %v, record %q", err, get())
	if c3 != nil {
		c3.Close()
	}
	if _, err := srv.Do("DEL", wire.KeyVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Queue("x"); err != nil { // no command: only proves the client is alive
		t.Fatal(err)
	}

	// Restart: the data is gone (no persistence); the client re-fences
	// before its next command and serves.
	srv.Restart()
	q := queue(t, c, "orders")
	var ok bool
	for i := 0; i < 50; i++ { // the first command may meet the dead connection
		ok, err = q.Enqueue(ctx, mint(t, c, emq.WorkKind), []byte("after restart"))
		if err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	check("restart re-fences and serves", err == nil && ok && get() == wire.VersionRecord, "Enqueue = %v, %v; record %q", ok, err, get())

	// Restart into a keyspace fenced by another version: refused, nothing written.
	srv.Restart()
	if _, err := srv.Do("SET", wire.KeyVersion, "echomq:3.0.0"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		_, err = q.Enqueue(ctx, mint(t, c, emq.WorkKind), []byte("x"))
		if errors.Is(err, emq.ErrVersionFence) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	n, _ := srv.Do("EXISTS", q.Keys().Pending)
	check("after restart a foreign record is refused", errors.As(err, &fe) && fe.Found == "echomq:3.0.0" && n == "0", "Enqueue = %v; pending exists %s", err, n)
	t.Logf("fence gate record PASS %d/8", pass)
	if pass != 8 {
		t.Errorf("fence gate PASS %d/8", pass)
	}
}
