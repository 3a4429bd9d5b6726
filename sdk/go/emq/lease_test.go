package emq_test

import (
	"testing"

	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// TestNodeLease: two clients on one keyspace lease different nodes, and a
// closed client's node is free again.
func TestNodeLease(t *testing.T) {
	srv := redistest.Start(t)
	a := connect(t, srv)
	b := connect(t, srv)
	if a.Node() < 0 || b.Node() < 0 || a.Node() == b.Node() {
		t.Fatalf("nodes %d and %d; want two distinct leased nodes", a.Node(), b.Node())
	}
	held := hgetall(t, a, wire.KeyLocks)
	if _, ok := held[wire.LockNode(a.Node())]; !ok {
		t.Errorf("the reserve's locks hold no lease for node %d: %v", a.Node(), held)
	}
	b.Close()
	if _, ok := hgetall(t, a, wire.KeyLocks)[wire.LockNode(b.Node())]; ok {
		t.Errorf("closing a client left its node lease")
	}
}
