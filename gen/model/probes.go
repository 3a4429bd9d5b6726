package model

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/echomq/echomq/gen/manifest"
)

// ProbeIDVars are the id variables a probe may use: each is a fresh id of
// the named kind (job and job2 of the work kind, ord of the kind ORD when
// registered), minted for the probe's run.
var ProbeIDVars = []string{"job", "job2", "ord"}

// placeholderRE finds ${...} placeholders in probe strings.
var placeholderRE = regexp.MustCompile(`\$\{([^}]*)\}`)

// FenceVerdicts are the values an expect.fence may take.
var FenceVerdicts = []string{"admitted"}

func (r *resolver) probes() {
	for i, in := range r.m.Reserve {
		if in.Probe != nil && i < len(r.p.Reserve) {
			r.p.Reserve[i].Probe = r.probe(in.Probe, fmt.Sprintf("reserve member %q", in.Member.V))
		}
	}
	for i, in := range r.m.Classes {
		if in.Probe != nil && i < len(r.p.Classes) {
			r.p.Classes[i].Probe = r.probe(in.Probe, fmt.Sprintf("wire class %q", in.Word.V))
			if !probeExpectsClass(r.p.Classes[i].Probe, in.Word.V) {
				r.errf(in.Probe.Pos, "wire class %q: its probe never expects the error %s", in.Word.V, in.Word.V)
			}
		}
	}
}

func probeExpectsClass(p Probe, word string) bool {
	for _, s := range p.Steps {
		if s.Expect.Kind == "error" && s.Expect.String == word {
			return true
		}
	}
	return false
}

func (r *resolver) probe(in *manifest.Probe, owner string) Probe {
	p := Probe{Summary: in.Summary.V}
	saved := map[string]Script{} // saved reply name -> the script that produced it
	for _, st := range in.Steps {
		s := Step{Check: st.Check.V}
		var script Script
		switch {
		case st.Script != nil && len(st.Command) > 0:
			r.errf(st.Pos, "%s probe step %q: give a script or a command, not both", owner, st.Check.V)
		case st.Script != nil:
			s.Script = st.Script.V
			sc, ok := r.p.Script(st.Script.V)
			if !ok {
				r.errf(st.Script.Pos, "%s probe step %q: %q is not a declared script", owner, st.Check.V, st.Script.V)
				break
			}
			script = sc
			// A script with a repeated group runs with one entry: each
			// repeated argument's value as given, and in the repeated key
			// group the row of the step's id, as for a fixed row key.
			if k, i := sc.RepeatedKey(); i > 0 && k.Type != "row" {
				r.errf(st.Script.Pos, "%s probe step %q: script %q repeats keys of type %q; a probe step fills a repeated key group only with the row of its id", owner, st.Check.V, sc.Name, k.Type)
			}
			for _, kv := range st.With {
				if a, i := sc.Arg(kv.Key.V); i == 0 || a.Type == "prefix" {
					r.errf(kv.Key.Pos, "%s probe step %q: script %q has no argument %q to give", owner, st.Check.V, sc.Name, kv.Key.V)
				}
				r.placeholders(kv.Value, saved, owner)
				s.With = append(s.With, KV{Key: kv.Key.V, Value: kv.Value.V})
			}
			for _, a := range sc.Argv {
				if _, ok := st.With.Get(a.Name); !ok && a.Type != "prefix" {
					r.errf(st.Pos, "%s probe step %q: script %q needs argument %q (with: ...)", owner, st.Check.V, sc.Name, a.Name)
				}
			}
		case len(st.Command) > 0:
			for _, c := range st.Command {
				r.placeholders(c, saved, owner)
				s.Command = append(s.Command, c.V)
			}
			if strings.ContainsAny(st.Command[0].V, "${} ") {
				r.errf(st.Command[0].Pos, "%s probe step %q: the command name must be literal", owner, st.Check.V)
			}
		default:
			r.errf(st.Pos, "%s probe step %q: give a script or a command to run", owner, st.Check.V)
		}
		if st.Save != nil {
			if !identRE.MatchString(st.Save.V) || contains(ProbeIDVars, st.Save.V) || st.Save.V == "queue" {
				r.errf(st.Save.Pos, "%s probe step %q: save name %q must be a fresh lower-case identifier", owner, st.Check.V, st.Save.V)
			}
			if s.Script == "" {
				r.errf(st.Save.Pos, "%s probe step %q: only a script's reply can be saved", owner, st.Check.V)
			}
			saved[st.Save.V] = script
			s.Save = st.Save.V
		}
		s.Expect = r.expect(st.Expect, script, saved, owner, st.Check.V)
		p.Steps = append(p.Steps, s)
	}
	return p
}

func (r *resolver) expect(in manifest.Expect, script Script, saved map[string]Script, owner, check string) Expect {
	var e Expect
	n := 0
	if in.Int != nil {
		n++
		e.Kind, e.Int = "int", in.Int.V
	}
	if in.String != nil {
		n++
		e.Kind, e.String = "string", in.String.V
		r.placeholders(*in.String, saved, owner)
	}
	if in.Error != nil {
		n++
		e.Kind, e.String = "error", in.Error.V
		if _, ok := r.p.Class(in.Error.V); !ok {
			r.errf(in.Error.Pos, "%s probe step %q expects class %q, which is not declared (declared: %s)", owner, check, in.Error.V, r.classWords())
		} else if script.Name != "" {
			issued := false
			for _, f := range script.Refusals {
				issued = issued || f.Class == in.Error.V
			}
			if !issued {
				r.errf(in.Error.Pos, "%s probe step %q expects %s from script %q, which never issues it", owner, check, in.Error.V, script.Name)
			}
		}
	}
	if in.Nil != nil {
		n++
		e.Kind = "nil"
	}
	if in.Positive != nil {
		n++
		e.Kind, e.Positive = "positive", in.Positive.V
	}
	if in.Fence != nil {
		n++
		e.Kind, e.String = "fence", in.Fence.V
		if !contains(FenceVerdicts, in.Fence.V) {
			r.errf(in.Fence.Pos, "%s probe step %q: fence verdict %q is not one of %s", owner, check, in.Fence.V, strings.Join(FenceVerdicts, ", "))
		}
	}
	if n != 1 {
		r.errf(in.Pos, "%s probe step %q: expect exactly one of int, string, error, nil, positive, fence (found %d)", owner, check, n)
	}
	if in.Element != nil {
		e.Element = in.Element.V
		found := false
		for _, el := range script.Reply.Elements {
			found = found || el.Name == in.Element.V
		}
		if !found {
			r.errf(in.Element.Pos, "%s probe step %q: the reply has no element %q", owner, check, in.Element.V)
		}
	}
	return e
}

// placeholders checks every ${...} in s. saved maps saved reply names to
// their scripts; nil skips saved-name checks.
func (r *resolver) placeholders(s manifest.Str, saved map[string]Script, owner string) {
	for _, m := range placeholderRE.FindAllStringSubmatch(s.V, -1) {
		if err := r.checkPlaceholder(m[1], saved); err != nil {
			r.errf(s.Pos, "%s probe: ${%s}: %v", owner, m[1], err)
		}
	}
}

func (r *resolver) checkPlaceholder(ph string, saved map[string]Script) error {
	kind, arg, hasArg := strings.Cut(ph, ":")
	if !hasArg {
		switch {
		case ph == "queue" || ph == "version" || ph == "semver" || ph == "bundle" || contains(ProbeIDVars, ph):
			return nil
		}
		name, el, dotted := strings.Cut(ph, ".")
		if saved == nil {
			return nil
		}
		sc, ok := saved[name]
		if !ok {
			return fmt.Errorf("no variable %q (fresh: queue, %s, version, semver, bundle; or a saved reply)", name, strings.Join(ProbeIDVars, ", "))
		}
		if dotted {
			for _, e := range sc.Reply.Elements {
				if e.Name == el {
					return nil
				}
			}
			return fmt.Errorf("script %q's reply has no element %q", sc.Name, el)
		}
		return nil
	}
	switch kind {
	case "key":
		if t, ok := r.p.KeyType(arg); !ok || t.Class != "queue" {
			return fmt.Errorf("%q is not a per-queue key type", arg)
		}
	case "row":
		if !contains(ProbeIDVars, arg) {
			return fmt.Errorf("%q is not an id variable (%s)", arg, strings.Join(ProbeIDVars, ", "))
		}
	case "reserve":
		if _, ok := r.p.Member(arg); !ok {
			return fmt.Errorf("%q is not a reserve member", arg)
		}
	case "field":
		if _, ok := r.p.Field(arg); !ok {
			return fmt.Errorf("no row field has role %q", arg)
		}
	case "state":
		if _, ok := r.p.State(arg); !ok {
			return fmt.Errorf("%q is not a declared state", arg)
		}
	default:
		return fmt.Errorf("unknown placeholder kind %q (key, row, reserve, field, state)", kind)
	}
	return nil
}
