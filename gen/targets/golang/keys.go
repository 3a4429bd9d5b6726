package golang

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/model"
)

func keysFile(f *jen.File, p *model.Protocol, _ *bundle.Bundle) {
	q := p.Queues
	queueClass, _ := p.KeyClass("queue")
	jobClass, _ := p.KeyClass("job")
	reserveClass, _ := p.KeyClass("reserve")

	comment(f, doc("MaxQueueLength", "is the longest queue name the grammar admits, in bytes"))
	f.Const().Id("MaxQueueLength").Op("=").Lit(q.MaxLength)
	f.Line()
	for _, t := range p.KeyTypes {
		if w := t.Tripwire; w != nil {
			n := goName(t.Name)
			comment(f, fmt.Sprintf("%sTripwireType is the redis type of the value left at a queue's %s key in its other layout, where its members live at the %s key: %s", n, t.Name, w.MovesTo, w.Summary))
			f.Const().Id(n + "TripwireType").Op("=").Lit(w.Redis)
			f.Line()
			comment(f, fmt.Sprintf("%sTripwireFloor is the first release whose every script that declares the %s key refuses that layout (%sTripwireType) before any write; a client of an older release on the deployment cannot be refused safely.", n, t.Name, n))
			f.Const().Id(n + "TripwireFloor").Op("=").Lit(w.Floor.String())
			f.Line()
		}
	}
	comment(f, fmt.Sprintf("QueuePattern is the queue-name grammar: %s", q.Summary))
	f.Const().Id("QueuePattern").Op("=").Lit(q.Pattern)
	f.Line()
	f.Var().Id("queueRE").Op("=").Qual("regexp", "MustCompile").Call(jen.Lit("^(?:").Op("+").Id("QueuePattern").Op("+").Lit(")$"))
	f.Line()
	comment(f, "ErrQueueName means a queue name is outside the grammar (QueuePattern). Key builders return it (wrapped) before any command is sent.")
	f.Var().Id("ErrQueueName").Op("=").Qual("errors", "New").Call(jen.Lit("emq: malformed queue name"))
	f.Line()
	comment(f, "ValidateQueueName returns nil when name is a well-formed queue name, and an error wrapping ErrQueueName that says why otherwise.")
	f.Func().Id("ValidateQueueName").Params(jen.Id("name").String()).Error().Block(
		jen.If(jen.Len(jen.Id("name")).Op(">").Id("MaxQueueLength")).Block(
			jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit("%w: %d bytes, longer than %d"), jen.Id("ErrQueueName"), jen.Len(jen.Id("name")), jen.Id("MaxQueueLength"))),
		),
		jen.If(jen.Op("!").Id("queueRE").Dot("MatchString").Call(jen.Id("name"))).Block(
			jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit("%w %q: a queue name matches %s"), jen.Id("ErrQueueName"), jen.Id("name"), jen.Id("QueuePattern"))),
		),
		jen.Return(jen.Nil()),
	)
	f.Line()

	// Per-queue keys.
	var fields []jen.Code
	fields = append(fields, jen.Id("queue").String(), jen.Id("rowPrefix").String())
	vals := jen.Dict{jen.Id("queue"): jen.Id("queue")}
	rowParts := jobClass.Parts
	idx := len(rowParts) - 1 // the id hole ends the job shape when it is last
	for i, pt := range rowParts {
		if pt.Hole == "id" {
			idx = i
		}
	}
	vals[jen.Id("rowPrefix")] = concat(rowParts[:idx], map[string]any{"queue": jen.Id("queue")})
	var setCases []jen.Code
	for _, t := range p.KeyTypes {
		if t.Class != "queue" {
			continue
		}
		name := goName(t.Name)
		fields = append(fields, jen.Comment(doc(name, fmt.Sprintf("is %s (%s): %s", p.TypeShape(t.Name), t.Redis, t.Summary))), jen.Id(name).String())
		vals[jen.Id(name)] = concat(queueClass.Parts, map[string]any{"queue": jen.Id("queue"), "type": t.Name})
		for _, s := range p.Sets {
			if s.Key == t.Name {
				setCases = append(setCases, jen.Case(jen.Id("Set"+goName(s.Key))).Block(jen.Return(jen.Id("k").Dot(name))))
			}
		}
	}
	comment(f, `QueueKeys are the keys of one queue, built once from a checked name. The
queue name is the hashtag of every key, so all of them, and every row of
the queue, share one cluster slot.`)
	f.Type().Id("QueueKeys").Struct(fields...)
	f.Line()
	comment(f, "NewQueueKeys checks queue against the grammar and returns its keys; a malformed name is refused with ErrQueueName.")
	f.Func().Id("NewQueueKeys").Params(jen.Id("queue").String()).Params(jen.Id("QueueKeys"), jen.Error()).Block(
		jen.If(jen.Err().Op(":=").Id("ValidateQueueName").Call(jen.Id("queue")), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Id("QueueKeys").Values(), jen.Err())),
		jen.Return(jen.Id("QueueKeys").Values(vals), jen.Nil()),
	)
	f.Line()
	comment(f, "Queue returns the queue's name.")
	f.Func().Params(jen.Id("k").Id("QueueKeys")).Id("Queue").Params().String().Block(jen.Return(jen.Id("k").Dot("queue")))
	f.Line()
	comment(f, fmt.Sprintf("RowPrefix returns the prefix of the queue's job rows (%s without the id); scripts that reach rows of ids they pop take it as ARGV.", jobClass.Shape))
	f.Func().Params(jen.Id("k").Id("QueueKeys")).Id("RowPrefix").Params().String().Block(jen.Return(jen.Id("k").Dot("rowPrefix")))
	f.Line()
	comment(f, fmt.Sprintf("Row returns the key of id's row, %s. The zero ID is refused with ErrID; every other ID is well formed by construction.", jobClass.Shape))
	f.Func().Params(jen.Id("k").Id("QueueKeys")).Id("Row").Params(jen.Id("id").Id("ID")).Params(jen.String(), jen.Error()).Block(
		jen.If(jen.Id("id").Dot("IsZero").Call()).Block(jen.Return(jen.Lit(""), jen.Qual("fmt", "Errorf").Call(jen.Lit("%w: the zero ID has no row"), jen.Id("ErrID")))),
		jen.Return(jen.Id("k").Dot("rowPrefix").Op("+").Add(concat(rowParts[idx:], map[string]any{"id": jen.Id("id").Dot("s")})), jen.Nil()),
	)
	f.Line()
	var typeCases []jen.Code
	for _, t := range p.KeyTypes {
		if t.Class == "queue" {
			typeCases = append(typeCases, jen.Case(jen.Lit(t.Name)).Block(jen.Return(jen.Id("k").Dot(goName(t.Name)), jen.True())))
		}
	}
	comment(f, "Key returns the queue's key of the per-queue key type typ, and whether there is such a type.")
	f.Func().Params(jen.Id("k").Id("QueueKeys")).Id("Key").Params(jen.Id("typ").String()).Params(jen.String(), jen.Bool()).Block(
		jen.Switch(jen.Id("typ")).Block(typeCases...),
		jen.Return(jen.Lit(""), jen.False()),
	)
	f.Line()
	comment(f, "Set returns the key of the queue's set s, or the empty string for an unknown set.")
	f.Func().Params(jen.Id("k").Id("QueueKeys")).Id("Set").Params(jen.Id("s").Id("Set")).String().Block(
		jen.Switch(jen.Id("s")).Block(setCases...),
		jen.Return(jen.Lit("")),
	)
	f.Line()

	// Reserve keys.
	var consts []jen.Code
	for _, m := range p.Reserve {
		name := "Key" + goName(m.Ident())
		text := fmt.Sprintf("is the reserve member %s (%s): %s", p.MemberShape(m), m.Redis, m.Summary)
		if !m.HasQueue() {
			consts = append(consts, jen.Comment(doc(name, text)), jen.Id(name).Op("=").Lit(model.Shape(reserveClass.Parts, map[string]string{"member": m.Name})))
			continue
		}
		comment(f, doc(name, "returns the key of "+text[3:]+" The queue name is checked first (ErrQueueName)."))
		f.Func().Id(name).Params(jen.Id("queue").String()).Params(jen.String(), jen.Error()).Block(
			jen.If(jen.Err().Op(":=").Id("ValidateQueueName").Call(jen.Id("queue")), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Lit(""), jen.Err())),
			jen.Return(concat(substitute(reserveClass.Parts, "member", m.Parts), map[string]any{"queue": jen.Id("queue")}), jen.Nil()),
		)
		f.Line()
	}
	comment(f, "The reserve: facts about the deployment itself, in one cluster slot.")
	f.Const().Defs(consts...)
	f.Line()
	var memberCases []jen.Code
	for _, m := range p.Reserve {
		name := "Key" + goName(m.Ident())
		if m.HasQueue() {
			memberCases = append(memberCases, jen.Case(jen.Lit(m.Ident())).Block(jen.Return(jen.Id(name).Call(jen.Id("queue")))))
		} else {
			memberCases = append(memberCases, jen.Case(jen.Lit(m.Ident())).Block(jen.Return(jen.Id(name), jen.Nil())))
		}
	}
	comment(f, "ReserveKey returns the key of the reserve member named member (its name before any hole: migration for migration:<queue>); queue fills a member that names a queue.")
	f.Func().Id("ReserveKey").Params(jen.List(jen.Id("member"), jen.Id("queue")).String()).Params(jen.String(), jen.Error()).Block(
		jen.Switch(jen.Id("member")).Block(memberCases...),
		jen.Return(jen.Lit(""), jen.Qual("fmt", "Errorf").Call(jen.Lit("emq: %q is not a reserve member"), jen.Id("member"))),
	)
	f.Line()
	memberFields(f, p)
}

// substitute replaces the hole named hole in parts with sub.
func substitute(parts []model.Part, hole string, sub []model.Part) []model.Part {
	var out []model.Part
	for _, p := range parts {
		if p.Hole == hole {
			out = append(out, sub...)
		} else {
			out = append(out, p)
		}
	}
	return out
}

// memberFields emits a builder per named field of a hash reserve member:
// LockNode(node int) for the locks member's node:<node>.
func memberFields(f *jen.File, p *model.Protocol) {
	for _, m := range p.Reserve {
		for _, fl := range m.Fields {
			lit := strings.TrimRight(fl.Parts[0].Lit, ":")
			name := goName(strings.TrimSuffix(m.Ident(), "s")) + goName(lit)
			var params []jen.Code
			fill := map[string]any{}
			for _, h := range fl.Parts {
				switch h.Hole {
				case "queue":
					params = append(params, jen.Id("queue").String())
					fill["queue"] = jen.Id("queue")
				case "node":
					params = append(params, jen.Id("node").Int())
					fill["node"] = jen.Qual("strconv", "Itoa").Call(jen.Id("node"))
				}
			}
			comment(f, doc(name, fmt.Sprintf("returns the field %s of the reserve member %s: %s", fl.Name, p.MemberShape(m), fl.Summary)))
			f.Func().Id(name).Params(params...).String().Block(jen.Return(concat(fl.Parts, fill)))
			f.Line()
		}
	}
}
