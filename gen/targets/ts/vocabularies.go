package ts

import (
	"fmt"
	"strings"

	"github.com/echomq/echomq/gen/model"
)

// VocabularyType is the TypeScript type (and const object) of a
// vocabulary: failure_class -> FailureClass.
func VocabularyType(v string) string { return pascal(v) }

// argTS is the TypeScript type of an ARGV slot: its vocabulary's type
// when it has one.
func argTS(a model.Arg) string {
	if a.Vocabulary != "" {
		return VocabularyType(a.Vocabulary)
	}
	return tsType(a.Type)
}

// elementTS is the TypeScript type of a reply element.
func elementTS(e model.Arg) string {
	if e.Vocabulary != "" {
		return VocabularyType(e.Vocabulary)
	}
	return replyType(e.Type)
}

// vocabulariesCode writes each vocabulary: a const object of its words, the
// union type of their values, the list and the guard.
func vocabulariesCode(s *src, p *model.Protocol) {
	for _, v := range p.Vocabularies {
		t := VocabularyType(v.Name)
		list := constName(v.Plural())
		text := fmt.Sprintf("The words of the %s vocabulary, in manifest order.", v.Name)
		if sm := strings.TrimSpace(v.Summary); sm != "" {
			text += " " + sentence(sm)
		}
		text += deprecatedTag(v.Deprecated)
		s.doc("", text)
		s.line("export const " + t + " = {")
		for _, w := range v.Words {
			s.doc("  ", sentence(w.Summary)+deprecatedTag(w.Deprecated))
			s.line("  " + camel(w.Word) + ": " + q(w.Word) + ",")
		}
		s.line("} as const;")
		s.blank()
		s.doc("", fmt.Sprintf("A word of the %s vocabulary.", v.Name))
		s.line("export type " + t + " = (typeof " + t + ")[keyof typeof " + t + "];")
		s.blank()
		var items []string
		for _, w := range v.Words {
			items = append(items, t+"."+camel(w.Word))
		}
		s.doc("", fmt.Sprintf("Every word of the %s vocabulary, in manifest order.", v.Name))
		s.list("", "export const "+list+": readonly "+t+"[] = [", items, "];")
		s.blank()
		s.doc("", fmt.Sprintf("Reports whether s is a word of the %s vocabulary.", v.Name))
		s.line("export function is" + t + "(s: string): s is " + t + " {")
		s.line("  return (" + list + " as readonly string[]).includes(s);")
		s.line("}")
		s.blank()
	}
}

// deprecatedTag is a JSDoc @deprecated paragraph, or "".
func deprecatedTag(d *model.Deprecation) string {
	if d == nil {
		return ""
	}
	text := "\n\n@deprecated since " + d.Since.String() + "."
	if d.Reason != "" {
		text += " " + strings.TrimSpace(d.Reason)
	}
	return text
}

// usedVocabularies are the types of the vocabularies some script argument
// or reply element carries, in manifest order.
func usedVocabularies(p *model.Protocol) []string {
	used := map[string]bool{}
	for _, sc := range p.Scripts {
		for _, a := range append(append([]model.Arg(nil), sc.Argv...), sc.Reply.Elements...) {
			if a.Vocabulary != "" {
				used[a.Vocabulary] = true
			}
		}
	}
	var out []string
	for _, v := range p.Vocabularies {
		if used[v.Name] {
			out = append(out, VocabularyType(v.Name))
		}
	}
	return out
}
