package compat

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/echomq/echomq/gen/manifest"
)

// A manifest is compared as a flat set of leaves. Every scalar the manifest
// gives is a leaf at a path such as keys.types[pending].redis; every entry
// of a list is also a leaf of its own (keys.types[pending], an element
// leaf), so that a deleted or added entry is one change; and every list of
// entries has an order leaf (keys.types#order) listing its entries in file
// order. Entries are identified by their name (or key, member, id,
// version, bump), never by position, so that an insertion does not look
// like a rewrite of everything after it; probe steps, whose order is their
// meaning, are identified by position. Wire classes are identified by their
// word and reply values by their integer: the identity on the wire, not the
// Go name.
//
// Only lists whose order carries meaning have an order leaf (see
// orderedLists); every other list is a set, so reordering it is no change
// at all.

type leafKind int

const (
	scalarLeaf  leafKind = iota
	elementLeaf          // an entry of a list; Value is empty
	orderLeaf            // the identities of a list's entries, in file order
)

// leaf is one fact of a manifest.
type leaf struct {
	kind  leafKind
	value string
	pos   manifest.Pos
}

// tree is a manifest's leaves by path.
type tree map[string]leaf

// flatten turns a decoded manifest into leaves.
func flatten(m *manifest.Manifest) tree {
	t, _ := flattenWith(m)
	return t
}

// flattenWith turns a decoded manifest into leaves and also locates its
// lists, so that a finding about a deleted entry can point at the list
// that held it.
func flattenWith(m *manifest.Manifest) (tree, map[string]manifest.Pos) {
	w := &walker{t: tree{}, lists: map[string]manifest.Pos{}}
	w.walk(reflect.ValueOf(*m), "", m.Pos)
	return w.t, w.lists
}

// walker flattens one manifest: its leaves, and where each list is (the
// position of its first entry, or of the element holding it when empty).
type walker struct {
	t     tree
	lists map[string]manifest.Pos
}

var (
	strType  = reflect.TypeOf(manifest.Str{})
	intType  = reflect.TypeOf(manifest.Int{})
	boolType = reflect.TypeOf(manifest.Bool{})
	mapType  = reflect.TypeOf(manifest.Map{})
	posType  = reflect.TypeOf(manifest.Pos{})
)

// identityFields are the fields that identify an entry of a list, in order
// of preference (a set has a key and a member: its key names it).
var identityFields = []string{"word", "name", "key", "member", "id", "version", "bump"}

// orderedLists are the lists whose order is meaning, by name: the bundle's
// scripts (the bundle digest hashes their SHA-1s in manifest order), a
// script's KEYS and ARGV and its reply's array elements (callers pass and
// decode them by position), the snowflake layout (most significant bits
// first), probe steps (run in order) and the version history (recorded
// monotonically). Every other list — kinds, key classes and types, row
// fields, states, sets, reserve members and their fields, wire classes,
// refusals, transitions, reply values, examples, governance rules,
// tombstones — is a set.
var orderedLists = map[string]bool{"scripts": true, "keys": true, "argv": true, "elements": true, "layout": true, "steps": true, "history": true}

// positional lists are identified by position: their order is their
// meaning and their entries have no name.
var positional = map[string]bool{"steps": true}

// orderedScalars are lists of strings whose order is their meaning; they
// are compared as one value. Other lists of strings are sets.
var orderedScalars = map[string]bool{"command": true}

// defaultDuty is the writer duty of a key type or row field that declares
// none: a key type is a hint (as the wake doorbell is: old writers never
// touch a new one), a row field is every writer's duty.
func defaultDuty(path string) string {
	if strings.HasPrefix(path, "row.fields[") {
		return "every-writer"
	}
	return "hint"
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// escapeIdent keeps an identity from closing its brackets early.
func escapeIdent(s string) string {
	return strings.NewReplacer(`\`, `\\`, `]`, `\]`).Replace(s)
}

func (w *walker) walk(v reflect.Value, path string, pos manifest.Pos) {
	switch v.Type() {
	case strType:
		s := v.Interface().(manifest.Str)
		if s.V == "" && strings.HasSuffix(path, ".duty") {
			s.V = defaultDuty(path)
		}
		w.t[path] = leaf{value: s.V, pos: s.Pos}
		return
	case intType:
		i := v.Interface().(manifest.Int)
		if i.Set {
			w.t[path] = leaf{value: strconv.FormatInt(i.V, 10), pos: i.Pos}
		}
		return
	case boolType:
		b := v.Interface().(manifest.Bool)
		p := b.Pos
		if p.IsZero() {
			p = pos
		}
		w.t[path] = leaf{value: strconv.FormatBool(b.V), pos: p}
		return
	case mapType:
		for _, pair := range v.Interface().(manifest.Map) {
			w.t[path+"["+escapeIdent(pair.Key.V)+"]"] = leaf{value: pair.Value.V, pos: pair.Value.Pos}
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			w.walk(v.Elem(), path, pos)
		}
	case reflect.Struct:
		if p := v.FieldByName("Pos"); p.IsValid() && p.Type() == posType {
			pos = p.Interface().(manifest.Pos)
		}
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "" {
				continue
			}
			w.walk(v.Field(i), join(path, name), pos)
		}
	case reflect.Slice:
		w.list(v, path, pos)
	default:
		panic(fmt.Sprintf("compat: cannot flatten %s at %s", v.Type(), path))
	}
}

func (w *walker) list(v reflect.Value, path string, pos manifest.Pos) {
	name := path[strings.LastIndexAny(path, ".]")+1:]
	if v.Type().Elem() == strType {
		var vals []string
		for i := 0; i < v.Len(); i++ {
			vals = append(vals, v.Index(i).Interface().(manifest.Str).V)
		}
		if orderedScalars[name] {
			p := pos
			if v.Len() > 0 {
				p = v.Index(0).Interface().(manifest.Str).Pos
			}
			b, _ := json.Marshal(vals)
			w.t[path] = leaf{value: string(b), pos: p}
			return
		}
		for i := 0; i < v.Len(); i++ {
			s := v.Index(i).Interface().(manifest.Str)
			w.t[path+"["+escapeIdent(s.V)+"]"] = leaf{kind: elementLeaf, pos: s.Pos}
		}
		return
	}
	w.lists[path] = pos
	if v.Len() > 0 {
		if p := v.Index(0).FieldByName("Pos"); p.IsValid() {
			w.lists[path] = p.Interface().(manifest.Pos)
		}
	}
	var idents []string
	seen := map[string]int{}
	first := pos
	for i := 0; i < v.Len(); i++ {
		e := v.Index(i)
		id := strconv.Itoa(i + 1)
		if !positional[name] {
			id = identity(e)
		}
		if seen[id]++; seen[id] > 1 {
			id = fmt.Sprintf("%s#%d", id, seen[id])
		}
		idents = append(idents, id)
		ep := pos
		if p := e.FieldByName("Pos"); p.IsValid() {
			ep = p.Interface().(manifest.Pos)
		}
		if i == 0 {
			first = ep
		}
		epath := path + "[" + escapeIdent(id) + "]"
		w.t[epath] = leaf{kind: elementLeaf, pos: ep}
		w.walk(e, epath, ep)
	}
	if v.Len() > 0 && orderedLists[name] {
		w.t[path+"#order"] = leaf{kind: orderLeaf, value: strings.Join(idents, "\x00"), pos: first}
	}
}

// identity names an entry of a list: its first identity field, or from and
// to for a transition.
func identity(e reflect.Value) string {
	if from, to := e.FieldByName("From"), e.FieldByName("To"); from.IsValid() && to.IsValid() {
		return from.Interface().(manifest.Str).V + "->" + to.Interface().(manifest.Str).V
	}
	// A tombstone is what it names and the name: a state and a set may
	// share a name.
	if what, name := e.FieldByName("What"), e.FieldByName("Name"); what.IsValid() && name.IsValid() {
		return what.Interface().(manifest.Str).V + " " + name.Interface().(manifest.Str).V
	}
	// A reply value is its integer.
	if v := e.FieldByName("Value"); v.IsValid() && v.Type() == intType {
		return strconv.FormatInt(v.Interface().(manifest.Int).V, 10)
	}
	for _, f := range identityFields {
		for i := 0; i < e.NumField(); i++ {
			name, _, _ := strings.Cut(e.Type().Field(i).Tag.Get("yaml"), ",")
			if name != f {
				continue
			}
			if e.Field(i).Type() == strType {
				return e.Field(i).Interface().(manifest.Str).V
			}
		}
	}
	panic(fmt.Sprintf("compat: %s has no identity field", e.Type()))
}

// changeKind is how a leaf differs between two manifests.
type changeKind int

const (
	added changeKind = iota
	removed
	modified
)

// change is one leaf that differs.
type change struct {
	path     string
	kind     changeKind
	old, new leaf
}

// side is the leaf that locates the change: the old one for a removal, the
// new one otherwise. An optional string the new manifest leaves out reads
// as empty and has no position: its change is located where the old value
// was, as a removal is.
func (c *change) side() (leaf, bool) {
	if c.kind == removed || c.kind == modified && c.new.pos.IsZero() && !c.old.pos.IsZero() {
		return c.old, true
	}
	return c.new, false
}

// diffTrees lists the leaves that differ, sorted by path.
func diffTrees(old, new tree) []*change {
	var out []*change
	for p, o := range old {
		n, ok := new[p]
		switch {
		case !ok:
			out = append(out, &change{path: p, kind: removed, old: o})
		case o.value != n.value || o.kind != n.kind:
			out = append(out, &change{path: p, kind: modified, old: o, new: n})
		}
	}
	for p, n := range new {
		if _, ok := old[p]; !ok {
			out = append(out, &change{path: p, kind: added, new: n})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

// under reports whether path is root or lies beneath it.
func under(path, root string) bool {
	if !strings.HasPrefix(path, root) {
		return false
	}
	if len(path) == len(root) {
		return true
	}
	switch path[len(root)] {
	case '.', '[', '#':
		return true
	}
	return false
}

// orderOf splits an order leaf's value into identities.
func orderOf(l leaf) []string {
	if l.value == "" {
		return nil
	}
	return strings.Split(l.value, "\x00")
}
