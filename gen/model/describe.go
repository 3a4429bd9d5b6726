package model

import (
	"fmt"
	"strings"
)

// Shape renders a key class's parts with some holes filled; unfilled holes
// stay <hole>.
func Shape(parts []Part, fill map[string]string) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Hole == "" {
			b.WriteString(p.Lit)
		} else if v, ok := fill[p.Hole]; ok {
			b.WriteString(v)
		} else {
			b.WriteString("<" + p.Hole + ">")
		}
	}
	return b.String()
}

// KeyShape is the shape of the key a script key slot takes, e.g.
// emq:{<queue>}:pending or {emq}:version.
func (p *Protocol) KeyShape(k ScriptKey) string {
	if k.Type == "reserve" {
		m, _ := p.Member(k.Member)
		return p.MemberShape(m)
	}
	return p.TypeShape(k.Type)
}

// TypeShape is the shape of the keys of a key type.
func (p *Protocol) TypeShape(typ string) string {
	t, _ := p.KeyType(typ)
	c, _ := p.KeyClass(t.Class)
	return Shape(c.Parts, map[string]string{"type": t.Name})
}

// MemberShape is the shape of a reserve member's key.
func (p *Protocol) MemberShape(m Member) string {
	c, _ := p.KeyClass("reserve")
	return Shape(c.Parts, map[string]string{"member": Shape(m.Parts, nil)})
}

// ReplyLines describes a script's reply, one line each: the Output line
// first, then one line per named value or element.
func (s Script) ReplyLines() []string {
	r := s.Reply
	var lines []string
	switch {
	case r.Type == "array":
		var names []string
		for _, e := range r.Elements {
			names = append(names, e.Name)
		}
		if r.Repeated {
			lines = append(lines, fmt.Sprintf("Output: zero or more records [%s]", strings.Join(names, ", ")))
		} else {
			lines = append(lines, fmt.Sprintf("Output: [%s]", strings.Join(names, ", ")))
		}
		for i, e := range r.Elements {
			line := fmt.Sprintf("  [%d] %s (%s)", i+1, e.Name, e.Type)
			if e.Vocabulary != "" {
				line = fmt.Sprintf("  [%d] %s (%s, a word of %s)", i+1, e.Name, e.Type, e.Vocabulary)
			}
			if e.Summary != "" {
				line += ": " + e.Summary
			}
			lines = append(lines, line)
		}
	case r.Summary != "":
		lines = append(lines, fmt.Sprintf("Output: %s: %s", r.Type, r.Summary))
	default:
		lines = append(lines, "Output: "+r.Type)
	}
	for _, v := range r.Values {
		line := fmt.Sprintf("  %d %s", v.Value, v.Name)
		if v.Summary != "" {
			line += ": " + v.Summary
		}
		lines = append(lines, line)
	}
	if r.Nil != "" {
		lines = append(lines, "  nil: "+r.Nil)
	}
	return lines
}

// TransitionText lists a script's transitions as "a -> b, c -> d".
func (s Script) TransitionText() string {
	var t []string
	for _, x := range s.Transitions {
		t = append(t, x.From+" -> "+x.To)
	}
	return strings.Join(t, ", ")
}

// KeySlot names the i-th (0-based) KEYS slot of the script as its header
// prints it: KEYS[2], or KEYS[4..] for a repeated group.
func (s Script) KeySlot(i int) string {
	if s.Keys[i].Repeated {
		return fmt.Sprintf("KEYS[%d..]", i+1)
	}
	return fmt.Sprintf("KEYS[%d]", i+1)
}

// ArgSlot names the i-th (0-based) ARGV slot of the script as its header
// prints it: ARGV[1], ARGV[3..] for a repeated group of one argument, or
// ARGV[3..] and ARGV[4..] for the members of a group of records of two.
func (s Script) ArgSlot(i int) string {
	if s.Argv[i].Repeated {
		return fmt.Sprintf("ARGV[%d..]", i+1)
	}
	return fmt.Sprintf("ARGV[%d]", i+1)
}

// KeyCount says how many keys the i-th KEYS slot takes: "" for one key,
// "one per <arg>" for a repeated group.
func (s Script) KeyCount(i int) string {
	if !s.Keys[i].Repeated {
		return ""
	}
	if a, j := s.RepeatedArg(); j > 0 {
		return "one per " + a.Name
	}
	return "zero or more"
}

// ArgCount says how many values the i-th ARGV slot takes: "" for one,
// "zero or more" for a repeated group of one argument, "one per record of
// (a, b), every 2nd" for a member of a group of records.
func (s Script) ArgCount(i int) string {
	if !s.Argv[i].Repeated {
		return ""
	}
	g, _ := s.RepeatedArgs()
	if len(g) == 1 {
		return "zero or more"
	}
	var names []string
	for _, a := range g {
		names = append(names, a.Name)
	}
	return fmt.Sprintf("one per entry of (%s), every %s", strings.Join(names, ", "), ordinal(len(g)))
}

func ordinal(n int) string {
	switch n {
	case 2:
		return "2nd"
	case 3:
		return "3rd"
	}
	return fmt.Sprintf("%dth", n)
}

// TypeText is the argument's type as the generated docs name it, with its
// bounds when the manifest gives them: "int", "int, -1 to 1000000",
// "int, at least 0".
func (a Arg) TypeText() string {
	switch {
	case a.Min != nil && a.Max != nil:
		return fmt.Sprintf("%s, %d to %d", a.Type, *a.Min, *a.Max)
	case a.Min != nil:
		return fmt.Sprintf("%s, at least %d", a.Type, *a.Min)
	case a.Max != nil:
		return fmt.Sprintf("%s, at most %d", a.Type, *a.Max)
	}
	return a.Type
}
