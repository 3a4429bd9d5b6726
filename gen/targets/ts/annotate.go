package ts

import (
	"sort"
	"strings"

	"github.com/echomq/echomq/gen/manifest"
	"github.com/echomq/echomq/gen/target"
)

// Annotate returns where the TypeScript identifiers the target declares
// come from (target.Annotator), read from the decoded manifest: for every
// manifest element that generates names in the wire layer (src/gen), the
// names in the order findings show them (the first is the element's), with
// the element's manifest path. The names are the ones the emitters of this
// package declare (constName, pascal, camel, VocabularyType).
func Annotate(m *manifest.Manifest) ([]target.Annotation, error) {
	var out []target.Annotation
	add := func(path string, idents ...string) {
		for _, id := range idents {
			out = append(out, target.Annotation{Path: path, Ident: id})
		}
	}
	for _, k := range m.Kinds {
		add(elem("kinds", k.Name.V), "KIND_"+k.Name.V)
	}
	for _, t := range m.Keys.Types {
		if t.Class.V == "queue" {
			add(elem("keys.types", t.Name.V), "QueueKeys."+camel(t.Name.V))
		}
	}
	for _, f := range m.Row.Fields {
		add(elem("row.fields", f.Name.V), "FIELD_"+constName(f.Role.V))
	}
	for _, s := range m.Row.States {
		add(elem("row.states", s.Name.V), "STATE_"+constName(s.Name.V))
	}
	for _, s := range m.Sets.List {
		add(elem("sets.list", s.Key.V), "SET_"+constName(s.Key.V))
	}
	for _, c := range m.Classes {
		add(elem("classes", c.Word.V), pascal(c.Name.V)+"Error", "CLASS_"+constName(c.Name.V))
	}
	for _, v := range m.Vocabularies {
		path := elem("vocabularies", v.Name.V)
		t := VocabularyType(v.Name.V)
		add(path, t)
		for _, w := range v.Words {
			add(path+elem(".words", w.Word.V), t+"."+camel(w.Word.V))
		}
	}
	for _, s := range m.Scripts {
		n := pascal(s.Name.V)
		path := elem("scripts", s.Name.V)
		add(path, "SCRIPT_"+constName(s.Name.V), n+"Call", n+"Reply")
		argNames := map[string]bool{}
		for _, a := range s.Argv {
			argNames[camel(a.Name.V)] = true
		}
		for _, k := range s.Keys {
			f := camel(k.Name.V)
			if argNames[f] {
				f += "Key" // as callFields names it
			}
			add(path+elem(".keys", k.Name.V), n+"Call."+f)
		}
		for _, a := range s.Argv {
			add(path+elem(".argv", a.Name.V), n+"Call."+camel(a.Name.V))
		}
		for _, e := range s.Reply.Elements {
			add(path+elem(".reply.elements", e.Name.V), n+"Reply."+camel(e.Name.V))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// elem is the manifest path of a list's entry by its identity, escaped as
// the classifier escapes it.
func elem(list, id string) string {
	return list + "[" + strings.NewReplacer(`\`, `\\`, `]`, `\]`).Replace(id) + "]"
}
