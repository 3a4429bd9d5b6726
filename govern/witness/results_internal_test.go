package witness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq/conformance/runner"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// startServer starts a redis-server for the test.
func startServer(t *testing.T) (string, error) {
	t.Helper()
	srv, err := redistest.StartServer()
	if err != nil {
		return "", err
	}
	t.Cleanup(func() { srv.Close() })
	return srv.Addr(), nil
}

// A testee that dies is an infrastructure failure, not an outcome of the
// cases: its result is returned (every case failed) and not kept, and
// the next replay of the same inputs runs again.
func TestDeadTesteeIsNotCached(t *testing.T) {
	ctx := context.Background()
	rc := openResults(ctx, t.TempDir(), "", "")
	if rc == nil {
		t.Fatal("no result cache: is redis-server on PATH? (Debian: sudo apt-get install -y redis-server)")
	}
	dir := t.TempDir()
	scenarios, err := os.ReadFile(filepath.Join("..", "..", "conformance", "scenarios", "refusals.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "refusals.yaml"), scenarios, 0o644); err != nil {
		t.Fatal(err)
	}
	// A testee that exits at once, before it answers hello.
	bin := filepath.Join(t.TempDir(), "testee")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	o := Options{Root: filepath.Join("..", ".."), Timeout: 10 * time.Second}
	in := replayInput{kind: "new", testee: "a testee that exits", manifest: manifestOf(o.Root, ""), dir: dir}
	var logged []string
	logf := func(format string, a ...any) { logged = append(logged, fmt.Sprintf(format, a...)) }
	addr := ""
	server := func() (string, error) {
		if addr == "" {
			srv, err := startServer(t)
			if err != nil {
				return "", err
			}
			addr = srv
		}
		return addr, nil
	}
	for i := range 2 {
		res, note, err := replayCached(ctx, o, rc, server, in, []string{bin}, logf)
		if err != nil {
			t.Fatal(err)
		}
		if note != "" || res.Passed != 0 || len(res.Failures) != res.Total || !strings.Contains(res.Failures[0].Message, "the testee exited") {
			t.Fatalf("replay %d with a dead testee: %q, %d/%d, %v", i+1, note, res.Passed, res.Total, res.Failures)
		}
	}
	if ents, _ := filepath.Glob(filepath.Join(rc.dir, "*")); len(ents) != 0 {
		t.Errorf("the cache keeps %q after a dead testee", ents)
	}
	if !strings.Contains(strings.Join(logged, "\n"), "not kept: the testee") {
		t.Errorf("the log does not say the result is not kept: %q", logged)
	}
}

// An entry whose content does not match its digest (an edit, a disk
// error) is ignored; one stored is read back with its failures' files
// in the directory looked up, whatever directory it was stored from.
func TestResultEntries(t *testing.T) {
	rc := &resultCache{dir: t.TempDir(), program: "p", server: "s"}
	r := &runner.Result{Passed: 1, Total: 3, Failures: []runner.Failure{
		{Case: "hello", Step: 0, Op: "hello", Message: "m"},
		{Case: "scenarios/a/b", Step: 2, Op: "complete", Message: "expected x", File: filepath.Join("/x/y", "a.yaml"), Line: 7, Column: 5},
	}}
	if err := rc.store("k", "/x/y", r); err != nil {
		t.Fatal(err)
	}
	got := rc.load("k", "/z")
	if got == nil || got.Passed != 1 || got.Total != 3 || len(got.Failures) != 2 || got.Failures[0] != r.Failures[0] {
		t.Fatalf("load: %+v", got)
	}
	want := r.Failures[1]
	want.File = filepath.Join("/z", "a.yaml")
	if got.Failures[1] != want {
		t.Errorf("the failure read back: %+v; want %+v", got.Failures[1], want)
	}
	if rc.load("other", "/z") != nil {
		t.Error("a key not stored is found")
	}
	path := rc.path("k")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), `"passed": 1`, `"passed": 3`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := rc.load("k", "/z"); got != nil {
		t.Errorf("an edited entry is read: %+v", got)
	}
	// A failure outside the replayed directory names what the key does
	// not cover: not kept.
	r.Failures[1].File = "/elsewhere/a.yaml"
	if err := rc.store("k2", "/x/y", r); err == nil || rc.load("k2", "/x/y") != nil {
		t.Errorf("a failure outside the directory was kept (%v)", err)
	}
}

// Pruning keeps the most recently used entries: the one just looked up
// (by another process, say) survives, the oldest go, and the one just
// stored is kept.
func TestResultPruneKeepsWhatWasJustUsed(t *testing.T) {
	rc := &resultCache{dir: t.TempDir(), program: "p", server: "s"}
	r := &runner.Result{Passed: 1, Total: 1}
	old := time.Now().Add(-time.Hour)
	for i := range 5 {
		key := fmt.Sprintf("k%d", i)
		if err := rc.store(key, "/d", r); err != nil {
			t.Fatal(err)
		}
		at := old.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(rc.path(key), at, at); err != nil {
			t.Fatal(err)
		}
	}
	rc.keep = 3
	if rc.load("k0", "/d") == nil { // the oldest, used now
		t.Fatal("k0 is gone")
	}
	if err := rc.store("k5", "/d", r); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]bool{"k0": true, "k1": false, "k2": false, "k3": false, "k4": true, "k5": true} {
		if _, err := os.Stat(rc.path(key)); (err == nil) != want {
			t.Errorf("%s kept: %v; want %v", key, err == nil, want)
		}
	}
}
