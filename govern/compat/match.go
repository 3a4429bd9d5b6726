package compat

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/echomq/echomq/gen/manifest"
)

// differ holds one comparison: both trees, the changes between them and
// which changes a finding has explained.
type differ struct {
	old, new tree
	// newLists locates every list of the new manifest, by path.
	newLists map[string]manifest.Pos
	changes  []*change
	claimed  map[*change]bool
	// oldNames and newNames are the languages' annotations of each side
	// (none for a side without a Surface).
	oldNames, newNames names
	// oldLua and newLua are each side's scripts rendered to Lua (nil for
	// a side without a Surface).
	oldLua, newLua map[string]string
}

// group is the set of changes one finding explains: every unclaimed change
// at or under root.
type group struct {
	root    string
	ids     []string // the identities the pattern's [*] matched
	changes []*change
	d       *differ
}

// pattern is a manifest path with [*] for any identity.
type pattern struct {
	src string
	re  *regexp.Regexp
}

const identRE = `\[((?:[^\]\\]|\\.)*)\]`

func pat(src string) pattern {
	parts := strings.Split(src, "[*]")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return pattern{src: src, re: regexp.MustCompile(`^(` + strings.Join(parts, identRE) + `)(?:$|[.\[#])`)}
}

// root returns the prefix of path the pattern matches, and the identities
// it matched.
func (p pattern) root(path string) (string, []string, bool) {
	m := p.re.FindStringSubmatch(path)
	if m == nil {
		return "", nil, false
	}
	var ids []string
	for _, s := range m[2:] {
		ids = append(ids, unescapeIdent(s))
	}
	return m[1], ids, true
}

// exact reports whether the pattern matches all of path.
func (p pattern) exact(path string) ([]string, bool) {
	root, ids, ok := p.root(path)
	return ids, ok && root == path
}

func unescapeIdent(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// open lists the changes no finding has explained yet.
func (d *differ) open() []*change {
	var out []*change
	for _, c := range d.changes {
		if !d.claimed[c] {
			out = append(out, c)
		}
	}
	return out
}

// collect gathers the open changes at or under root into a group.
func (d *differ) collect(root string, ids []string) *group {
	g := &group{root: root, ids: ids, d: d}
	for _, c := range d.open() {
		if under(c.path, root) {
			g.changes = append(g.changes, c)
		}
	}
	return g
}

// has reports whether a tree holds anything at or under path.
func (t tree) has(path string) bool {
	if _, ok := t[path]; ok {
		return true
	}
	for p := range t {
		if under(p, path) {
			return true
		}
	}
	return false
}

// matcher finds the groups a rule explains among the open changes.
type matcher func(d *differ) []*group

// element matches the addition or removal of a list entry whose path
// matches p; the group is the entry and everything under it.
func element(kind changeKind, p string, where ...func(*group) bool) matcher {
	pt := pat(p)
	return func(d *differ) []*group {
		var out []*group
		for _, c := range d.open() {
			l, _ := c.side()
			if c.kind != kind || l.kind != elementLeaf || d.claimed[c] {
				continue
			}
			ids, ok := pt.exact(c.path)
			if !ok {
				continue
			}
			g := d.collect(c.path, ids)
			if !all(g, where) {
				continue
			}
			d.claim(g)
			out = append(out, g)
		}
		return out
	}
}

// subtree matches any change at or under the paths p matches, one group
// per matched root.
func subtree(p string, where ...func(*group) bool) matcher {
	pt := pat(p)
	return func(d *differ) []*group {
		var out []*group
		for _, c := range d.open() {
			if d.claimed[c] {
				continue
			}
			root, ids, ok := pt.root(c.path)
			if !ok {
				continue
			}
			g := d.collect(root, ids)
			if !all(g, where) {
				continue
			}
			d.claim(g)
			out = append(out, g)
		}
		return out
	}
}

func all(g *group, preds []func(*group) bool) bool {
	for _, p := range preds {
		if !p(g) {
			return false
		}
	}
	return true
}

func (d *differ) claim(g *group) {
	for _, c := range g.changes {
		d.claimed[c] = true
	}
}

// anchor is the change that locates a group's finding: the entry itself
// when it was added or removed, else the first change on the new side.
func (g *group) anchor() *change {
	for _, c := range g.changes {
		if c.path == g.root {
			return c
		}
	}
	for _, c := range g.changes {
		if c.kind != removed && !strings.HasSuffix(c.path, "#order") {
			return c
		}
	}
	return g.changes[0]
}

// id returns the i-th identity the pattern matched.
func (g *group) id(i int) string {
	if i < len(g.ids) {
		return g.ids[i]
	}
	return ""
}

// oldValue and newValue read the scalar at path (relative to the root when
// it begins with "." or "#", or the root itself when empty).
func (g *group) oldValue(rel string) string { return show(g.d.old[g.root+rel]) }
func (g *group) newValue(rel string) string { return show(g.d.new[g.root+rel]) }

// show renders a leaf's value for a message.
func show(l leaf) string {
	if l.kind == orderLeaf {
		return "[" + strings.Join(orderOf(l), " ") + "]"
	}
	return fmt.Sprintf("%q", l.value)
}

// details describes a group's changes relative to its root, at most a few.
func (g *group) details() string {
	var parts []string
	for _, c := range g.changes {
		rel := strings.TrimPrefix(strings.TrimPrefix(c.path, g.root), ".")
		switch {
		case strings.HasSuffix(c.path, "#order") && c.kind == modified:
			what := "order"
			if rel != "" && rel != "#order" {
				what = strings.TrimSuffix(rel, "#order") + " order"
			}
			parts = append(parts, fmt.Sprintf("%s %s → %s", what, show(c.old), show(c.new)))
		case strings.HasSuffix(c.path, "#order"):
			continue
		case c.kind == added && c.new.kind == elementLeaf:
			parts = append(parts, "added "+rel)
		case c.kind == removed && c.old.kind == elementLeaf:
			parts = append(parts, "removed "+rel)
		case c.kind == added:
			if g.d.new.parentAdded(c.path, g.d.old) {
				continue
			}
			parts = append(parts, fmt.Sprintf("%sset to %s", prefix(rel), show(c.new)))
		case c.kind == removed:
			if g.d.old.parentAdded(c.path, g.d.new) {
				continue
			}
			parts = append(parts, fmt.Sprintf("%s%s removed", prefix(rel), show(c.old)))
		default:
			parts = append(parts, fmt.Sprintf("%s%s → %s", prefix(rel), clip(show(c.old)), clip(show(c.new))))
		}
	}
	const most = 4
	if len(parts) > most {
		parts = append(parts[:most], fmt.Sprintf("and %d more", len(parts)-most))
	}
	return strings.Join(parts, "; ")
}

// parentAdded reports whether an element above path exists in t but not
// in other: the leaf came or went with its entry.
func (t tree) parentAdded(path string, other tree) bool {
	// The leaf itself is not its own parent: a map entry (with[name]) ends
	// in a bracket too.
	for i := len(path) - 2; i > 0; i-- {
		if path[i] != ']' || (i+1 < len(path) && path[i+1] != '.') {
			continue
		}
		p := path[:i+1]
		if _, in := t[p]; in {
			if _, out := other[p]; !out {
				return true
			}
		}
	}
	return false
}

// prefix names a leaf below the root, or nothing for the root itself.
func prefix(rel string) string {
	if rel == "" {
		return ""
	}
	return rel + " "
}

// clip shortens long values (script bodies) in messages.
func clip(s string) string {
	if s = strings.ReplaceAll(s, `\n`, " "); len(s) > 60 {
		return s[:57] + "…"
	}
	return s
}
