package ts

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/gen/target"
)

// tsType is the TypeScript type of an ARGV slot.
// singular is an entry's field for a repeated argument's call field
// (ids -> id, payloads -> payload).
func singular(plural string) string {
	if len(plural) > 1 && strings.HasSuffix(plural, "s") {
		return strings.TrimSuffix(plural, "s")
	}
	return plural
}

func tsType(t string) string {
	switch t {
	case "token", "int":
		return "number"
	case "bytes":
		return "RedisArg"
	}
	return "string"
}

// replyType is the TypeScript type of a reply element.
func replyType(t string) string {
	switch t {
	case "token", "int":
		return "number"
	case "bytes":
		return "Buffer"
	}
	return "string"
}

// callFields names the members of a script's call: KEYS first, then ARGV;
// a key whose name an argument also has gets the suffix Key.
func callFields(s model.Script) (keys, args []string) {
	argNames := map[string]bool{}
	for _, a := range s.Argv {
		argNames[camel(a.Name)] = true
	}
	for _, k := range s.Keys {
		n := camel(k.Name)
		if argNames[n] {
			n += "Key"
		}
		keys = append(keys, n)
	}
	for _, a := range s.Argv {
		args = append(args, camel(a.Name))
	}
	return keys, args
}

func scriptsFile(s *src, in *target.Input) {
	p, b := in.Protocol, in.Bundle
	s.line(`import { ReplyError, scriptError } from "./errors.js";`)
	s.line(`import { parseId } from "./ids.js";`)
	if used := usedVocabularies(in.Protocol); len(used) > 0 {
		s.list("", "import type { ", used, ` } from "./protocol.js";`)
	}
	s.blank()
	s.lines("", `/** An argument of a command: text, or bytes. */
export type RedisArg = string | Buffer;

/** One settled reply of a pipeline. */
export type Settled =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly error: unknown };

/**
 * What the scripts run on: a client adapter. send resolves with the reply
 * (integers as numbers, bulk strings as Buffers or strings, arrays as
 * arrays, nil as null) and rejects with a ReplyError when the server answers
 * an error; sendMany sends many commands in one round trip and settles each
 * on its own.
 */
export interface ScriptRunner {
  send(args: readonly RedisArg[]): Promise<unknown>;
  sendMany(cmds: readonly (readonly RedisArg[])[]): Promise<Settled[]>;
}

/**
 * One Lua script of the bundle: the exact text of its file in sdk/lua, its
 * SHA-1, and the names and types of its KEYS and ARGV. It runs with EVALSHA
 * and falls back to EVAL when the server answers NOSCRIPT.
 */
export interface Script {
  readonly name: string;
  /** The hex SHA-1 of source, as EVALSHA takes it. */
  readonly sha1: string;
  /** The text sent with EVAL. */
  readonly source: string;
  /** The KEYS names, in order. */
  readonly keys: readonly string[];
  /** The ARGV names, in order. */
  readonly argv: readonly string[];
  /** Each KEYS slot's key type, or reserve:<member>. */
  readonly keyTypes: readonly string[];
  /** Each ARGV slot's type: id, token, bytes, int, string or prefix. */
  readonly argTypes: readonly string[];
  /** The names of the reply's elements, for array replies. */
  readonly replyElements: readonly string[];
}

/** One call of a script: its KEYS and ARGV, ready to send. */
export interface ScriptExec {
  readonly script: Script;
  readonly keys: readonly string[];
  readonly argv: readonly RedisArg[];
}
`)
	s.blank()
	s.doc("", "Identifies this bundle: the hex SHA-1 of the scripts' hex SHA-1s, in manifest order, each followed by a newline. The fence records it in the reserve per version.")
	s.decl("", "export const BUNDLE_DIGEST", q(b.Digest))
	s.blank()
	s.lines("", `function isNoScript(err: unknown): boolean {
  return err instanceof ReplyError && err.message.startsWith("NOSCRIPT");
}

function command(verb: string, body: string, x: ScriptExec): RedisArg[] {
  return [verb, body, String(x.keys.length), ...x.keys, ...x.argv];
}

/**
 * Runs one call with EVALSHA, and with EVAL when the server answers
 * NOSCRIPT. A refusal rejects with the error of its wire class.
 */
export async function runScript(
  r: ScriptRunner,
  x: ScriptExec,
): Promise<unknown> {
  try {
    return await r.send(command("EVALSHA", x.script.sha1, x));
  } catch (err) {
    if (!isNoScript(err)) {
      throw scriptError(x.script.name, err);
    }
  }
  try {
    return await r.send(command("EVAL", x.script.source, x));
  } catch (err) {
    throw scriptError(x.script.name, err);
  }
}

/**
 * Pipelines many calls with EVALSHA in one round trip and resends, as EVAL,
 * exactly the calls answered NOSCRIPT, so that each reply stands for its own
 * call. Each settles on its own; a refusal settles as the error of its wire
 * class.
 */
export async function runScripts(
  r: ScriptRunner,
  xs: readonly ScriptExec[],
): Promise<Settled[]> {
  const res = await r.sendMany(
    xs.map((x) => command("EVALSHA", x.script.sha1, x)),
  );
  const again: number[] = [];
  res.forEach((s, i) => {
    if (!s.ok && isNoScript(s.error)) {
      again.push(i);
    }
  });
  if (again.length > 0) {
    const evals = await r.sendMany(
      again.map((i) => command("EVAL", xs[i]!.script.source, xs[i]!)),
    );
    again.forEach((i, j) => {
      res[i] = evals[j]!;
    });
  }
  return res.map((s, i) =>
    s.ok ? s : { ok: false, error: scriptError(xs[i]!.script.name, s.error) },
  );
}

/** A reply that does not have the shape its script's manifest entry says. */
export class ReplyShapeError extends Error {
  constructor(script: string, why: string) {
    super("emq: " + script + ": " + why);
    this.name = "ReplyShapeError";
  }
}

function idArg(script: string, name: string, v: string): string {
  parseId(v);
  return v;
}

function intArg(script: string, name: string, v: number): string {
  if (!Number.isSafeInteger(v)) {
    throw new RangeError("emq: " + script + ": " + name + " is not an integer");
  }
  return String(v);
}

function replyInt(script: string, what: string, v: unknown): number {
  if (typeof v === "number" && Number.isSafeInteger(v)) {
    return v;
  }
  if (typeof v === "bigint") {
    return Number(v);
  }
  throw new ReplyShapeError(script, what + " is not an integer");
}

function replyBytes(script: string, what: string, v: unknown): Buffer {
  if (Buffer.isBuffer(v)) {
    return v;
  }
  if (typeof v === "string") {
    return Buffer.from(v);
  }
  if (v === null) {
    return Buffer.alloc(0);
  }
  throw new ReplyShapeError(script, what + " is not a string");
}

function replyText(script: string, what: string, v: unknown): string {
  return replyBytes(script, what, v).toString();
}

function replyId(script: string, what: string, v: unknown): string {
  return parseId(replyText(script, what, v)).text;
}

function replyArray(script: string, v: unknown, n?: number): unknown[] {
  if (!Array.isArray(v)) {
    throw new ReplyShapeError(script, "the reply is not an array");
  }
  if (n !== undefined && v.length !== n) {
    throw new ReplyShapeError(
      script,
      "the reply has " + v.length + " elements, want " + n,
    );
  }
  return v;
}
`)
	var all []string
	for i, sc := range p.Scripts {
		scriptDecl(s, p, sc, b.Scripts[i])
		all = append(all, "SCRIPT_"+constName(sc.Name))
	}
	s.blank()
	s.doc("", "The bundle, in manifest order.")
	s.list("", "export const SCRIPTS: readonly Script[] = [", all, "];")
	s.blank()
	s.doc("", "Returns the script named name, or undefined.")
	s.line("export function scriptNamed(name: string): Script | undefined {")
	s.line("  return SCRIPTS.find((s) => s.name === name);")
	s.line("}")
	for _, sc := range p.Scripts {
		scriptCall(s, p, sc)
	}
}

func scriptDecl(s *src, p *model.Protocol, sc model.Script, r bundle.Script) {
	name := constName(sc.Name)
	s.blank()
	s.doc("", fmt.Sprintf("The Lua source of sdk/lua/%s.", r.File))
	s.line("const LUA_" + name + " = " + tmpl(r.Source) + ";")
	s.blank()
	s.doc("", fmt.Sprintf("The %s script: %s", sc.Name, sentence(sc.Summary)))
	s.line("export const SCRIPT_" + name + ": Script = {")
	s.line("  name: " + q(sc.Name) + ",")
	s.line("  sha1: " + q(r.SHA1) + ",")
	s.line("  source: LUA_" + name + ",")
	var keys, argv, keyTypes, argTypes, elems []string
	for _, k := range sc.Keys {
		keys = append(keys, q(k.Name))
		if k.Type == "reserve" {
			keyTypes = append(keyTypes, q("reserve:"+k.Member))
		} else {
			keyTypes = append(keyTypes, q(k.Type))
		}
	}
	for _, a := range sc.Argv {
		argv = append(argv, q(a.Name))
		argTypes = append(argTypes, q(a.Type))
	}
	for _, e := range sc.Reply.Elements {
		elems = append(elems, q(e.Name))
	}
	s.list("  ", "keys: [", keys, "],")
	s.list("  ", "argv: [", argv, "],")
	s.list("  ", "keyTypes: [", keyTypes, "],")
	s.list("  ", "argTypes: [", argTypes, "],")
	s.list("  ", "replyElements: [", elems, "],")
	s.line("};")
}

func scriptCall(s *src, p *model.Protocol, sc model.Script) {
	name := pascal(sc.Name)
	cname := constName(sc.Name)
	script := "SCRIPT_" + cname
	call, reply := name+"Call", name+"Reply"
	keyFields, argFields := callFields(sc)
	lit := q(sc.Name)

	// A repeated ARGV group of records: one entry interface, sent
	// interleaved.
	group, groupAt := sc.RepeatedArgs()
	entries := len(group) > 1
	entry := name + "Entry"
	if entries {
		s.blank()
		s.doc("", fmt.Sprintf("One entry of %s's repeated ARGV group: its values are sent interleaved, entry after entry, from ARGV[%d].", call, groupAt))
		s.line("export interface " + entry + " {")
		for j, a := range group {
			text := fmt.Sprintf("%s, every %d: %s (%s)", sc.ArgSlot(groupAt-1+j), len(group), a.Name, a.Type)
			if a.Summary != "" {
				text += ": " + a.Summary
			}
			s.doc("  ", text)
			s.line("  readonly " + singular(argFields[groupAt-1+j]) + ": " + argTS(a) + ";")
		}
		s.line("}")
		for j := range group {
			argFields[groupAt-1+j] = "entries[]." + singular(argFields[groupAt-1+j])
		}
	}

	// The call, documented like the Lua header.
	var lines []string
	lines = append(lines, fmt.Sprintf("A call of the %s script: %s", sc.Name, lowerFirst(sentence(sc.Summary))), "")
	for i, k := range sc.Keys {
		lines = append(lines, fmt.Sprintf("- %s -> %s%s: %s", sc.KeySlot(i), keyFields[i], countText(sc.KeyCount(i)), p.KeyShape(k)))
	}
	for i, a := range sc.Argv {
		line := fmt.Sprintf("- %s -> %s (%s)%s", sc.ArgSlot(i), argFields[i], a.TypeText(), countText(sc.ArgCount(i)))
		if a.Summary != "" {
			line += ": " + a.Summary
		}
		lines = append(lines, line)
	}
	for _, l := range sc.ReplyLines() {
		lines = append(lines, "- "+strings.TrimSpace(l))
	}
	refusalClasses := []string{}
	for _, ref := range sc.Refusals {
		c, _ := p.Class(ref.Class)
		cls := pascal(c.Name) + "Error"
		lines = append(lines, fmt.Sprintf("- Refusal: %s (%s), when %s", ref.Text(), cls, ref.When))
		if !contains(refusalClasses, cls) {
			refusalClasses = append(refusalClasses, cls)
		}
	}
	if t := sc.TransitionText(); t != "" {
		lines = append(lines, "- Transitions: "+t)
	}
	refusalText := ""
	if len(refusalClasses) > 0 {
		refusalText = " A refusal rejects with a " + strings.Join(refusalClasses, " or a ") + "."
	}
	s.blank()
	s.doc("", strings.Join(lines, "\n"))
	if len(sc.Keys)+len(sc.Argv) == 0 {
		s.line("export interface " + call + " {}")
	} else {
		s.line("export interface " + call + " {")
		for i, k := range sc.Keys {
			if k.Repeated {
				s.doc("  ", fmt.Sprintf("%s, %s: %s", sc.KeySlot(i), sc.KeyCount(i), p.KeyShape(k)))
				s.line("  readonly " + keyFields[i] + ": readonly string[];")
				continue
			}
			s.doc("  ", fmt.Sprintf("KEYS[%d]: %s", i+1, p.KeyShape(k)))
			s.line("  readonly " + keyFields[i] + ": string;")
		}
		for i, a := range sc.Argv {
			if a.Repeated && entries {
				if i == groupAt-1 {
					s.doc("  ", fmt.Sprintf("ARGV[%d..], zero or more entries, interleaved", groupAt))
					s.line("  readonly entries: readonly " + entry + "[];")
				}
				continue
			}
			text := fmt.Sprintf("%s: %s (%s)%s", sc.ArgSlot(i), a.Name, a.TypeText(), countText(sc.ArgCount(i)))
			if a.Summary != "" {
				text += ": " + a.Summary
			}
			s.doc("  ", text)
			if a.Repeated {
				s.line("  readonly " + argFields[i] + ": readonly " + argTS(a) + "[];")
				continue
			}
			s.line("  readonly " + argFields[i] + ": " + argTS(a) + ";")
		}
		s.line("}")
	}
	// An int argument's bounds, which the script refuses a value outside
	// of and a caller checks before it sends anything.
	for _, a := range sc.Argv {
		for _, b := range []struct {
			v          *int64
			suffix, is string
		}{{a.Min, "_MIN", "least"}, {a.Max, "_MAX", "greatest"}} {
			if b.v == nil {
				continue
			}
			s.blank()
			s.doc("", fmt.Sprintf("The %s %s %s admits (the script refuses any other before it writes).", b.is, a.Name, sc.Name))
			s.line("export const " + cname + "_" + constName(a.Name) + b.suffix + " = " + strconv.FormatInt(*b.v, 10) + ";")
		}
	}

	// Exec.
	var keyVals, argVals []string
	for i, k := range keyFields {
		if sc.Keys[i].Repeated {
			// A repeated group follows the single keys, one key per element.
			keyVals = append(keyVals, "...c."+k)
			continue
		}
		keyVals = append(keyVals, "c."+k)
	}
	argValue := func(a model.Arg, v string) string {
		switch a.Type {
		case "id":
			return "idArg(" + lit + ", " + q(a.Name) + ", " + v + ")"
		case "token", "int":
			return "intArg(" + lit + ", " + q(a.Name) + ", " + v + ")"
		}
		return v
	}
	if entries {
		var vals []string
		for j, a := range group {
			vals = append(vals, argValue(a, "v."+strings.TrimPrefix(argFields[groupAt-1+j], "entries[].")))
		}
		for i, a := range sc.Argv[:groupAt-1] {
			argVals = append(argVals, argValue(a, "c."+argFields[i]))
		}
		flat := "...c.entries.flatMap((v) => [" + strings.Join(vals, ", ") + "])"
		if width_("      "+flat+",") > width {
			// As prettier breaks it: one value a line inside the array
			// (the item sits in argv's list, six spaces in).
			flat = "...c.entries.flatMap((v) => [\n"
			for _, v := range vals {
				flat += "        " + v + ",\n"
			}
			flat += "      ])"
		}
		argVals = append(argVals, flat)
	}
	for i, a := range sc.Argv {
		if entries {
			break
		}
		v := "c." + argFields[i]
		if a.Repeated {
			if m := argValue(a, "v"); m != "v" {
				v += ".map((v) => " + m + ")"
			}
			argVals = append(argVals, "..."+v)
			continue
		}
		argVals = append(argVals, argValue(a, v))
	}
	s.blank()
	s.doc("", "Builds the call's KEYS and ARGV; a malformed id throws an IdError and a number that is not an integer a RangeError, before anything is sent.")
	s.sig("", "export function "+camel(sc.Name)+"Exec", []string{"c: " + call}, ": ScriptExec {")
	s.line("  return {")
	s.line("    script: " + script + ",")
	s.list("    ", "keys: [", keyVals, "],")
	s.list("    ", "argv: [", argVals, "],")
	s.line("  };")
	s.line("}")

	// Reply.
	var ret string
	switch sc.Reply.Type {
	case "array":
		s.blank()
		if sc.Reply.Repeated {
			s.doc("", fmt.Sprintf("One record of the reply of the %s script.", sc.Name))
		} else {
			s.doc("", fmt.Sprintf("The reply of the %s script.", sc.Name))
		}
		s.line("export interface " + reply + " {")
		for _, e := range sc.Reply.Elements {
			text := e.Name + " (" + e.Type + ")"
			if e.Summary != "" {
				text += ": " + e.Summary
			}
			s.doc("  ", text)
			s.line("  readonly " + camel(e.Name) + ": " + elementTS(e) + ";")
		}
		s.line("}")
		record := func(fn string) {
			s.sig("", "export function "+fn, []string{"reply: unknown"}, ": "+reply+" {")
			s.line("  const a = replyArray(" + lit + ", reply, " + itoa(len(sc.Reply.Elements)) + ");")
			s.line("  return {")
			for i, e := range sc.Reply.Elements {
				dec := "replyText"
				switch e.Type {
				case "id":
					dec = "replyId"
				case "token", "int":
					dec = "replyInt"
				case "bytes":
					dec = "replyBytes"
				}
				closing := "),"
				if e.Vocabulary != "" {
					// A word outside the vocabulary is kept as read: a
					// newer writer may know more words (the guard tells).
					closing = ") as " + VocabularyType(e.Vocabulary) + ","
				}
				s.list("    ", camel(e.Name)+": "+dec+"(", []string{lit, q(e.Name), "a[" + itoa(i) + "]"}, closing)
			}
			s.line("  };")
			s.line("}")
		}
		if sc.Reply.Repeated {
			s.blank()
			s.doc("", fmt.Sprintf("Decodes one record of a reply of the %s script.", sc.Name))
			record("decode" + name + "Record")
			s.blank()
			s.doc("", fmt.Sprintf("Decodes a reply of the %s script: zero or more records, in the order the script produced them.", sc.Name))
			s.sig("", "export function decode"+name, []string{"reply: unknown"}, ": "+reply+"[] {")
			if line := "  return replyArray(" + lit + ", reply).map(decode" + name + "Record);"; len(line) <= 80 {
				s.line(line)
			} else {
				// As prettier breaks a call that does not fit in 80 columns.
				s.line("  return replyArray(" + lit + ", reply).map(")
				s.line("    decode" + name + "Record,")
				s.line("  );")
			}
			s.line("}")
			ret = reply + "[]"
		} else if sc.Reply.Nil != "" {
			s.blank()
			s.doc("", fmt.Sprintf("Decodes a reply of the %s script; null when %s.", sc.Name, sc.Reply.Nil))
			s.sig("", "export function decode"+name, []string{"reply: unknown"}, ": "+reply+" | null {")
			s.line("  if (reply === null || reply === false) {")
			s.line("    return null;")
			s.line("  }")
			s.line("  return decode" + name + "Record(reply);")
			s.line("}")
			s.blank()
			s.doc("", fmt.Sprintf("Decodes a non-nil reply of the %s script.", sc.Name))
			record("decode" + name + "Record")
			ret = reply + " | null"
		} else {
			s.blank()
			s.doc("", fmt.Sprintf("Decodes a reply of the %s script.", sc.Name))
			record("decode" + name)
			ret = reply
		}
	default:
		if len(sc.Reply.Values) > 0 {
			for _, v := range sc.Reply.Values {
				text := fmt.Sprintf("The %s reply %d", sc.Name, v.Value)
				if v.Summary != "" {
					text += ": " + v.Summary
				}
				s.blank()
				s.doc("", sentence(text))
				s.decl("", "export const "+cname+"_"+constName(v.Name), fmt.Sprint(v.Value))
			}
		}
		typ, dec := "number", "replyInt"
		if sc.Reply.Type == "string" {
			typ, dec = "string", "replyText"
		}
		s.blank()
		s.doc("", fmt.Sprintf("Decodes a reply of the %s script.", sc.Name))
		s.sig("", "export function decode"+name, []string{"reply: unknown"}, ": "+typ+" {")
		s.list("  ", "return "+dec+"(", []string{lit, q("reply"), "reply"}, ");")
		s.line("}")
		ret = typ
	}
	s.blank()
	s.doc("", "Runs the call on r and decodes its reply."+refusalText)
	s.sig("", "export async function run"+name, []string{"r: ScriptRunner", "c: " + call}, ": Promise<"+ret+"> {")
	s.list("  ", "return decode"+name+"(", []string{"await runScript(r, " + camel(sc.Name) + "Exec(c))"}, ");")
	s.line("}")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// countText is ", " and a slot's count (one per ids), or "" for one.
func countText(count string) string {
	if count == "" {
		return ""
	}
	return ", " + count
}
