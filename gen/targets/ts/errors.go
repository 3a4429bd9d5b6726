package ts

import (
	"fmt"
	"strings"

	"github.com/echomq/echomq/gen/target"
)

func errorsFile(s *src, in *target.Input) {
	p := in.Protocol
	var words []string
	for _, c := range p.Classes {
		name := "CLASS_" + constName(c.Name)
		s.doc("", fmt.Sprintf("The class word of refusals issued by %s: %s", strings.Join(c.IssuedBy, ", "), sentence(c.Summary)))
		s.decl("", "export const "+name, q(c.Word))
		s.blank()
		words = append(words, name)
	}
	s.doc("", "The wire-class registry, in manifest order.")
	s.list("", "export const CLASSES = [", words, "] as const;")
	s.blank()
	s.doc("", "A wire class word: the first word of every refusal a bundle script issues.")
	s.line("export type ClassWord = (typeof CLASSES)[number];")
	s.blank()
	s.lines("", `/**
 * An error reply of the server. Client adapters reject a command the server
 * answered with an error with a ReplyError whose message is the reply's
 * text, so that the scripts can tell refusals from failures to talk.
 */
export class ReplyError extends Error {
  constructor(reply: string) {
    super(reply);
    this.name = "ReplyError";
  }
}

/**
 * A refusal a bundle script issued: an error reply whose first word is a
 * registered wire class. Every class has its own subclass; match it with
 * instanceof. code is the class word, detail the rest of the reply.
 */
export class WireError extends Error {
  /** The class word. */
  readonly code: ClassWord;
  /** The rest of the reply, after the class word. */
  readonly detail: string;
  /** The script that refused; empty when the reply was parsed alone. */
  readonly script: string;

  constructor(code: ClassWord, detail: string, script: string) {
    const where = script ? script + ": " : "";
    super("emq: " + where + code + (detail ? " " + detail : ""));
    this.name = "WireError";
    this.code = code;
    this.detail = detail;
    this.script = script;
  }
}
`)
	for _, c := range p.Classes {
		cls := pascal(c.Name) + "Error"
		s.blank()
		s.doc("", fmt.Sprintf("A refusal of wire class %s: %s", c.Word, sentence(c.Summary)))
		s.line("export class " + cls + " extends WireError {")
		s.line(`  constructor(detail: string, script: string = "") {`)
		s.line("    super(CLASS_" + constName(c.Name) + ", detail, script);")
		s.line("    this.name = " + q(cls) + ";")
		s.line("  }")
		s.line("}")
	}
	s.blank()
	s.lines("", `/**
 * Parses an error reply into the error of its wire class, or returns
 * undefined when its first word is not a registered class.
 */
export function parseErrorReply(
  reply: string,
  script: string = "",
): WireError | undefined {
  const sp = reply.indexOf(" ");
  const word = sp < 0 ? reply : reply.slice(0, sp);
  const detail = sp < 0 ? "" : reply.slice(sp + 1);
  switch (word) {`)
	for _, c := range p.Classes {
		s.line("    case CLASS_" + constName(c.Name) + ":")
		s.line("      return new " + pascal(c.Name) + "Error(detail, script);")
	}
	s.lines("", `  }
  return undefined;
}

/**
 * Turns a script's failure into the error of its wire class when it is a
 * refusal; any other failure is returned as it is.
 */
export function scriptError(script: string, err: unknown): unknown {
  if (err instanceof ReplyError) {
    return parseErrorReply(err.message, script) ?? err;
  }
  return err;
}`)
}
