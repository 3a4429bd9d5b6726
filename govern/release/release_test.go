package release_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/manifest"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/gen/targets"
	"github.com/echomq/echomq/gen/tree"
	"github.com/echomq/echomq/govern/apirecord"
	"github.com/echomq/echomq/govern/compat"
	"github.com/echomq/echomq/govern/release"
)

const root = "../.."

func releases(t *testing.T) []release.Release {
	t.Helper()
	rs, err := release.List(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 {
		t.Fatal("no frozen release under golden/releases")
	}
	return rs
}

// Each frozen release regenerates to what was released: the same Lua
// bundle byte for byte (every script's SHA-1 and the digest deployed
// keyspaces record), a Go API without a break from the recorded one, and,
// for the release the working manifest still is byte for byte, every
// artifact equal to the committed generated file.
func TestFrozenReleasesReproduce(t *testing.T) {
	current, err := os.ReadFile(filepath.Join(root, "protocol.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range releases(t) {
		p, err := model.Load(r.Manifest)
		if err != nil {
			t.Fatalf("%s no longer validates: %v", r.Manifest, err)
		}
		if p.Version != r.Version {
			t.Errorf("%s declares version %s", r.Manifest, p.Version)
		}
		b, err := bundle.Render(p)
		if err != nil {
			t.Fatal(err)
		}
		recorded, err := os.ReadFile(r.Bundle)
		if err != nil {
			t.Fatal(err)
		}
		if got := release.BundleRecord(p.Version, b); !bytes.Equal(got, recorded) {
			t.Errorf("%s: the regenerated bundle differs from the recorded one:\n got %s\nwant %s", r.Version, got, recorded)
		}
		s, err := compat.SurfaceOf("../..", p)
		if err != nil {
			t.Fatal(err)
		}
		api, _, err := release.ReadAPI(r.API)
		if err != nil {
			t.Fatal(err)
		}
		for _, br := range apirecord.CompareAPI(api, s.Record("go").Lines) {
			t.Errorf("%s: the regenerated Go API breaks the recorded one: %s", r.Version, br.Message)
		}
		if frozen, _ := os.ReadFile(r.Manifest); !bytes.Equal(frozen, current) {
			continue
		}
		files, err := targets.Generate(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		changes, err := tree.Compare(root, files)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range changes {
			t.Errorf("%s: %s regenerates other bytes than the committed file:\n%s", r.Version, c.Path, c.Diff())
		}
	}
}

// The newest frozen release keeps its witness: the conformance scenarios
// the gate replays against every later bundle.
func TestNewestReleaseHasWitness(t *testing.T) {
	rs := releases(t)
	r := rs[len(rs)-1]
	if !r.HasWitness() {
		t.Fatalf("%s has no witness: %s/*.yaml (emqgen release writes it)", r.Version, r.WitnessScenarios())
	}
}

// The committed manifest passes the gate against every frozen release.
func TestProtocolPassesCheckAgainstEveryRelease(t *testing.T) {
	file := filepath.Join(root, "protocol.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse(file, data)
	if err != nil {
		t.Fatal(err)
	}
	p, err := model.Resolve(file, m)
	if err != nil {
		t.Fatal(err)
	}
	s, err := compat.SurfaceOf("../..", p)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range releases(t) {
		old, err := r.Side()
		if err != nil {
			t.Fatal(err)
		}
		rep, err := compat.Judge(old, compat.Side{File: file, Manifest: m, Surface: s})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK {
			var b strings.Builder
			_ = rep.Write(&b, "text")
			t.Errorf("protocol.yaml fails check against %s:\n%s", r.Version, b.String())
		}
	}
}

func TestFreeze(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(root, "protocol.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "protocol.yaml")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(string(data))
	if _, _, err := release.Freeze(dir, file); err == nil || !strings.Contains(err.Error(), "no scenario files") {
		t.Fatalf("froze a release without conformance scenarios for its witness: %v", err)
	}
	if rs, _ := release.List(dir); len(rs) != 0 {
		t.Fatalf("a refused freeze left %d releases", len(rs))
	}
	scenarios, err := filepath.Glob(filepath.Join(root, "conformance", "scenarios", "*.yaml"))
	if err != nil || len(scenarios) == 0 {
		t.Fatalf("no conformance scenarios: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "conformance", "scenarios"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range scenarios {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "conformance", "scenarios", filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, written, err := release.Freeze(dir, file)
	if err != nil || len(written) != 3+len(scenarios) {
		t.Fatalf("first freeze wrote %v, %v; want the manifest, the API and the bundle records and %d witness scenarios", written, err, len(scenarios))
	}
	for _, f := range scenarios {
		want, _ := os.ReadFile(f)
		got, err := os.ReadFile(filepath.Join(r.WitnessScenarios(), filepath.Base(f)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("the witness's %s is not the scenario file byte for byte (%v)", filepath.Base(f), err)
		}
	}
	if !r.HasWitness() {
		t.Error("HasWitness is false after a freeze")
	}
	// A witness is never rewritten: a later scenario edit leaves it.
	edited := filepath.Join(dir, "conformance", "scenarios", filepath.Base(scenarios[0]))
	if err := os.WriteFile(edited, []byte("# edited after the release\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, written, err := release.Freeze(dir, file); err != nil || len(written) != 0 {
		t.Errorf("freezing again after a scenario edit wrote %v, %v; want nothing", written, err)
	}
	if got, _ := os.ReadFile(filepath.Join(r.WitnessScenarios(), filepath.Base(scenarios[0]))); bytes.Contains(got, []byte("edited after")) {
		t.Error("a second freeze rewrote the witness")
	}
	frozen, _ := os.ReadFile(r.Manifest)
	if !bytes.Equal(frozen, data) {
		t.Error("the frozen manifest is not the manifest byte for byte")
	}
	if _, written, err = release.Freeze(dir, file); err != nil || len(written) != 0 {
		t.Errorf("freezing the same bytes again wrote %v, %v; want nothing", written, err)
	}
	apiBefore, _ := os.ReadFile(r.API)

	// Other bytes under the same version: refused, nothing touched.
	write(strings.Replace(string(data), "  summary: An archive entry; platform scope.", "  summary: Archived.", 1))
	if _, _, err = release.Freeze(dir, file); !errors.Is(err, release.ErrFrozen) {
		t.Errorf("freezing other bytes under a frozen version = %v; want ErrFrozen", err)
	}
	after, _ := os.ReadFile(r.Manifest)
	apiAfter, _ := os.ReadFile(r.API)
	if !bytes.Equal(after, data) || !bytes.Equal(apiAfter, apiBefore) {
		t.Error("a refused freeze changed the frozen release")
	}

	// A version without its current history entry is not frozen.
	cur := r.Version.String()
	next := r.Version
	next.Patch += 7
	write(strings.Replace(string(data), "\nversion: "+cur+"\n", "\nversion: "+next.String()+"\n", 1))
	if _, _, err = release.Freeze(dir, file); err == nil {
		t.Error("froze a manifest whose history has no current entry for its version")
	}
	rs, _ := release.List(dir)
	if len(rs) != 1 {
		t.Errorf("%d releases after the refusals; want 1", len(rs))
	}
}

// TestLegacyRecordPositions reads the frozen 2.1.1 record, written before
// records were package-qualified: its lines come back as lines of the
// wire package, each with the line of the frozen file it was read from,
// and the file itself stays as it was.
func TestLegacyRecordPositions(t *testing.T) {
	path := filepath.Join(root, release.Dir, "2.1.1.api.txt")
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	api, at, err := release.ReadAPI(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(api) == 0 {
		t.Fatal("no lines")
	}
	text := strings.Split(string(before), "\n")
	for _, l := range api {
		bare, ok := strings.CutPrefix(l, "pkg "+apirecord.LegacyPackage+", ")
		if !ok {
			t.Errorf("%q is not a line of %s", l, apirecord.LegacyPackage)
			continue
		}
		n := at[l]
		if n < 1 || n > len(text) || text[n-1] != bare {
			t.Errorf("%q: line %d of %s is not %q", l, n, path, bare)
		}
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("reading %s rewrote it", path)
	}
}
