package golang

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/model"
)

func errorsFile(f *jen.File, p *model.Protocol, _ *bundle.Bundle) {
	var consts, sentinels, words []jen.Code
	for _, c := range p.Classes {
		name := goName(c.Name)
		consts = append(consts, jen.Comment(doc("Class"+name, fmt.Sprintf("is the class word of refusals issued by %s: %s", strings.Join(c.IssuedBy, ", "), c.Summary))), jen.Id("Class"+name).Op("=").Lit(c.Word))
		sentinels = append(sentinels, jen.Comment(doc("Err"+name, fmt.Sprintf("means a script refused with wire class %s: %s Match it with errors.Is; errors.As to *ClassError gives the message and the script", c.Word, strings.TrimSuffix(c.Summary, ".")+"."))))
		sentinels = append(sentinels, deprecation(c.Deprecated)...)
		sentinels = append(sentinels,
			jen.Id("Err"+name).Op("=").Op("&").Id("ClassError").Values(jen.Id("Class").Op(":").Id("Class"+name)),
		)
		words = append(words, jen.Id("Class"+name))
	}
	comment(f, "Wire classes: the first word of every refusal a bundle script issues.")
	f.Const().Defs(consts...)
	f.Line()
	comment(f, "The wire-class sentinels.")
	f.Var().Defs(sentinels...)
	f.Line()
	comment(f, "Classes returns the wire-class registry in manifest order.")
	f.Func().Id("Classes").Params().Index().String().Block(jen.Return(jen.Index().String().Values(words...)))
	f.Line()
	comment(f, `ClassError is a refusal a bundle script issued: an error reply whose
first word is a registered wire class. A sentinel (ErrKind, ErrStale, ...)
has only Class set and matches, under errors.Is, every ClassError of its
class.`)
	f.Type().Id("ClassError").Struct(
		jen.Id("Class").String().Comment("the class word"),
		jen.Id("Message").String().Comment("the rest of the reply"),
		jen.Id("Script").String().Comment("the script that refused; empty for a sentinel"),
	)
	f.Line()
	comment(f, "Error returns \"emq: <script>: <class> <message>\".")
	f.Func().Params(jen.Id("e").Op("*").Id("ClassError")).Id("Error").Params().String().Block(
		jen.Id("s").Op(":=").Lit("emq: "),
		jen.If(jen.Id("e").Dot("Script").Op("!=").Lit("")).Block(jen.Id("s").Op("+=").Id("e").Dot("Script").Op("+").Lit(": ")),
		jen.Id("s").Op("+=").Id("e").Dot("Class"),
		jen.If(jen.Id("e").Dot("Message").Op("!=").Lit("")).Block(jen.Id("s").Op("+=").Lit(" ").Op("+").Id("e").Dot("Message")),
		jen.Return(jen.Id("s")),
	)
	f.Line()
	comment(f, "Is reports whether target is the sentinel of e's class.")
	f.Func().Params(jen.Id("e").Op("*").Id("ClassError")).Id("Is").Params(jen.Id("target").Error()).Bool().Block(
		jen.List(jen.Id("t"), jen.Id("ok")).Op(":=").Id("target").Assert(jen.Op("*").Id("ClassError")),
		jen.Return(jen.Id("ok").Op("&&").Id("t").Dot("Class").Op("==").Id("e").Dot("Class").Op("&&").Id("t").Dot("Message").Op("==").Lit("").Op("&&").Id("t").Dot("Script").Op("==").Lit("")),
	)
	f.Line()
	comment(f, "ScriptError turns the error of a call of script into a *ClassError when it is an error reply whose first word is a registered class, and wraps any other error with the script's name; nil stays nil.")
	// A protocol without wire classes has no error reply to recognise.
	recognise := jen.Null()
	if len(words) > 0 {
		recognise = jen.If(jen.List(jen.Id("re"), jen.Id("ok")).Op(":=").Qual(rueidisPath, "IsRedisErr").Call(jen.Err()), jen.Id("ok")).Block(
			jen.List(jen.Id("word"), jen.Id("rest"), jen.Id("_")).Op(":=").Qual("strings", "Cut").Call(jen.Id("re").Dot("Error").Call(), jen.Lit(" ")),
			jen.Switch(jen.Id("word")).Block(
				jen.Case(words...).Block(jen.Return(jen.Op("&").Id("ClassError").Values(jen.Dict{
					jen.Id("Class"):   jen.Id("word"),
					jen.Id("Message"): jen.Id("rest"),
					jen.Id("Script"):  jen.Id("script"),
				}))),
			),
		)
	}
	f.Func().Id("ScriptError").Params(jen.Id("script").String(), jen.Err().Error()).Error().Block(
		jen.If(jen.Err().Op("==").Nil()).Block(jen.Return(jen.Nil())),
		recognise,
		jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit("emq: %s: %w"), jen.Id("script"), jen.Err())),
	)
}
