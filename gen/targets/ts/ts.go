// Package ts emits the generated wire layer of the TypeScript SDK
// (sdk/ts/src/gen): constants, the id canon, key builders, wire-class
// errors and typed script calls with the bundle's Lua sources and SHA-1s.
// The output is written the way prettier (the repository's sdk/ts
// .prettierrc: its defaults) prints it, so `prettier --check` passes on
// every generated file; ./test.sh checks that.
package ts

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/echomq/echomq/gen/header"
	"github.com/echomq/echomq/gen/manifest"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/gen/target"
)

// Dir is where the generated modules are written, relative to the
// repository root.
const Dir = "sdk/ts/src/gen"

// Target writes the generated wire layer of the TypeScript SDK.
var Target target.Target = tsTarget{}

// tsTarget is the TypeScript target; it is also a target.Annotator.
type tsTarget struct{}

func (tsTarget) Name() string                                               { return "ts" }
func (tsTarget) Generate(in *target.Input) ([]target.File, error)           { return Generate(in) }
func (tsTarget) Annotate(m *manifest.Manifest) ([]target.Annotation, error) { return Annotate(m) }

// width is prettier's default print width.
const width = 80

// Generate returns the generated TypeScript modules.
func Generate(in *target.Input) ([]target.File, error) {
	p := in.Protocol
	gens := []struct {
		name string
		fill func(*src, *target.Input)
	}{
		{"protocol.ts", protocolFile},
		{"ids.ts", idsFile},
		{"keys.ts", keysFile},
		{"errors.ts", errorsFile},
		{"scripts.ts", scriptsFile},
		{"probes.ts", probesFile},
		{"index.ts", indexFile},
	}
	var files []target.File
	for _, g := range gens {
		s := &src{}
		s.line("// " + header.Marker)
		s.line(fmt.Sprintf("// Source: %s (%s %s). Regenerate with: %s", header.Source, p.Name, p.Version, header.Regenerate))
		s.blank()
		g.fill(s, in)
		out := strings.TrimRight(s.b.String(), "\n") + "\n"
		if strings.Contains(out, "\t") {
			return nil, fmt.Errorf("ts: %s contains a tab", g.name)
		}
		files = append(files, target.File{Path: Dir + "/" + g.name, Data: []byte(out)})
	}
	return files, nil
}

// src accumulates a module's text.
type src struct {
	b strings.Builder
}

func (s *src) line(l string) {
	s.b.WriteString(strings.TrimRight(l, " "))
	s.b.WriteByte('\n')
}

func (s *src) blank() { s.b.WriteByte('\n') }

// lines writes a multi-line block, every line indented by ind.
func (s *src) lines(ind string, text string) {
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if l == "" {
			s.blank()
			continue
		}
		s.line(ind + l)
	}
}

// doc writes a JSDoc comment of text (one or more paragraphs), indented by
// ind.
func (s *src) doc(ind, text string) {
	text = strings.TrimSpace(text)
	ls := strings.Split(text, "\n")
	if len(ls) == 1 && !strings.Contains(text, "*/") {
		s.line(ind + "/** " + text + " */")
		return
	}
	s.line(ind + "/**")
	for _, l := range ls {
		l = strings.ReplaceAll(l, "*/", "*\\/")
		if strings.TrimSpace(l) == "" {
			s.line(ind + " *")
			continue
		}
		s.line(ind + " * " + l)
	}
	s.line(ind + " */")
}

// decl writes `<head> = <value>;` at indent ind, breaking after = when the
// line is wider than prettier prints (value must be a single literal).
func (s *src) decl(ind, head, value string) {
	l := ind + head + " = " + value + ";"
	if width_(l) <= width {
		s.line(l)
		return
	}
	s.line(ind + head + " =")
	s.line(ind + "  " + value + ";")
}

// list writes open + items joined by ", " + close, or, when wider than
// the print width, one item per line with a trailing comma.
func (s *src) list(ind, open string, items []string, close string) {
	if len(items) == 0 {
		s.line(ind + open + close)
		return
	}
	l := ind + open + strings.Join(items, ", ") + close
	if width_(l) <= width {
		s.line(l)
		return
	}
	s.line(ind + open)
	for _, it := range items {
		s.line(ind + "  " + it + ",")
	}
	s.line(ind + strings.TrimLeft(close, " "))
}

// sig writes a function or method head: head(params) + tail, breaking the
// parameters one per line when wider than the print width.
func (s *src) sig(ind, head string, params []string, tail string) {
	s.list(ind, head+"(", params, ")"+tail)
}

// width_ is the printed width of l (runes; the texts are Latin).
func width_(l string) int { return len([]rune(l)) }

// q quotes s as prettier prints a string: double quotes, unless the text
// holds more double quotes than single ones.
func q(s string) string {
	dq, sq := strings.Count(s, `"`), strings.Count(s, `'`)
	quote := `"`
	if dq > sq {
		quote = `'`
	}
	var b strings.Builder
	b.WriteString(quote)
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case string(r) == quote:
			b.WriteString(`\` + quote)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f || r == 0x2028 || r == 0x2029:
			b.WriteString(fmt.Sprintf(`\u%04x`, r))
		default:
			b.WriteRune(r)
		}
	}
	b.WriteString(quote)
	return b.String()
}

// tmpl quotes s as a template literal, escaping what a template reads.
func tmpl(s string) string {
	r := strings.NewReplacer("\\", "\\\\", "`", "\\`", "${", "\\${")
	return "`" + r.Replace(s) + "`"
}

func words(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// constName turns a manifest name into an UPPER_SNAKE constant name.
func constName(s string) string {
	return strings.ToUpper(strings.Join(words(s), "_"))
}

// pascal turns a manifest name into a PascalCase type name: run_at_ms ->
// RunAtMs.
func pascal(s string) string {
	var b strings.Builder
	for _, w := range words(s) {
		b.WriteString(strings.ToUpper(w[:1]) + strings.ToLower(w[1:]))
	}
	return b.String()
}

// camel turns a manifest name into a camelCase member name: run_at_ms ->
// runAtMs.
func camel(s string) string {
	p := pascal(s)
	if p == "" {
		return p
	}
	return strings.ToLower(p[:1]) + p[1:]
}

// sentence ends text with a full stop.
func sentence(text string) string {
	text = strings.TrimSpace(text)
	if text != "" && !strings.HasSuffix(text, ".") {
		text += "."
	}
	return text
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	if len(r) > 1 && unicode.IsUpper(r[1]) {
		return s
	}
	r[0] = unicode.ToLower(r[0])
	return string(r)
}

// concat renders key-shape parts as a TypeScript string expression: holes
// filled by a string are merged into the literal, holes filled by an
// expression are concatenated.
func concat(parts []model.Part, lit map[string]string, expr map[string]string) string {
	var terms []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			terms = append(terms, q(cur.String()))
			cur.Reset()
		}
	}
	for _, pt := range parts {
		if pt.Hole == "" {
			cur.WriteString(pt.Lit)
			continue
		}
		if v, ok := lit[pt.Hole]; ok {
			cur.WriteString(v)
			continue
		}
		if v, ok := expr[pt.Hole]; ok {
			flush()
			terms = append(terms, v)
			continue
		}
		panic("ts: no value for hole " + pt.Hole)
	}
	flush()
	if len(terms) == 0 {
		return `""`
	}
	return strings.Join(terms, " + ")
}

func itoa(i int) string { return strconv.Itoa(i) }

func indexFile(s *src, _ *target.Input) {
	for _, m := range []string{"protocol", "ids", "keys", "errors", "scripts", "probes"} {
		s.line(fmt.Sprintf("export * from %s;", q("./"+m+".js")))
	}
}
