package apirecord

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/printer"
	"go/token"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// fileCtx is what printing a type expression needs to know about the file
// it was written in.
type fileCtx struct {
	fset *token.FileSet
	// quals maps a qualifier used in the file to the canonical one: an
	// unaliased import keeps the package name it is referred to by, an
	// aliased one is spelled with the name its import path suggests.
	quals map[string]string
	// paths maps a qualifier used in the file to the import path it
	// stands for (an unaliased import by the name its path suggests).
	paths map[string]string
}

func newFileCtx(fset *token.FileSet, f *ast.File) *fileCtx {
	c := &fileCtx{fset: fset, quals: map[string]string{}, paths: map[string]string{}}
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		if imp.Name == nil {
			// Referred to by its declared name, which the code spells.
			c.paths[guessPackageName(p)] = p
			continue
		}
		switch imp.Name.Name {
		case "_", ".":
			continue
		}
		c.quals[imp.Name.Name] = guessPackageName(p)
		c.paths[imp.Name.Name] = p
	}
	return c
}

var majorSuffix = regexp.MustCompile(`^v[0-9]+$`)
var gopkgSuffix = regexp.MustCompile(`\.v[0-9]+$`)

// guessPackageName is the name an import path's package conventionally
// declares: its last element, without a major-version element or a
// gopkg.in .vN suffix, with characters not allowed in identifiers
// replaced.
func guessPackageName(importPath string) string {
	elems := strings.Split(importPath, "/")
	name := elems[len(elems)-1]
	if majorSuffix.MatchString(name) && len(elems) > 1 {
		name = elems[len(elems)-2]
	}
	name = gopkgSuffix.ReplaceAllString(name, "")
	name = strings.TrimPrefix(name, "go-")
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '.' {
			return '_'
		}
		return r
	}, path.Base(name))
}

// printer prints type expressions canonically: parameter and result names
// dropped, type parameters numbered ($0, $1, ...) by position, the
// aliases byte, rune and any spelled as the types they stand for
// (uint8, int32, interface{}), and everything on one line in gofmt's
// spacing.
type typePrinter struct {
	file    *fileCtx
	tparams map[string]string // type parameter name -> $i
	local   map[string]bool   // package-level type names, which shadow predeclared ones
}

var canonicalPredeclared = map[string]string{
	"byte": "uint8",
	"rune": "int32",
	"any":  "interface{}",
}

func (p *typePrinter) typ(e ast.Expr) (string, error) {
	switch e := e.(type) {
	case *ast.Ident:
		if v, ok := p.tparams[e.Name]; ok {
			return v, nil
		}
		if v, ok := canonicalPredeclared[e.Name]; ok && !p.local[e.Name] {
			return v, nil
		}
		return e.Name, nil
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		if !ok {
			return "", p.errorf(e, "unsupported qualified type")
		}
		q := x.Name
		if v, ok := p.file.quals[q]; ok {
			q = v
		}
		return q + "." + e.Sel.Name, nil
	case *ast.ParenExpr:
		return p.typ(e.X)
	case *ast.StarExpr:
		x, err := p.typ(e.X)
		return "*" + x, err
	case *ast.Ellipsis:
		x, err := p.typ(e.Elt)
		return "..." + x, err
	case *ast.ArrayType:
		elt, err := p.typ(e.Elt)
		if err != nil {
			return "", err
		}
		switch n := e.Len.(type) {
		case nil:
			return "[]" + elt, nil
		case *ast.Ellipsis:
			if n.Elt == nil {
				return "[...]" + elt, nil
			}
		}
		n, err := p.expr(e.Len)
		return "[" + n + "]" + elt, err
	case *ast.MapType:
		k, err := p.typ(e.Key)
		if err != nil {
			return "", err
		}
		v, err := p.typ(e.Value)
		return "map[" + k + "]" + v, err
	case *ast.ChanType:
		v, err := p.typ(e.Value)
		if err != nil {
			return "", err
		}
		switch e.Dir {
		case ast.SEND:
			return "chan<- " + v, nil
		case ast.RECV:
			return "<-chan " + v, nil
		}
		if inner, ok := ast.Unparen(e.Value).(*ast.ChanType); ok && inner.Dir == ast.RECV {
			v = "(" + v + ")"
		}
		return "chan " + v, nil
	case *ast.FuncType:
		s, err := p.signature(e)
		return "func" + s, err
	case *ast.StructType:
		var fields []string
		for _, f := range e.Fields.List {
			t, err := p.typ(f.Type)
			if err != nil {
				return "", err
			}
			tag := ""
			if f.Tag != nil {
				v, err := strconv.Unquote(f.Tag.Value)
				if err != nil {
					return "", p.errorf(f.Tag, "malformed struct tag")
				}
				tag = " " + strconv.Quote(v)
			}
			if len(f.Names) == 0 {
				fields = append(fields, t+tag)
			}
			for _, n := range f.Names {
				fields = append(fields, n.Name+" "+t+tag)
			}
		}
		if len(fields) == 0 {
			return "struct{}", nil
		}
		return "struct{ " + strings.Join(fields, "; ") + " }", nil
	case *ast.InterfaceType:
		var elems []string
		for _, f := range e.Methods.List {
			if len(f.Names) == 0 {
				t, err := p.typ(f.Type)
				if err != nil {
					return "", err
				}
				elems = append(elems, t)
				continue
			}
			ft, ok := f.Type.(*ast.FuncType)
			if !ok {
				return "", p.errorf(f.Type, "interface method without a signature")
			}
			s, err := p.signature(ft)
			if err != nil {
				return "", err
			}
			for _, n := range f.Names {
				elems = append(elems, n.Name+s)
			}
		}
		if len(elems) == 0 {
			return "interface{}", nil
		}
		sort.Strings(elems)
		return "interface{ " + strings.Join(elems, "; ") + " }", nil
	case *ast.IndexExpr:
		x, err := p.typ(e.X)
		if err != nil {
			return "", err
		}
		i, err := p.typ(e.Index)
		return x + "[" + i + "]", err
	case *ast.IndexListExpr:
		x, err := p.typ(e.X)
		if err != nil {
			return "", err
		}
		args, err := p.list(e.Indices)
		return x + "[" + args + "]", err
	case *ast.UnaryExpr:
		if e.Op == token.TILDE {
			x, err := p.typ(e.X)
			return "~" + x, err
		}
	case *ast.BinaryExpr:
		if e.Op == token.OR {
			x, err := p.typ(e.X)
			if err != nil {
				return "", err
			}
			y, err := p.typ(e.Y)
			return x + " | " + y, err
		}
	}
	return "", p.errorf(e, "unsupported type expression %T", e)
}

func (p *typePrinter) list(es []ast.Expr) (string, error) {
	parts := make([]string, len(es))
	for i, e := range es {
		s, err := p.typ(e)
		if err != nil {
			return "", err
		}
		parts[i] = s
	}
	return strings.Join(parts, ", "), nil
}

// fields returns one type per declared name (at least one per field): the
// names themselves are not part of the API.
func (p *typePrinter) fields(fl *ast.FieldList) ([]string, error) {
	if fl == nil {
		return nil, nil
	}
	var out []string
	for _, f := range fl.List {
		t, err := p.typ(f.Type)
		if err != nil {
			return nil, err
		}
		n := len(f.Names)
		if n == 0 {
			n = 1
		}
		for range n {
			out = append(out, t)
		}
	}
	return out, nil
}

// signature prints a function type after its func keyword (or name):
// type parameters, parameters and results, without names.
func (p *typePrinter) signature(ft *ast.FuncType) (string, error) {
	var b strings.Builder
	if ft.TypeParams != nil && len(ft.TypeParams.List) > 0 {
		inner, tp, err := p.withTypeParams(ft.TypeParams)
		if err != nil {
			return "", err
		}
		p = inner
		b.WriteString(tp)
	}
	params, err := p.fields(ft.Params)
	if err != nil {
		return "", err
	}
	results, err := p.fields(ft.Results)
	if err != nil {
		return "", err
	}
	b.WriteString("(" + strings.Join(params, ", ") + ")")
	switch len(results) {
	case 0:
	case 1:
		b.WriteString(" " + results[0])
	default:
		b.WriteString(" (" + strings.Join(results, ", ") + ")")
	}
	return b.String(), nil
}

// withTypeParams returns a printer that numbers the type parameters of fl
// after those already in scope, and the printed list "[$0 C0, $1 C1]".
func (p *typePrinter) withTypeParams(fl *ast.FieldList) (*typePrinter, string, error) {
	inner := &typePrinter{file: p.file, local: p.local, tparams: map[string]string{}}
	for k, v := range p.tparams {
		inner.tparams[k] = v
	}
	n := len(p.tparams)
	type param struct {
		name       string
		constraint ast.Expr
	}
	var ps []param
	for _, f := range fl.List {
		for _, id := range f.Names {
			inner.tparams[id.Name] = "$" + strconv.Itoa(n)
			ps = append(ps, param{"$" + strconv.Itoa(n), f.Type})
			n++
		}
	}
	parts := make([]string, len(ps))
	for i, tp := range ps {
		c, err := inner.typ(tp.constraint)
		if err != nil {
			return nil, "", err
		}
		parts[i] = tp.name + " " + c
	}
	return inner, "[" + strings.Join(parts, ", ") + "]", nil
}

// expr prints a value expression (an array length) with go/printer,
// whitespace-normalised.
func (p *typePrinter) expr(e ast.Expr) (string, error) {
	var buf bytes.Buffer
	if err := printer.Fprint(&buf, token.NewFileSet(), e); err != nil {
		return "", p.errorf(e, "%v", err)
	}
	return strings.Join(strings.Fields(buf.String()), " "), nil
}

func (p *typePrinter) errorf(n ast.Node, format string, args ...any) error {
	return p.file.errorf(n, format, args...)
}

func (c *fileCtx) errorf(n ast.Node, format string, args ...any) error {
	return fmt.Errorf("surface: %s: %s", c.fset.Position(n.Pos()), fmt.Sprintf(format, args...))
}

// text is e as written, on one line, for messages.
func (c *fileCtx) text(e ast.Expr) string {
	var buf bytes.Buffer
	if err := printer.Fprint(&buf, token.NewFileSet(), e); err != nil {
		return fmt.Sprintf("a %T", e)
	}
	return strings.Join(strings.Fields(buf.String()), " ")
}
