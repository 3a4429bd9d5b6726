package gate_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/echomq/echomq/govern/compat"
	"github.com/echomq/echomq/govern/gate"
	"github.com/echomq/echomq/govern/langs"
	"github.com/echomq/echomq/govern/release"
)

const root = "../.."

// The library gates the committed manifest against the newest frozen
// release: one call, a report that passes, the witness's opt-out stated,
// and every language of the list read where the baseline records it.
func TestCheckCommittedManifest(t *testing.T) {
	// The repository's waivers, as emqgen check reads them by default.
	var judging compat.Options
	if ws, err := compat.LoadWaivers(filepath.Join(root, compat.WaiversFile)); err == nil {
		judging.Waivers = ws
	} else if !os.IsNotExist(err) {
		t.Fatal(err)
	}
	res, err := gate.Check(context.Background(), gate.Options{Root: root, Manifest: filepath.Join(root, "protocol.yaml"), Judging: judging, WitnessOffReason: "a test"})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Report
	if !r.OK || r.Witness == nil || r.Witness.Status != compat.WitnessOff || r.Witness.Reason != "a test" {
		t.Fatalf("check of the committed manifest: ok %v, witness %+v, problems %q", r.OK, r.Witness, r.Problems)
	}
	for _, n := range res.Notes {
		if strings.Contains(n, "records no") {
			t.Errorf("the newest release records every language's API, yet: %s", n)
		}
	}
}

// A baseline is resolved once into its side and its labels: the newest
// frozen release, a release named by its file (every record beside it),
// and a plain manifest file (no record of the languages read from their
// sources, so none is compared).
func TestResolve(t *testing.T) {
	newest, err := release.Newest(root)
	if err != nil {
		t.Fatal(err)
	}
	b, err := gate.Resolve(root, "", filepath.Join(root, "protocol.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Release == nil || b.Release.Version != newest.Version || b.Label != "the frozen release "+newest.Version.String() {
		t.Errorf("the default baseline: %+v %q", b.Release, b.Label)
	}
	for _, l := range langs.All() {
		if newest.HasRecord(l) && b.Side.Surface.Record(l.Name()) == nil {
			t.Errorf("the newest release keeps a %s record, the resolved baseline carries none", l.Title())
		}
	}
	copyFile := filepath.Join(t.TempDir(), "base.yaml")
	data, err := os.ReadFile(newest.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copyFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := gate.Resolve(root, copyFile, filepath.Join(root, "protocol.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Release != nil || f.Label != "the baseline "+copyFile {
		t.Errorf("a manifest file as the baseline: %+v %q", f.Release, f.Label)
	}
	for _, l := range langs.All() {
		if rec := f.Side.Surface.Record(l.Name()); l.FromManifest() != (rec != nil) {
			t.Errorf("a manifest file's %s record: %v; want one exactly when it follows from the manifest", l.Title(), rec != nil)
		}
	}
}
