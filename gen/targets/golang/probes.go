package golang

import (
	"github.com/dave/jennifer/jen"

	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/model"
)

func probesFile(f *jen.File, p *model.Protocol, _ *bundle.Bundle) {
	var all []jen.Code
	for _, m := range p.Reserve {
		all = append(all, probeValue("reserve member "+p.MemberShape(m), m.Probe))
	}
	for _, c := range p.Classes {
		all = append(all, probeValue("wire class "+c.Word, c.Probe))
	}
	comment(f, "Probes returns every probe the manifest declares, reserve members first, then wire classes, in manifest order. Run them with RunProbes.")
	f.Func().Id("Probes").Params().Index().Qual(probePath, "Probe").Block(
		jen.Return(jen.Index().Qual(probePath, "Probe").Values(all...)),
	)
}

func probeValue(target string, pr model.Probe) jen.Code {
	var steps []jen.Code
	for _, s := range pr.Steps {
		d := jen.Dict{jen.Id("Check"): jen.Lit(s.Check)}
		if s.Script != "" {
			d[jen.Id("Script")] = jen.Lit(s.Script)
		}
		if len(s.With) > 0 {
			var kv []jen.Code
			for _, w := range s.With {
				kv = append(kv, jen.Values(jen.Dict{jen.Id("Name"): jen.Lit(w.Key), jen.Id("Value"): jen.Lit(w.Value)}))
			}
			d[jen.Id("With")] = jen.Index().Qual(probePath, "Arg").Values(kv...)
		}
		if len(s.Command) > 0 {
			var cmd []jen.Code
			for _, c := range s.Command {
				cmd = append(cmd, jen.Lit(c))
			}
			d[jen.Id("Command")] = jen.Index().String().Values(cmd...)
		}
		if s.Save != "" {
			d[jen.Id("Save")] = jen.Lit(s.Save)
		}
		e := jen.Dict{jen.Id("Kind"): jen.Lit(s.Expect.Kind)}
		if s.Expect.Element != "" {
			e[jen.Id("Element")] = jen.Lit(s.Expect.Element)
		}
		switch s.Expect.Kind {
		case "int":
			e[jen.Id("Int")] = jen.Lit(int(s.Expect.Int))
		case "string", "error", "fence":
			e[jen.Id("String")] = jen.Lit(s.Expect.String)
		}
		d[jen.Id("Expect")] = jen.Qual(probePath, "Expect").Values(e)
		steps = append(steps, jen.Values(d))
	}
	return jen.Values(jen.Dict{
		jen.Id("Target"):  jen.Lit(target),
		jen.Id("Summary"): jen.Lit(pr.Summary),
		jen.Id("Steps"):   jen.Index().Qual(probePath, "Step").Values(steps...),
	})
}
