package gate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/echomq/echomq/conformance/runner"
	"github.com/echomq/echomq/gen/manifest"
	"github.com/echomq/echomq/govern/compat"
	"github.com/echomq/echomq/govern/release"
)

// scenariosDir is where today's conformance scenarios live, relative to
// the repository root.
const scenariosDir = "conformance/scenarios"

// errNoSuite means the root has no conformance suite to hold the added
// scripts' scenarios: coverage is not judged there (check notes it).
var errNoSuite = errors.New("no conformance suite")

// coverage finds the scripts of the new manifest that neither the
// baseline nor any frozen release under root has, and that lack what puts
// their behaviour on record: a probe step that runs them, and a
// conformance scenario under root that sends their op. Each is a
// WITNESS_SCRIPT_UNCOVERED finding saying what to add. Scripts of a frozen
// release are history, judged by the rules of their day.
func coverage(root string, old, new *compat.Side) ([]compat.Finding, error) {
	known := map[string]bool{}
	for _, s := range old.Manifest.Scripts {
		known[s.Name.V] = true
	}
	var added []manifest.Script
	for _, s := range new.Manifest.Scripts {
		if !known[s.Name.V] {
			added = append(added, s)
		}
	}
	if len(added) == 0 {
		return nil, nil
	}
	rs, err := release.List(root)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		m, err := manifest.Load(r.Manifest)
		if err != nil {
			return nil, fmt.Errorf("the frozen release %s: %w", r.Manifest, err)
		}
		for _, s := range m.Scripts {
			known[s.Name.V] = true
		}
	}
	probed := map[string]bool{}
	probe := func(p *manifest.Probe) {
		if p == nil {
			return
		}
		for _, st := range p.Steps {
			if st.Script != nil {
				probed[st.Script.V] = true
			}
		}
	}
	for _, m := range new.Manifest.Reserve {
		probe(m.Probe)
	}
	for _, c := range new.Manifest.Classes {
		probe(c.Probe)
	}
	dir := filepath.Join(root, filepath.FromSlash(scenariosDir))
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, errNoSuite
	}
	files, err := runner.LoadScenarios(dir)
	if err != nil {
		return nil, fmt.Errorf("the conformance scenarios %s: %w", dir, err)
	}
	sent := map[string]bool{}
	for _, f := range files {
		for _, sc := range f.Scenarios {
			for _, st := range sc.Steps {
				sent[st.Op] = true
			}
		}
	}
	var out []compat.Finding
	for _, s := range added {
		name := s.Name.V
		if known[name] || probed[name] && sent[name] {
			continue
		}
		var lack []string
		if !probed[name] {
			lack = append(lack, fmt.Sprintf("a probe step that runs it (`script: %s`, with its arguments under `with:` and what it answers under `expect:`) in the probe of the reserve member or wire class it serves", name))
		}
		if !sent[name] {
			lack = append(lack, fmt.Sprintf("a conformance scenario in %s whose steps send op %s (and expect each of its refusals), and the op in each SDK's testee", dir, name))
		}
		at := compat.Location{File: new.File, Line: s.Pos.Line, Column: s.Pos.Col}
		out = append(out, compat.UncoveredScript("scripts["+name+"]", fmt.Sprintf("script %q is added with nothing that puts its behaviour on record: add %s", name, strings.Join(lack, "; and ")), at))
	}
	return out, nil
}
