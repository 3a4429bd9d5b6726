package golang

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/model"
)

// goType is the Go type of an ARGV slot or reply element.
// recordField is the field of a record struct for a repeated argument's
// call field: the singular (IDs -> ID, Payloads -> Payload).
func recordField(plural string) string {
	switch {
	case strings.HasSuffix(plural, "IDs"):
		return strings.TrimSuffix(plural, "s")
	case strings.HasSuffix(plural, "s") && len(plural) > 1:
		return strings.TrimSuffix(plural, "s")
	}
	return plural
}

func goType(t string) *jen.Statement {
	switch t {
	case "id":
		return jen.Id("ID")
	case "token", "int":
		return jen.Int64()
	}
	return jen.String()
}

// callFields names the fields of a script's call struct: KEYS first, then
// ARGV; a key whose name an argument also has gets the suffix Key.
func callFields(s model.Script) (keys, args []string) {
	argNames := map[string]bool{}
	for _, a := range s.Argv {
		argNames[goName(a.Name)] = true
	}
	for _, k := range s.Keys {
		n := goName(k.Name)
		if argNames[n] {
			n += "Key"
		}
		keys = append(keys, n)
	}
	for _, a := range s.Argv {
		args = append(args, goName(a.Name))
	}
	return keys, args
}

func scriptsFile(f *jen.File, p *model.Protocol, b *bundle.Bundle) {
	comment(f, `Script is one Lua script of the bundle: the exact text of its file in
sdk/lua, its SHA-1, and the names of its KEYS and ARGV. It runs with
EVALSHA and falls back to EVAL when the server answers NOSCRIPT.`)
	f.Type().Id("Script").Struct(
		jen.Id("Name").String(),
		jen.Id("SHA1").String().Comment("hex SHA-1 of Source, as EVALSHA takes it"),
		jen.Id("Source").String().Comment("the text sent with EVAL"),
		jen.Id("Keys").Index().String().Comment("KEYS names, in order"),
		jen.Id("Argv").Index().String().Comment("ARGV names, in order"),
		jen.Id("KeyTypes").Index().String().Comment("each KEYS slot's key type, or reserve:<member>"),
		jen.Id("ArgTypes").Index().String().Comment("each ARGV slot's type: id, token, bytes, int, string or prefix"),
		jen.Id("replyElements").Index().String(),
		jen.Id("lua").Op("*").Qual(rueidisPath, "Lua"),
	)
	f.Line()
	comment(f, "Lua returns the script as a *rueidis.Lua: Exec runs EVALSHA with an EVAL fallback, ExecMulti loads the script on every node first.")
	f.Func().Params(jen.Id("s").Op("*").Id("Script")).Id("Lua").Params().Op("*").Qual(rueidisPath, "Lua").Block(jen.Return(jen.Id("s").Dot("lua")))
	f.Line()
	comment(f, "ReplyElements returns the names of the elements of one reply record, in order; it is empty when the script replies with a single value. The slice is a copy.")
	f.Func().Params(jen.Id("s").Op("*").Id("Script")).Id("ReplyElements").Params().Index().String().Block(jen.Return(jen.Qual("slices", "Clone").Call(jen.Id("s").Dot("replyElements"))))
	f.Line()
	f.Func().Id("newScript").Params(jen.List(jen.Id("name"), jen.Id("sha1"), jen.Id("source")).String(), jen.List(jen.Id("keys"), jen.Id("argv"), jen.Id("keyTypes"), jen.Id("argTypes"), jen.Id("replyElements")).Index().String()).Op("*").Id("Script").Block(
		jen.Return(jen.Op("&").Id("Script").Values(jen.Dict{
			jen.Id("Name"):          jen.Id("name"),
			jen.Id("SHA1"):          jen.Id("sha1"),
			jen.Id("Source"):        jen.Id("source"),
			jen.Id("Keys"):          jen.Id("keys"),
			jen.Id("Argv"):          jen.Id("argv"),
			jen.Id("KeyTypes"):      jen.Id("keyTypes"),
			jen.Id("ArgTypes"):      jen.Id("argTypes"),
			jen.Id("replyElements"): jen.Id("replyElements"),
			jen.Id("lua"):           jen.Qual(rueidisPath, "NewLuaScript").Call(jen.Id("source")),
		})),
	)
	f.Line()
	comment(f, "BundleDigest identifies this bundle: the hex SHA-1 of the scripts' hex SHA-1s, in manifest order, each followed by a newline. The fence records it in the reserve per version.")
	f.Const().Id("BundleDigest").Op("=").Lit(b.Digest)
	f.Line()

	var vars, all []jen.Code
	for i, s := range p.Scripts {
		var keys, argv, keyTypes, argTypes []jen.Code
		for _, k := range s.Keys {
			keys = append(keys, jen.Lit(k.Name))
			if k.Type == "reserve" {
				keyTypes = append(keyTypes, jen.Lit("reserve:"+k.Member))
			} else {
				keyTypes = append(keyTypes, jen.Lit(k.Type))
			}
		}
		for _, a := range s.Argv {
			argv = append(argv, jen.Lit(a.Name))
			argTypes = append(argTypes, jen.Lit(a.Type))
		}
		var elements []jen.Code
		for _, e := range s.Reply.Elements {
			elements = append(elements, jen.Lit(e.Name))
		}
		name := "Script" + goName(s.Name)
		vars = append(vars, jen.Comment(doc(name, "is the "+s.Name+" script: "+s.Summary)),
			jen.Id(name).Op("=").Id("newScript").Call(jen.Lit(s.Name), jen.Lit(b.Scripts[i].SHA1), jen.Id("lua"+goName(s.Name)), jen.Index().String().Values(keys...), jen.Index().String().Values(argv...), jen.Index().String().Values(keyTypes...), jen.Index().String().Values(argTypes...), jen.Index().String().Values(elements...)))
		all = append(all, jen.Id(name))
	}
	comment(f, "The bundle.")
	f.Var().Defs(vars...)
	f.Line()
	var byName []jen.Code
	for _, sc := range p.Scripts {
		byName = append(byName, jen.Case(jen.Lit(sc.Name)).Block(jen.Return(jen.Id("Script"+goName(sc.Name)))))
	}
	comment(f, "ScriptNamed returns the script named name, or nil.")
	f.Func().Id("ScriptNamed").Params(jen.Id("name").String()).Op("*").Id("Script").Block(jen.Switch(jen.Id("name")).Block(byName...), jen.Return(jen.Nil()))
	f.Line()
	comment(f, "Scripts returns the bundle in manifest order.")
	f.Func().Id("Scripts").Params().Index().Op("*").Id("Script").Block(jen.Return(jen.Index().Op("*").Id("Script").Values(all...)))
	f.Line()
	comment(f, "replyString reads a string reply element; nil reads as the empty string.")
	f.Func().Id("replyString").Params(jen.Id("m").Op("*").Qual(rueidisPath, "RedisMessage")).Params(jen.String(), jen.Error()).Block(
		jen.If(jen.Id("m").Dot("IsNil").Call()).Block(jen.Return(jen.Lit(""), jen.Nil())),
		jen.Return(jen.Id("m").Dot("ToString").Call()),
	)
	f.Line()
	for i, s := range p.Scripts {
		scriptCall(f, p, s, b.Scripts[i])
	}
}

func scriptCall(f *jen.File, p *model.Protocol, s model.Script, r bundle.Script) {
	name := goName(s.Name)
	call, dec, script := name+"Call", "Decode"+name, "Script"+name
	keyFields, argFields := callFields(s)

	// The Lua source, as a raw string when it can be one.
	src := jen.Lit(r.Source)
	if !strings.Contains(r.Source, "`") {
		src = jen.Op("`" + r.Source + "`")
	}
	comment(f, fmt.Sprintf("lua%s is sdk/lua/%s.", name, r.File))
	f.Const().Id("lua" + name).Op("=").Add(src)
	f.Line()

	group, groupAt := s.RepeatedArgs()
	records := len(group) > 1 // a group of records: one struct per record
	record := name + "Entry"
	if records {
		var rf []jen.Code
		for j, a := range group {
			rf = append(rf, jen.Id(recordField(argFields[groupAt-1+j])).Add(argType(a)).Comment(fmt.Sprintf("%s, every %d: %s", s.ArgSlot(groupAt-1+j), len(group), a.Name)))
		}
		comment(f, fmt.Sprintf("%s is one entry of %s's repeated ARGV group: its values are sent interleaved, entry after entry, from ARGV[%d].", record, call, groupAt))
		f.Type().Id(record).Struct(rf...)
		f.Line()
		for j := range group {
			argFields[groupAt-1+j] = "Entries[]." + recordField(argFields[groupAt-1+j])
		}
	}
	// The call struct, documented like the Lua header.
	var lines []string
	lines = append(lines, fmt.Sprintf("%s runs the %s script: %s", call, s.Name, lowerFirst(strings.TrimSuffix(s.Summary, "."))+"."), "")
	for i, k := range s.Keys {
		lines = append(lines, fmt.Sprintf("\t%s -> %s%s: %s", s.KeySlot(i), keyFields[i], countText(s.KeyCount(i)), p.KeyShape(k)))
	}
	for i, a := range s.Argv {
		line := fmt.Sprintf("\t%s -> %s (%s)%s", s.ArgSlot(i), argFields[i], a.TypeText(), countText(s.ArgCount(i)))
		if a.Summary != "" {
			line += ": " + a.Summary
		}
		lines = append(lines, line)
	}
	for _, l := range s.ReplyLines() {
		lines = append(lines, "\t"+l)
	}
	for _, ref := range s.Refusals {
		c, _ := p.Class(ref.Class)
		lines = append(lines, fmt.Sprintf("\tRefusal: %s (Err%s), when %s", ref.Text(), goName(c.Name), ref.When))
	}
	if t := s.TransitionText(); t != "" {
		lines = append(lines, "\tTransitions: "+t)
	}
	comment(f, strings.Join(lines, "\n"))
	var fields []jen.Code
	for i, k := range s.Keys {
		if k.Repeated {
			fields = append(fields, jen.Id(keyFields[i]).Index().String().Comment(fmt.Sprintf("%s, %s: %s", s.KeySlot(i), s.KeyCount(i), p.KeyShape(k))))
			continue
		}
		fields = append(fields, jen.Id(keyFields[i]).String().Comment(fmt.Sprintf("KEYS[%d]: %s", i+1, p.KeyShape(k))))
	}
	for i, a := range s.Argv {
		if a.Repeated && records {
			if i == groupAt-1 {
				fields = append(fields, jen.Id("Entries").Index().Id(record).Comment(fmt.Sprintf("ARGV[%d..], zero or more entries, interleaved", groupAt)))
			}
			continue
		}
		if a.Repeated {
			fields = append(fields, jen.Id(argFields[i]).Index().Add(argType(a)).Comment(fmt.Sprintf("%s, %s: %s", s.ArgSlot(i), s.ArgCount(i), a.Name)))
			continue
		}
		fields = append(fields, jen.Id(argFields[i]).Add(argType(a)).Comment(fmt.Sprintf("ARGV[%d]: %s", i+1, a.Name)))
	}
	f.Type().Id(call).Struct(fields...)
	f.Line()
	// An int argument's bounds, which the script refuses a value outside
	// of and a caller checks before it sends anything.
	for i, a := range s.Argv {
		for _, b := range []struct {
			v          *int64
			suffix, is string
		}{{a.Min, "Min", "least"}, {a.Max, "Max", "greatest"}} {
			if b.v == nil {
				continue
			}
			id := name + argFields[i] + b.suffix
			comment(f, fmt.Sprintf("%s is the %s %s %s admits (the script refuses any other before it writes).", id, b.is, a.Name, s.Name))
			f.Const().Id(id).Op("=").Lit(int(*b.v))
			f.Line()
		}
	}

	var keyVals, argVals []jen.Code
	for i, k := range keyFields {
		if !s.Keys[i].Repeated {
			keyVals = append(keyVals, jen.Id("c").Dot(k))
		}
	}
	argValue := func(a model.Arg, v *jen.Statement) *jen.Statement {
		if a.Vocabulary != "" {
			return jen.String().Call(v)
		}
		switch a.Type {
		case "id":
			return v.Dot("String").Call()
		case "token", "int":
			return jen.Qual("strconv", "FormatInt").Call(v, jen.Lit(10))
		}
		return v
	}
	for i, a := range s.Argv {
		if !a.Repeated {
			argVals = append(argVals, argValue(a, jen.Id("c").Dot(argFields[i])))
		}
	}
	recv := jen.Id("c").Op("*").Id(call)
	comment(f, "Keys returns the call's KEYS in order.")
	if _, i := s.RepeatedKey(); i > 0 {
		// A repeated group follows the single keys, one key per element.
		f.Func().Params(recv.Clone()).Id("Keys").Params().Index().String().Block(
			jen.Return(jen.Append(jen.Index().String().Values(keyVals...), jen.Id("c").Dot(keyFields[i-1]).Op("..."))),
		)
	} else {
		f.Func().Params(recv.Clone()).Id("Keys").Params().Index().String().Block(jen.Return(jen.Index().String().Values(keyVals...)))
	}
	f.Line()
	comment(f, "Args returns the call's ARGV in order.")
	if records {
		var vals []jen.Code
		for j, a := range group {
			vals = append(vals, argValue(a, jen.Id("v").Dot(recordField(strings.TrimPrefix(argFields[groupAt-1+j], "Entries[].")))))
		}
		body := []jen.Code{jen.Id("out").Op(":=").Make(jen.Index().String(), jen.Lit(0), jen.Lit(len(argVals)).Op("+").Lit(len(group)).Op("*").Len(jen.Id("c").Dot("Entries")))}
		if len(argVals) > 0 {
			body = append(body, jen.Id("out").Op("=").Append(append([]jen.Code{jen.Id("out")}, argVals...)...))
		}
		f.Func().Params(recv.Clone()).Id("Args").Params().Index().String().Block(append(body,
			jen.For(jen.List(jen.Id("_"), jen.Id("v")).Op(":=").Range().Id("c").Dot("Entries")).Block(
				jen.Id("out").Op("=").Append(append([]jen.Code{jen.Id("out")}, vals...)...),
			),
			jen.Return(jen.Id("out")),
		)...)
	} else if a, i := s.RepeatedArg(); i > 0 {
		field := argFields[i-1]
		body := []jen.Code{jen.Id("out").Op(":=").Make(jen.Index().String(), jen.Lit(0), jen.Lit(len(argVals)).Op("+").Len(jen.Id("c").Dot(field)))}
		if len(argVals) > 0 {
			body = append(body, jen.Id("out").Op("=").Append(append([]jen.Code{jen.Id("out")}, argVals...)...))
		}
		f.Func().Params(recv.Clone()).Id("Args").Params().Index().String().Block(append(body,
			jen.For(jen.List(jen.Id("_"), jen.Id("v")).Op(":=").Range().Id("c").Dot(field)).Block(
				jen.Id("out").Op("=").Append(jen.Id("out"), argValue(a, jen.Id("v"))),
			),
			jen.Return(jen.Id("out")),
		)...)
	} else {
		f.Func().Params(recv.Clone()).Id("Args").Params().Index().String().Block(jen.Return(jen.Index().String().Values(argVals...)))
	}
	f.Line()
	comment(f, "LuaExec returns the call for "+script+".Lua().ExecMulti, to pipeline many calls.")
	f.Func().Params(recv.Clone()).Id("LuaExec").Params().Qual(rueidisPath, "LuaExec").Block(
		jen.Return(jen.Qual(rueidisPath, "LuaExec").Values(jen.Dict{jen.Id("Keys"): jen.Id("c").Dot("Keys").Call(), jen.Id("Args"): jen.Id("c").Dot("Args").Call()})),
	)
	f.Line()

	exec := jen.Id(script).Dot("lua").Dot("Exec").Call(jen.Id("ctx"), jen.Id("client"), jen.Id("c").Dot("Keys").Call(), jen.Id("c").Dot("Args").Call())
	ctxParams := []jen.Code{jen.Id("ctx").Qual("context", "Context"), jen.Id("client").Qual(rueidisPath, "Client")}
	res := jen.Id("r").Qual(rueidisPath, "RedisResult")
	refusalText := ""
	if len(s.Refusals) > 0 {
		var errs []string
		for _, ref := range s.Refusals {
			c, _ := p.Class(ref.Class)
			if e := "Err" + goName(c.Name); !contains(errs, e) {
				errs = append(errs, e)
			}
		}
		refusalText = " A refusal is a *ClassError matching " + strings.Join(errs, " or ") + "."
	}

	switch s.Reply.Type {
	case "array":
		reply := name + "Reply"
		var rf []jen.Code
		for _, e := range s.Reply.Elements {
			c := e.Name
			if e.Summary != "" {
				c += ": " + e.Summary
			}
			rf = append(rf, jen.Id(goName(e.Name)).Add(argType(e)).Comment(c))
		}
		if s.Reply.Repeated {
			comment(f, fmt.Sprintf("%s is one record of the reply of the %s script.", reply, s.Name))
		} else {
			comment(f, fmt.Sprintf("%s is the reply of the %s script.", reply, s.Name))
		}
		f.Type().Id(reply).Struct(rf...)
		f.Line()
		if s.Reply.Repeated {
			results := []jen.Code{jen.Index().Id(reply), jen.Error()}
			recDec := "Decode" + name + "Record"
			recRet := func(err jen.Code) jen.Code { return jen.Return(jen.Id(reply).Values(), err) }
			recBody := decodeRecord(s, reply, "out", recRet)
			if s.Reply.Elements[0].Type != "id" {
				// The record's first element declares err only when it is an id.
				recBody = append(recBody[:2:2], append([]jen.Code{jen.Var().Err().Error()}, recBody[2:]...)...)
			}
			recBody = append(recBody, jen.Return(jen.Id("out"), jen.Nil()))
			comment(f, fmt.Sprintf("%s decodes one record of a reply of the %s script.", recDec, s.Name))
			f.Func().Id(recDec).Params(jen.Id("arr").Index().Qual(rueidisPath, "RedisMessage")).Params(jen.Id(reply), jen.Error()).Block(recBody...)
			f.Line()
			ret := func(err jen.Code) jen.Code { return jen.Return(jen.Nil(), err) }
			body := []jen.Code{
				jen.List(jen.Id("items"), jen.Err()).Op(":=").Id("r").Dot("ToArray").Call(),
				jen.If(jen.Err().Op("!=").Nil()).Block(ret(jen.Id("ScriptError").Call(jen.Lit(s.Name), jen.Err()))),
				jen.Id("out").Op(":=").Make(jen.Index().Id(reply), jen.Lit(0), jen.Len(jen.Id("items"))),
			}
			loop := []jen.Code{
				jen.List(jen.Id("arr"), jen.Err()).Op(":=").Id("items").Index(jen.Id("i")).Dot("ToArray").Call(),
				jen.If(jen.Err().Op("!=").Nil()).Block(ret(jen.Qual("fmt", "Errorf").Call(jen.Lit(fmt.Sprintf("emq: %s: record %%d: %%w", s.Name)), jen.Id("i"), jen.Err()))),
				jen.List(jen.Id("rec"), jen.Err()).Op(":=").Id(recDec).Call(jen.Id("arr")),
				jen.If(jen.Err().Op("!=").Nil()).Block(ret(jen.Qual("fmt", "Errorf").Call(jen.Lit("record %d: %w"), jen.Id("i"), jen.Err()))),
				jen.Id("out").Op("=").Append(jen.Id("out"), jen.Id("rec")),
			}
			body = append(body, jen.For(jen.Id("i").Op(":=").Range().Id("items")).Block(loop...), jen.Return(jen.Id("out"), jen.Nil()))
			comment(f, fmt.Sprintf("%s decodes a reply of the %s script: zero or more records, in the order the script produced them.%s", dec, s.Name, refusalText))
			f.Func().Id(dec).Params(res).Params(results...).Block(body...)
			f.Line()
			comment(f, fmt.Sprintf("Exec runs the call on client and decodes its reply with %s.", dec))
			f.Func().Params(recv.Clone()).Id("Exec").Params(ctxParams...).Params(results...).Block(jen.Return(jen.Id(dec).Call(exec)))
			break
		}
		var body []jen.Code
		results := []jen.Code{jen.Id(reply)}
		zero := []jen.Code{jen.Id(reply).Values()}
		okTrue := []jen.Code{}
		if s.Reply.Nil != "" {
			results = append(results, jen.Bool())
			zero = append(zero, jen.False())
			okTrue = append(okTrue, jen.True())
		}
		results = append(results, jen.Error())
		ret := func(err jen.Code) jen.Code { return jen.Return(append(append([]jen.Code{}, zero...), err)...) }
		body = append(body, jen.List(jen.Id("arr"), jen.Err()).Op(":=").Id("r").Dot("ToArray").Call())
		if s.Reply.Nil != "" {
			body = append(body, jen.If(jen.Qual(rueidisPath, "IsRedisNil").Call(jen.Err())).Block(jen.Return(append(append([]jen.Code{}, zero...), jen.Nil())...)))
		}
		body = append(body, jen.If(jen.Err().Op("!=").Nil()).Block(ret(jen.Id("ScriptError").Call(jen.Lit(s.Name), jen.Err()))))
		body = append(body, decodeRecord(s, reply, "out", ret)...)
		body = append(body, jen.Return(append(append([]jen.Code{jen.Id("out")}, okTrue...), jen.Nil())...))
		nilText := ""
		if s.Reply.Nil != "" {
			nilText = fmt.Sprintf(" ok is false when %s.", s.Reply.Nil)
		}
		comment(f, fmt.Sprintf("%s decodes a reply of the %s script.%s%s", dec, s.Name, nilText, refusalText))
		f.Func().Id(dec).Params(res).Params(results...).Block(body...)
		f.Line()
		comment(f, fmt.Sprintf("Exec runs the call on client and decodes its reply with %s.", dec))
		f.Func().Params(recv.Clone()).Id("Exec").Params(ctxParams...).Params(results...).Block(jen.Return(jen.Id(dec).Call(exec)))
	default:
		typ, conv := jen.Int64(), "AsInt64"
		if s.Reply.Type == "string" {
			typ, conv = jen.String(), "ToString"
		}
		if len(s.Reply.Values) > 0 {
			var defs []jen.Code
			for _, v := range s.Reply.Values {
				c := fmt.Sprintf("%s%s is the %s reply %d", name, goName(v.Name), s.Name, v.Value)
				if v.Summary != "" {
					c += ": " + v.Summary
				}
				defs = append(append(append(defs, jen.Comment(c+".")), deprecation(v.Deprecated)...), jen.Id(name+goName(v.Name)).Int64().Op("=").Lit(int(v.Value)))
			}
			comment(f, fmt.Sprintf("The replies of the %s script.", s.Name))
			f.Const().Defs(defs...)
			f.Line()
		}
		comment(f, fmt.Sprintf("%s decodes a reply of the %s script.%s", dec, s.Name, refusalText))
		f.Func().Id(dec).Params(res).Params(typ.Clone(), jen.Error()).Block(
			jen.List(jen.Id("v"), jen.Err()).Op(":=").Id("r").Dot(conv).Call(),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Id("v"), jen.Id("ScriptError").Call(jen.Lit(s.Name), jen.Err()))),
			jen.Return(jen.Id("v"), jen.Nil()),
		)
		f.Line()
		comment(f, fmt.Sprintf("Exec runs the call on client and decodes its reply with %s.", dec))
		f.Func().Params(recv.Clone()).Id("Exec").Params(ctxParams...).Params(typ.Clone(), jen.Error()).Block(jen.Return(jen.Id(dec).Call(exec)))
	}
	f.Line()
}

// decodeRecord decodes the array arr into a new variable out of type
// reply, one element per field; ret makes the return statement for an
// error.
func decodeRecord(s model.Script, reply, out string, ret func(jen.Code) jen.Code) []jen.Code {
	body := []jen.Code{
		jen.If(jen.Len(jen.Id("arr")).Op("!=").Lit(len(s.Reply.Elements))).Block(ret(jen.Qual("fmt", "Errorf").Call(jen.Lit(fmt.Sprintf("emq: %s: reply has %%d elements, want %d", s.Name, len(s.Reply.Elements))), jen.Len(jen.Id("arr"))))),
		jen.Var().Id(out).Id(reply),
	}
	for i, e := range s.Reply.Elements {
		field := jen.Id(out).Dot(goName(e.Name))
		wrap := func() jen.Code {
			return jen.If(jen.Err().Op("!=").Nil()).Block(ret(jen.Qual("fmt", "Errorf").Call(jen.Lit(fmt.Sprintf("emq: %s: reply element %s: %%w", s.Name, e.Name)), jen.Err())))
		}
		elem := jen.Op("&").Id("arr").Index(jen.Lit(i))
		switch e.Type {
		case "id":
			body = append(body,
				jen.List(jen.Id(lowerName(e.Name)+"Str"), jen.Err()).Op(":=").Id("replyString").Call(elem),
				wrap(),
				jen.List(field.Clone(), jen.Err()).Op("=").Id("ParseID").Call(jen.Id(lowerName(e.Name)+"Str")),
				wrap(),
			)
		case "token", "int":
			body = append(body, jen.List(field.Clone(), jen.Err()).Op("=").Id("arr").Index(jen.Lit(i)).Dot("AsInt64").Call(), wrap())
		default:
			if e.Vocabulary != "" {
				// A word outside the vocabulary is kept as read: a newer
				// writer may know more words (Registered tells).
				str := lowerName(e.Name) + "Str"
				body = append(body,
					jen.List(jen.Id(str), jen.Err()).Op(":=").Id("replyString").Call(elem),
					wrap(),
					field.Clone().Op("=").Id(VocabularyType(e.Vocabulary)).Call(jen.Id(str)),
				)
				continue
			}
			body = append(body, jen.List(field.Clone(), jen.Err()).Op("=").Id("replyString").Call(elem), wrap())
		}
	}
	return body
}

// countText is ", " and a slot's count (one per ids), or "" for one.
func countText(count string) string {
	if count == "" {
		return ""
	}
	return ", " + count
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
