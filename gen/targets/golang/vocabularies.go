package golang

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/echomq/echomq/gen/model"
)

// VocabularyType is the Go type the Go target gives a vocabulary
// (failure_class -> FailureClass).
func VocabularyType(v string) string { return goName(v) }

// WordConst is the Go constant of a vocabulary's word
// (failure_class, lease_lost -> FailureClassLeaseLost).
func WordConst(v, w string) string { return goName(v) + goName(w) }

// VocabularyList is the Go function that lists a vocabulary's words
// (failure_class -> FailureClasses).
func VocabularyList(v model.Vocabulary) string { return goName(v.Plural()) }

// argType is the Go type of an ARGV slot or reply element: its
// vocabulary's type when it has one.
func argType(a model.Arg) *jen.Statement {
	if a.Vocabulary != "" {
		return jen.Id(VocabularyType(a.Vocabulary))
	}
	return goType(a.Type)
}

// vocabulariesCode writes each vocabulary of the wire package: a string
// type, one constant per word, the list and Registered.
func vocabulariesCode(f *jen.File, p *model.Protocol) {
	for _, v := range p.Vocabularies {
		t := VocabularyType(v.Name)
		text := fmt.Sprintf("is a word of the %s vocabulary", v.Name)
		if s := strings.TrimSpace(v.Summary); s != "" {
			text += ": " + s
		}
		comment(f, doc(t, text))
		for _, c := range deprecation(v.Deprecated) {
			f.Add(c)
		}
		f.Type().Id(t).String()
		f.Line()
		var defs, words []jen.Code
		for _, w := range v.Words {
			n := WordConst(v.Name, w.Word)
			defs = append(append(append(defs, jen.Comment(doc(n, fmt.Sprintf("is %q: %s", w.Word, lowerFirst(w.Summary))))), deprecation(w.Deprecated)...), jen.Id(n).Id(t).Op("=").Lit(w.Word))
			words = append(words, jen.Id(n))
		}
		comment(f, fmt.Sprintf("The words of the %s vocabulary.", v.Name))
		f.Const().Defs(defs...)
		f.Line()
		list := VocabularyList(v)
		comment(f, fmt.Sprintf("%s returns the words of the %s vocabulary in manifest order.", list, v.Name))
		f.Func().Id(list).Params().Index().Id(t).Block(jen.Return(jen.Index().Id(t).Values(words...)))
		f.Line()
		comment(f, fmt.Sprintf("Registered reports whether c is a word of the %s vocabulary.", v.Name))
		f.Func().Params(jen.Id("c").Id(t)).Id("Registered").Params().Bool().Block(
			jen.Switch(jen.Id("c")).Block(jen.Case(words...).Block(jen.Return(jen.True()))),
			jen.Return(jen.False()),
		)
		f.Line()
	}
}

// vocabularyReexports writes the re-exports of package emq: each
// vocabulary's type (an alias), its words and its list.
func vocabularyReexports(f *jen.File, p *model.Protocol) {
	w := func(name string) *jen.Statement { return jen.Qual(WirePath, name) }
	for _, v := range p.Vocabularies {
		t := VocabularyType(v.Name)
		comment(f, fmt.Sprintf("%s is a word of the %s vocabulary (wire.%s).", t, v.Name, t))
		f.Type().Id(t).Op("=").Add(w(t))
		f.Line()
		var defs []jen.Code
		for _, x := range v.Words {
			n := WordConst(v.Name, x.Word)
			defs = append(defs, jen.Comment(doc(n, fmt.Sprintf("is %q: %s", x.Word, lowerFirst(x.Summary)))), jen.Id(n).Op("=").Add(w(n)))
		}
		comment(f, fmt.Sprintf("The words of the %s vocabulary.", v.Name))
		f.Const().Defs(defs...)
		f.Line()
		list := VocabularyList(v)
		comment(f, fmt.Sprintf("%s returns the words of the %s vocabulary in manifest order (wire.%s).", list, v.Name, list))
		f.Func().Id(list).Params().Index().Id(t).Block(jen.Return(w(list).Call()))
		f.Line()
	}
}
