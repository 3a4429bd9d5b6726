// Package compat classifies every change between two versions of the
// protocol manifest and decides the version bump it requires (spec §8).
//
// A manifest is compared as a set of leaves (see tree.go). Rules, tried in
// order, each explain the changes of one kind; whatever no rule explains
// is reported as UNCLASSIFIED_CHANGE and requires a major, so that the
// classifier fails closed: a new kind of change is never waved through
// because nobody wrote a rule for it. The artifact rules compare what
// users compile and call against — the generated Go API and the Lua
// scripts' KEYS and ARGV slots — in addition to the manifest.
package compat

import (
	"fmt"
	"slices"
	"sort"

	"github.com/echomq/echomq/gen/manifest"
	"github.com/echomq/echomq/gen/model"
)

// Bump is a version bump, from none to major, or Invalid for a change no
// bump admits.
type Bump int

// The bumps, in increasing order.
const (
	None Bump = iota
	Patch
	Minor
	Major
	Invalid
)

var bumpNames = []string{"none", "patch", "minor", "major", "invalid"}

// String is the bump's name: none, patch, minor, major or invalid.
func (b Bump) String() string {
	if b < None || b > Invalid {
		return fmt.Sprintf("Bump(%d)", int(b))
	}
	return bumpNames[b]
}

// ParseBump reads a bump's name.
func ParseBump(s string) (Bump, error) {
	for i, n := range bumpNames {
		if n == s {
			return Bump(i), nil
		}
	}
	return None, fmt.Errorf("bump %q is not one of none, patch, minor, major, invalid", s)
}

// MarshalText writes the bump's name.
func (b Bump) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText reads the bump's name.
func (b *Bump) UnmarshalText(text []byte) error {
	v, err := ParseBump(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// Declared is the bump between two versions: Major when the major grew,
// Minor when the minor did, Patch when only the patch did, None when equal.
// ok is false when to is lower than from.
func Declared(from, to model.Semver) (b Bump, ok bool) {
	switch {
	case to.Compare(from) < 0:
		return None, false
	case to.Major != from.Major:
		return Major, true
	case to.Minor != from.Minor:
		return Minor, true
	case to.Patch != from.Patch:
		return Patch, true
	}
	return None, true
}

// Finding is one classified change.
type Finding struct {
	Rule    string `json:"rule"`
	Bump    Bump   `json:"bump"`
	Wire    bool   `json:"wire"`
	Path    string `json:"path"`
	Message string `json:"message"`
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
}

// Where is the finding's file:line:col, or the file alone when the
// position is unknown.
func (f Finding) Where() string {
	if f.Line == 0 {
		return f.File
	}
	return fmt.Sprintf("%s:%d:%d", f.File, f.Line, f.Column)
}

// Side is one manifest of a comparison: its file name (as findings name
// it), its decoded content and, optionally, the surface of its generated
// artifacts.
type Side struct {
	File     string
	Manifest *manifest.Manifest
	// Surface, when set, is compared by the artifact rules.
	Surface *Surface
}

// Compare classifies every change from old to new. Findings are sorted by
// rule order's severity (invalid first, then major to none), then by file
// position and path.
func Compare(old, new Side) []Finding { return compare(old, new, Rules()) }

// compare classifies with the given manifest rules; tests drop rules from
// it to show that what they explained then fails closed.
func compare(old, new Side, rules []Rule) []Finding {
	d := &differ{old: flatten(old.Manifest), new: flatten(new.Manifest), claimed: map[*change]bool{}}
	// The version itself is what a change is judged against, not a change.
	delete(d.old, "version")
	delete(d.new, "version")
	d.changes = diffTrees(d.old, d.new)
	impliedOrder(d)
	var out []Finding
	for _, r := range rules {
		for _, g := range r.match(d) {
			out = append(out, r.finding(g, old.File, new.File))
		}
	}
	for _, c := range d.open() {
		g := &group{root: c.path, changes: []*change{c}, d: d}
		r := unclassified
		out = append(out, r.finding(g, old.File, new.File))
	}
	if old.Surface != nil && new.Surface != nil {
		out = append(out, compareSurfaces(d, old, new)...)
	}
	sortFindings(out)
	return out
}

var unclassified = Rule{ID: Unclassified, Bump: Major, Wire: true,
	Purpose: "No rule recognises the change, so nobody has argued that it is safe: it requires a major until a rule (with its fixture) says otherwise.",
	say: func(g *group) string {
		return fmt.Sprintf("no rule recognises this change: %s", g.details())
	}}

func (r Rule) finding(g *group, oldFile, newFile string) Finding {
	a := g.anchor()
	l, isOld := a.side()
	file := newFile
	if isOld {
		file = oldFile
	}
	return Finding{Rule: r.ID, Bump: r.Bump, Wire: r.Wire, Path: g.root, Message: r.say(g), File: file, Line: l.pos.Line, Column: l.pos.Col}
}

func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.Bump != b.Bump {
			return a.Bump > b.Bump
		}
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Rule < b.Rule
	})
}

// impliedOrder explains, without a finding, the change of a list's order
// leaf that additions and removals alone account for: the entries both
// sides hold keep their relative order. The entries added or removed get
// their own findings.
func impliedOrder(d *differ) {
	for _, c := range d.changes {
		if c.kind != modified && (c.old.kind == orderLeaf || c.new.kind == orderLeaf) {
			d.claimed[c] = true // a list that appeared or went: its entries tell
			continue
		}
		if c.kind != modified || c.old.kind != orderLeaf {
			continue
		}
		o, n := orderOf(c.old), orderOf(c.new)
		if slices.Equal(common(o, n), common(n, o)) {
			d.claimed[c] = true
		}
	}
}

// common lists the entries of a that b also holds, in a's order.
func common(a, b []string) []string {
	in := map[string]bool{}
	for _, s := range b {
		in[s] = true
	}
	var out []string
	for _, s := range a {
		if in[s] {
			out = append(out, s)
		}
	}
	return out
}

// Required is the highest bump the findings require, not counting Invalid
// (which no bump satisfies).
func Required(fs []Finding) Bump {
	b := None
	for _, f := range fs {
		if f.Bump != Invalid && f.Bump > b {
			b = f.Bump
		}
	}
	return b
}

// Wire reports whether any finding changes the wire.
func Wire(fs []Finding) bool {
	for _, f := range fs {
		if f.Wire {
			return true
		}
	}
	return false
}

// RuleIDs lists every rule's ID: the manifest rules, the artifact rules and
// UNCLASSIFIED_CHANGE.
func RuleIDs() []string {
	var ids []string
	for _, r := range AllRules() {
		ids = append(ids, r.ID)
	}
	return ids
}

// AllRules lists the manifest rules, the artifact rules and the rule of
// unclassified changes, in the order they apply.
func AllRules() []Rule {
	rs := Rules()
	rs = append(rs, ArtifactRules()...)
	return append(rs, unclassified)
}
