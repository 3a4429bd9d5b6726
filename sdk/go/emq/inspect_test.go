package emq_test

import (
	"slices"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

func TestInspectGet(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "inspect")
	ctx := ctxT(t)
	// Claims take the oldest id first: mint in the order they are claimed.
	active, dead, pending, later, gone := mint(t, c, emq.WorkKind), mint(t, c, emq.WorkKind), mint(t, c, emq.WorkKind), mint(t, c, emq.WorkKind), mint(t, c, emq.WorkKind)
	for _, id := range []emq.ID{active, dead, pending} {
		if _, err := q.Push(ctx, id, []byte("p-"+id.String())); err != nil {
			t.Fatal(err)
		}
	}
	j1, _, _ := q.Claim(ctx, time.Minute) // active (oldest)
	j2, _, _ := q.Claim(ctx, time.Minute) // dead
	if err := q.Bury(ctx, j2.ID, j2.Token); err != nil {
		t.Fatal(err)
	}
	runAt := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	if _, err := q.EnqueueAt(ctx, later, []byte("later"), runAt); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id    emq.ID
		state emq.State
		att   int64
		at    time.Time
	}{{pending, emq.StatePending, 0, time.Time{}}, {active, emq.StateActive, 1, j1.Deadline}, {later, emq.StateScheduled, 0, runAt}, {dead, emq.StateDead, 1, time.Time{}}} {
		info, ok, err := q.Get(ctx, tc.id)
		if err != nil || !ok || info.ID != tc.id || info.State != tc.state || info.Attempts != tc.att || !info.At.Equal(tc.at) {
			t.Errorf("Get(%s) = %+v, %v, %v; want state %s, attempts %d, at %v", tc.id, info, ok, err, tc.state, tc.att, tc.at)
		}
	}
	if info, ok, err := q.Get(ctx, pending); string(info.Payload) != "p-"+pending.String() || !ok || err != nil {
		t.Errorf("payload = %q", info.Payload)
	}
	if _, ok, err := q.Get(ctx, gone); ok || err != nil {
		t.Errorf("Get of a job never enqueued = %v, %v", ok, err)
	}
	// Purge: only a dead job, and nothing of it remains.
	if ok, err := q.Purge(ctx, pending); ok || err != nil {
		t.Errorf("Purge of a pending job = %v, %v", ok, err)
	}
	if ok, err := q.Purge(ctx, dead); !ok || err != nil {
		t.Errorf("Purge of a dead job = %v, %v", ok, err)
	}
	if _, ok, _ := q.Get(ctx, dead); ok {
		t.Error("a purged job is still there")
	}
	if n, _ := q.Size(ctx, emq.SetDead); n != 0 {
		t.Errorf("dead holds %d after the purge", n)
	}
}

// Paging walks a set newest first, each id once, for a lex set and for a
// scored set whose members share scores (a batch claim gives one deadline
// to the whole batch).
func TestInspectPage(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "pages")
	ctx := ctxT(t)
	var ids []emq.ID
	var batch []emq.NewJob
	for i := 0; i < 47; i++ {
		id := mint(t, c, emq.WorkKind)
		ids = append(ids, id)
		batch = append(batch, emq.NewJob{ID: id})
	}
	if _, err := q.PushBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	walk := func(s emq.Set, n int) []emq.ID {
		t.Helper()
		var all []emq.ID
		var cursor emq.Cursor
		for pages := 0; ; pages++ {
			got, next, err := q.Page(ctx, s, cursor, n)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) > n || pages > 100 {
				t.Fatalf("page of %d, want at most %d", len(got), n)
			}
			all = append(all, got...)
			if next == "" {
				return all
			}
			cursor = next
		}
	}
	newest := slices.Clone(ids)
	slices.Reverse(newest)
	if got := walk(emq.SetPending, 10); !slices.Equal(got, newest) {
		t.Errorf("pending pages = %v\nwant newest first %v", got, newest)
	}
	// Lease them in three batches: three distinct deadlines, many ids each.
	for _, n := range []int{20, 20, 7} {
		call := wire.ClaimManyCall{Pending: q.Keys().Pending, Active: q.Keys().Active, Wake: q.Keys().Wake, Prefix: q.Keys().RowPrefix(), LeaseMS: 60000, Count: int64(n)}
		if got, err := call.Exec(ctx, c.Redis()); err != nil || len(got) != n {
			t.Fatalf("claim_many %d = %d jobs, %v", n, len(got), err)
		}
		time.Sleep(3 * time.Millisecond)
	}
	for _, size := range []int{1, 6, 20, 100} {
		got := walk(emq.SetActive, size)
		if len(got) != len(ids) {
			t.Fatalf("active pages of %d: %d ids, want %d", size, len(got), len(ids))
		}
		seen := map[emq.ID]bool{}
		var last time.Time
		for i, id := range got {
			if seen[id] {
				t.Fatalf("active pages of %d: %s twice", size, id)
			}
			seen[id] = true
			info, _, _ := q.Get(ctx, id)
			if i > 0 && info.At.After(last) {
				t.Fatalf("active pages of %d: not latest deadline first at %d", size, i)
			}
			last = info.At
		}
	}
	if _, _, err := q.Page(ctx, emq.SetActive, "garbage", 5); err == nil {
		t.Error("a malformed cursor was accepted")
	}
}
