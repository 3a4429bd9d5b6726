package ts

import (
	"strings"

	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/gen/target"
)

// obj writes an object literal `open{ items }close` on one line when it
// fits, else one member per line (prettier keeps a literal written
// expanded expanded, and collapses none).
func (s *src) obj(ind, open string, items []string, close string) {
	l := ind + open + "{ " + strings.Join(items, ", ") + " }" + close
	if len(items) > 0 && width_(l) <= width {
		s.line(l)
		return
	}
	s.line(ind + open + "{")
	for _, it := range items {
		s.line(ind + "  " + it + ",")
	}
	s.line(ind + "}" + close)
}

// prop writes `key: value,`, breaking after the colon when wider than the
// print width (value must be a single literal).
func (s *src) prop(ind, key, value string) {
	l := ind + key + ": " + value + ","
	if width_(l) <= width {
		s.line(l)
		return
	}
	s.line(ind + key + ":")
	s.line(ind + "  " + value + ",")
}

func probesFile(s *src, in *target.Input) {
	p := in.Protocol
	s.lines("", `/** What a probe step's reply must be. */
export interface ProbeExpect {
  /** int, positive, string, nil, error (a refusal) or fence (a verdict). */
  readonly kind: string;
  /** Narrows an array reply to this element first. */
  readonly element?: string;
  readonly int?: number;
  /** The string, the refusal's class word, or the fence verdict. */
  readonly string?: string;
}

/**
 * One check of a probe: run a script (its ARGV by name) or send a command,
 * then compare the reply. Strings may hold ${...} placeholders.
 */
export interface ProbeStep {
  readonly check: string;
  readonly script?: string;
  readonly args?: readonly (readonly [string, string])[];
  readonly command?: readonly string[];
  /** The name under which to keep the reply. */
  readonly save?: string;
  readonly expect: ProbeExpect;
}

/** A named list of checks that a live server behaves as the manifest says. */
export interface Probe {
  /** What it checks, e.g. "a wire class" and its class word. */
  readonly target: string;
  readonly summary: string;
  readonly steps: readonly ProbeStep[];
}
`)
	s.blank()
	vocab := []struct{ name, value, doc string }{
		{"PROBE_VAR_QUEUE", "queue", "${queue}: the scratch queue's name."},
		{"PROBE_VAR_VERSION", "version", "${version}: this SDK's version record."},
		{"PROBE_VAR_SEMVER", "semver", "${semver}: this SDK's major.minor.patch."},
		{"PROBE_VAR_BUNDLE", "bundle", "${bundle}: this SDK's bundle digest."},
		{"PROBE_KIND_KEY", "key", "${key:<type>}: a key of the scratch queue."},
		{"PROBE_KIND_ROW", "row", "${row:<id variable>}: the row of an id."},
		{"PROBE_KIND_RESERVE", "reserve", "${reserve:<member>}: a reserve key."},
		{"PROBE_KIND_FIELD", "field", "${field:<role>}: a row field's name."},
		{"PROBE_KIND_STATE", "state", "${state:<name>}: a state's value."},
	}
	s.doc("", "The placeholder vocabulary of probe strings; an id variable is a registered kind in lower case with an optional digit (${"+strings.Join(model.ProbeIDVars, "}, ${")+"}), a saved reply is ${<save>} or ${<save>.<element>}.")
	for _, v := range vocab {
		s.doc("", v.doc)
		s.decl("", "export const "+v.name, q(v.value))
	}
	s.blank()
	s.doc("", "Every probe the manifest declares, reserve members first, then wire classes, in manifest order.")
	s.line("export const PROBES: readonly Probe[] = [")
	emit := func(target string, pr model.Probe) {
		s.line("  {")
		s.prop("    ", "target", q(target))
		s.prop("    ", "summary", q(pr.Summary))
		s.line("    steps: [")
		for _, st := range pr.Steps {
			s.line("      {")
			s.prop("        ", "check", q(st.Check))
			if st.Script != "" {
				s.prop("        ", "script", q(st.Script))
			}
			if len(st.With) > 0 {
				var kv []string
				for _, w := range st.With {
					kv = append(kv, "["+q(w.Key)+", "+q(w.Value)+"]")
				}
				if len(kv) > 1 {
					// prettier breaks an array of several arrays always.
					s.line("        args: [")
					for _, x := range kv {
						s.line("          " + x + ",")
					}
					s.line("        ],")
				} else {
					s.list("        ", "args: [", kv, "],")
				}
			}
			if len(st.Command) > 0 {
				var cmd []string
				for _, c := range st.Command {
					cmd = append(cmd, q(c))
				}
				s.list("        ", "command: [", cmd, "],")
			}
			if st.Save != "" {
				s.prop("        ", "save", q(st.Save))
			}
			e := []string{"kind: " + q(st.Expect.Kind)}
			if st.Expect.Element != "" {
				e = append(e, "element: "+q(st.Expect.Element))
			}
			switch st.Expect.Kind {
			case "int":
				e = append(e, "int: "+itoa(int(st.Expect.Int)))
			case "string", "error", "fence":
				e = append(e, "string: "+q(st.Expect.String))
			}
			s.obj("        ", "expect: ", e, ",")
			s.line("      },")
		}
		s.line("    ],")
		s.line("  },")
	}
	for _, m := range p.Reserve {
		emit("reserve member "+p.MemberShape(m), m.Probe)
	}
	for _, c := range p.Classes {
		emit("wire class "+c.Word, c.Probe)
	}
	s.line("];")
}
