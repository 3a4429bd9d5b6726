// Package release keeps the frozen releases of the protocol under
// golden/releases: each release's manifest, byte for byte as it was
// released (<version>.yaml), the exported API of the Go package it
// generated (<version>.api.txt) and the identity of its Lua bundle
// (<version>.bundle.txt: each script's SHA-1 and the bundle digest, which
// deployed keyspaces record and verify). A frozen release is never rewritten; it is
// the baseline every later manifest is checked against. Beside them, its
// witness (<version>.witness/scenarios/*.yaml) keeps the conformance
// scenarios as they were at the release, which the gate's behavioural
// witness replays against every later bundle.
package release

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/header"
	"github.com/echomq/echomq/gen/manifest"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/govern/compat"
	"github.com/echomq/echomq/govern/lang"
	"github.com/echomq/echomq/govern/lang/golang"
	"github.com/echomq/echomq/govern/langs"
)

// Dir is where frozen releases live, relative to the repository root.
const Dir = "golden/releases"

// Release is one frozen release.
type Release struct {
	Root     string // the repository root the release was listed under
	Version  model.Semver
	Manifest string // path of the frozen manifest
	API      string // path of the recorded Go API
	Bundle   string // path of the recorded bundle identity
	// Witness is the directory of the release's witness: its conformance
	// scenarios under scenarios/ (it may be absent for a release frozen
	// before witnesses were kept).
	Witness string
}

// WitnessScenarios is the directory of the release's witness scenarios.
func (r Release) WitnessScenarios() string { return filepath.Join(r.Witness, "scenarios") }

// HasWitness reports whether the release keeps a witness with at least
// one scenario file.
func (r Release) HasWitness() bool {
	m, _ := filepath.Glob(filepath.Join(r.WitnessScenarios(), "*.yaml"))
	return len(m) > 0
}

// List returns the frozen releases under root, oldest first.
func List(root string) ([]Release, error) {
	paths, err := filepath.Glob(filepath.Join(root, Dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var out []Release
	for _, p := range paths {
		v, err := model.ParseSemver(strings.TrimSuffix(filepath.Base(p), ".yaml"))
		if err != nil {
			return nil, fmt.Errorf("%s: a frozen release is named <major>.<minor>.<patch>.yaml: %v", p, err)
		}
		r := at(filepath.Dir(p), v)
		r.Root = root
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version.Compare(out[j].Version) < 0 })
	return out, nil
}

func at(dir string, v model.Semver) Release {
	base := filepath.Join(dir, v.String())
	return Release{Version: v, Manifest: base + ".yaml", API: base + ".api.txt", Bundle: base + ".bundle.txt", Witness: base + ".witness"}
}

// Open returns the frozen release whose manifest is the file at path: a
// file named <major>.<minor>.<patch>.yaml with the Go API record of that
// version (<version>.api.txt) beside it, as Freeze writes them. root is
// the repository root the release is read for (Release.Root). It reports
// false for any other file: a manifest that is no frozen release.
func Open(root, path string) (Release, bool) {
	v, err := model.ParseSemver(strings.TrimSuffix(filepath.Base(path), ".yaml"))
	if err != nil || filepath.Ext(path) != ".yaml" {
		return Release{}, false
	}
	r := at(filepath.Dir(path), v)
	if st, err := os.Stat(r.API); err != nil || !st.Mode().IsRegular() {
		return Release{}, false
	}
	r.Root = root
	return r, true
}

// Newest returns the newest frozen release under root.
func Newest(root string) (Release, error) {
	rs, err := List(root)
	if err != nil {
		return Release{}, err
	}
	if len(rs) == 0 {
		return Release{}, fmt.Errorf("no frozen release under %s: freeze one with emqgen release, or give a baseline with -base", filepath.Join(root, Dir))
	}
	return rs[len(rs)-1], nil
}

// Side loads a frozen release as the baseline side of a comparison: its
// manifest, and a surface whose Lua slots are generated from the frozen
// manifest and whose API records are the ones the release keeps beside
// it, one per language (RecordFile): what users compiled against then,
// whatever the generator and the hand-written layer make of it today. A
// language whose record the release does not keep is not compared.
func (r Release) Side() (compat.Side, error) {
	data, err := os.ReadFile(r.Manifest)
	if err != nil {
		return compat.Side{}, err
	}
	m, err := manifest.Parse(r.Manifest, data)
	if err != nil {
		return compat.Side{}, err
	}
	p, err := model.Resolve(r.Manifest, m)
	if err != nil {
		return compat.Side{}, err
	}
	s, err := compat.SurfaceOf(r.root(), p)
	if err != nil {
		return compat.Side{}, err
	}
	for _, l := range langs.All() {
		rec, err := r.ReadRecord(l)
		if err != nil {
			return compat.Side{}, err
		}
		s.SetRecord(l.Name(), rec) // nil: not kept, not compared
	}
	return compat.Side{File: r.Manifest, Manifest: m, Surface: s}, nil
}

// RecordFile is the path of the release's API record of a language:
// <version><suffix> beside its manifest (<version>.api.txt for Go,
// <version>.ts-api.txt for TypeScript). Releases frozen before a
// language's SDK existed keep none.
func (r Release) RecordFile(l lang.Language) string {
	return strings.TrimSuffix(r.Manifest, ".yaml") + l.RecordSuffix()
}

// HasRecord reports whether the release keeps a record of the language.
func (r Release) HasRecord(l lang.Language) bool {
	_, err := os.Stat(r.RecordFile(l))
	return err == nil
}

// ReadRecord reads the release's record of a language; nil when it keeps
// none.
func (r Release) ReadRecord(l lang.Language) (*compat.Record, error) {
	path := r.RecordFile(l)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	lines, at, err := l.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if lines == nil {
		lines = []string{}
	}
	return &compat.Record{Lines: lines, File: path, At: at}, nil
}

// FreezeRecord records lines as the language's API of the frozen release
// r, unless r already keeps one: a frozen record is never rewritten. It
// returns the path written, or "" when nothing was.
func FreezeRecord(r Release, l lang.Language, lines []string) (string, error) {
	if _, err := os.Stat(r.Manifest); err != nil {
		return "", fmt.Errorf("release: %s is not frozen: %w", r.Version, err)
	}
	path := r.RecordFile(l)
	if _, err := os.Stat(path); err == nil {
		return "", nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	data, err := l.Format(r.Version.String(), lines)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return "", err
	}
	return path, nil
}

// root is the repository root: Root, or the directory that holds Dir.
func (r Release) root() string {
	if r.Root != "" {
		return r.Root
	}
	return filepath.Dir(filepath.Dir(filepath.Dir(r.Manifest)))
}

// ReadAPI reads a recorded Go API, package-qualified (apirecord.Normalize
// reads the unqualified records of 2.0.0 to 2.1.1 as the wire package's),
// and the line of each feature in it, keyed by the qualified line.
func ReadAPI(path string) ([]string, map[string]int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	api, at, err := golang.Language.Parse(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %v", path, err)
	}
	return api, at, nil
}

// BundleRecord is the on-disk record of a bundle's identity: a header,
// the bundle digest, then one line per script with its SHA-1.
func BundleRecord(v model.Semver, b *bundle.Bundle) []byte {
	var out bytes.Buffer
	fmt.Fprintf(&out, "# %s\n# Version: %s\nbundle %s\n", header.Marker, v, b.Digest)
	for _, s := range b.Scripts {
		fmt.Fprintf(&out, "script %s %s\n", s.Name, s.SHA1)
	}
	return out.Bytes()
}

// ErrFrozen is returned when a release would overwrite a different frozen
// release of the same version.
var ErrFrozen = errors.New("release: that version is frozen with other content")

// Freeze records the manifest at path as the frozen release of its
// version under root: the manifest byte for byte, the Go API it
// generates, its bundle identity, and its witness — root's conformance
// scenarios (conformance/scenarios/*.yaml) copied byte for byte under
// <version>.witness/scenarios, written only when the release has no
// witness yet. Freezing the same bytes again writes nothing (and leaves the
// API record as it was released); freezing other bytes under an existing
// version fails with ErrFrozen. The manifest must be valid, and its version the history's
// current entry.
func Freeze(root, path string) (Release, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Release{}, nil, err
	}
	p, err := model.Parse(path, data)
	if err != nil {
		return Release{}, nil, err
	}
	current := false
	for _, h := range p.Governance.History {
		current = current || (h.Version == p.Version && h.Status == "current")
	}
	if !current {
		return Release{}, nil, fmt.Errorf("%s: the history has no current entry for %s; add it before freezing", path, p.Version)
	}
	s, err := compat.SurfaceOf(root, p)
	if err != nil {
		return Release{}, nil, err
	}
	dir := filepath.Join(root, Dir)
	r := at(dir, p.Version)
	type record struct {
		path string
		data []byte
	}
	var records []record
	for _, l := range langs.All() {
		if rec := s.Record(l.Name()); l.FromManifest() && rec != nil {
			data, err := l.Format(p.Version.String(), rec.Lines)
			if err != nil {
				return Release{}, nil, err
			}
			records = append(records, record{r.RecordFile(l), data})
		}
	}
	b, err := bundle.Render(p)
	if err != nil {
		return Release{}, nil, err
	}
	bundle := BundleRecord(p.Version, b)
	old, err := os.ReadFile(r.Manifest)
	switch {
	case err == nil && !bytes.Equal(old, data):
		return r, nil, fmt.Errorf("%w: %s differs from %s; a released version is never rewritten — bump the version", ErrFrozen, r.Manifest, path)
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return r, nil, err
	}
	scenarios, werr := witnessSources(root, r)
	if werr != nil {
		return r, nil, werr
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, nil, err
	}
	var written []string
	if errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(r.Manifest, data, 0o644); err != nil {
			return r, nil, err
		}
		written = append(written, r.Manifest)
	}
	// The records are what users compiled against and deployed when the
	// version was released: once written, they stay, even if today's
	// generator makes more of the same manifest.
	for _, f := range append(records, record{r.Bundle, bundle}) {
		if _, err := os.Stat(f.path); errors.Is(err, os.ErrNotExist) {
			if err := os.WriteFile(f.path, f.data, 0o644); err != nil {
				return r, written, err
			}
			written = append(written, f.path)
		} else if err != nil {
			return r, written, err
		}
	}
	w, err := writeWitness(r, scenarios)
	written = append(written, w...)
	return r, written, err
}

// witnessSources lists root's conformance scenario files when the release
// has no witness yet (nil when it has one); none at all is an error.
func witnessSources(root string, r Release) ([]string, error) {
	if _, err := os.Stat(r.Witness); err == nil {
		return nil, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(root, "conformance", "scenarios", "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s has no scenario files: a release keeps the conformance scenarios as its witness", filepath.Join(root, "conformance", "scenarios"))
	}
	sort.Strings(files)
	return files, nil
}

// writeWitness copies the scenario files into the release's witness (none
// when it has one already: a witness is never rewritten).
func writeWitness(r Release, files []string) ([]string, error) {
	if len(files) == 0 {
		return nil, nil
	}
	dir := r.WitnessScenarios()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var written []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return written, err
		}
		dst := filepath.Join(dir, filepath.Base(f))
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return written, err
		}
		written = append(written, dst)
	}
	return written, nil
}
