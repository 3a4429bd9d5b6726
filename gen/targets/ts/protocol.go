package ts

import (
	"fmt"
	"strings"

	"github.com/echomq/echomq/gen/target"
)

func protocolFile(s *src, in *target.Input) {
	p := in.Protocol
	vm, _ := p.Member("version")
	prefix, _, _ := strings.Cut(vm.Value, "<major>")

	s.doc("", "The name of the wire protocol: "+p.Summary)
	s.decl("", "export const PROTOCOL", q(p.Name))
	s.blank()
	s.doc("", "The wire version this SDK speaks.")
	s.decl("", "export const VERSION", q(p.Version.String()))
	s.blank()
	s.doc("", "The parts of VERSION.")
	s.decl("", "export const VERSION_MAJOR", itoa(p.Version.Major))
	s.decl("", "export const VERSION_MINOR", itoa(p.Version.Minor))
	s.decl("", "export const VERSION_PATCH", itoa(p.Version.Patch))
	s.blank()
	s.doc("", fmt.Sprintf("The value of the reserve's version member that this SDK claims and fences on (%s).", vm.Value))
	s.decl("", "export const VERSION_RECORD", q(p.VersionRecord()))
	s.blank()
	s.doc("", "The prefix of every version record.")
	s.decl("", "export const VERSION_RECORD_PREFIX", q(prefix))
	s.blank()

	// Kinds.
	var kinds []string
	for _, k := range p.Kinds {
		s.doc("", fmt.Sprintf("The kind %s: %s", k.Name, sentence(k.Summary)))
		s.decl("", "export const KIND_"+k.Name, q(k.Name))
		kinds = append(kinds, "KIND_"+k.Name)
		s.blank()
	}
	s.doc("", "The kind registry, in manifest order.")
	s.list("", "export const KINDS = [", kinds, "] as const;")
	s.blank()
	s.doc("", fmt.Sprintf("A kind: the namespace that starts every branded id, %d ASCII capitals.", p.IDs.KindLength))
	s.line("export type Kind = (typeof KINDS)[number];")
	s.blank()
	work := p.WorkKind()
	s.doc("", fmt.Sprintf("The only kind the enqueue scripts admit in the job position (%s); any other kind is refused with a KindError.", work.Name))
	s.line("export const WORK_KIND = KIND_" + work.Name + ";")
	s.blank()
	s.doc("", "Reports whether k is in the kind registry.")
	s.line("export function isKind(k: string): k is Kind {")
	s.line("  return (KINDS as readonly string[]).includes(k);")
	s.line("}")
	s.blank()

	vocabulariesCode(s, p)

	// Row fields.
	var fields []string
	for _, fl := range p.Row.Fields {
		name := "FIELD_" + constName(fl.Role)
		s.doc("", fmt.Sprintf("The row field with the %s role (encoding %s): %s", fl.Role, fl.Encoding, sentence(fl.Summary)))
		s.decl("", "export const "+name, q(fl.Name))
		s.blank()
		fields = append(fields, name)
	}
	s.doc("", "The row's field names in manifest order; a row has exactly these. "+p.Row.Summary)
	s.list("", "export const ROW_FIELDS = [", fields, "] as const;")
	s.blank()
	s.doc("", "Returns the name of the row field with role (state, token, payload), or undefined.")
	s.line("export function fieldByRole(role: string): string | undefined {")
	s.line("  switch (role) {")
	for _, fl := range p.Row.Fields {
		s.line("    case " + q(fl.Role) + ":")
		s.line("      return FIELD_" + constName(fl.Role) + ";")
	}
	s.line("  }")
	s.line("  return undefined;")
	s.line("}")
	s.blank()
	tok, _ := p.Field("token")
	s.doc("", "The token field's value at admission.")
	s.decl("", "export const INITIAL_TOKEN", q(tok.Initial))
	s.blank()

	// States.
	var states []string
	for _, st := range p.Row.States {
		name := "STATE_" + constName(st.Name)
		s.doc("", fmt.Sprintf("The state %s: %s", st.Name, sentence(st.Summary)))
		s.decl("", "export const "+name, q(st.Name))
		s.blank()
		states = append(states, name)
	}
	s.doc("", "Every state, in manifest order.")
	s.list("", "export const STATES = [", states, "] as const;")
	s.blank()
	s.doc("", "A value of the row's state field. "+p.Invariant)
	s.line("export type State = (typeof STATES)[number];")
	s.blank()
	s.doc("", "Reports whether s is a state.")
	s.line("export function isState(s: string): s is State {")
	s.line("  return (STATES as readonly string[]).includes(s);")
	s.line("}")
	s.blank()

	// Sets.
	var sets, lex []string
	for _, st := range p.Sets {
		name := "SET_" + constName(st.Key)
		s.doc("", fmt.Sprintf("The set %s holds ids in state %s, scored %s: %s", st.Key, st.State, st.Score, sentence(st.Summary)))
		s.decl("", "export const "+name, q(st.Key))
		s.blank()
		sets = append(sets, name)
		if st.Score == "zero" {
			lex = append(lex, "s === "+name)
		}
	}
	s.doc("", "Every sorted set of a queue, in manifest order.")
	s.list("", "export const SETS = [", sets, "] as const;")
	s.blank()
	s.doc("", "A sorted set of a queue.")
	s.line("export type SetName = (typeof SETS)[number];")
	s.blank()
	s.doc("", "Reports whether s names a set.")
	s.line("export function isSetName(s: string): s is SetName {")
	s.line("  return (SETS as readonly string[]).includes(s);")
	s.line("}")
	s.blank()
	s.doc("", "The state of the ids set s holds.")
	s.line("export function setState(s: SetName): State {")
	s.line("  switch (s) {")
	for _, st := range p.Sets {
		s.line("    case SET_" + constName(st.Key) + ":")
		s.line("      return STATE_" + constName(st.State) + ";")
	}
	s.line("  }")
	s.line("}")
	s.blank()
	s.doc("", "The set that holds ids in state st.")
	s.line("export function stateSet(st: State): SetName {")
	s.line("  switch (st) {")
	for _, st := range p.Row.States {
		s.line("    case STATE_" + constName(st.Name) + ":")
		s.line("      return SET_" + constName(st.Set) + ";")
	}
	s.line("  }")
	s.line("}")
	s.blank()
	s.doc("", "Reports whether every member of s scores zero, so that lexicographic order is mint order and newest-first browse is a reverse lex range.")
	if len(lex) == 0 {
		lex = []string{"false"}
	}
	ret := "  return " + strings.Join(lex, " || ") + ";"
	s.line("export function setIsLex(s: SetName): boolean {")
	if width_(ret) <= width {
		s.line(ret)
	} else {
		s.line("  return (")
		for i, l := range lex {
			if i == 0 {
				s.line("    " + l)
			} else {
				s.line("    || " + l)
			}
		}
		s.line("  );")
	}
	s.line("}")
}
