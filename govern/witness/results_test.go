package witness_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/echomq/echomq/govern/compat"
	"github.com/echomq/echomq/govern/release"
	"github.com/echomq/echomq/govern/witness"
)

// smallBaseline copies two scenario files of the newest frozen release's
// witness — refusals (the dead fencing patch fails its complete-token
// case) and probes — into a witness directory of the test's own, so that
// each replay is short.
func smallBaseline(t *testing.T) (dir, label string) {
	t.Helper()
	rs, err := release.List(root)
	if err != nil || len(rs) == 0 {
		t.Fatal(rs, err)
	}
	r := rs[len(rs)-1]
	dir = t.TempDir()
	for _, name := range []string{"refusals.yaml", "probes.yaml"} {
		data, err := os.ReadFile(filepath.Join(r.WitnessScenarios(), name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, r.Version.String()
}

// outcome is a witness as a reviewer reads it: its JSON and its
// findings'.
func outcome(t *testing.T, w *compat.Witness) string {
	t.Helper()
	a, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(w.Findings)
	if err != nil {
		t.Fatal(err)
	}
	return string(a) + "\n" + string(b)
}

// counted runs the witness and returns it, its log and how many replays
// ran against a server and were looked up.
func counted(t *testing.T, o witness.Options) (w *compat.Witness, log string, fresh, cached int64) {
	t.Helper()
	var buf bytes.Buffer
	o.Log = &buf
	f0, c0 := witness.ReplayCounts()
	w = witness.Run(context.Background(), o)
	f1, c1 := witness.ReplayCounts()
	if w.Status != compat.WitnessRan {
		t.Fatalf("witness: %s (%s)\n%s", w.Status, w.Reason, buf.String())
	}
	return w, buf.String(), f1 - f0, c1 - c0
}

// A replay already run on the same inputs is a lookup: the second run of
// the witness on the same bundle and baseline replays nothing and gives
// the same report, byte for byte; a run whose witness differs in one
// byte replays that scenario file (and looks the other up), one whose
// bundle differs replays all; EMQ_WITNESS_CACHE=off replays whatever the
// cache holds.
func TestReplayResultsAreCachedByInputs(t *testing.T) {
	dir, label := smallBaseline(t)
	results := t.TempDir()
	dead := deadFencing(t)
	o := witness.Options{Root: root, New: dead, Baseline: dir, BaselineLabel: label, ResultCache: results}

	first, log, fresh, cached := counted(t, o)
	if fresh != 2 || cached != 0 || strings.Contains(log, "(cached result)") {
		t.Fatalf("first run on an empty cache: %d fresh, %d cached replays\n%s", fresh, cached, log)
	}
	if len(first.Findings) == 0 || !strings.Contains(outcome(t, first), "at step 5 (complete)") {
		t.Fatalf("the dead fencing patch passes the refusals replay: %s", outcome(t, first))
	}
	if ents, _ := filepath.Glob(filepath.Join(results, "*.json")); len(ents) != 6 {
		t.Errorf("the cache holds %q; want the two replays' results of hello and of each file", ents)
	}

	// The same inputs: two runs at once, each finding the results.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var againLogs []string
	var agains []*compat.Witness
	f0, c0 := witness.ReplayCounts()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf bytes.Buffer
			oo := o
			oo.Log = &buf
			w := witness.Run(context.Background(), oo)
			mu.Lock()
			defer mu.Unlock()
			agains, againLogs = append(agains, w), append(againLogs, buf.String())
		}()
	}
	wg.Wait()
	f1, c1 := witness.ReplayCounts()
	if f1-f0 != 0 || c1-c0 != 4 {
		t.Errorf("two runs of the same inputs: %d fresh, %d cached replays; want 0 and 4", f1-f0, c1-c0)
	}
	for i, w := range agains {
		if got, want := outcome(t, w), outcome(t, first); got != want {
			t.Errorf("the cached report differs from the fresh one:\n%s\nfresh:\n%s", got, want)
		}
		if n := strings.Count(againLogs[i], "(cached result)"); n != 2 {
			t.Errorf("the log of a run from the cache says \"(cached result)\" %d times:\n%s", n, againLogs[i])
		}
	}

	// One byte of a witness file: that file's key is another; the other
	// file is looked up.
	edited := t.TempDir()
	for name, extra := range map[string]string{"refusals.yaml": "\n", "probes.yaml": ""} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(edited, name), append(data, extra...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	oe := o
	oe.Baseline = edited
	w, log, fresh, cached := counted(t, oe)
	if fresh != 2 || cached != 0 || strings.Count(log, "(cached result for 1 of 2 scenario files)") != 2 {
		t.Errorf("a witness one byte longer: %d fresh, %d cached replays; want 2 and 0, and the probes looked up\n%s", fresh, cached, log)
	}
	// The same findings, in the other directory.
	if got, want := outcome(t, w), strings.ReplaceAll(outcome(t, first), dir, edited); got != want {
		t.Errorf("the edited witness's report:\n%s\nwant:\n%s", got, want)
	}

	// Another bundle (today's, with the stale-token check): another key,
	// and its own outcome.
	oc := o
	oc.New = current(t)
	w, log, fresh, cached = counted(t, oc)
	if fresh != 2 || cached != 0 || len(w.Findings) != 0 || w.Passed != w.Cases {
		t.Errorf("today's bundle: %d fresh, %d cached replays, %d/%d, findings %v\n%s", fresh, cached, w.Passed, w.Cases, w.Findings, log)
	}

	// Off: every replay runs, whatever the cache holds; the report is the
	// same.
	t.Setenv(witness.ResultCacheEnv, "off")
	oo := o
	oo.ResultCache = ""
	w, log, fresh, cached = counted(t, oo)
	if fresh != 2 || cached != 0 || strings.Contains(log, "(cached result)") {
		t.Errorf("%s=off: %d fresh, %d cached replays\n%s", witness.ResultCacheEnv, fresh, cached, log)
	}
	if got, want := outcome(t, w), outcome(t, first); got != want {
		t.Errorf("the report with the cache off differs:\n%s\nwant:\n%s", got, want)
	}
	// The option's "off" too, and the environment's directory otherwise.
	t.Setenv(witness.ResultCacheEnv, results)
	if _, _, fresh, cached = counted(t, oo); fresh != 0 || cached != 2 {
		t.Errorf("%s=%s: %d fresh, %d cached replays; want the cache's", witness.ResultCacheEnv, results, fresh, cached)
	}
	oo.ResultCache = "off"
	if _, _, fresh, cached = counted(t, oo); fresh != 2 || cached != 0 {
		t.Errorf("ResultCache off: %d fresh, %d cached replays", fresh, cached)
	}
}

// A replay cut short is no outcome and is not kept: here the context
// ends as the replays start (after the testee is built), and the next run
// of the same inputs replays.
func TestCancelledReplayIsNotCached(t *testing.T) {
	dir, label := smallBaseline(t)
	results := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := witness.Options{Root: root, New: deadFencing(t), Baseline: dir, BaselineLabel: label, ResultCache: results,
		Log: writerFunc(func(p []byte) {
			if bytes.Contains(p, []byte("testee for bundle")) {
				cancel()
			}
		})}
	witness.Run(ctx, o)
	if ents, _ := filepath.Glob(filepath.Join(results, "*.json")); len(ents) != 0 {
		t.Errorf("a cancelled run kept %q", ents)
	}
	o.Log = nil
	if _, log, fresh, cached := counted(t, o); fresh != 2 || cached != 0 {
		t.Errorf("after a cancelled run: %d fresh, %d cached replays; want 2 and 0\n%s", fresh, cached, log)
	}
}

type writerFunc func([]byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }
