package emq_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// TestProbes runs every probe of the manifest against a real server: every
// check passes, every reserve member and wire class is covered, and the
// run leaves nothing of its scratch queues behind.
func TestProbes(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	tr, err := c.RunProbes(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	out := tr.String()
	t.Log("\n" + out)
	total := 0
	for _, p := range wire.Probes() {
		total += len(p.Steps)
	}
	if !tr.OK() || len(tr.Results) != total {
		t.Fatalf("probe transcript:\n%s\nwant all %d checks to pass", out, total)
	}
	if !strings.HasSuffix(out, "PASS "+strconv.Itoa(total)+"/"+strconv.Itoa(total)+"\n") {
		t.Errorf("the transcript does not end PASS %d/%d", total, total)
	}
	targets := map[string]bool{}
	for _, r := range tr.Results {
		targets[r.Target] = true
	}
	for _, k := range []string{wire.KeyVersion, wire.KeyLocks, wire.KeyBundle} {
		if !targets["reserve member "+k] {
			t.Errorf("no probe covered reserve member %s", k)
		}
	}
	for _, w := range wire.Classes() {
		if !targets["wire class "+w] {
			t.Errorf("no probe covered wire class %s", w)
		}
	}
	keys, err := do(t, c, "KEYS", "*emqprobe-*").AsStrSlice()
	if err != nil || len(keys) != 0 {
		t.Errorf("the probes left %v behind (err %v)", keys, err)
	}
	locks := hgetall(t, c, wire.KeyLocks)
	for field := range locks {
		if strings.Contains(field, "emqprobe-") {
			t.Errorf("the probes left the lock %s behind", field)
		}
	}
}

// TestProbeFailureIsReported plants a broken keyspace (a row of the wrong
// type where the scratch queue's row would be is impossible to predict, so
// the version record is planted as a higher major after connect) and
// expects the fence probe to fail while the others pass.
func TestProbeFailureIsReported(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	// A first run on the healthy keyspace passes, and opens every
	// connection the prober uses while the keyspace may still be fenced:
	// the failure below is then the probe's finding, not a connection
	// refused at dial time before the first probe.
	if tr, err := c.RunProbes(ctxT(t)); err != nil || !tr.OK() {
		t.Fatalf("the probes fail on a healthy keyspace: %v\n%s", err, tr)
	}
	if _, err := srv.Do("SET", wire.KeyVersion, "garbage"); err != nil {
		t.Fatal(err)
	}
	// A connection the client opens from now on meets a keyspace it may
	// not use and is refused as it is dialed: the clean-up of a probe may
	// then fail with the fence's error, returned with the transcript.
	tr, err := c.RunProbes(ctxT(t))
	if err != nil && (!errors.Is(err, emq.ErrVersionFence) || tr == nil) {
		t.Fatal(err)
	}
	if tr.OK() {
		t.Fatalf("the probes passed on a keyspace whose version record is garbage:\n%s", tr)
	}
	failed := 0
	for _, r := range tr.Results {
		if r.Err != nil {
			failed++
			if r.Target != "reserve member "+wire.KeyVersion {
				t.Errorf("unexpected failure: %s: %s: %v", r.Target, r.Check, r.Err)
			}
		}
	}
	if failed != 1 {
		t.Errorf("%d checks failed; want exactly the version record check:\n%s", failed, tr)
	}
}
