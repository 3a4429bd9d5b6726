// Package golang emits the generated part of the Go SDK with jennifer: the
// wire layer, package wire in sdk/go/emq/wire (constants, the id canon, key
// builders, wire-class errors, typed script wrappers and probe data), and
// in package emq (sdk/go/emq) one file, wire_gen.go, that re-exports the
// few wire names a user of the idiomatic API needs (ID, Kind, Set, State,
// the sentinel errors, ParseID, ...) as aliases, constants, variables and
// thin functions, so that the idiomatic layer never spells a protocol
// literal and errors.Is(err, emq.ErrStale) matches what the wire layer
// returns. Every file is formatted by go/format; a file that does not
// parse is reported with the failing source, never written.
package golang

import (
	"bytes"
	"fmt"
	"go/format"
	"strings"
	"unicode"

	"github.com/dave/jennifer/jen"

	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/header"
	"github.com/echomq/echomq/gen/manifest"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/gen/target"
)

// Dir is where the wire package is written, relative to the repository
// root.
const Dir = "sdk/go/emq/wire"

// Package is the wire package's name.
const Package = "wire"

// APIDir is where the idiomatic package emq lives, relative to the
// repository root; the target writes only ReexportFile there.
const APIDir = "sdk/go/emq"

// APIPackage is the idiomatic package's name.
const APIPackage = "emq"

// ReexportFile is the name of the generated file of package emq.
const ReexportFile = "wire_gen.go"

// WirePath is the import path of the wire package.
const WirePath = "github.com/echomq/echomq/sdk/go/emq/wire"

const (
	rueidisPath = "github.com/redis/rueidis"
	probePath   = "github.com/echomq/echomq/sdk/go/probe"
)

// Target writes the generated wire layer of the Go SDK; it is also a
// target.Annotator (Annotate).
var Target target.Target = goTarget{}

type goTarget struct{}

func (goTarget) Name() string                                               { return "go" }
func (goTarget) Generate(in *target.Input) ([]target.File, error)           { return Generate(in) }
func (goTarget) Annotate(m *manifest.Manifest) ([]target.Annotation, error) { return Annotate(m) }

// Generate returns the generated Go files: package wire, then the
// re-exports of package emq.
func Generate(in *target.Input) ([]target.File, error) {
	p, b := in.Protocol, in.Bundle
	gens := []struct {
		dir, pkg, name string
		fill           func(*jen.File, *model.Protocol, *bundle.Bundle)
	}{
		{Dir, Package, "doc_gen.go", wireDocFile},
		{Dir, Package, "protocol_gen.go", protocolFile},
		{Dir, Package, "ids_gen.go", idsFile},
		{Dir, Package, "keys_gen.go", keysFile},
		{Dir, Package, "errors_gen.go", errorsFile},
		{Dir, Package, "scripts_gen.go", scriptsFile},
		{Dir, Package, "probes_gen.go", probesFile},
		{APIDir, APIPackage, ReexportFile, reexportFile},
	}
	var files []target.File
	for _, g := range gens {
		f := jen.NewFilePathName("github.com/echomq/echomq/"+g.dir, g.pkg)
		f.HeaderComment(header.Marker)
		f.HeaderComment(fmt.Sprintf("Source: %s (%s %s). Regenerate with: %s", header.Source, p.Name, p.Version, header.Regenerate))
		f.ImportName(rueidisPath, "rueidis")
		f.ImportName(probePath, "probe")
		f.ImportName(WirePath, Package)
		g.fill(f, p, b)
		var buf bytes.Buffer
		if err := f.Render(&buf); err != nil {
			return nil, fmt.Errorf("golang: %s/%s: %w", g.dir, g.name, err)
		}
		src, err := format.Source(buf.Bytes())
		if err != nil {
			return nil, fmt.Errorf("golang: %s/%s does not format: %w\n%s", g.dir, g.name, err, numbered(buf.String()))
		}
		files = append(files, target.File{Path: g.dir + "/" + g.name, Data: src})
	}
	return files, nil
}

func numbered(src string) string {
	var b strings.Builder
	for i, l := range strings.Split(src, "\n") {
		fmt.Fprintf(&b, "%4d  %s\n", i+1, l)
	}
	return b.String()
}

// initialisms are spelled in capitals in Go names.
var initialisms = map[string]string{"id": "ID", "ms": "MS", "ttl": "TTL", "sha": "SHA", "ids": "IDs", "arc": "ARC", "ord": "ORD", "job": "Job"}

// GoName is the exported Go name the Go target gives a manifest name
// (run_at_ms -> RunAtMS); governance uses it to name the Go identifier a
// manifest element generates.
func GoName(s string) string { return goName(s) }

// goName turns a manifest name (snake_case, colons, dots) into an exported
// Go name: run_at_ms -> RunAtMS.
func goName(s string) string {
	var b strings.Builder
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if v, ok := initialisms[strings.ToLower(w)]; ok && w == strings.ToLower(w) {
			b.WriteString(v)
			continue
		}
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String()
}

// lowerName is goName with a lower-case first letter, for unexported names.
func lowerName(s string) string {
	n := goName(s)
	if strings.HasPrefix(n, "ID") {
		return "id" + n[2:]
	}
	return strings.ToLower(n[:1]) + n[1:]
}

// deprecation is the doc comment's closing paragraph for a deprecated
// element, as go doc and linters read it, or nothing.
func deprecation(d *model.Deprecation) []jen.Code {
	if d == nil {
		return nil
	}
	text := "Deprecated: since " + d.Since.String() + "."
	if d.Reason != "" {
		text += " " + strings.TrimSpace(d.Reason)
	}
	return []jen.Code{jen.Comment(""), jen.Comment(text)}
}

// doc writes a doc comment: the first line starts with name.
func doc(name, text string) string {
	text = strings.TrimSpace(text)
	if text == "" {
		return name + "."
	}
	if !strings.HasSuffix(text, ".") {
		text += "."
	}
	return name + " " + lowerFirst(text)
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

// concat builds a string concatenation from key-shape parts. A hole is
// filled by a string (merged into the literal) or a jen.Code expression.
func concat(parts []model.Part, fill map[string]any) *jen.Statement {
	var terms []jen.Code
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			terms = append(terms, jen.Lit(lit.String()))
			lit.Reset()
		}
	}
	for _, pt := range parts {
		if pt.Hole == "" {
			lit.WriteString(pt.Lit)
			continue
		}
		switch v := fill[pt.Hole].(type) {
		case string:
			lit.WriteString(v)
		case jen.Code:
			flush()
			terms = append(terms, v)
		default:
			panic("golang: no value for hole " + pt.Hole)
		}
	}
	flush()
	st := jen.Null()
	for i, t := range terms {
		if i > 0 {
			st.Op("+")
		}
		st.Add(t)
	}
	return st
}

// comment writes text as // line comments, one per line, so that
// multi-line doc comments keep Go's usual form.
func comment(f *jen.File, text string) {
	for _, line := range strings.Split(text, "\n") {
		if line == "" {
			f.Comment("")
			continue
		}
		f.Comment(line)
	}
}
