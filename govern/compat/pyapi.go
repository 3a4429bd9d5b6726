package compat

import (
	"strings"

	"github.com/echomq/echomq/govern/apirecord"
)

// PyRules are the rules that compare the Python SDK's public API
// (Surface.Py). They apply when both sides carry a Python API: a frozen
// release with a Python record (golden/releases/<v>.py-api.txt) and the
// working tree's sdk/python, read with apirecord.PyAPI. A baseline without
// one compares nothing for Python.
func PyRules() []Rule {
	return []Rule{
		{ID: "PY_API_NO_DELETE", Bump: Major, Wire: true, Category: CategoryAPI, Purpose: "Code written against the Python SDK fails (ImportError, AttributeError) when a public module, name, class member or Enum member it uses is gone."},
		{ID: "PY_API_SAME_SIGNATURE", Bump: Major, Wire: true, Category: CategoryAPI, Purpose: "Code written against the Python SDK calls with the wrong arguments (a parameter renamed, required or reordered, sync made async) or gets another type when a public name or member changes its signature or type; parameters added with defaults are compatible."},
	}
}

// comparePy judges the new side's Python API against the old one's: each
// break is a finding at the recorded line that broke (old.Surface.PyFile
// when the baseline is a record), anchored at the new manifest's top.
func comparePy(d *differ, old, new Side) []Finding {
	if old.Surface == nil || new.Surface == nil || old.Surface.Py == nil || new.Surface.Py == nil {
		return nil
	}
	rules := map[string]Rule{}
	for _, r := range PyRules() {
		rules[r.ID] = r
	}
	var out []Finding
	for _, b := range apirecord.ComparePyAPI(old.Surface.Py, new.Surface.Py) {
		r := rules["PY_API_SAME_SIGNATURE"]
		typ := func(line string) string { return strings.TrimPrefix(line, b.Where+": ") }
		var now []string
		for _, l := range strings.Split(b.New, "; "+b.Where+": ") {
			now = append(now, typ(l))
		}
		msg := "was: " + typ(b.Old) + "; now: " + strings.Join(now, " | ")
		if b.Kind == apirecord.Removed {
			r = rules["PY_API_NO_DELETE"]
			msg = "gone from the Python SDK's public API (was: " + typ(b.Old) + ")"
		}
		f := Finding{Rule: r.ID, Bump: r.Bump, Wire: r.Wire, Category: r.category(), Path: "py: " + b.Where, Message: msg, File: new.File, Judged: true}
		f.Anchor = d.top(new.File)
		if old.Surface.PyFile != "" {
			f.File, f.Line, f.Column = old.Surface.PyFile, old.Surface.PyLines[b.Old], 1
		}
		out = append(out, f)
	}
	return out
}
