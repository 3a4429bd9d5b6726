package golang

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/model"
)

func protocolFile(f *jen.File, p *model.Protocol, _ *bundle.Bundle) {
	vm, _ := p.Member("version")
	prefix, _, _ := strings.Cut(vm.Value, "<major>")
	comment(f, doc("Protocol", fmt.Sprintf("is the name of the wire protocol: %s", p.Summary)))
	f.Const().Id("Protocol").Op("=").Lit(p.Name)
	f.Line()
	comment(f, doc("Version", "is the wire version this package speaks"))
	f.Const().Id("Version").Op("=").Lit(p.Version.String())
	f.Line()
	comment(f, "VersionMajor, VersionMinor and VersionPatch are the parts of Version.")
	f.Const().Defs(
		jen.Id("VersionMajor").Op("=").Lit(p.Version.Major),
		jen.Id("VersionMinor").Op("=").Lit(p.Version.Minor),
		jen.Id("VersionPatch").Op("=").Lit(p.Version.Patch),
	)
	f.Line()
	comment(f, doc("VersionRecord", fmt.Sprintf("is the value of the reserve's version member that this package claims and fences on (%s)", vm.Value)))
	f.Const().Id("VersionRecord").Op("=").Lit(p.VersionRecord())
	f.Line()
	comment(f, "VersionRecordPrefix starts every version record; the major, minor and patch follow it.")
	f.Const().Id("VersionRecordPrefix").Op("=").Lit(prefix)
	f.Line()

	// Kinds.
	comment(f, "Kind is the namespace that starts every branded id: KindLength ASCII capitals.")
	f.Type().Id("Kind").String()
	f.Line()
	var defs []jen.Code
	for _, k := range p.Kinds {
		defs = append(append(append(defs, jen.Comment(doc("Kind"+k.Name, "is "+k.Summary))), deprecation(k.Deprecated)...), jen.Id("Kind"+k.Name).Id("Kind").Op("=").Lit(k.Name))
	}
	comment(f, "The kind registry.")
	f.Const().Defs(defs...)
	f.Line()
	work := p.WorkKind()
	comment(f, doc("WorkKind", fmt.Sprintf("is the only kind the enqueue scripts admit in the job position (%s); any other kind is refused with ErrKind", work.Name)))
	f.Const().Id("WorkKind").Op("=").Id("Kind" + work.Name)
	f.Line()
	var kinds []jen.Code
	for _, k := range p.Kinds {
		kinds = append(kinds, jen.Id("Kind"+k.Name))
	}
	comment(f, "Kinds returns the kind registry in manifest order.")
	f.Func().Id("Kinds").Params().Index().Id("Kind").Block(jen.Return(jen.Index().Id("Kind").Values(kinds...)))
	f.Line()
	comment(f, "Registered reports whether k is in the kind registry.")
	f.Func().Params(jen.Id("k").Id("Kind")).Id("Registered").Params().Bool().Block(
		jen.Switch(jen.Id("k")).Block(jen.Case(kinds...).Block(jen.Return(jen.True()))),
		jen.Return(jen.False()),
	)
	f.Line()

	vocabulariesCode(f, p)

	// Row fields.
	defs = nil
	for _, fl := range p.Row.Fields {
		defs = append(append(append(defs, jen.Comment(doc("Field"+goName(fl.Role), fmt.Sprintf("names the row field with the %s role (encoding %s): %s", fl.Role, fl.Encoding, fl.Summary)))), deprecation(fl.Deprecated)...), jen.Id("Field"+goName(fl.Role)).Op("=").Lit(fl.Name))
	}
	comment(f, "The job row's fields, by role. "+p.Row.Summary)
	f.Const().Defs(defs...)
	f.Line()
	tok, _ := p.Field("token")
	comment(f, doc("InitialToken", "is the token field's value at admission"))
	f.Const().Id("InitialToken").Op("=").Lit(tok.Initial)
	f.Line()
	comment(f, "RowFields returns the row's field names in manifest order; a row has exactly these.")
	var fieldIDs []jen.Code
	for _, fl := range p.Row.Fields {
		fieldIDs = append(fieldIDs, jen.Id("Field"+goName(fl.Role)))
	}
	f.Func().Id("RowFields").Params().Index().String().Block(jen.Return(jen.Index().String().Values(fieldIDs...)))
	f.Line()
	var roleCases []jen.Code
	for _, fl := range p.Row.Fields {
		roleCases = append(roleCases, jen.Case(jen.Lit(fl.Role)).Block(jen.Return(jen.Id("Field"+goName(fl.Role)), jen.True())))
	}
	comment(f, "FieldByRole returns the name of the row field with role (state, token, payload), and whether there is one.")
	f.Func().Id("FieldByRole").Params(jen.Id("role").String()).Params(jen.String(), jen.Bool()).Block(jen.Switch(jen.Id("role")).Block(roleCases...), jen.Return(jen.Lit(""), jen.False()))
	f.Line()

	// States and sets.
	comment(f, "State is a value of the row's state field. "+p.Invariant)
	f.Type().Id("State").String()
	f.Line()
	defs = nil
	var states []jen.Code
	for _, st := range p.Row.States {
		defs = append(append(append(defs, jen.Comment(doc("State"+goName(st.Name), st.Summary))), deprecation(st.Deprecated)...), jen.Id("State"+goName(st.Name)).Id("State").Op("=").Lit(st.Name))
		states = append(states, jen.Id("State"+goName(st.Name)))
	}
	comment(f, "The row states.")
	f.Const().Defs(defs...)
	f.Line()
	comment(f, "States returns every state in manifest order.")
	f.Func().Id("States").Params().Index().Id("State").Block(jen.Return(jen.Index().Id("State").Values(states...)))
	f.Line()
	comment(f, "ParseState returns s as a State, and whether it is one.")
	f.Func().Id("ParseState").Params(jen.Id("s").String()).Params(jen.Id("State"), jen.Bool()).Block(
		jen.Switch(jen.Id("State").Call(jen.Id("s"))).Block(jen.Case(states...).Block(jen.Return(jen.Id("State").Call(jen.Id("s")), jen.True()))),
		jen.Return(jen.Lit(""), jen.False()),
	)
	f.Line()
	comment(f, "Set is one of a queue's sorted sets.")
	f.Type().Id("Set").String()
	f.Line()
	defs = nil
	var sets []jen.Code
	for _, s := range p.Sets {
		defs = append(append(append(defs, jen.Comment(doc("Set"+goName(s.Key), fmt.Sprintf("holds ids in state %s, scored %s: %s", s.State, s.Score, s.Summary)))), deprecation(s.Deprecated)...), jen.Id("Set"+goName(s.Key)).Id("Set").Op("=").Lit(s.Key))
		sets = append(sets, jen.Id("Set"+goName(s.Key)))
	}
	comment(f, "The sorted sets of a queue.")
	f.Const().Defs(defs...)
	f.Line()
	comment(f, "Sets returns every set in manifest order.")
	f.Func().Id("Sets").Params().Index().Id("Set").Block(jen.Return(jen.Index().Id("Set").Values(sets...)))
	f.Line()
	var setCases, stateCases, lexCases []jen.Code
	for _, s := range p.Sets {
		setCases = append(setCases, jen.Case(jen.Id("Set"+goName(s.Key))).Block(jen.Return(jen.Id("State"+goName(s.State)))))
		stateCases = append(stateCases, jen.Case(jen.Id("State"+goName(s.State))).Block(jen.Return(jen.Id("Set"+goName(s.Key)))))
		if s.Score == "zero" {
			lexCases = append(lexCases, jen.Id("Set"+goName(s.Key)))
		}
	}
	comment(f, "State returns the state of the ids s holds, or the empty State for an unknown set.")
	f.Func().Params(jen.Id("s").Id("Set")).Id("State").Params().Id("State").Block(jen.Switch(jen.Id("s")).Block(setCases...), jen.Return(jen.Lit("")))
	f.Line()
	comment(f, "Set returns the set that holds ids in state s, or the empty Set for an unknown state.")
	f.Func().Params(jen.Id("s").Id("State")).Id("Set").Params().Id("Set").Block(jen.Switch(jen.Id("s")).Block(stateCases...), jen.Return(jen.Lit("")))
	f.Line()
	comment(f, "Lex reports whether every member of s scores zero, so that lexicographic order is mint order and newest-first browse is a reverse lex range.")
	f.Func().Params(jen.Id("s").Id("Set")).Id("Lex").Params().Bool().Block(jen.Switch(jen.Id("s")).Block(jen.Case(lexCases...).Block(jen.Return(jen.True()))), jen.Return(jen.False()))
}
