package golang

import (
	"sort"
	"strconv"
	"strings"

	"github.com/echomq/echomq/gen/manifest"
	"github.com/echomq/echomq/gen/target"
)

// Annotate returns where the Go identifiers the target declares come
// from (target.Annotator), read from the decoded manifest: for every manifest element that generates
// Go names, the names in the order findings show them (the first is the
// element's), with the element's manifest path; and, for the wire-layer
// names a whole section generates (QueueKeys over every key type, Lock...
// over the reserve's lock names), the section, as a Section annotation
// whose Ident is the names' common prefix. The names are the ones the
// emitters of this package declare (goName, WordConst, VocabularyType),
// so a finding names what the SDK spells.
func Annotate(m *manifest.Manifest) ([]target.Annotation, error) {
	var out []target.Annotation
	add := func(path string, idents ...string) {
		for _, id := range idents {
			out = append(out, target.Annotation{Path: path, Ident: id})
		}
	}
	for _, k := range m.Kinds {
		add(elem("kinds", k.Name.V), "Kind"+goName(k.Name.V))
	}
	for _, t := range m.Keys.Types {
		add(elem("keys.types", t.Name.V), "QueueKeys."+goName(t.Name.V))
	}
	for _, f := range m.Row.Fields {
		add(elem("row.fields", f.Name.V), "Field"+goName(f.Role.V))
	}
	for _, s := range m.Row.States {
		add(elem("row.states", s.Name.V), "State"+goName(s.Name.V))
	}
	for _, s := range m.Sets.List {
		add(elem("sets.list", s.Key.V), "Set"+goName(s.Key.V))
	}
	for _, r := range m.Reserve {
		ident, _, _ := strings.Cut(r.Member.V, ":")
		path := elem("reserve", r.Member.V)
		add(path, "Key"+goName(ident))
		for _, f := range r.Fields {
			lit, _, _ := strings.Cut(f.Name.V, ":")
			add(path+elem(".fields", f.Name.V), goName(strings.TrimSuffix(ident, "s"))+goName(lit))
		}
	}
	for _, c := range m.Classes {
		n := goName(c.Name.V)
		add(elem("classes", c.Word.V), "Err"+n, "Class"+n)
	}
	for _, v := range m.Vocabularies {
		path := elem("vocabularies", v.Name.V)
		add(path, VocabularyType(v.Name.V))
		for _, w := range v.Words {
			add(path+elem(".words", w.Word.V), WordConst(v.Name.V, w.Word.V))
		}
	}
	for _, s := range m.Scripts {
		n := goName(s.Name.V)
		path := elem("scripts", s.Name.V)
		add(path, "Script"+n, n+"Call", n+"Reply", "Decode"+n, n)
		for _, k := range s.Keys {
			add(path+elem(".keys", k.Name.V), n+"Call."+goName(k.Name.V))
		}
		for _, a := range s.Argv {
			add(path+elem(".argv", a.Name.V), n+"Call."+goName(a.Name.V))
		}
		for _, v := range s.Reply.Values {
			add(path+elem(".reply.values", strconv.FormatInt(v.Value.V, 10)), n+goName(v.Name.V))
		}
		for _, e := range s.Reply.Elements {
			add(path+elem(".reply.elements", e.Name.V), n+"Reply."+goName(e.Name.V))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	for _, s := range sections {
		out = append(out, target.Annotation{Path: s.section, Ident: s.prefix, Section: true})
	}
	return out, nil
}

// elem is the manifest path of a list's entry by its identity, escaped as
// the classifier escapes it (a "]" or "\" in an identity).
func elem(list, id string) string {
	return list + "[" + strings.NewReplacer(`\`, `\\`, `]`, `\]`).Replace(id) + "]"
}

// sections are the families of wire-layer names the whole of a manifest
// section generates, by their common prefix: the key builder over every
// key type, the reserve's lock names, the script table, the id canon.
var sections = []struct{ prefix, section string }{
	{"QueueKeys", "keys"}, {"NewQueueKeys", "keys"}, {"ValidateQueueName", "queues"}, {"QueuePattern", "queues"}, {"ErrQueueName", "queues"},
	{"KeyMigration", "reserve"}, {"ReserveKey", "reserve"}, {"Lock", "reserve"}, {"Probes", "reserve"},
	{"Script", "scripts"}, {"BundleDigest", "scripts"}, {"Decode", "scripts"},
	{"ID", "ids"}, {"ParseID", "ids"}, {"MustParseID", "ids"}, {"NewID", "ids"}, {"Generator", "ids"}, {"NewGenerator", "ids"}, {"ErrID", "ids"},
	{"Kind", "kinds"}, {"State", "row"}, {"ParseState", "row"}, {"RowFields", "row"}, {"FieldByRole", "row"}, {"Set", "sets"},
	{"ClassError", "classes"}, {"Classes", "classes"}, {"Class", "classes"},
	{"Protocol", "protocol"}, {"Version", "version"},
}
