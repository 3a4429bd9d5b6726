package golang

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/model"
)

func idsFile(f *jen.File, p *model.Protocol, _ *bundle.Bundle) {
	c := p.IDs
	tf, _ := c.Bitfield("time")
	nf, _ := c.Bitfield("node")
	sf, _ := c.Bitfield("sequence")
	top := c.Layout[0]
	base := len(c.Alphabet)
	fmtErrorf := jen.Qual("fmt", "Errorf")

	comment(f, doc("IDLength", "is the length of every branded id in bytes: a kind, then the body"))
	f.Const().Id("IDLength").Op("=").Lit(c.Length)
	f.Line()
	comment(f, doc("KindLength", fmt.Sprintf("is the length of an id's kind: %s", c.KindPattern)))
	f.Const().Id("KindLength").Op("=").Lit(c.KindLength)
	f.Line()
	comment(f, "The id canon: "+c.BodySummary)
	f.Const().Defs(
		jen.Id("idBodyLength").Op("=").Lit(c.BodyLength),
		jen.Id("idAlphabet").Op("=").Lit(c.Alphabet),
		jen.Id("idBase").Op("=").Lit(base),
		jen.Comment(fmt.Sprintf("idEpochMilli is the snowflake epoch, %s, in Unix milliseconds.", c.Epoch.Format("2006-01-02T15:04:05Z07:00"))),
		jen.Id("idEpochMilli").Op("=").Lit(int(c.Epoch.UnixMilli())),
		jen.Id("idTimeShift").Op("=").Lit(tf.Shift),
		jen.Id("idTimeBits").Op("=").Lit(tf.Bits),
		jen.Id("idNodeShift").Op("=").Lit(nf.Shift),
		jen.Id("idNodeBits").Op("=").Lit(nf.Bits),
		jen.Id("idSequenceShift").Op("=").Lit(sf.Shift),
		jen.Id("idSequenceBits").Op("=").Lit(sf.Bits),
		jen.Comment(fmt.Sprintf("idMaxValue is the largest snowflake: its top %d bit(s) are zero.", top.Bits)),
		jen.Id("idMaxValue").Op("=").Lit(1).Op("<<").Lit(top.Shift).Op("-").Lit(1),
	)
	f.Line()
	comment(f, doc("MaxNode", "is the highest node number a Generator may take"))
	f.Const().Id("MaxNode").Op("=").Lit(1).Op("<<").Id("idNodeBits").Op("-").Lit(1)
	f.Line()
	comment(f, doc("MaxSequence", "is the highest sequence number within one node and millisecond"))
	f.Const().Id("MaxSequence").Op("=").Lit(1).Op("<<").Id("idSequenceBits").Op("-").Lit(1)
	f.Line()
	comment(f, "ErrID means a string is not a well-formed branded id: not IDLength bytes, a kind that is not KindLength ASCII capitals, or a body that is not a base62 snowflake. Key builders and ParseID return it (wrapped) before any command is sent.")
	f.Var().Id("ErrID").Op("=").Qual("errors", "New").Call(jen.Lit("emq: malformed id"))
	f.Line()
	comment(f, "idDigits maps a byte to its digit in idAlphabet, or -1.")
	f.Var().Id("idDigits").Op("=").Func().Params().Params(jen.Id("t").Index(jen.Lit(256)).Int8()).Block(
		jen.For(jen.Id("i").Op(":=").Range().Id("t")).Block(jen.Id("t").Index(jen.Id("i")).Op("=").Lit(-1)),
		jen.For(jen.Id("i").Op(":=").Lit(0), jen.Id("i").Op("<").Len(jen.Id("idAlphabet")), jen.Id("i").Op("++")).Block(
			jen.Id("t").Index(jen.Id("idAlphabet").Index(jen.Id("i"))).Op("=").Int8().Call(jen.Id("i")),
		),
		jen.Return(),
	).Call()
	f.Line()
	comment(f, fmt.Sprintf(`ID is a branded id: a %d-byte kind and an %d-byte base62 snowflake, e.g. %s.
Byte order is numeric order is mint order. The zero ID is not a valid id;
every other ID value was checked by ParseID or made by a Generator, so an
ID is well formed by construction.`, c.KindLength, c.BodyLength, exampleID(p)))
	f.Type().Id("ID").Struct(jen.Id("s").String())
	f.Line()
	comment(f, "ParseID returns s as an ID when it is a well-formed branded id of any kind, and an error wrapping ErrID otherwise. Which kinds a queue admits is the enqueue script's policy, not the parser's.")
	f.Func().Id("ParseID").Params(jen.Id("s").String()).Params(jen.Id("ID"), jen.Error()).Block(
		jen.If(jen.Len(jen.Id("s")).Op("!=").Id("IDLength")).Block(
			jen.Return(jen.Id("ID").Values(), fmtErrorf.Clone().Call(jen.Lit("%w %q: %d bytes, want %d"), jen.Id("ErrID"), jen.Id("s"), jen.Len(jen.Id("s")), jen.Id("IDLength"))),
		),
		jen.For(jen.Id("i").Op(":=").Lit(0), jen.Id("i").Op("<").Id("KindLength"), jen.Id("i").Op("++")).Block(
			jen.If(jen.Id("s").Index(jen.Id("i")).Op("<").LitRune('A').Op("||").Id("s").Index(jen.Id("i")).Op(">").LitRune('Z')).Block(
				jen.Return(jen.Id("ID").Values(), fmtErrorf.Clone().Call(jen.Lit("%w %q: kind %q is not %d ASCII capitals"), jen.Id("ErrID"), jen.Id("s"), jen.Id("s").Index(jen.Empty(), jen.Id("KindLength")), jen.Id("KindLength"))),
			),
		),
		jen.If(jen.List(jen.Id("_"), jen.Id("ok")).Op(":=").Id("idValue").Call(jen.Id("s")), jen.Op("!").Id("ok")).Block(
			jen.Return(jen.Id("ID").Values(), fmtErrorf.Clone().Call(jen.Lit("%w %q: body %q is not a %d-digit base62 snowflake"), jen.Id("ErrID"), jen.Id("s"), jen.Id("s").Index(jen.Id("KindLength"), jen.Empty()), jen.Id("idBodyLength"))),
		),
		jen.Return(jen.Id("ID").Values(jen.Id("s").Op(":").Id("s")), jen.Nil()),
	)
	f.Line()
	comment(f, "MustParseID is ParseID for ids known to be well formed, such as constants; it panics on a malformed id.")
	f.Func().Id("MustParseID").Params(jen.Id("s").String()).Id("ID").Block(
		jen.List(jen.Id("id"), jen.Err()).Op(":=").Id("ParseID").Call(jen.Id("s")),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Panic(jen.Err())),
		jen.Return(jen.Id("id")),
	)
	f.Line()
	comment(f, "idValue decodes the body of an id of IDLength bytes; ok is false when a byte is outside the alphabet or the value overflows the snowflake.")
	f.Func().Id("idValue").Params(jen.Id("s").String()).Params(jen.Id("v").Uint64(), jen.Id("ok").Bool()).Block(
		jen.For(jen.Id("i").Op(":=").Id("KindLength"), jen.Id("i").Op("<").Len(jen.Id("s")), jen.Id("i").Op("++")).Block(
			jen.Id("d").Op(":=").Id("idDigits").Index(jen.Id("s").Index(jen.Id("i"))),
			jen.If(jen.Id("d").Op("<").Lit(0).Op("||").Id("v").Op(">").Parens(jen.Id("idMaxValue").Op("-").Uint64().Call(jen.Id("d"))).Op("/").Id("idBase")).Block(jen.Return(jen.Lit(0), jen.False())),
			jen.Id("v").Op("=").Id("v").Op("*").Id("idBase").Op("+").Uint64().Call(jen.Id("d")),
		),
		jen.Return(jen.Id("v"), jen.True()),
	)
	f.Line()
	comment(f, "formatID encodes kind and a snowflake value as an id.")
	f.Func().Id("formatID").Params(jen.Id("kind").Id("Kind"), jen.Id("v").Uint64()).Id("ID").Block(
		jen.Var().Id("b").Index(jen.Id("IDLength")).Byte(),
		jen.Copy(jen.Id("b").Index(jen.Empty(), jen.Empty()), jen.Id("kind")),
		jen.For(jen.Id("i").Op(":=").Id("IDLength").Op("-").Lit(1), jen.Id("i").Op(">=").Id("KindLength"), jen.Id("i").Op("--")).Block(
			jen.Id("b").Index(jen.Id("i")).Op("=").Id("idAlphabet").Index(jen.Id("v").Op("%").Id("idBase")),
			jen.Id("v").Op("/=").Id("idBase"),
		),
		jen.Return(jen.Id("ID").Values(jen.Id("s").Op(":").String().Call(jen.Id("b").Index(jen.Empty(), jen.Empty())))),
	)
	f.Line()
	comment(f, "NewID returns the id of kind whose snowflake holds t (to the millisecond), node and seq. It refuses a malformed kind, a time outside the snowflake's range, and a node or sequence out of range.")
	f.Func().Id("NewID").Params(jen.Id("kind").Id("Kind"), jen.Id("t").Qual("time", "Time"), jen.List(jen.Id("node"), jen.Id("seq")).Int()).Params(jen.Id("ID"), jen.Error()).Block(
		jen.If(jen.List(jen.Id("_"), jen.Err()).Op(":=").Id("ParseID").Call(jen.String().Call(jen.Id("kind")).Op("+").Id("idAlphabet").Index(jen.Empty(), jen.Lit(1)).Op("+").Qual("strings", "Repeat").Call(jen.Id("idAlphabet").Index(jen.Empty(), jen.Lit(1)), jen.Id("idBodyLength").Op("-").Lit(1))), jen.Err().Op("!=").Nil()).Block(
			jen.Return(jen.Id("ID").Values(), jen.Err()),
		),
		jen.Id("ms").Op(":=").Id("t").Dot("UnixMilli").Call().Op("-").Id("idEpochMilli"),
		jen.If(jen.Id("ms").Op("<").Lit(0).Op("||").Id("ms").Op(">=").Lit(1).Op("<<").Id("idTimeBits")).Block(
			jen.Return(jen.Id("ID").Values(), fmtErrorf.Clone().Call(jen.Lit("emq: time %s is outside the snowflake's range"), jen.Id("t"))),
		),
		jen.If(jen.Id("node").Op("<").Lit(0).Op("||").Id("node").Op(">").Id("MaxNode").Op("||").Id("seq").Op("<").Lit(0).Op("||").Id("seq").Op(">").Id("MaxSequence")).Block(
			jen.Return(jen.Id("ID").Values(), fmtErrorf.Clone().Call(jen.Lit("emq: node %d or sequence %d out of range (0..%d, 0..%d)"), jen.Id("node"), jen.Id("seq"), jen.Id("MaxNode"), jen.Id("MaxSequence"))),
		),
		jen.Return(jen.Id("formatID").Call(jen.Id("kind"), jen.Uint64().Call(jen.Id("ms")).Op("<<").Id("idTimeShift").Op("|").Uint64().Call(jen.Id("node")).Op("<<").Id("idNodeShift").Op("|").Uint64().Call(jen.Id("seq")).Op("<<").Id("idSequenceShift")), jen.Nil()),
	)
	f.Line()
	recv := func() *jen.Statement { return jen.Func().Params(jen.Id("id").Id("ID")) }
	comment(f, "String returns the id's 14 bytes; the empty string for the zero ID.")
	f.Add(recv()).Id("String").Params().String().Block(jen.Return(jen.Id("id").Dot("s")))
	f.Line()
	comment(f, "IsZero reports whether id is the zero ID, which no key builder accepts.")
	f.Add(recv()).Id("IsZero").Params().Bool().Block(jen.Return(jen.Id("id").Dot("s").Op("==").Lit("")))
	f.Line()
	comment(f, "Kind returns the id's kind; the empty Kind for the zero ID.")
	f.Add(recv()).Id("Kind").Params().Id("Kind").Block(
		jen.If(jen.Id("id").Dot("s").Op("==").Lit("")).Block(jen.Return(jen.Lit(""))),
		jen.Return(jen.Id("Kind").Call(jen.Id("id").Dot("s").Index(jen.Empty(), jen.Id("KindLength")))),
	)
	f.Line()
	comment(f, "Value returns the id's snowflake.")
	f.Add(recv()).Id("Value").Params().Uint64().Block(
		jen.If(jen.Id("id").Dot("s").Op("==").Lit("")).Block(jen.Return(jen.Lit(0))),
		jen.List(jen.Id("v"), jen.Id("_")).Op(":=").Id("idValue").Call(jen.Id("id").Dot("s")),
		jen.Return(jen.Id("v")),
	)
	f.Line()
	field := func(name, shift, bits string) *jen.Statement {
		return jen.Id("id").Dot("Value").Call().Op(">>").Id(shift).Op("&").Parens(jen.Lit(1).Op("<<").Id(bits).Op("-").Lit(1))
	}
	comment(f, "Time returns the mint time the id carries, to the millisecond, in UTC.")
	f.Add(recv()).Id("Time").Params().Qual("time", "Time").Block(
		jen.Return(jen.Qual("time", "UnixMilli").Call(jen.Id("idEpochMilli").Op("+").Int64().Call(field("time", "idTimeShift", "idTimeBits"))).Dot("UTC").Call()),
	)
	f.Line()
	comment(f, "Node returns the number of the node that minted the id.")
	f.Add(recv()).Id("Node").Params().Int().Block(jen.Return(jen.Int().Call(field("node", "idNodeShift", "idNodeBits"))))
	f.Line()
	comment(f, "Sequence returns the id's sequence within its node and millisecond.")
	f.Add(recv()).Id("Sequence").Params().Int().Block(jen.Return(jen.Int().Call(field("sequence", "idSequenceShift", "idSequenceBits"))))
	f.Line()
	comment(f, "MarshalText encodes the id as its 14 bytes, so that ids travel inside JSON payloads as strings; the zero ID is refused.")
	f.Add(recv()).Id("MarshalText").Params().Params(jen.Index().Byte(), jen.Error()).Block(
		jen.If(jen.Id("id").Dot("s").Op("==").Lit("")).Block(jen.Return(jen.Nil(), fmtErrorf.Clone().Call(jen.Lit("%w: the zero ID"), jen.Id("ErrID")))),
		jen.Return(jen.Index().Byte().Call(jen.Id("id").Dot("s")), jen.Nil()),
	)
	f.Line()
	comment(f, "UnmarshalText parses text with ParseID, so an id read from a payload is checked on the far side of the wire.")
	f.Func().Params(jen.Id("id").Op("*").Id("ID")).Id("UnmarshalText").Params(jen.Id("text").Index().Byte()).Error().Block(
		jen.List(jen.Id("p"), jen.Err()).Op(":=").Id("ParseID").Call(jen.String().Call(jen.Id("text"))),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		jen.Op("*").Id("id").Op("=").Id("p"),
		jen.Return(jen.Nil()),
	)
	f.Line()
	comment(f, `Generator mints ids for one node. Ids from one Generator strictly
increase, also when the clock steps back or more than MaxSequence ids are
minted in one millisecond (the generator then runs ahead of the clock).
Two live Generators must never share a node: `+c.Uniqueness+`
A Generator is safe for concurrent use.`)
	f.Type().Id("Generator").Struct(
		jen.Id("node").Uint64(),
		jen.Comment("last packs the last minted millisecond and sequence."),
		jen.Id("last").Qual("sync/atomic", "Uint64"),
	)
	f.Line()
	comment(f, "NewGenerator returns a Generator for node, 0..MaxNode.")
	f.Func().Id("NewGenerator").Params(jen.Id("node").Int()).Params(jen.Op("*").Id("Generator"), jen.Error()).Block(
		jen.If(jen.Id("node").Op("<").Lit(0).Op("||").Id("node").Op(">").Id("MaxNode")).Block(
			jen.Return(jen.Nil(), fmtErrorf.Clone().Call(jen.Lit("emq: node %d is out of range 0..%d"), jen.Id("node"), jen.Id("MaxNode"))),
		),
		jen.Return(jen.Op("&").Id("Generator").Values(jen.Id("node").Op(":").Uint64().Call(jen.Id("node"))), jen.Nil()),
	)
	f.Line()
	comment(f, "Node returns the generator's node number.")
	f.Func().Params(jen.Id("g").Op("*").Id("Generator")).Id("Node").Params().Int().Block(jen.Return(jen.Int().Call(jen.Id("g").Dot("node"))))
	f.Line()
	comment(f, "Mint returns a fresh id of kind, greater than every id g minted before. It refuses a kind that is not registered.")
	f.Func().Params(jen.Id("g").Op("*").Id("Generator")).Id("Mint").Params(jen.Id("kind").Id("Kind")).Params(jen.Id("ID"), jen.Error()).Block(
		jen.If(jen.Op("!").Id("kind").Dot("Registered").Call()).Block(
			jen.Return(jen.Id("ID").Values(), fmtErrorf.Clone().Call(jen.Lit("emq: mint: kind %q is not registered"), jen.Id("kind"))),
		),
		jen.Id("ms").Op(":=").Qual("time", "Now").Call().Dot("UnixMilli").Call().Op("-").Id("idEpochMilli"),
		jen.If(jen.Id("ms").Op("<").Lit(0)).Block(jen.Return(jen.Id("ID").Values(), jen.Qual("errors", "New").Call(jen.Lit("emq: mint: the clock is before the snowflake epoch")))),
		jen.For().Block(
			jen.Id("last").Op(":=").Id("g").Dot("last").Dot("Load").Call(),
			jen.Id("next").Op(":=").Uint64().Call(jen.Id("ms")).Op("<<").Id("idSequenceBits"),
			jen.If(jen.Id("next").Op("<=").Id("last")).Block(jen.Id("next").Op("=").Id("last").Op("+").Lit(1)),
			jen.If(jen.Op("!").Id("g").Dot("last").Dot("CompareAndSwap").Call(jen.Id("last"), jen.Id("next"))).Block(jen.Continue()),
			jen.Id("t").Op(":=").Id("next").Op(">>").Id("idSequenceBits"),
			jen.If(jen.Id("t").Op(">=").Lit(1).Op("<<").Id("idTimeBits")).Block(jen.Return(jen.Id("ID").Values(), jen.Qual("errors", "New").Call(jen.Lit("emq: mint: the clock is past the snowflake's range")))),
			jen.Id("seq").Op(":=").Id("next").Op("&").Id("MaxSequence"),
			jen.Return(jen.Id("formatID").Call(jen.Id("kind"), jen.Id("t").Op("<<").Id("idTimeShift").Op("|").Id("g").Dot("node").Op("<<").Id("idNodeShift").Op("|").Id("seq").Op("<<").Id("idSequenceShift")), jen.Nil()),
		),
	)
}

// exampleID is the id the ID type's comment shows: the manifest's first id
// example, or, since examples are optional, the smallest id of the work
// kind.
func exampleID(p *model.Protocol) string {
	if len(p.IDs.Examples) > 0 {
		return p.IDs.Examples[0].ID
	}
	return p.IDs.FormatID(p.WorkKind().Name, 0)
}
