package witness_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/govern/compat"
	"github.com/echomq/echomq/govern/release"
	"github.com/echomq/echomq/govern/witness"
)

const root = "../.."

// deadFencing writes the committed manifest with the complete script's
// stale-token comparison disabled, and returns the file and its model.
func deadFencing(t *testing.T) witness.Side {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "protocol.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	old := "      if att ~= {{arg \"token\"}} then return {{refuse \"token\"}} end\n      if redis.call('HGET', {{key \"row\"}}, '{{field \"state\"}}') ~= '{{state \"active\"}}' then return {{refuse \"state\"}} end\n      redis.call('DEL'"
	if strings.Count(string(data), old) != 1 {
		t.Fatal("the complete script's token check is not in protocol.yaml as expected")
	}
	file := filepath.Join(t.TempDir(), "protocol.yaml")
	if err := os.WriteFile(file, []byte(strings.Replace(string(data), old, strings.Replace(old, "if att", "if false and att", 1), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := model.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return witness.Side{File: file, Protocol: p}
}

func current(t *testing.T) witness.Side {
	t.Helper()
	file := filepath.Join(root, "protocol.yaml")
	p, err := model.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return witness.Side{File: file, Protocol: p}
}

// A testee is built once per input: the second Build of the same manifest
// and sources is a cache hit, and another bundle is another binary.
func TestBuildIsCachedByInputs(t *testing.T) {
	cache := t.TempDir()
	ctx := context.Background()
	cur := current(t)
	bin, cached, err := witness.Build(ctx, root, cur.Protocol, cache)
	if err != nil || cached {
		t.Fatalf("first build: %s cached %v: %v", bin, cached, err)
	}
	if st, err := os.Stat(bin); err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("the built testee %s is not an executable: %v", bin, err)
	}
	started := time.Now()
	again, cached, err := witness.Build(ctx, root, cur.Protocol, cache)
	if err != nil || !cached || again != bin {
		t.Errorf("second build of the same inputs: %s cached %v: %v; want %s from the cache", again, cached, err, bin)
	}
	if d := time.Since(started); d > 2*time.Second {
		t.Errorf("a cache hit took %v", d)
	}
	if !strings.HasPrefix(filepath.Base(filepath.Dir(bin)), digestOf(t, cur.Protocol)[:12]) {
		t.Errorf("the cache entry %s is not named by the bundle digest %s", bin, digestOf(t, cur.Protocol))
	}
	other, _, err := witness.Build(ctx, root, deadFencing(t).Protocol, cache)
	if err != nil || other == bin {
		t.Errorf("another bundle's testee: %s, %v; want a binary of its own", other, err)
	}
}

func digestOf(t *testing.T, p *model.Protocol) string {
	t.Helper()
	w := witness.Run(context.Background(), witness.Options{Root: root, New: witness.Side{Protocol: p}, Baseline: t.TempDir()})
	if w.Bundle == "" {
		t.Fatal("no bundle digest")
	}
	return w.Bundle
}

// For an additive change the witness also runs today's scenarios against
// the old bundle: one the old bundle fails is new behaviour, reported and
// not counted. Here the "old" bundle lacks complete's stale check, which
// the new one (today's) has: the baseline's scenarios pass on the new
// bundle, and the stale-token scenarios are reported as new behaviour.
// Its result cache is its own and empty: every replay (the baseline's in
// both modes and the reverse run) runs against the server.
func TestAdditiveReportsNewBehaviour(t *testing.T) {
	rs, err := release.List(root)
	if err != nil || len(rs) == 0 {
		t.Fatal(rs, err)
	}
	r := rs[len(rs)-1]
	w := witness.Run(context.Background(), witness.Options{
		Root: root, New: current(t), Old: deadFencing(t),
		Baseline: r.WitnessScenarios(), BaselineLabel: r.Version.String(), Additive: true, ResultCache: t.TempDir(),
	})
	if w.Status != compat.WitnessRan || len(w.Findings) != 0 || w.Passed != w.Cases || w.Cases == 0 {
		t.Fatalf("witness of today's manifest against %s: status %s (%s), %d/%d, findings %v", r.Version, w.Status, w.Reason, w.Passed, w.Cases, w.Findings)
	}
	found := false
	for _, n := range w.NewBehaviour {
		found = found || strings.Contains(n, "scenarios/refusals/complete-token step 5 (complete)")
	}
	if !found {
		t.Errorf("the stale-token scenario is not reported as new behaviour on the old bundle: %q (notes %q)", w.NewBehaviour, w.Notes)
	}
}

// Without baseline scenarios there is nothing to witness: the witness
// fails (closed), it does not pass.
func TestNoBaselineScenariosFails(t *testing.T) {
	w := witness.Run(context.Background(), witness.Options{Root: root, New: current(t), Baseline: t.TempDir(), BaselineLabel: "empty"})
	if w.Status != compat.WitnessFailed || !strings.Contains(w.Reason, "no scenario files") {
		t.Errorf("witness without baseline scenarios: %s %q", w.Status, w.Reason)
	}
}

// A testee that does not compile is not built again: today's hand-written
// SDK on the 2.0.0 release's generated layer fails to compile, and the
// second Build of the same inputs returns the kept compiler errors at once.
func TestBuildFailureIsCached(t *testing.T) {
	cache := t.TempDir()
	ctx := context.Background()
	p, err := model.Load(filepath.Join(root, release.Dir, "2.0.0.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, cached, err := witness.Build(ctx, root, p, cache)
	if err == nil || cached || !strings.Contains(err.Error(), ".go:") {
		t.Fatalf("today's SDK on 2.0.0's generated layer: cached %v, %v; want a compile error, not cached", cached, err)
	}
	started := time.Now()
	_, cached, again := witness.Build(ctx, root, p, cache)
	if again == nil || !cached || !strings.Contains(again.Error(), ".go:") {
		t.Errorf("the same failing build again: cached %v, %v; want the kept compile error", cached, again)
	}
	if d := time.Since(started); d > 2*time.Second {
		t.Errorf("a cached failure took %v", d)
	}
}
