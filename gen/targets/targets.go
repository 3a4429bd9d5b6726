// Package targets is the list of emqgen's targets and the host that runs
// them: Generate renders the bundle once, gives every registered target the
// same Input, and checks what comes back — every path relative and owned
// by exactly one target, every file starting with its generated-file
// header — before anything is written.
//
// Adding a target is a folder under gen/targets and one line in All; then
// go test ./gen/cases -update adds its files to every valid golden case
// under golden/cases. A target written outside Go is an entry in the
// repository's emqgen.yaml instead (gen/plugin, Configured).
package targets

import (
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/header"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/gen/plugin"
	"github.com/echomq/echomq/gen/target"
	"github.com/echomq/echomq/gen/targets/conformance"
	"github.com/echomq/echomq/gen/targets/docs"
	"github.com/echomq/echomq/gen/targets/golang"
	"github.com/echomq/echomq/gen/targets/lua"
	"github.com/echomq/echomq/gen/targets/ts"
)

// All returns every registered in-process target, in the order their
// names sort.
func All() []target.Target {
	return []target.Target{
		conformance.Target,
		docs.Target,
		golang.Target,
		lua.Target,
		ts.Target,
	}
}

// Configured returns All followed by the out-of-process targets that
// root's emqgen.yaml declares (gen/plugin), in the order declared; each
// runs with root as its working directory. Without an emqgen.yaml it is
// All. A plugin named like an in-process target is an error.
func Configured(root string) ([]target.Target, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	specs, err := plugin.LoadConfig(abs)
	if err != nil {
		return nil, err
	}
	ts := All()
	taken := map[string]bool{}
	for _, t := range ts {
		taken[t.Name()] = true
	}
	for _, s := range specs {
		if taken[s.Name] {
			return nil, fmt.Errorf("%s: plugin %q has the name of an in-process target", plugin.ConfigFile, s.Name)
		}
		ts = append(ts, plugin.Target(s))
	}
	return ts, nil
}

// Input renders p's bundle once and returns the input every target gets.
func Input(p *model.Protocol) (*target.Input, error) {
	b, err := bundle.Render(p)
	if err != nil {
		return nil, err
	}
	return &target.Input{Protocol: p, Bundle: b}, nil
}

// Generate runs every target of ts (All when ts is nil) on p and returns
// their files sorted by path.
func Generate(p *model.Protocol, ts []target.Target) ([]target.File, error) {
	in, err := Input(p)
	if err != nil {
		return nil, err
	}
	return Run(in, ts)
}

// Run runs every target of ts (All when ts is nil) on in and returns their
// files sorted by path. A target's error, a path that is absolute, not
// clean or claimed twice, and a file without its header are errors naming
// the target.
func Run(in *target.Input, ts []target.Target) ([]target.File, error) {
	if ts == nil {
		ts = All()
	}
	owner := map[string]string{}
	var files []target.File
	for _, t := range ts {
		out, err := t.Generate(in)
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", t.Name(), err)
		}
		for _, f := range out {
			if f.Path == "" || path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || strings.HasPrefix(f.Path, "../") || strings.Contains(f.Path, "\\") {
				return nil, fmt.Errorf("target %s: file path %q must be relative, slash-separated and clean", t.Name(), f.Path)
			}
			if o, dup := owner[f.Path]; dup {
				return nil, fmt.Errorf("target %s: %s is also written by target %s", t.Name(), f.Path, o)
			}
			if err := header.Check(f.Path, f.Data); err != nil {
				return nil, fmt.Errorf("target %s: %w", t.Name(), err)
			}
			owner[f.Path] = t.Name()
			files = append(files, f)
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

// Select returns the targets of ts named by names, in the order of ts; an
// unknown name is an error listing the known ones.
func Select(ts []target.Target, names []string) ([]target.Target, error) {
	known := map[string]bool{}
	var all []string
	for _, t := range ts {
		known[t.Name()] = true
		all = append(all, t.Name())
	}
	want := map[string]bool{}
	for _, n := range names {
		if !known[n] {
			return nil, fmt.Errorf("unknown target %q (targets: %s)", n, strings.Join(all, ", "))
		}
		want[n] = true
	}
	var out []target.Target
	for _, t := range ts {
		if want[t.Name()] {
			out = append(out, t)
		}
	}
	return out, nil
}
