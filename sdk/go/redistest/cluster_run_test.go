package redistest

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestNewCluster covers the non-test variant of StartCluster: the cluster
// forms, a failure of one of its methods panics with a *ClusterFailure that
// CatchFailure returns as an error, and Close kills every node and removes
// the directory NewCluster made.
func TestNewCluster(t *testing.T) {
	cl, err := NewCluster("")
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = cl.Close()
		}
	}()
	if n := len(cl.Primaries()); n != 3 {
		t.Fatalf("%d primaries, want 3", n)
	}
	dir := filepath.Dir(cl.Nodes()[0].Dir())
	for _, n := range cl.Nodes() {
		if filepath.Dir(n.Dir()) != dir {
			t.Errorf("node directory %s is not under %s", n.Dir(), dir)
		}
	}

	err = func() (err error) {
		defer CatchFailure(&err)
		cl.Node("127.0.0.1:1")
		return nil
	}()
	var f *ClusterFailure
	if !errors.As(err, &f) {
		t.Fatalf("an unknown address: %v, want a *ClusterFailure", err)
	}

	addrs := cl.Addrs()
	if err := cl.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	for _, a := range addrs {
		if ping(a) == nil {
			t.Errorf("%s still answers after Close", a)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the cluster's directory %s is left behind: %v", dir, err)
	}
	if err := cl.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}
