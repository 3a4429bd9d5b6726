package compat

import (
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/echomq/echomq/gen/targets/golang"
)

// An element of the manifest is named in findings by its wire identity —
// the class word, the script name, the key type, the state, the reply
// integer — with the Go name the Go target generates for it alongside, so
// that a reviewer reading a finding knows both what changes on the wire
// and which identifier of the SDK it is.

// elementKind is one kind of manifest element.
type elementKind struct {
	pat  pattern
	word string // what the element is, for people
	// goNames lists the Go identifiers the element generates, the name a
	// finding shows first. ids are the pattern's identities; t is the tree
	// the element is read from.
	goNames func(t tree, root string, ids []string) []string
}

var elementKinds = []elementKind{
	{pat("kinds[*]"), "kind", func(_ tree, _ string, ids []string) []string { return []string{"Kind" + golang.GoName(ids[0])} }},
	{pat("keys.classes[*]"), "key class", nil},
	{pat("keys.types[*]"), "key type", func(_ tree, _ string, ids []string) []string { return []string{"QueueKeys." + golang.GoName(ids[0])} }},
	{pat("row.fields[*]"), "row field", func(t tree, root string, _ []string) []string {
		return []string{"Field" + golang.GoName(t[root+".role"].value)}
	}},
	{pat("row.states[*]"), "state", func(_ tree, _ string, ids []string) []string { return []string{"State" + golang.GoName(ids[0])} }},
	{pat("sets.list[*]"), "set", func(_ tree, _ string, ids []string) []string { return []string{"Set" + golang.GoName(ids[0])} }},
	{pat("reserve[*].fields[*]"), "lock name", func(_ tree, _ string, ids []string) []string {
		ident, _, _ := strings.Cut(ids[0], ":")
		lit, _, _ := strings.Cut(ids[1], ":")
		return []string{golang.GoName(strings.TrimSuffix(ident, "s")) + golang.GoName(lit)}
	}},
	{pat("reserve[*]"), "reserve member", func(_ tree, _ string, ids []string) []string {
		ident, _, _ := strings.Cut(ids[0], ":")
		return []string{"Key" + golang.GoName(ident)}
	}},
	{pat("classes[*]"), "wire class", func(t tree, root string, _ []string) []string {
		n := golang.GoName(t[root+".name"].value)
		return []string{"Err" + n, "Class" + n}
	}},
	{pat("vocabularies[*].words[*]"), "word", func(_ tree, _ string, ids []string) []string {
		return []string{golang.WordConst(ids[0], ids[1])}
	}},
	{pat("vocabularies[*]"), "vocabulary", func(_ tree, _ string, ids []string) []string {
		return []string{golang.VocabularyType(ids[0])}
	}},
	{pat("scripts[*].refusals[*]"), "refusal", nil},
	{pat("scripts[*].reply.values[*]"), "reply value", func(t tree, root string, ids []string) []string {
		return []string{golang.GoName(ids[0]) + golang.GoName(t[root+".name"].value)}
	}},
	{pat("scripts[*].reply.elements[*]"), "reply element", func(_ tree, _ string, ids []string) []string {
		return []string{golang.GoName(ids[0]) + "Reply." + golang.GoName(ids[1])}
	}},
	{pat("scripts[*].keys[*]"), "KEYS slot", func(_ tree, _ string, ids []string) []string {
		return []string{golang.GoName(ids[0]) + "Call." + golang.GoName(ids[1])}
	}},
	{pat("scripts[*].argv[*]"), "ARGV slot", func(_ tree, _ string, ids []string) []string {
		return []string{golang.GoName(ids[0]) + "Call." + golang.GoName(ids[1])}
	}},
	{pat("scripts[*]"), "script", func(_ tree, _ string, ids []string) []string {
		n := golang.GoName(ids[0])
		return []string{"Script" + n, n + "Call", n + "Reply", "Decode" + n, n}
	}},
	{pat("retired[*]"), "tombstone", nil},
}

// describe names the element at root (a path the element kinds match
// exactly), read from t: `wire class "EMQKIND" (Go: ErrKind)`. ok is false
// for a path that is no element of a known kind.
func describe(t tree, root string) (string, bool) {
	for _, k := range elementKinds {
		ids, ok := k.pat.exact(root)
		if !ok {
			continue
		}
		s := fmt.Sprintf("%s %q", k.word, ids[len(ids)-1])
		if k.word == "reply value" {
			s = fmt.Sprintf("%s %s of script %q", k.word, ids[1], ids[0])
		}
		if k.goNames != nil {
			if _, in := t[root]; in {
				if names := k.goNames(t, root, ids); len(names) > 0 && names[0] != "" {
					s += " (Go: " + names[0] + ")"
				}
			}
		}
		return s, true
	}
	return "", false
}

// goIdents maps every Go identifier an element of t generates to the
// element's path.
func goIdents(t tree) map[string]string {
	out := map[string]string{}
	paths := make([]string, 0, len(t))
	for p, l := range t {
		if l.kind == elementLeaf {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		for _, k := range elementKinds {
			ids, ok := k.pat.exact(p)
			if !ok || k.goNames == nil {
				continue
			}
			for _, n := range k.goNames(t, p, ids) {
				if _, taken := out[n]; !taken {
					out[n] = p
				}
			}
			break
		}
	}
	return out
}

// apiKeywords are the words of an API line that name no identifier.
var apiKeywords = map[string]bool{"type": true, "struct": true, "interface": true, "func": true, "method": true, "const": true, "var": true, "untyped": true}

// identsOf splits a Go API line into its identifiers, in order.
func identsOf(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' }) {
		if !apiKeywords[w] {
			out = append(out, w)
		}
	}
	return out
}

// goNameOf is the Go name of the innermost element enclosing path (or path
// itself) that generates one, read from t; "" when none does.
func goNameOf(t tree, path string) string {
	for p := path; p != ""; p = parentElement(p) {
		if _, in := t[p]; !in {
			continue
		}
		for _, k := range elementKinds {
			ids, ok := k.pat.exact(p)
			if !ok {
				continue
			}
			if k.goNames == nil {
				break
			}
			if names := k.goNames(t, p, ids); len(names) > 0 && names[0] != "" {
				return names[0]
			}
			break
		}
	}
	return ""
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
