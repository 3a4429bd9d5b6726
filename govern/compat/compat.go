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
	"strings"

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
	Rule string `json:"rule"`
	Bump Bump   `json:"bump"`
	Wire bool   `json:"wire"`
	// Category is the rule's strictness category: wire or api.
	Category string `json:"category"`
	Path     string `json:"path"`
	// Message says what changed, naming the element by its wire identity
	// with its Go name alongside.
	Message string `json:"message"`
	// File, Line and Column locate the change itself: in the old manifest
	// for a deletion, else in the new one.
	File   string `json:"file"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
	// Anchor locates the finding in the new manifest — the file of the
	// pull request's checkout — always: a deletion at the element that
	// enclosed what was deleted (as buf does), a generated-API finding at
	// the manifest element that generates the name. Annotations attach here.
	Anchor Location `json:"anchor"`
	// Waiver, when set, is the acknowledgement that waives the finding: it
	// is reported but not counted.
	Waiver *Waiver `json:"waiver,omitempty"`
	// Judged is false for a finding outside the report's category: it is
	// reported but not counted.
	Judged bool `json:"judged"`
}

// Location is a file position.
type Location struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
}

// Counts reports whether the finding counts towards the required bump:
// judged and not waived.
func (f Finding) Counts() bool { return f.Judged && f.Waiver == nil }

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
	// Invalid, when set, is why the manifest does not validate: it is
	// still compared, on its leaves, but a report over an invalid new side
	// fails and says so.
	Invalid error
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
	d := &differ{claimed: map[*change]bool{}, oldNames: namesOf(old.Manifest), newNames: namesOf(new.Manifest)}
	if old.Surface != nil && new.Surface != nil {
		d.oldLua, d.newLua = old.Surface.Lua, new.Surface.Lua
	}
	d.old, _ = flattenWith(old.Manifest)
	d.new, d.newLists = flattenWith(new.Manifest)
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
	msg := r.say(g)
	if msg == "" {
		msg = g.details()
	}
	if msg == "" {
		msg = "changed"
	}
	t, n := g.d.new, g.d.newNames
	if isOld {
		t, n = g.d.old, g.d.oldNames
	}
	if label, idents := nameOf(t, n, g.root); label != "" && !containsAll(msg, idents) {
		msg += " (" + label + ")"
	}
	if since := g.d.old[g.root+".deprecated.since"].value; a.kind == removed && a.path == g.root && since != "" {
		msg += "; announced at version " + since + " (deprecated)"
	}
	f := Finding{Rule: r.ID, Bump: r.Bump, Wire: r.Wire, Category: r.category(), Path: g.root, Message: msg, File: file, Line: l.pos.Line, Column: l.pos.Col, Judged: true}
	f.Anchor = Location{File: newFile, Line: l.pos.Line, Column: l.pos.Col}
	if isOld {
		f.Anchor = g.d.newAnchor(g.root, newFile)
	}
	return f
}

// containsAll reports whether s contains every one of subs.
func containsAll(s string, subs []string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

// category is the rule's category, wire when unset.
func (r Rule) category() string {
	if r.Category == "" {
		return CategoryWire
	}
	return r.Category
}

// newAnchor locates path in the new manifest: the path itself when it is
// there, else the innermost enclosing element (or list) that is, else the
// top of the file.
func (d *differ) newAnchor(path, newFile string) Location {
	for p := path; p != ""; {
		if l, ok := d.new[p]; ok && !l.pos.IsZero() {
			return Location{File: newFile, Line: l.pos.Line, Column: l.pos.Col}
		}
		if pos, ok := d.newLists[p]; ok && !pos.IsZero() {
			return Location{File: newFile, Line: pos.Line, Column: pos.Col}
		}
		// Up one step: an element to its list, a field to its element.
		switch i := strings.LastIndexAny(p, ".["); {
		case i <= 0:
			p = ""
		default:
			p = p[:i]
		}
	}
	return d.top(newFile)
}

// top locates the manifest's first fact (its protocol line).
func (d *differ) top(newFile string) Location {
	l := d.new["protocol"]
	return Location{File: newFile, Line: max(l.pos.Line, 1), Column: max(l.pos.Col, 1)}
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

// Required is the highest bump the findings that count require, not
// counting Invalid (which no bump satisfies).
func Required(fs []Finding) Bump {
	b := None
	for _, f := range fs {
		if f.Counts() && f.Bump != Invalid && f.Bump > b {
			b = f.Bump
		}
	}
	return b
}

// Wire reports whether any finding changes the wire.
func Wire(fs []Finding) bool {
	for _, f := range fs {
		if f.Wire && f.Counts() {
			return true
		}
	}
	return false
}

// WitnessPrefix begins the IDs of findings reserved for the behavioural
// witness (the conformance suite run against both sides of a change); no
// rule of this package takes such an ID.
const WitnessPrefix = "WITNESS_"

// RuleIDs lists every rule's ID: the manifest rules, the artifact rules,
// the waiver rules and UNCLASSIFIED_CHANGE.
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
	rs = append(rs, waiverRules()...)
	return append(rs, unclassified)
}
