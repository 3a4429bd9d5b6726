package redistest

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
)

// ClusterFailure is what a method of a cluster made by NewCluster panics
// with where a test's cluster would fail its test (a node that does not
// come back, a cluster that does not heal, an unknown address).
// CatchFailure turns it back into an error.
type ClusterFailure struct {
	Msg string
}

// Error returns the message the test would have failed with.
func (f *ClusterFailure) Error() string { return f.Msg }

// CatchFailure, deferred with the address of a function's error result,
// turns a *ClusterFailure panic into that error; any other panic goes on:
//
//	func run() (err error) {
//		defer redistest.CatchFailure(&err)
//		cl.Kill(addr) // ...
//	}
func CatchFailure(err *error) {
	p := recover()
	if p == nil {
		return
	}
	if f, ok := p.(*ClusterFailure); ok {
		*err = f
		return
	}
	panic(p)
}

// NewCluster starts a Redis Cluster outside a test, for tools such as a
// fault harness: what StartCluster does, with every node's directory under
// dir (a fresh temporary directory when dir is empty, which Close removes).
// It returns an error instead of failing a test, with ClusterInstallHint
// when redis-server or redis-cli is missing. The cluster's methods that
// fail a test on their own (Kill, Restart, WaitHealthy, Primaries,
// NodeForSlot, ...) panic with a *ClusterFailure instead: recover it with
// CatchFailure. The caller must Close the cluster, which kills every node.
func NewCluster(dir string, opts ...ClusterOption) (c *Cluster, err error) {
	owned := dir == ""
	if owned {
		if dir, err = os.MkdirTemp("", "redistest-cluster-"); err != nil {
			return nil, fmt.Errorf("redistest: %w", err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	h := &harness{dir: dir, owned: owned}
	defer func() {
		if err != nil {
			h.cleanup()
		}
	}()
	defer CatchFailure(&err)
	return StartCluster(h, opts...), nil
}

// Close kills every node of a cluster made by NewCluster and removes the
// directory NewCluster made; it is safe to call more than once. A test's
// cluster is closed by its test.
func (c *Cluster) Close() error {
	h, ok := c.t.(*harness)
	if !ok {
		return errors.New("redistest: Close is for a cluster of NewCluster; a test's cluster ends with its test")
	}
	return h.cleanup()
}

// harness is the testing.TB of a cluster of NewCluster: failures panic
// with a *ClusterFailure, temporary directories go under dir, cleanups run
// at Close. The embedded TB is nil: a method not defined here panics.
type harness struct {
	testing.TB
	dir   string
	owned bool

	mu       sync.Mutex
	cleanups []func()
	done     bool
}

func (h *harness) Helper()      {}
func (h *harness) Name() string { return "redistest.NewCluster" }
func (h *harness) Failed() bool { return false }

func (h *harness) Log(args ...any)                 {}
func (h *harness) Logf(format string, args ...any) {}

func (h *harness) Fatal(args ...any) { panic(&ClusterFailure{Msg: fmt.Sprint(args...)}) }
func (h *harness) Fatalf(format string, args ...any) {
	panic(&ClusterFailure{Msg: fmt.Sprintf(format, args...)})
}
func (h *harness) Error(args ...any)                 { h.Fatal(args...) }
func (h *harness) Errorf(format string, args ...any) { h.Fatalf(format, args...) }
func (h *harness) FailNow()                          { h.Fatal("redistest: FailNow") }

// TempDir makes a fresh directory under the harness's directory.
func (h *harness) TempDir() string {
	d, err := os.MkdirTemp(h.dir, "node-")
	if err != nil {
		h.Fatalf("redistest: %v", err)
	}
	return d
}

// Cleanup registers f to run at Close, after the functions registered
// after it.
func (h *harness) Cleanup(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cleanups = append(h.cleanups, f)
}

// cleanup runs the cleanups, last registered first, once, and removes the
// directory the harness made.
func (h *harness) cleanup() error {
	h.mu.Lock()
	if h.done {
		h.mu.Unlock()
		return nil
	}
	h.done = true
	fs := h.cleanups
	h.cleanups = nil
	h.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
	if h.owned {
		return os.RemoveAll(h.dir)
	}
	return nil
}
