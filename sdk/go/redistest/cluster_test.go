package redistest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestClusterStartMigrateRestart starts the default cluster (3 primaries),
// checks it covers every slot with each primary serving a share, moves a
// slot holding keys with the resharding procedure (clients see ASK while it
// is half moved, MOVED after), and restarts a killed primary.
func TestClusterStartMigrateRestart(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := StartCluster(t)
	t.Logf("cluster of %d nodes up in %v", len(c.Addrs()), time.Since(start))
	if got := len(c.Addrs()); got != 3 {
		t.Fatalf("%d nodes, want 3", got)
	}
	prim := c.Primaries()
	if len(prim) != 3 {
		t.Fatalf("primaries %v, want 3", prim)
	}
	for _, addr := range c.Addrs() {
		info, err := c.Do(addr, "CLUSTER", "INFO")
		if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
			t.Fatalf("CLUSTER INFO on %s: %v\n%s", addr, err, info)
		}
	}
	if s := c.KeySlot("{user1000}.following"); s != c.KeySlot("{user1000}.followers") {
		t.Fatalf("hashtag keys in different slots")
	}

	// Fill one slot, then move it to another primary in small batches.
	key := func(i int) string { return "{mig}:k" + strconv.Itoa(i) }
	slot := c.KeySlot(key(0))
	from := c.NodeForSlot(slot)
	var to string
	for _, p := range prim {
		if p != from {
			to = p
			break
		}
	}
	for i := 0; i < 25; i++ {
		if _, err := c.Do(from, "SET", key(i), fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	sawAsk := false
	mstart := time.Now()
	moved := c.MigrateSlotWith(t, slot, from, to, MigrateOptions{Batch: 10, AfterBatch: func(n int) {
		// Half moved: the source answers ASK for a moved key, and still
		// serves one it holds.
		if n != 10 {
			return
		}
		for i := 0; i < 25; i++ {
			_, err := c.Do(from, "GET", key(i))
			if err != nil && strings.HasPrefix(err.Error(), "ASK "+strconv.Itoa(slot)+" "+to) {
				sawAsk = true
			} else if err != nil {
				t.Errorf("GET %s on the source mid-migration: %v", key(i), err)
			}
		}
	}})
	t.Logf("slot %d moved in %v", slot, time.Since(mstart))
	if moved != 25 || !sawAsk {
		t.Fatalf("moved %d keys (want 25), saw ASK %v", moved, sawAsk)
	}
	if got := c.NodeForSlot(slot); got != to {
		t.Fatalf("slot %d is served by %s after the migration, want %s", slot, got, to)
	}
	if _, err := c.Do(from, "GET", key(3)); err == nil || !strings.HasPrefix(err.Error(), "MOVED "+strconv.Itoa(slot)+" "+to) {
		t.Fatalf("GET on the old owner answered %v, want MOVED", err)
	}
	if v, err := c.Do(to, "GET", key(3)); err != nil || v != "3" {
		t.Fatalf("GET on the new owner: %q, %v", v, err)
	}
	if n := c.CountKeysInSlot(to, slot); n != 25 {
		t.Fatalf("%d keys on the new owner, want 25", n)
	}

	// Kill one primary and stop another, then restart both: each rejoins
	// as itself (empty: nothing is saved), and the cluster heals.
	killed, stopped := prim[2], prim[1]
	ids := []string{c.Node(killed).ID(), c.Node(stopped).ID()}
	c.Kill(killed)
	c.Stop(stopped)
	if c.Node(killed).Running() || c.Node(stopped).Running() {
		t.Fatal("a killed or stopped node still runs")
	}
	rstart := time.Now()
	c.Restart(killed)  // one node still down: waits for it to answer only
	c.Restart(stopped) // all up: waits for the cluster to heal
	t.Logf("restarted and healthy in %v", time.Since(rstart))
	for i, addr := range []string{killed, stopped} {
		if got, _ := c.Do(addr, "CLUSTER", "MYID"); got != ids[i] {
			t.Fatalf("restarted node %s is %s, was %s", addr, got, ids[i])
		}
	}
	if got := c.NodeForSlot(slot); got != to {
		t.Fatalf("slot %d is served by %s after the restarts, want %s", slot, got, to)
	}
}

// TestClusterReplicasFailover starts 3 primaries with a replica each, kills
// a primary and expects its replica to take over its slots.
func TestClusterReplicasFailover(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := StartCluster(t, WithReplicas(1), WithNodeTimeout(time.Second))
	t.Logf("cluster of %d nodes up in %v", len(c.Addrs()), time.Since(start))
	if len(c.Addrs()) != 6 || len(c.Primaries()) != 3 {
		t.Fatalf("addrs %v, primaries %v", c.Addrs(), c.Primaries())
	}
	victim := c.Primaries()[0]
	reps := c.ReplicasOf(victim)
	if len(reps) != 1 {
		t.Fatalf("replicas of %s: %v", victim, reps)
	}
	slot := -1
	for s := 0; s < ClusterSlots; s++ {
		if c.NodeForSlot(s) == victim {
			slot = s
			break
		}
	}
	c.Kill(victim)
	start = time.Now()
	c.WaitHealthy()
	if got := c.NodeForSlot(slot); got != reps[0] {
		t.Fatalf("slot %d served by %s after failover, want the replica %s", slot, got, reps[0])
	}
	t.Logf("failover in %v", time.Since(start))
	c.Restart(victim)
	if r := c.ReplicasOf(reps[0]); len(r) != 1 || r[0] != victim {
		t.Fatalf("the old primary did not rejoin as a replica: %v", r)
	}
}
