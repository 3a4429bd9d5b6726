package ts

import (
	"fmt"
	"strings"

	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/gen/target"
)

func keysFile(s *src, in *target.Input) {
	p := in.Protocol
	qg := p.Queues
	queueClass, _ := p.KeyClass("queue")
	jobClass, _ := p.KeyClass("job")
	reserveClass, _ := p.KeyClass("reserve")

	s.line(`import { parseId } from "./ids.js";`)
	var setImports []string
	for _, st := range p.Sets {
		setImports = append(setImports, "SET_"+constName(st.Key))
	}
	s.list("", "import { ", append(setImports, "type SetName"), ` } from "./protocol.js";`)
	s.blank()
	s.doc("", "The longest queue name the grammar admits, in bytes.")
	s.decl("", "export const MAX_QUEUE_LENGTH", itoa(qg.MaxLength))
	s.blank()
	for _, t := range p.KeyTypes {
		if w := t.Tripwire; w != nil {
			n := constName(t.Name)
			s.doc("", "The redis type of the value left at a queue's "+t.Name+" key in its other layout, where its members live at the "+w.MovesTo+" key: "+w.Summary)
			s.decl("", "export const "+n+"_TRIPWIRE_TYPE", q(w.Redis))
			s.blank()
			s.doc("", "The first release whose every script that declares the "+t.Name+" key refuses that layout before any write; a client of an older release on the deployment cannot be refused safely.")
			s.decl("", "export const "+n+"_TRIPWIRE_FLOOR", q(w.Floor.String()))
			s.blank()
		}
	}
	s.doc("", "The queue-name grammar: "+qg.Summary)
	s.decl("", "export const QUEUE_PATTERN", q(qg.Pattern))
	s.blank()
	s.line(`const QUEUE_RE = new RegExp("^(?:" + QUEUE_PATTERN + ")$");`)
	s.blank()
	s.lines("", `/**
 * A queue name outside the grammar (QUEUE_PATTERN). Key builders throw it
 * before any command is sent.
 */
export class QueueNameError extends Error {
  /** The name that was refused. */
  readonly queue: string;

  constructor(queue: string, why: string) {
    super("emq: malformed queue name " + JSON.stringify(queue) + ": " + why);
    this.name = "QueueNameError";
    this.queue = queue;
  }
}

/**
 * Returns when name is a well-formed queue name, and throws a
 * QueueNameError that says why otherwise.
 */
export function validateQueueName(name: string): void {
  if (typeof name !== "string") {
    throw new QueueNameError(String(name), "not a string");
  }
  if (Buffer.byteLength(name) > MAX_QUEUE_LENGTH) {
    throw new QueueNameError(name, "longer than " + MAX_QUEUE_LENGTH);
  }
  if (!QUEUE_RE.test(name)) {
    throw new QueueNameError(name, "a queue name matches " + QUEUE_PATTERN);
  }
}
`)
	s.blank()

	// Per-queue key types.
	var types []string
	for _, t := range p.KeyTypes {
		if t.Class == "queue" {
			types = append(types, q(t.Name))
		}
	}
	s.doc("", "The per-queue key types, in manifest order.")
	s.list("", "export const QUEUE_KEY_TYPES = [", types, "] as const;")
	s.blank()
	s.doc("", "A per-queue key type.")
	s.line("export type QueueKeyType = (typeof QUEUE_KEY_TYPES)[number];")
	s.blank()

	rowParts := jobClass.Parts
	idx := len(rowParts) - 1
	for i, pt := range rowParts {
		if pt.Hole == "id" {
			idx = i
		}
	}
	s.doc("", `The keys of one queue, built once from a checked name. The queue name
is the hashtag of every key, so all of them, and every row of the queue,
share one cluster slot.`)
	s.line("export class QueueKeys {")
	s.line("  /** The queue's name. */")
	s.line("  readonly queue: string;")
	s.doc("  ", fmt.Sprintf("The prefix of the queue's job rows (%s without the id); scripts that reach rows of ids they pop take it as ARGV.", jobClass.Shape))
	s.line("  readonly rowPrefix: string;")
	for _, t := range p.KeyTypes {
		if t.Class != "queue" {
			continue
		}
		s.doc("  ", fmt.Sprintf("%s (%s): %s", p.TypeShape(t.Name), t.Redis, sentence(t.Summary)))
		s.line("  readonly " + camel(t.Name) + ": string;")
	}
	s.blank()
	s.doc("  ", "Checks queue against the grammar (QueueNameError) and builds its keys.")
	s.line("  constructor(queue: string) {")
	s.line("    validateQueueName(queue);")
	s.line("    this.queue = queue;")
	s.decl("    ", "this.rowPrefix", concat(rowParts[:idx], nil, map[string]string{"queue": "queue"}))
	for _, t := range p.KeyTypes {
		if t.Class != "queue" {
			continue
		}
		s.decl("    ", "this."+camel(t.Name), concat(queueClass.Parts, map[string]string{"type": t.Name}, map[string]string{"queue": "queue"}))
	}
	s.line("  }")
	s.blank()
	s.doc("  ", fmt.Sprintf("Returns the key of id's row, %s; a malformed id throws an IdError before anything is sent.", jobClass.Shape))
	s.line("  row(id: string): string {")
	s.line("    parseId(id);")
	s.line("    return this.rowPrefix + " + concat(rowParts[idx:], nil, map[string]string{"id": "id"}) + ";")
	s.line("  }")
	s.blank()
	s.doc("  ", "Returns the queue's key of the per-queue key type typ, or undefined when there is no such type.")
	s.line("  key(typ: string): string | undefined {")
	s.line("    switch (typ) {")
	for _, t := range p.KeyTypes {
		if t.Class == "queue" {
			s.line("      case " + q(t.Name) + ":")
			s.line("        return this." + camel(t.Name) + ";")
		}
	}
	s.line("    }")
	s.line("    return undefined;")
	s.line("  }")
	s.blank()
	s.doc("  ", "Returns the key of the queue's set s.")
	s.line("  set(s: SetName): string {")
	s.line("    switch (s) {")
	for _, st := range p.Sets {
		s.line("      case SET_" + constName(st.Key) + ":")
		s.line("        return this." + camel(st.Key) + ";")
	}
	s.line("    }")
	s.line("  }")
	s.line("}")
	s.blank()

	// Reserve keys.
	for _, m := range p.Reserve {
		text := fmt.Sprintf("The reserve member %s (%s): %s", p.MemberShape(m), m.Redis, sentence(m.Summary))
		if !m.HasQueue() {
			s.doc("", text)
			s.decl("", "export const KEY_"+constName(m.Ident()), q(model.Shape(reserveClass.Parts, map[string]string{"member": m.Name})))
			s.blank()
			continue
		}
		s.doc("", "Returns the key of t"+text[1:]+" The queue name is checked first (QueueNameError).")
		s.line("export function key" + pascal(m.Ident()) + "(queue: string): string {")
		s.line("  validateQueueName(queue);")
		s.line("  return " + concat(substitute(reserveClass.Parts, "member", m.Parts), nil, map[string]string{"queue": "queue"}) + ";")
		s.line("}")
		s.blank()
	}
	s.doc("", "Returns the key of the reserve member named member (its name before any hole: migration for migration:<queue>); queue fills a member that names a queue.")
	s.line("export function reserveKey(member: string, queue?: string): string {")
	s.line("  switch (member) {")
	for _, m := range p.Reserve {
		s.line("    case " + q(m.Ident()) + ":")
		if m.HasQueue() {
			s.line("      return key" + pascal(m.Ident()) + `(queue ?? "");`)
		} else {
			s.line("      return KEY_" + constName(m.Ident()) + ";")
		}
	}
	s.line("  }")
	s.line(`  const what = JSON.stringify(member);`)
	s.line(`  throw new Error("emq: " + what + " is not a reserve member");`)
	s.line("}")

	// Named fields of hash reserve members.
	for _, m := range p.Reserve {
		for _, fl := range m.Fields {
			lit := strings.TrimRight(fl.Parts[0].Lit, ":")
			name := camel(strings.TrimSuffix(m.Ident(), "s")) + pascal(lit)
			var params []string
			expr := map[string]string{}
			for _, h := range fl.Parts {
				switch h.Hole {
				case "queue":
					params = append(params, "queue: string")
					expr["queue"] = "queue"
				case "node":
					params = append(params, "node: number")
					expr["node"] = "String(node)"
				}
			}
			s.blank()
			s.doc("", fmt.Sprintf("Returns the field %s of the reserve member %s: %s", fl.Name, p.MemberShape(m), sentence(fl.Summary)))
			s.sig("", "export function "+name, params, ": string {")
			s.line("  return " + concat(fl.Parts, nil, expr) + ";")
			s.line("}")
		}
	}
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
