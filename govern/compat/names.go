package compat

import (
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/echomq/echomq/gen/manifest"
	"github.com/echomq/echomq/gen/target"
	"github.com/echomq/echomq/govern/langs"
)

// An element of the manifest is named in findings by its wire identity —
// the class word, the script name, the key type, the state, the reply
// integer — with each language's identifier for it alongside, so that a
// reviewer reading a finding knows both what changes on the wire and
// which identifier of each SDK it is. The identifiers come from the
// annotations the targets return (lang.Language.Annotate, from each
// side's decoded manifest, valid or not): nothing here knows how a target
// names things.

// elementKind is one kind of manifest element.
type elementKind struct {
	pat  pattern
	word string // what the element is, for people
}

var elementKinds = []elementKind{
	{pat("kinds[*]"), "kind"},
	{pat("keys.classes[*]"), "key class"},
	{pat("keys.types[*]"), "key type"},
	{pat("row.fields[*]"), "row field"},
	{pat("row.states[*]"), "state"},
	{pat("sets.list[*]"), "set"},
	{pat("reserve[*].fields[*]"), "lock name"},
	{pat("reserve[*]"), "reserve member"},
	{pat("classes[*]"), "wire class"},
	{pat("vocabularies[*].words[*]"), "word"},
	{pat("vocabularies[*]"), "vocabulary"},
	{pat("scripts[*].refusals[*]"), "refusal"},
	{pat("scripts[*].reply.values[*]"), "reply value"},
	{pat("scripts[*].reply.elements[*]"), "reply element"},
	{pat("scripts[*].keys[*]"), "KEYS slot"},
	{pat("scripts[*].argv[*]"), "ARGV slot"},
	{pat("scripts[*]"), "script"},
	{pat("retired[*]"), "tombstone"},
}

// names are one side's annotations, by language in the order of
// govern/langs.
type names []langNames

// langNames are one language's annotations of one side.
type langNames struct {
	name, title string
	// byPath lists each element's identifiers, its own first.
	byPath map[string][]string
	// byIdent maps an identifier to the element that generates it (the
	// first in path order, should two).
	byIdent map[string]string
	// sections are the families of names a whole section generates.
	sections []target.Annotation
}

// namesOf reads every language's annotations of a decoded manifest
// (lang.Language.Annotate); a language that returns none, or fails to,
// names nothing.
func namesOf(m *manifest.Manifest) names {
	if m == nil {
		return nil
	}
	var out names
	for _, l := range langs.All() {
		as, err := l.Annotate(m)
		if err != nil || as == nil {
			continue
		}
		ln := langNames{name: l.Name(), title: l.Title(), byPath: map[string][]string{}, byIdent: map[string]string{}}
		sorted := make([]target.Annotation, 0, len(as))
		for _, a := range as {
			if a.Section {
				ln.sections = append(ln.sections, a)
				continue
			}
			sorted = append(sorted, a)
		}
		sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
		for _, a := range sorted {
			ln.byPath[a.Path] = append(ln.byPath[a.Path], a.Ident)
			if _, taken := ln.byIdent[a.Ident]; !taken {
				ln.byIdent[a.Ident] = a.Path
			}
		}
		out = append(out, ln)
	}
	return out
}

// of returns the annotations of the language named name, or nil.
func (n names) of(name string) *langNames {
	for i := range n {
		if n[i].name == name {
			return &n[i]
		}
	}
	return nil
}

// label names the element at path in every language that annotates it:
// "Go: ErrKind" (several joined by "; "); idents lists the identifiers.
func (n names) label(path string) (label string, idents []string) {
	var parts []string
	for _, l := range n {
		if ids := l.byPath[path]; len(ids) > 0 && ids[0] != "" {
			parts = append(parts, l.title+": "+ids[0])
			idents = append(idents, ids[0])
		}
	}
	return strings.Join(parts, "; "), idents
}

// describe names the element at root (a path the element kinds match
// exactly), read from t with its annotations n: `wire class "EMQKIND"
// (Go: ErrKind)`. ok is false for a path that is no element of a known
// kind.
func describe(t tree, n names, root string) (string, bool) {
	for _, k := range elementKinds {
		ids, ok := k.pat.exact(root)
		if !ok {
			continue
		}
		s := fmt.Sprintf("%s %q", k.word, ids[len(ids)-1])
		if k.word == "reply value" {
			s = fmt.Sprintf("%s %s of script %q", k.word, ids[1], ids[0])
		}
		if _, in := t[root]; in {
			if label, _ := n.label(root); label != "" {
				s += " (" + label + ")"
			}
		}
		return s, true
	}
	return "", false
}

// nameOf labels the innermost element enclosing path (or path itself)
// that some language annotates, read from t with its annotations n; ""
// when none does.
func nameOf(t tree, n names, path string) (label string, idents []string) {
	for p := path; p != ""; p = parentElement(p) {
		if _, in := t[p]; !in {
			continue
		}
		if label, idents := n.label(p); label != "" {
			return label, idents
		}
	}
	return "", nil
}

// locate finds the manifest element that generates an identifier of an
// API line: the first identifier (or Type.Field pair) the annotations
// know.
func (l *langNames) locate(line string) (string, bool) {
	if l == nil {
		return "", false
	}
	ws := identsOf(line)
	for i, w := range ws {
		if i+1 < len(ws) {
			if p, ok := l.byIdent[w+"."+ws[i+1]]; ok {
				return p, true
			}
		}
		if p, ok := l.byIdent[w]; ok {
			return p, true
		}
	}
	return "", false
}

// section is the manifest section an API key's name comes from: the
// section annotation whose family (its Ident, a prefix) is the longest
// that starts the key's first exported identifier; "protocol", the top,
// when none does.
func (l *langNames) section(key string) string {
	if l == nil {
		return "protocol"
	}
	name := ""
	for _, w := range identsOf(key) {
		if w == "pkg" {
			continue
		}
		if w != "" && unicode.IsUpper(rune(w[0])) {
			name = w
			break
		}
	}
	best, section := "", "protocol"
	for _, s := range l.sections {
		if strings.HasPrefix(name, s.Ident) && len(s.Ident) > len(best) {
			best, section = s.Ident, s.Path
		}
	}
	return section
}

// apiKeywords are the words of an API line that name no identifier.
var apiKeywords = map[string]bool{"type": true, "struct": true, "interface": true, "func": true, "method": true, "const": true, "var": true, "untyped": true}

// identsOf splits an API line into its identifiers, in order.
func identsOf(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' }) {
		if !apiKeywords[w] {
			out = append(out, w)
		}
	}
	return out
}

// parentElement cuts path back to the element that encloses it: the
// longest proper prefix ending in "]"; "" when there is none.
func parentElement(path string) string {
	for i := len(path) - 2; i > 0; i-- {
		if path[i] == ']' && (path[i+1] == '.' || path[i+1] == '#' || path[i+1] == '[') {
			return path[:i+1]
		}
	}
	return ""
}
