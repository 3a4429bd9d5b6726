package emq_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// callsByCommand reads INFO commandstats: calls per command, by lower-case
// name.
func callsByCommand(t *testing.T, c *emq.Client) map[string]int64 {
	t.Helper()
	info, err := do(t, c, "INFO", "commandstats").ToString()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		v, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			t.Fatalf("INFO commandstats line %q", line)
		}
		out[strings.TrimPrefix(name, "cmdstat_")] = v
	}
	return out
}

func TestListQueues(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	ctx := ctxT(t)
	want := []string{"a", "emails.v2", "orders", "x-1_y"}
	for i, name := range want {
		q := queue(t, c, name)
		// One queue holds only a dead job: it is found by its dead set.
		if _, err := q.Enqueue(ctx, mint(t, c, emq.WorkKind), []byte("p")); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			j, ok, err := q.Claim(ctx, time.Minute)
			if err != nil || !ok {
				t.Fatalf("Claim: %v %v", ok, err)
			}
			if err := q.Bury(ctx, j.ID, j.Token); err != nil {
				t.Fatal(err)
			}
		}
	}
	if s, _ := queue(t, c, "a").Sizes(ctx); s[emq.SetPending] != 0 || s[emq.SetDead] != 1 {
		t.Fatalf("queue a: %v, want only one dead job", s)
	}
	// Keys that look like a queue's but are not: a malformed name, an
	// unknown type, a set's name on a string, another prefix, rows.
	k, _ := wire.NewQueueKeys("orders")
	bad := strings.Replace(k.Pending, "{orders}", "{Bad}", 1)
	other := strings.Replace(k.Pending, "{orders}", "{other}", 1) + "x"
	str := strings.Replace(k.Pending, "{orders}", "{str}", 1)
	for _, cmd := range [][]string{{"ZADD", bad, "0", "m"}, {"ZADD", other, "0", "m"}, {"SET", str, "v"}, {"ZADD", "zz{orders}:pending", "0", "m"}} {
		if err := do(t, c, cmd...).Error(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	before := callsByCommand(t, c)
	got, err := c.ListQueues(ctx, emq.ListOptions{Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Names, want) || !got.Complete {
		t.Errorf("ListQueues = %v complete %v, want %v complete", got.Names, got.Complete, want)
	}
	after := callsByCommand(t, c)
	if after["keys"] != before["keys"] {
		t.Errorf("ListQueues sent KEYS")
	}
	if after["scan"]-before["scan"] < 2 {
		t.Errorf("ListQueues sent %d SCAN calls with COUNT 2 over %d keys", after["scan"]-before["scan"], len(want)*2+4)
	}

	// Bounds: a limit on names, and on calls.
	if got, err := c.ListQueues(ctx, emq.ListOptions{Limit: 2}); err != nil || len(got.Names) != 2 || got.Complete {
		t.Errorf("Limit 2: %v complete %v, %v", got.Names, got.Complete, err)
	}
	before = callsByCommand(t, c)
	if got, err := c.ListQueues(ctx, emq.ListOptions{Count: 1, MaxCalls: 2}); err != nil || got.Complete {
		t.Errorf("MaxCalls 2: %v complete %v, %v", got.Names, got.Complete, err)
	}
	if n := callsByCommand(t, c)["scan"] - before["scan"]; n != 2 {
		t.Errorf("MaxCalls 2 sent %d SCANs", n)
	}

	// An observing client lists too.
	o := observe(t, srv)
	if got, err := o.ListQueues(ctx, emq.ListOptions{}); err != nil || !slices.Equal(got.Names, want) {
		t.Errorf("observing ListQueues = %v, %v", got.Names, err)
	}
}

func TestListQueuesOnACluster(t *testing.T) {
	cl := redistest.StartCluster(t)
	c, err := emq.Connect(ctxT(t), emq.Options{Redis: rueidis.ClientOption{InitAddress: cl.Addrs(), DisableCache: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := ctxT(t)
	// Enough queues that every primary holds some.
	var want []string
	primaries := map[string]bool{}
	for i := 0; len(primaries) < len(cl.Primaries()) || i < 12; i++ {
		name := fmt.Sprintf("q%d", i)
		q := queue(t, c, name)
		if _, err := q.Enqueue(ctx, mint(t, c, emq.WorkKind), []byte("p")); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
		primaries[cl.NodeForKey(q.Keys().Pending)] = true
	}
	slices.Sort(want)
	got, err := c.ListQueues(ctx, emq.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Names, want) || !got.Complete {
		t.Errorf("ListQueues on %d primaries = %v complete %v, want %v", len(primaries), got.Names, got.Complete, want)
	}
	// Stats and FindJob pipeline across the slots of every primary.
	stats, err := c.Stats(ctx, want)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range stats {
		if st.Sizes[emq.SetPending] != 1 || st.OldestPending.IsZero() {
			t.Errorf("Stats(%s) on the cluster = %+v", st.Queue, st)
		}
	}
	id := mint(t, c, emq.WorkKind)
	for _, name := range want[:3] {
		if _, err := queue(t, c, name).Enqueue(ctx, id, []byte("p")); err != nil {
			t.Fatal(err)
		}
	}
	if found, err := c.FindJob(ctx, id, want); err != nil || !slices.Equal(found, want[:3]) {
		t.Errorf("FindJob on the cluster = %v %v, want %v", found, err, want[:3])
	}
}

func TestOldestDueRunNowMigration(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	ctx := ctxT(t)
	q := queue(t, c, "ops")

	for _, s := range wire.Sets() {
		if _, ok, err := q.Oldest(ctx, s); ok || err != nil {
			t.Errorf("Oldest(%s) of an empty queue: %v %v", s, ok, err)
		}
	}
	ids := []emq.ID{mint(t, c, emq.WorkKind), mint(t, c, emq.WorkKind), mint(t, c, emq.WorkKind)}
	for _, id := range ids {
		if _, err := q.Enqueue(ctx, id, []byte("p")); err != nil {
			t.Fatal(err)
		}
	}
	if got, ok, err := q.Oldest(ctx, emq.SetPending); err != nil || !ok || got != ids[0] {
		t.Errorf("Oldest(pending) = %v %v %v, want %v", got, ok, err, ids[0])
	}
	for i, id := range ids {
		if n, err := q.CountUpTo(ctx, emq.SetPending, id); err != nil || n != int64(i+1) {
			t.Errorf("CountUpTo(pending, ids[%d]) = %d %v, want %d", i, n, err, i+1)
		}
	}
	if _, err := q.CountUpTo(ctx, emq.SetActive, ids[0]); !errors.Is(err, emq.ErrArgument) {
		t.Errorf("CountUpTo(active): %v, want ErrArgument", err)
	}
	// Two leases, one short: after it expires one is due.
	j1, _, _ := q.Claim(ctx, 50*time.Millisecond)
	j2, _, _ := q.Claim(ctx, time.Hour)
	if got, _, _ := q.Oldest(ctx, emq.SetActive); got != j1.ID {
		t.Errorf("Oldest(active) = %v, want the earliest deadline %v", got, j1.ID)
	}
	time.Sleep(100 * time.Millisecond)
	now, err := c.ServerTime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := q.Due(ctx, emq.SetActive, now); err != nil || n != 1 {
		t.Errorf("Due(active, now) = %d %v, want 1", n, err)
	}
	if n, err := q.Due(ctx, emq.SetActive, now.Add(2*time.Hour)); err != nil || n != 2 {
		t.Errorf("Due(active, now+2h) = %d %v, want 2", n, err)
	}
	if _, err := q.Due(ctx, emq.SetPending, now); !errors.Is(err, emq.ErrArgument) {
		t.Errorf("Due(pending): %v, want ErrArgument", err)
	}
	if j2.ID.IsZero() {
		t.Fatal("second claim failed")
	}

	// RunNow: a job scheduled an hour ahead becomes pending, the doorbell
	// rings; a job not scheduled is left alone.
	sched := mint(t, c, emq.WorkKind)
	later := mint(t, c, emq.WorkKind)
	for _, id := range []emq.ID{sched, later} {
		if _, err := q.EnqueueAt(ctx, id, []byte("s"), now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := q.Due(ctx, emq.SetSchedule, now); n != 0 {
		t.Fatalf("Due(schedule) = %d before RunNow", n)
	}
	do(t, c, "DEL", q.Keys().Wake)
	ok, err := q.RunNow(ctx, sched)
	if err != nil || !ok {
		t.Fatalf("RunNow = %v %v", ok, err)
	}
	info, _, _ := q.Get(ctx, sched)
	if info.State != emq.StatePending || !slices.Equal(info.In, []emq.Set{emq.SetPending}) {
		t.Errorf("after RunNow: %+v, want pending", info)
	}
	if rung, _ := q.Rung(ctx); !rung {
		t.Errorf("RunNow did not ring the doorbell")
	}
	if info, _, _ := q.Get(ctx, later); info.State != emq.StateScheduled {
		t.Errorf("RunNow moved another job: %+v", info)
	}
	if ok, err := q.RunNow(ctx, sched); ok || err != nil {
		t.Errorf("RunNow of a pending job = %v %v, want false", ok, err)
	}
	if _, err := q.RunNow(ctx, emq.ID{}); !errors.Is(err, emq.ErrID) {
		t.Errorf("RunNow(zero id): %v", err)
	}

	// Migration: none, then what a tool wrote.
	if m, err := q.Migration(ctx); err != nil || len(m) != 0 {
		t.Errorf("Migration of a fresh queue = %v %v", m, err)
	}
	key, _ := wire.KeyMigration("ops")
	do(t, c, "HSET", key, "from", "2.0.0", "to", "2.1.0")
	if m, err := q.Migration(ctx); err != nil || m["from"] != "2.0.0" || len(m) != 2 {
		t.Errorf("Migration = %v %v", m, err)
	}

	// Stats reads what the single reads read, for several queues at once.
	other := queue(t, c, "ops2")
	if _, err := other.Enqueue(ctx, mint(t, c, emq.WorkKind), []byte("p")); err != nil {
		t.Fatal(err)
	}
	before := callsByCommand(t, c)
	all, err := c.Stats(ctx, []string{"ops", "ops2", "none"})
	if err != nil || len(all) != 3 {
		t.Fatalf("Stats = %v, %v", all, err)
	}
	if n := callsByCommand(t, c)["time"] - before["time"]; n != 1 {
		t.Errorf("Stats read the clock %d times", n)
	}
	st := all[0]
	sizes, _ := q.Sizes(ctx)
	oldest, _, _ := q.Oldest(ctx, emq.SetPending)
	rung, _ := q.Rung(ctx)
	due, _ := q.Due(ctx, emq.SetActive, st.At)
	if st.Queue != "ops" || !maps.Equal(st.Sizes, sizes) || st.OldestPending != oldest || st.Rung != rung || st.ExpiredLeases != due || st.Migration["from"] != "2.0.0" {
		t.Errorf("Stats(ops) = %+v; sizes %v, oldest %v, rung %v, expired %d", st, sizes, oldest, rung, due)
	}
	if st.OldestPendingAge() <= 0 {
		t.Errorf("OldestPendingAge = %v", st.OldestPendingAge())
	}
	if all[1].Sizes[emq.SetPending] != 1 || all[2].Sizes[emq.SetPending] != 0 || !all[2].OldestPending.IsZero() || all[2].OldestPendingAge() != 0 {
		t.Errorf("Stats(ops2, none) = %+v %+v", all[1], all[2])
	}
	before = callsByCommand(t, c)
	if _, err := c.Stats(ctx, []string{"ops", "Bad"}); !errors.Is(err, emq.ErrQueueName) {
		t.Errorf("Stats with a malformed name: %v", err)
	}
	if _, err := c.Stats(ctx, make([]string, emq.MaxStatsQueues+1)); !errors.Is(err, emq.ErrArgument) {
		t.Errorf("Stats of too many queues: %v", err)
	}
	after := callsByCommand(t, c)
	delete(after, "info")
	delete(before, "info")
	if !maps.Equal(before, after) {
		t.Errorf("refused Stats calls sent commands")
	}

	// On an observing client the reads work and RunNow is a write.
	o := observe(t, srv)
	oq := queue(t, o, "ops")
	if got, ok, err := oq.Oldest(ctx, emq.SetPending); err != nil || !ok || got != ids[2] {
		t.Errorf("observing Oldest = %v %v %v", got, ok, err)
	}
}

func ExampleClient_ListQueues() {
	srv, err := redistest.StartServer()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := emq.Connect(ctx, emq.Options{Redis: rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	for _, name := range []string{"orders", "emails"} {
		q, _ := c.Queue(name)
		id, _ := c.Mint(emq.WorkKind)
		_, _ = q.Push(ctx, id, []byte("{}"))
	}
	list, err := c.ListQueues(ctx, emq.ListOptions{})
	fmt.Println(list.Names, list.Complete, err)
	q, _ := c.Queue("orders")
	oldest, _, _ := q.Oldest(ctx, emq.SetPending)
	fmt.Println(time.Since(oldest.Time()) < time.Minute)
	// Output:
	// [emails orders] true <nil>
	// true
}
