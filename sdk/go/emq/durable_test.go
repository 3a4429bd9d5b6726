package emq_test

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// startReplicated starts a primary and a replica of it (--replicaof) and
// returns once the primary sees the replica online.
func startReplicated(t *testing.T) (primary, replica *redistest.Server) {
	t.Helper()
	primary = redistest.Start(t)
	host, port, _ := net.SplitHostPort(primary.Addr())
	replica = redistest.Start(t, redistest.WithArgs("--replicaof", host, port))
	waitFor(t, 20*time.Second, "the replica to be online", func() bool {
		info, err := primary.Do("INFO", "replication")
		return err == nil && strings.Contains(info, "state=online")
	})
	return primary, replica
}

func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// serverPid returns the process id of the redis-server answering at srv.
func serverPid(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	info, err := srv.Do("INFO", "server")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			pid, _ := strconv.Atoi(v)
			return pid
		}
	}
	t.Fatal("INFO server has no process_id")
	return 0
}

func wantDurabilityError(t *testing.T, err error, acked, want int) {
	t.Helper()
	var de *emq.DurabilityError
	if !errors.As(err, &de) {
		t.Fatalf("error %v, want a *DurabilityError", err)
	}
	if de.Acked != acked || de.Want != want || de.Err != nil {
		t.Fatalf("DurabilityError{Acked: %d, Want: %d, Err: %v}, want Acked %d of %d", de.Acked, de.Want, de.Err, acked, want)
	}
}

// TestPushDurable runs PushDurable and PushBatchDurable against a primary
// with one replica (a plain --replicaof replica): acknowledged while the
// replica follows; a *DurabilityError after the timeout when it does not,
// with the job enqueued on the primary all the same (WAIT rolls nothing
// back); duplicates checked against the replication offset.
func TestPushDurable(t *testing.T) {
	primary, replica := startReplicated(t)
	c := connect(t, primary)
	q := queue(t, c, "durable")
	ctx := ctxT(t)
	one := emq.Durability{Replicas: 1, Timeout: 2 * time.Second}
	onReplica := func(id emq.ID) bool {
		t.Helper()
		row, _ := q.Keys().Row(id)
		n, err := replica.Do("EXISTS", row)
		if err != nil {
			t.Fatal(err)
		}
		return n == "1"
	}

	t.Run("Arguments", func(t *testing.T) {
		id := mint(t, c, emq.WorkKind)
		for _, d := range []emq.Durability{{Replicas: 0, Timeout: time.Second}, {Replicas: 1}, {Replicas: 1, Timeout: time.Microsecond}} {
			if _, err := q.PushDurable(ctx, id, nil, d); !errors.Is(err, emq.ErrArgument) {
				t.Errorf("PushDurable with %+v: %v, want ErrArgument", d, err)
			}
			if _, err := q.PushBatchDurable(ctx, []emq.NewJob{{ID: id}}, d); !errors.Is(err, emq.ErrArgument) {
				t.Errorf("PushBatchDurable with %+v: %v, want ErrArgument", d, err)
			}
		}
		if _, ok, _ := q.Get(ctx, id); ok {
			t.Error("a refused durable push enqueued its job")
		}
		if _, err := q.PushDurable(ctx, mint(t, c, emq.KindORD), nil, one); !errors.Is(err, emq.ErrKind) {
			t.Errorf("PushDurable of a tenant id: %v, want ErrKind", err)
		}
	})

	t.Run("Acknowledged", func(t *testing.T) {
		id := mint(t, c, emq.WorkKind)
		ok, err := q.PushDurable(ctx, id, []byte("p"), one)
		if err != nil || !ok {
			t.Fatalf("PushDurable = %v, %v", ok, err)
		}
		// WAIT counts a replica once it has applied the write.
		if !onReplica(id) {
			t.Error("the replica lacks a job WAIT reported acknowledged")
		}
	})

	t.Run("Batch", func(t *testing.T) {
		jobs := make([]emq.NewJob, 20)
		for i := range jobs {
			jobs[i] = emq.NewJob{ID: mint(t, c, emq.WorkKind), Payload: []byte("b")}
		}
		jobs = append(jobs, jobs[3]) // a duplicate within the batch
		oks, err := q.PushBatchDurable(ctx, jobs, one)
		if err != nil {
			t.Fatalf("PushBatchDurable: %v", err)
		}
		for i, ok := range oks {
			if ok != (i < 20) {
				t.Errorf("job %d enqueued = %v", i, ok)
			}
			if !onReplica(jobs[i].ID) {
				t.Errorf("the replica lacks job %d", i)
			}
		}
		bad := append([]emq.NewJob{{ID: mint(t, c, emq.WorkKind)}}, emq.NewJob{ID: mint(t, c, emq.WorkKind)})
		bad[1].ID = mint(t, c, emq.KindORD)
		if _, err := q.PushBatchDurable(ctx, bad, one); !errors.Is(err, emq.ErrKind) {
			t.Errorf("a batch with a tenant id: %v, want ErrKind before anything is sent", err)
		}
	})

	t.Run("NoScript", func(t *testing.T) {
		if _, err := primary.Do("SCRIPT", "FLUSH"); err != nil {
			t.Fatal(err)
		}
		id := mint(t, c, emq.WorkKind)
		if ok, err := q.PushDurable(ctx, id, nil, one); err != nil || !ok {
			t.Fatalf("PushDurable after SCRIPT FLUSH = %v, %v", ok, err)
		}
		if !onReplica(id) {
			t.Error("the replica lacks the job")
		}
	})

	t.Run("MoreReplicasThanThere", func(t *testing.T) {
		id := mint(t, c, emq.WorkKind)
		start := time.Now()
		ok, err := q.PushDurable(ctx, id, nil, emq.Durability{Replicas: 2, Timeout: 150 * time.Millisecond})
		if !ok {
			t.Error("the job was not reported enqueued")
		}
		wantDurabilityError(t, err, 1, 2)
		if took := time.Since(start); took < 150*time.Millisecond {
			t.Errorf("answered in %v, before WAIT's timeout", took)
		}
	})

	t.Run("Duplicate", func(t *testing.T) {
		// Pushed by another call: the durable push of the same id writes
		// nothing, and checks the replication offset instead.
		id := mint(t, c, emq.WorkKind)
		if ok, err := q.Push(ctx, id, nil); err != nil || !ok {
			t.Fatal(ok, err)
		}
		ok, err := q.PushDurable(ctx, id, nil, one)
		if err != nil || ok {
			t.Fatalf("PushDurable of a duplicate = %v, %v; want false, nil", ok, err)
		}
		if !onReplica(id) {
			t.Error("the replica lacks the job")
		}
	})

	t.Run("DuplicateNotReplicated", func(t *testing.T) {
		// A frozen replica stays connected but acknowledges nothing: a job
		// pushed meanwhile is not on it, and a durable push of its id must
		// not claim otherwise, though that push writes nothing itself.
		pid := serverPid(t, replica)
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		var thaw sync.Once
		cont := func() { thaw.Do(func() { _ = syscall.Kill(pid, syscall.SIGCONT) }) }
		t.Cleanup(cont)
		id := mint(t, c, emq.WorkKind)
		if ok, err := q.Push(ctx, id, nil); err != nil || !ok {
			t.Fatal(ok, err)
		}
		d := emq.Durability{Replicas: 1, Timeout: 200 * time.Millisecond}
		ok, err := q.PushDurable(ctx, id, nil, d)
		if ok {
			t.Error("a duplicate was reported enqueued")
		}
		wantDurabilityError(t, err, 0, 1)
		id2 := mint(t, c, emq.WorkKind)
		ok, err = q.PushDurable(ctx, id2, nil, d)
		if !ok {
			t.Error("the job was not reported enqueued")
		}
		wantDurabilityError(t, err, 0, 1)

		cont()
		// Thawed, the replica catches up; pushing the ids again is safe and
		// now acknowledged (within a second: replicas report every second).
		for _, x := range []emq.ID{id, id2} {
			if ok, err := q.PushDurable(ctx, x, nil, emq.Durability{Replicas: 1, Timeout: 3 * time.Second}); err != nil || ok {
				t.Fatalf("PushDurable again = %v, %v; want false, nil", ok, err)
			}
			if !onReplica(x) {
				t.Errorf("the replica lacks %s", x)
			}
		}
	})

	t.Run("ReplicaDown", func(t *testing.T) {
		replica.Stop()
		d := emq.Durability{Replicas: 1, Timeout: 250 * time.Millisecond}
		id := mint(t, c, emq.WorkKind)
		start := time.Now()
		ok, err := q.PushDurable(ctx, id, []byte("kept"), d)
		took := time.Since(start)
		if !ok {
			t.Error("the job was not reported enqueued")
		}
		wantDurabilityError(t, err, 0, 1)
		if took < d.Timeout {
			t.Errorf("answered in %v, before WAIT's timeout %v", took, d.Timeout)
		}
		if !strings.Contains(err.Error(), "0 of 1 replicas") {
			t.Errorf("error text %q", err)
		}
		// WAIT rolls nothing back: the job is enqueued on the primary.
		info, found, gerr := q.Get(ctx, id)
		if gerr != nil || !found || info.State != emq.StatePending || string(info.Payload) != "kept" {
			t.Errorf("Get after the durability error = %+v, %v, %v; want the pending job", info, found, gerr)
		}

		jobs := []emq.NewJob{{ID: mint(t, c, emq.WorkKind)}, {ID: mint(t, c, emq.WorkKind)}}
		oks, err := q.PushBatchDurable(ctx, jobs, d)
		wantDurabilityError(t, err, 0, 1)
		var be *emq.BatchError
		if errors.As(err, &be) {
			t.Errorf("a durability shortfall reported as a job failure: %v", err)
		}
		for i, j := range jobs {
			if _, found, _ := q.Get(ctx, j.ID); !oks[i] || !found {
				t.Errorf("batch job %d: enqueued %v, on the primary %v", i, oks[i], found)
			}
		}
	})
}

// TestClusterPushDurable runs PushDurable on a Redis Cluster of three
// primaries with one replica each: WAIT is routed with the queue's slot to
// the primary that ran the push, on every primary; the push follows MOVED
// after the queue's slot moved, and ASK and TRYAGAIN while it moves.
func TestClusterPushDurable(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.WithReplicas(1))
	c := clusterConnect(t, cl, nil)
	ctx := ctxT(t)
	one := emq.Durability{Replicas: 1, Timeout: 2 * time.Second}
	// replicated checks that the replica of primary holds as many keys of
	// slot as primary does: nothing else writes to the queue's slot.
	replicated := func(primary string, slot int) {
		t.Helper()
		reps := cl.ReplicasOf(primary)
		if len(reps) != 1 {
			t.Fatalf("%s has replicas %v", primary, reps)
		}
		p, r := cl.CountKeysInSlot(primary, slot), cl.CountKeysInSlot(reps[0], slot)
		if p == 0 || p != r {
			t.Errorf("slot %d: %d keys on the primary %s, %d on its replica", slot, p, primary, r)
		}
	}

	for _, p := range cl.Primaries() {
		name := clusterQueueOn(t, cl, "durable", p)
		q := queue(t, c, name)
		for i := 0; i < 5; i++ {
			if ok, err := q.PushDurable(ctx, mint(t, c, emq.WorkKind), []byte("x"), one); err != nil || !ok {
				t.Fatalf("PushDurable on %s: %v, %v", p, ok, err)
			}
		}
		jobs := []emq.NewJob{{ID: mint(t, c, emq.WorkKind)}, {ID: mint(t, c, emq.WorkKind)}}
		if _, err := q.PushBatchDurable(ctx, jobs, one); err != nil {
			t.Fatalf("PushBatchDurable on %s: %v", p, err)
		}
		replicated(p, clusterSlot(name))
	}

	// The queue's slot moves: the client's map is stale, the first round
	// trip is answered MOVED, and the push follows it.
	from := cl.Primaries()[0]
	to := clusterOther(t, cl, from)
	name := clusterQueueOn(t, cl, "moving", from)
	slot := clusterSlot(name)
	q := queue(t, c, name)
	if ok, err := q.PushDurable(ctx, mint(t, c, emq.WorkKind), nil, one); err != nil || !ok {
		t.Fatal(ok, err)
	}
	cl.MigrateSlot(t, slot, from, to)
	clusterResetStats(t, cl, from)
	if ok, err := q.PushDurable(ctx, mint(t, c, emq.WorkKind), nil, one); err != nil || !ok {
		t.Fatalf("PushDurable after the slot moved: %v, %v", ok, err)
	}
	replicated(to, slot)
	t.Logf("after the move, %s answered MOVED %d times", from, clusterErrorStats(t, cl, from)["MOVED"])

	// A queue caught mid-migration, its keys already moved: the source
	// answers ASK (none of the push's keys is there), and the push goes to
	// the importing node after ASKING, with WAIT on the same connection.
	// There a push of a new id, whose row is missing, is answered TRYAGAIN
	// (a multi-key command whose keys are not all there) until the slot's
	// move ends.
	asked := queue(t, c, clusterQueueOn(t, cl, "asked", from))
	aslot := clusterSlot(asked.Name())
	old := mint(t, c, emq.WorkKind)
	if ok, err := asked.Push(ctx, old, nil); err != nil || !ok {
		t.Fatal(ok, err)
	}
	must := func(addr string, args ...string) {
		t.Helper()
		if _, err := cl.Do(addr, args...); err != nil {
			t.Fatalf("%v on %s: %v", args, addr, err)
		}
	}
	must(to, "CLUSTER", "SETSLOT", strconv.Itoa(aslot), "IMPORTING", cl.Node(from).ID())
	must(from, "CLUSTER", "SETSLOT", strconv.Itoa(aslot), "MIGRATING", cl.Node(to).ID())
	host, port, _ := net.SplitHostPort(to)
	row, _ := asked.Keys().Row(old)
	must(from, "MIGRATE", host, port, "", "0", "5000", "KEYS", row, asked.Keys().Pending, asked.Keys().Wake)
	clusterResetStats(t, cl, to)
	if ok, err := asked.PushDurable(ctx, old, nil, one); err != nil || ok {
		t.Fatalf("PushDurable of a moved duplicate mid-migration = %v, %v; want false, nil", ok, err)
	}
	if n := clusterCommandCalls(t, cl, to, "asking"); n == 0 {
		t.Error("the push did not follow ASK")
	}
	type outcome struct {
		ok  bool
		err error
	}
	fresh := make(chan outcome, 1)
	newID := mint(t, c, emq.WorkKind)
	go func() {
		ok, err := asked.PushDurable(ctx, newID, nil, one)
		fresh <- outcome{ok, err}
	}()
	time.Sleep(200 * time.Millisecond)
	select {
	case o := <-fresh:
		t.Fatalf("a push of a new id mid-migration answered %v, %v before the move ended", o.ok, o.err)
	default:
	}
	cl.MigrateSlot(t, aslot, from, to) // ends the move
	if o := <-fresh; o.err != nil || !o.ok {
		t.Fatalf("the push of a new id after the move = %v, %v", o.ok, o.err)
	}
	if n := clusterErrorStats(t, cl, to)["TRYAGAIN"]; n == 0 {
		t.Error("the importing node never answered TRYAGAIN")
	}
	replicated(to, aslot)

	// Back, in batches, with durable pushes running meanwhile: TRYAGAIN
	// while the queue's keys are split between the nodes.
	clusterResetStats(t, cl, from, to)
	stop := make(chan struct{})
	var pushed []emq.ID
	var perr error
	var wg sync.WaitGroup
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
			if err == nil {
				var ok bool
				ok, err = q.PushDurable(ctx, id, nil, one)
				if err == nil && !ok {
					err = errors.New("a fresh id reported a duplicate")
				}
			}
			if err != nil {
				perr = err
				return
			}
			pushed = append(pushed, id)
			time.Sleep(2 * time.Millisecond)
		}
	}()
	cl.MigrateSlotWith(t, slot, to, from, redistest.MigrateOptions{Batch: 1, Pause: 20 * time.Millisecond})
	close(stop)
	wg.Wait()
	if perr != nil {
		t.Fatalf("a durable push during the migration: %v", perr)
	}
	for _, id := range pushed {
		if _, ok, err := q.Get(ctx, id); err != nil || !ok {
			t.Errorf("%s pushed during the migration: found %v, %v", id, ok, err)
		}
	}
	replicated(from, slot)
	t.Logf("%d durable pushes during the migration; %s answered %v, ASKING ran %d times on %s",
		len(pushed), to, clusterErrorStats(t, cl, to), clusterCommandCalls(t, cl, from, "asking"), from)
}
