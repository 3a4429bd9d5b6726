// Package docs emits the protocol reference, docs/protocol.md: every fact
// of the resolved model — identity canon, kinds, key grammar, row, sets,
// reserve, wire classes, scripts with their Lua, the job lifecycle as a
// Mermaid diagram, and governance — rendered from
// templates/protocol.md.tmpl.
//
// The output is a pure function of its inputs: it never ranges over a map,
// never reads the clock and never reads YAML. It never writes a file; the
// caller does.
package docs

import (
	"bytes"
	"embed"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/echomq/echomq/gen/header"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/gen/target"
)

// Path is where the reference is written, relative to the repository root.
const Path = "docs/protocol.md"

// ChangelogPath is where the changelog is written: the manifest's version
// history, newest first.
const ChangelogPath = "docs/CHANGELOG.md"

// templates holds the Markdown templates, beside this target.
//
//go:embed templates/*.tmpl
var templates embed.FS

// Target writes the protocol reference and the changelog.
var Target = target.Func("docs", func(in *target.Input) ([]target.File, error) {
	return Emit(in.Protocol, in.Bundle.Digest, in.Bundle.SHA1s())
})

// Emit renders the protocol reference for p. digest is the Lua bundle's
// digest and shas maps each script name to the hex SHA-1 of its Lua file;
// every script of p must have one. It returns two files: Path and
// ChangelogPath.
func Emit(p *model.Protocol, digest string, shas map[string]string) ([]target.File, error) {
	if digest == "" {
		return nil, fmt.Errorf("docs: the bundle digest is empty")
	}
	for _, s := range p.Scripts {
		if shas[s.Name] == "" {
			return nil, fmt.Errorf("docs: no SHA-1 for script %q", s.Name)
		}
	}
	t, err := template.New("protocol.md.tmpl").Option("missingkey=error").Funcs(funcs(p, shas)).ParseFS(templates, "templates/protocol.md.tmpl")
	if err != nil {
		return nil, fmt.Errorf("docs: %w", err)
	}
	var out bytes.Buffer
	data := struct {
		Marker     string
		Regenerate string
		P          *model.Protocol
		Digest     string
		Lifecycle  []edge
		IDVars     []string
	}{header.Marker, header.Regenerate, p, digest, lifecycle(p), model.ProbeIDVars}
	if err := t.Execute(&out, data); err != nil {
		return nil, fmt.Errorf("docs: %w", err)
	}
	changelog, err := changelog(p, digest)
	if err != nil {
		return nil, err
	}
	return []target.File{{Path: Path, Data: tidy(out.Bytes())}, {Path: ChangelogPath, Data: changelog}}, nil
}

// entry is one version of the changelog.
type entry struct {
	Version, Status, Summary string
	Bump, Previous           string // the bump from the previous entry, if any
	Current                  bool
}

func changelog(p *model.Protocol, digest string) ([]byte, error) {
	t, err := template.New("CHANGELOG.md.tmpl").Option("missingkey=error").Funcs(funcs(p, nil)).ParseFS(templates, "templates/CHANGELOG.md.tmpl")
	if err != nil {
		return nil, fmt.Errorf("docs: %w", err)
	}
	h := p.Governance.History
	var entries []entry
	for i := len(h) - 1; i >= 0; i-- {
		e := entry{Version: h[i].Version.String(), Status: h[i].Status, Summary: h[i].Summary, Current: h[i].Status == "current"}
		if i > 0 {
			prev, v := h[i-1].Version, h[i].Version
			e.Previous = prev.String()
			switch {
			case v.Major != prev.Major:
				e.Bump = "major"
			case v.Minor != prev.Minor:
				e.Bump = "minor"
			default:
				e.Bump = "patch"
			}
		}
		entries = append(entries, e)
	}
	var out bytes.Buffer
	data := struct {
		Marker, Source, Regenerate string
		P                          *model.Protocol
		Entries                    []entry
		Record, Digest             string
	}{header.Marker, header.Source, header.Regenerate, p, entries, p.VersionRecord(), digest}
	if err := t.Execute(&out, data); err != nil {
		return nil, fmt.Errorf("docs: %w", err)
	}
	return tidy(out.Bytes()), nil
}

// edge is one edge of the job lifecycle: a state change and the scripts
// that make it, in manifest order. From and To are state names or
// model.None.
type edge struct {
	From, To string
	Scripts  []string
}

// lifecycle merges every script's transitions into edges, ordered by the
// declared order of their states: model.None first as a source and last as
// a target, so creation leads and retirement trails.
func lifecycle(p *model.Protocol) []edge {
	var edges []edge
	for _, s := range p.Scripts {
	next:
		for _, t := range s.Transitions {
			for i := range edges {
				if edges[i].From == t.From && edges[i].To == t.To {
					if !contains(edges[i].Scripts, s.Name) {
						edges[i].Scripts = append(edges[i].Scripts, s.Name)
					}
					continue next
				}
			}
			edges = append(edges, edge{From: t.From, To: t.To, Scripts: []string{s.Name}})
		}
	}
	rank := func(state string, asTarget bool) int {
		if state == model.None {
			if asTarget {
				return len(p.Row.States)
			}
			return -1
		}
		for i, st := range p.Row.States {
			if st.Name == state {
				return i
			}
		}
		return len(p.Row.States) + 1
	}
	sort.SliceStable(edges, func(i, j int) bool {
		a, b := edges[i], edges[j]
		if ra, rb := rank(a.From, false), rank(b.From, false); ra != rb {
			return ra < rb
		}
		return rank(a.To, true) < rank(b.To, true)
	})
	return edges
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// funcs are the template's helpers. The template decides layout; these
// decide how one model value reads.
func funcs(p *model.Protocol, shas map[string]string) template.FuncMap {
	return template.FuncMap{
		"inc":         func(i int) int { return i + 1 },
		"code":        code,
		"tcode":       func(s string) string { return cell(code(s)) },
		"text":        text,
		"cell":        func(s string) string { return cell(text(s)) },
		"life":        func(d *model.Deprecation) string { return note(deprecationNote(d)) },
		"duty":        func(duty, def string) string { return note(dutyNote(duty, def)) },
		// tripwire says a key type's other layout, or nothing.
		"tripwire": func(t model.KeyType) string {
			if t.Tripwire == nil {
				return ""
			}
			w := t.Tripwire
			return note(fmt.Sprintf("**Tripwire:** a %s at the key, its members at `%s`, refused before any write by every script from %s on. %s", w.Redis, w.MovesTo, w.Floor, w.Summary))
		},
		// behind names the tripwire a policy's key type stands behind.
		"behind": func(t model.KeyType) string {
			if t.Behind == "" {
				return ""
			}
			return note(fmt.Sprintf("Behind the tripwire of `%s`.", t.Behind))
		},
		"quote":       strconv.Quote,
		"join":        strings.Join,
		"codes":       codes,
		"anchor":      func(s string) string { return "#" + slug(s) },
		"typeShape":   p.TypeShape,
		"keyShape":    p.KeyShape,
		"memberShape": p.MemberShape,
		"keyExample":  func(t model.KeyType) string { return keyExample(p, t) },
		"classPrefix": func(c model.KeyClass) string { return c.Parts[0].Lit },
		"classShape": func(name string) (string, error) {
			c, ok := p.KeyClass(name)
			if !ok {
				return "", fmt.Errorf("no key class %q", name)
			}
			return c.Shape, nil
		},
		"rowRedis":    func() string { t, _ := p.KeyType(p.Row.Key); return t.Redis },
		"source":      func() string { return header.Source },
		"argNote":     func(a model.Arg) string { return argNote(p, a) },
		"workKind":    func() string { return p.WorkKind().Name },
		"kindOf":      func(id string) string { return id[:min(len(id), p.IDs.KindLength)] },
		"whyNotID":    func(s string) string { return whyNotID(p, s) },
		"bitRange":    bitRange,
		"epochMillis": func() int64 { return p.IDs.Epoch.UnixMilli() },
		"epoch":       func() string { return p.IDs.Epoch.Format(time.RFC3339Nano) },
		"rfc3339":     rfc3339,
		"score":       score,
		"setOf":       func(st model.State) string { return p.TypeShape(st.Set) },
		"replyHead":   replyHead,
		"replyRest":   replyRest,
		"sha":         func(name string) string { return shas[name] },
		"exampleReply": func(c model.Class) string {
			return exampleReply(p, c)
		},
		"endpoint": endpoint,
		"mermaid":  mermaidState,
		"run":      run,
		"expect":   expect,
		"lua":      func(s string) string { return strings.TrimRight(s, "\n") },
	}
}

// code renders s as an inline code span, choosing a fence that s does not
// contain; an empty s is shown as "" so that it stays visible.
func code(s string) string {
	if s == "" {
		return "`\"\"`"
	}
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || fence != "`" {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// codes renders each string as a code span, joined by ", ".
func codes(list []string) string {
	var out []string
	for _, s := range list {
		out = append(out, code(s))
	}
	return strings.Join(out, ", ")
}

// text makes manifest prose safe to put into Markdown: outside code spans,
// an angle bracket (the manifest writes holes as <queue>) is escaped so that
// it is not read as HTML, and line breaks become spaces.
func text(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	var b strings.Builder
	inCode := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '`':
			inCode = !inCode
		case !inCode && c == '<':
			b.WriteString(`\<`)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// cell makes text fit one table cell: pipes are escaped (GFM unescapes
// them inside code spans too).
func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\n", " "), "|", `\|`)
}

// slug is GitHub's heading anchor for a heading's text: lower case, code
// marks and punctuation other than - and _ dropped, spaces to hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// keyExample is a key of type t for the first example queue and the first
// example id of the work kind.
func keyExample(p *model.Protocol, t model.KeyType) string {
	c, _ := p.KeyClass(t.Class)
	fill := map[string]string{"type": t.Name}
	if len(p.Queues.Examples) > 0 {
		fill["queue"] = p.Queues.Examples[0]
	}
	work := p.WorkKind().Name
	for _, ex := range p.IDs.Examples {
		if strings.HasPrefix(ex.ID, work) {
			fill["id"] = ex.ID
			break
		}
	}
	return model.Shape(c.Parts, fill)
}

// whyNotID is the reason the canon refuses s.
func whyNotID(p *model.Protocol, s string) string {
	if _, err := p.IDs.ParseID(s); err != nil {
		msg := err.Error()
		msg = strings.TrimPrefix(msg, fmt.Sprintf("id %q: ", s))
		return strings.TrimPrefix(msg, fmt.Sprintf("id %q ", s))
	}
	return "it parses"
}

// bitRange is the bit positions a field occupies, most significant first.
func bitRange(b model.Bitfield) string {
	hi := b.Shift + b.Bits - 1
	if hi == b.Shift {
		return strconv.Itoa(hi)
	}
	return fmt.Sprintf("%d–%d", hi, b.Shift)
}

// rfc3339 formats t in UTC with milliseconds, as the canon's examples do.
func rfc3339(t time.Time) string {
	return t.Format("2006-01-02T15:04:05.000Z07:00")
}

// score says what a set's score means; the model admits a closed set.
func score(s string) (string, error) {
	switch s {
	case "zero":
		return "always 0", nil
	case "lease_deadline_ms":
		return "the lease deadline, server milliseconds", nil
	case "run_at_ms":
		return "the run-at, server milliseconds", nil
	}
	return "", fmt.Errorf("set score %q has no description", s)
}

// replyHead is what the reply is: the first of ReplyLines without its
// "Output: " label, the type as code and its summary as prose.
func replyHead(s model.Script) string {
	head := strings.TrimPrefix(s.ReplyLines()[0], "Output: ")
	if typ, summary, ok := strings.Cut(head, ": "); ok {
		return code(typ) + ": " + text(summary)
	}
	return code(head)
}

// argNote is an ARGV slot's summary, or, when the manifest gives none,
// what its type means, drawn from the model.
func argNote(p *model.Protocol, a model.Arg) string {
	if a.Summary != "" {
		return cell(text(a.Summary))
	}
	switch a.Type {
	case "id":
		return fmt.Sprintf("a %d-byte branded id", p.IDs.Length)
	case "token":
		if f, ok := p.Field("token"); ok {
			return "the fencing token: the row's " + code(f.Name) + " as claim returned it"
		}
	case "prefix":
		if c, ok := p.KeyClass("job"); ok {
			var lit []model.Part
			for _, part := range c.Parts {
				if part.Hole == "id" {
					break
				}
				lit = append(lit, part)
			}
			return "the row prefix " + cell(code(model.Shape(lit, nil))) + "; the script appends ids it pops"
		}
	case "bytes":
		return "opaque bytes"
	case "int":
		return "a decimal integer"
	}
	return "—"
}

// replyRest is one line per named value or element, as list items.
func replyRest(s model.Script) []string {
	var out []string
	for _, l := range s.ReplyLines()[1:] {
		out = append(out, strings.TrimSpace(l))
	}
	return out
}

// exampleReply is the text of the first refusal of class c, in manifest
// order of scripts.
func exampleReply(p *model.Protocol, c model.Class) string {
	for _, s := range p.Scripts {
		for _, r := range s.Refusals {
			if r.Class == c.Word {
				return r.Text()
			}
		}
	}
	return c.Word
}

// endpoint names a transition end for prose.
func endpoint(state string) string {
	if state == model.None {
		return "no row"
	}
	return code(state)
}

// mermaidState names a transition end in a state diagram.
func mermaidState(state string) string {
	if state == model.None {
		return "[*]"
	}
	return state
}

// run says what a probe step does.
func run(s model.Step) string {
	if s.Script != "" {
		var with []string
		for _, kv := range s.With {
			with = append(with, kv.Key+"="+code(kv.Value))
		}
		out := "runs script [" + code(s.Script) + "](#" + slug(s.Script) + ")"
		if len(with) > 0 {
			out += " with " + strings.Join(with, ", ")
		}
		if s.Save != "" {
			out += ", saving the reply as " + code(s.Save)
		}
		return out
	}
	var args []string
	for _, a := range s.Command {
		if a == "" || strings.ContainsAny(a, " \t\"") {
			a = strconv.Quote(a)
		}
		args = append(args, a)
	}
	return "sends " + code(strings.Join(args, " "))
}

// expect says what a probe step must answer.
func expect(e model.Expect) (string, error) {
	var out string
	switch e.Kind {
	case "int":
		out = "the integer " + code(strconv.FormatInt(e.Int, 10))
	case "string":
		out = "the string " + code(e.String)
	case "error":
		out = "an error of class [" + code(e.String) + "](#" + slug(e.String) + ")"
	case "nil":
		out = "nil"
	case "positive":
		if e.Positive {
			out = "a positive integer"
		} else {
			out = "an integer that is not positive"
		}
	case "fence":
		out = "a version record that this version's fence judges " + code(e.String)
	default:
		return "", fmt.Errorf("probe expectation %q has no description", e.Kind)
	}
	if e.Element != "" {
		out += " in element " + code(e.Element)
	}
	return out, nil
}

// tidy enforces the Markdown layout outside fenced code: no trailing
// spaces, at most one blank line between blocks, none at the start, and
// exactly one newline at the end. Fenced code is kept byte for byte.
func tidy(in []byte) []byte {
	lines := strings.Split(string(in), "\n")
	var out []string
	fenced := false
	for _, l := range lines {
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
			l = strings.TrimRight(l, " \t")
		} else if !fenced {
			l = strings.TrimRight(l, " \t")
			if l == "" && (len(out) == 0 || out[len(out)-1] == "") {
				continue
			}
		}
		out = append(out, l)
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return []byte(strings.Join(out, "\n") + "\n")
}

// note is a sentence appended to a summary: a space and the sentence, or
// nothing.
func note(s string) string {
	if s == "" {
		return ""
	}
	return " " + cell(text(s))
}

// deprecationNote is the sentence a deprecated element's summary ends
// with, or "" when it is not deprecated.
func deprecationNote(d *model.Deprecation) string {
	if d == nil {
		return ""
	}
	s := "**Deprecated since " + d.Since.String() + ".**"
	if d.Reason != "" {
		s += " " + d.Reason
	}
	return s
}

// dutyNote says a key type's or row field's writer duty when it is not
// the default of its kind.
func dutyNote(duty, def string) string {
	switch {
	case duty == def || duty == "":
		return ""
	case duty == model.DutyEveryWriter:
		return "**Every writer maintains it.**"
	case duty == model.DutyEveryClaimer:
		return "**Every claimer and completer honours it**, on the queues behind the tripwire it names."
	case duty == model.DutyEveryCompleter:
		return "**Every completer honours it**, on the queues behind the tripwire it names."
	}
	return "**A hint:** writers may skip it and no reader relies on it."
}
