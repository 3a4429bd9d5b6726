package compat

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/echomq/echomq/gen/manifest"
	"github.com/echomq/echomq/gen/model"
)

var update = flag.Bool("update", false, "rewrite the want section of every rule fixture")

// base is the manifest every fixture edits: a frozen release, so that
// fixtures never drift with the working manifest.
const base = "../../golden/releases/2.0.0.yaml"

// A fixture (testdata/rules/<RULE>.txt) holds a comment saying what it
// shows, the edits that make its old and its new manifest from base (each
// side edits base independently), optionally rules to leave out, and the
// findings it must produce:
//
//	# what the fixture shows
//	-- old --            (optional)
//	<<<<<<<
//	text to find in base, exactly once
//	=======
//	text to put in its place
//	>>>>>>>
//	-- new --
//	...edits...
//	-- waivers --        (optional: a waivers file, as waivers.yaml)
//	waivers:
//	  - {rule: ..., path: ..., version: 2.0.0, reason: ...}
//	-- category --       (optional: wire or wire+api, the default)
//	wire
//	-- ts-old --         (optional: TypeScript API record lines of the old side)
//	@echomq/sdk class Queue method purge: (string) => Promise<boolean>
//	-- ts-new --         (optional: ... of the new side; with either, both sides carry one)
//	-- py-old --         (optional: Python API record lines of the old side)
//	echomq class Queue method purge: async (name: str) -> bool
//	-- py-new --         (optional: ... of the new side; with either, both sides carry one)
//	-- want --
//	new.yaml:12:7: minor KEY_TYPE_ADDED keys.types[audit]: key type "audit" added
//
// A fixture is named after the rule it shows: <RULE>.txt, or
// <RULE>.<variant>.txt for a further case of the same rule.
type fixture struct {
	path     string
	rule     string
	comment  string
	old, new string
	want     []string
	without  []string // rules left out, to show a change then fails closed
	opts     Options
	// raw sections, kept to rewrite the file under -update
	sections map[string]string
}

func loadFixtures(t *testing.T) []*fixture {
	t.Helper()
	baseText, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob("testdata/rules/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out []*fixture
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rule, _, _ := strings.Cut(strings.TrimSuffix(filepath.Base(p), ".txt"), ".")
		f := &fixture{path: p, rule: rule, sections: map[string]string{}}
		var cur string
		var comment []string
		for _, line := range strings.SplitAfter(string(data), "\n") {
			trimmed := strings.TrimRight(line, "\n")
			if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") {
				cur = strings.TrimSuffix(strings.TrimPrefix(trimmed, "-- "), " --")
				if _, dup := f.sections[cur]; dup {
					t.Fatalf("%s: section %q twice", p, cur)
				}
				f.sections[cur] = ""
				continue
			}
			if cur == "" {
				comment = append(comment, trimmed)
				continue
			}
			f.sections[cur] += line
		}
		f.comment = strings.TrimSpace(strings.Join(comment, "\n"))
		for name := range f.sections {
			if name != "old" && name != "new" && name != "want" && name != "without" && name != "waivers" && name != "category" && name != "ts-old" && name != "ts-new" && name != "py-old" && name != "py-new" {
				t.Fatalf("%s: unknown section %q (old, new, without, waivers, category, ts-old, ts-new, py-old, py-new, want)", p, name)
			}
		}
		if f.comment == "" {
			t.Errorf("%s: say in a # comment what the fixture shows", p)
		}
		f.old = applyEdits(t, p+" old", string(baseText), f.sections["old"])
		f.new = applyEdits(t, p+" new", string(baseText), f.sections["new"])
		f.without = strings.Fields(f.sections["without"])
		f.opts.Category = strings.TrimSpace(f.sections["category"])
		if w, ok := f.sections["waivers"]; ok {
			if f.opts.Waivers, err = ParseWaivers("waivers.yaml", []byte(w)); err != nil {
				t.Fatalf("%s: waivers: %v", p, err)
			}
		}
		if f.old == f.new && f.rule != Unclassified && f.sections["ts-old"] == f.sections["ts-new"] && f.sections["py-old"] == f.sections["py-new"] {
			t.Errorf("%s: the new manifest equals the old one", p)
		}
		for _, l := range strings.Split(f.sections["want"], "\n") {
			if l = strings.TrimSpace(l); l != "" {
				f.want = append(f.want, l)
			}
		}
		out = append(out, f)
	}
	return out
}

// applyEdits applies search/replace blocks; each search text must occur
// exactly once, so that a fixture cannot silently stop applying.
func applyEdits(t *testing.T, where, text, edits string) string {
	t.Helper()
	lines := strings.SplitAfter(edits, "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], "\n")
		if strings.TrimSpace(l) == "" {
			continue
		}
		if l != "<<<<<<<" {
			t.Fatalf("%s: expected <<<<<<< to open an edit, found %q", where, l)
		}
		var search, replace strings.Builder
		j := i + 1
		for ; j < len(lines) && strings.TrimRight(lines[j], "\n") != "======="; j++ {
			search.WriteString(lines[j])
		}
		k := j + 1
		for ; k < len(lines) && strings.TrimRight(lines[k], "\n") != ">>>>>>>"; k++ {
			replace.WriteString(lines[k])
		}
		if j >= len(lines) || k >= len(lines) {
			t.Fatalf("%s: unterminated edit", where)
		}
		if n := strings.Count(text, search.String()); n != 1 {
			t.Fatalf("%s: the text to replace occurs %d times, want exactly once:\n%s", where, n, search.String())
		}
		text = strings.Replace(text, search.String(), replace.String(), 1)
		i = k
	}
	return text
}

func (f *fixture) sides(t *testing.T) (Side, Side) {
	t.Helper()
	old, err := manifest.Parse("old.yaml", []byte(f.old))
	if err != nil {
		t.Fatalf("%s: old manifest: %v", f.path, err)
	}
	new, err := manifest.Parse("new.yaml", []byte(f.new))
	if err != nil {
		t.Fatalf("%s: new manifest: %v", f.path, err)
	}
	os, ns := fixtureSurface(t, "old.yaml", f.old), fixtureSurface(t, "new.yaml", f.new)
	_, hasOld := f.sections["ts-old"]
	_, hasNew := f.sections["ts-new"]
	if hasOld || hasNew {
		os, ns = withTS(t, f.path, os, f.sections["ts-old"]), withTS(t, f.path, ns, f.sections["ts-new"])
	}
	_, hasOld = f.sections["py-old"]
	_, hasNew = f.sections["py-new"]
	if hasOld || hasNew {
		os, ns = withPy(t, f.path, os, f.sections["py-old"]), withPy(t, f.path, ns, f.sections["py-new"])
	}
	return Side{File: "old.yaml", Manifest: old, Surface: os},
		Side{File: "new.yaml", Manifest: new, Surface: ns}
}

// withTS returns a copy of s (shared between fixtures) carrying the
// TypeScript API record lines of a ts-old or ts-new section.
func withTS(t *testing.T, path string, s *Surface, record string) *Surface {
	t.Helper()
	if s == nil {
		t.Fatalf("%s: a fixture with a TypeScript API needs manifests that resolve", path)
	}
	c := *s
	c.Records = maps.Clone(s.Records)
	rec := &Record{Lines: []string{}}
	for _, l := range strings.Split(record, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			rec.Lines = append(rec.Lines, l)
		}
	}
	c.SetRecord("ts", rec)
	return &c
}

// withPy returns a copy of s carrying the Python API record lines of a
// py-old or py-new section.
func withPy(t *testing.T, path string, s *Surface, record string) *Surface {
	t.Helper()
	if s == nil {
		t.Fatalf("%s: a fixture with a Python API needs manifests that resolve", path)
	}
	c := *s
	c.Records = maps.Clone(s.Records)
	rec := &Record{Lines: []string{}}
	for _, l := range strings.Split(record, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			rec.Lines = append(rec.Lines, l)
		}
	}
	c.SetRecord("py", rec)
	return &c
}

func lines(fs []Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Text())
	}
	return out
}

// Every rule's fixture produces exactly its expected findings, and among
// them at least one of its own rule.
func TestRuleFixtures(t *testing.T) {
	for _, f := range loadFixtures(t) {
		t.Run(f.rule, func(t *testing.T) {
			old, new := f.sides(t)
			var rules []Rule
			for _, r := range Rules() {
				if !slices.Contains(f.without, r.ID) {
					rules = append(rules, r)
				}
			}
			from, err := model.ParseSemver(old.Manifest.Version.V)
			if err != nil {
				t.Fatal(err)
			}
			to, err := model.ParseSemver(new.Manifest.Version.V)
			if err != nil {
				t.Fatal(err)
			}
			got := lines(f.opts.apply(compare(old, new, rules), from, to))
			if *update {
				f.sections["want"] = strings.Join(got, "\n") + "\n"
				f.write(t)
				return
			}
			want := f.want
			if want == nil {
				want = []string{}
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s: findings differ (-want +got); rerun with -update if the change is intended:\n%s", f.path, d)
			}
			if !slices.ContainsFunc(got, func(l string) bool { return strings.Contains(l, " "+f.rule+" ") }) {
				t.Errorf("%s: no finding of rule %s", f.path, f.rule)
			}
		})
	}
}

// Comparing a manifest with itself finds nothing, on both sides of every
// fixture.
func TestRuleFixturesSelf(t *testing.T) {
	for _, f := range loadFixtures(t) {
		old, new := f.sides(t)
		for _, s := range []Side{old, new} {
			if got := Compare(s, s); len(got) != 0 {
				t.Errorf("%s: %s compared with itself: %v", f.path, s.File, lines(got))
			}
		}
	}
}

// Every rule has a fixture, and every fixture names a rule.
func TestEveryRuleHasAFixture(t *testing.T) {
	have := map[string]bool{}
	for _, f := range loadFixtures(t) {
		have[f.rule] = true
	}
	ids := RuleIDs()
	for _, id := range ids {
		if strings.HasPrefix(id, WitnessPrefix) {
			t.Errorf("rule %s takes an ID reserved for the behavioural witness", id)
		}
		if !have[id] {
			t.Errorf("rule %s has no fixture: add testdata/rules/%s.txt", id, id)
		}
	}
	for r := range have {
		if !slices.Contains(ids, r) {
			t.Errorf("testdata/rules/%s.txt names no rule", r)
		}
	}
}

func (f *fixture) write(t *testing.T) {
	var b strings.Builder
	for _, l := range strings.Split(f.comment, "\n") {
		b.WriteString(l + "\n")
	}
	for _, name := range []string{"old", "new", "without", "waivers", "category", "ts-old", "ts-new", "py-old", "py-new", "want"} {
		if s, ok := f.sections[name]; ok {
			fmt.Fprintf(&b, "-- %s --\n%s", name, s)
		}
	}
	if err := os.WriteFile(f.path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
