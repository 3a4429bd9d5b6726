package apirecord

import (
	"fmt"
	"go/ast"
	"go/scanner"
	"go/token"
	"strings"
)

// valueType is the type of a constant or variable: a printed type, or the
// kind of an untyped constant.
type valueType struct {
	untyped string // int, rune, float, complex, string or bool; "" when typed
	typ     string // the printed type when typed
}

func (t valueType) String() string {
	if t.untyped != "" {
		return "untyped " + t.untyped
	}
	return t.typ
}

// defaulted is the type a variable initialised with t gets.
func (t valueType) defaulted() valueType {
	switch t.untyped {
	case "":
		return t
	case "int":
		return typed("int")
	case "rune":
		return typed("int32")
	case "float":
		return typed("float64")
	case "complex":
		return typed("complex128")
	}
	return typed(t.untyped)
}

func typed(s string) valueType    { return valueType{typ: s} }
func untyped(k string) valueType  { return valueType{untyped: k} }
func (t valueType) isTyped() bool { return t.untyped == "" }

// untypedRank orders the numeric untyped kinds: an operation on two takes
// the later one.
var untypedRank = map[string]int{"int": 1, "rune": 2, "float": 3, "complex": 4}

var predeclaredTypes = map[string]bool{
	"bool": true, "string": true, "error": true, "any": true, "comparable": true,
	"int": true, "int8": true, "int16": true, "int32": true, "int64": true,
	"uint": true, "uint8": true, "uint16": true, "uint32": true, "uint64": true, "uintptr": true,
	"float32": true, "float64": true, "complex64": true, "complex128": true,
	"byte": true, "rune": true,
}

// knownResults are the result types of the few functions of other
// packages a generated variable is commonly initialised with.
var knownResults = map[string]string{
	"errors.New": "error",
	"fmt.Errorf": "error",
}

// enter guards against cyclic declarations while inferring key's type.
func (p *pkgInfo) enter(key string, n ast.Node, f *fileCtx) error {
	if p.visiting[key] {
		return f.errorf(n, "%s: cyclic declaration", key)
	}
	p.visiting[key] = true
	return nil
}

// constType returns the type of the package-level constant name.
func (p *pkgInfo) constType(name string) (valueType, error) {
	key := "const " + name
	if t, ok := p.memo[key]; ok {
		return t, nil
	}
	c := p.consts[name]
	if err := p.enter(key, c.name, c.file); err != nil {
		return valueType{}, err
	}
	defer delete(p.visiting, key)
	var t valueType
	switch {
	case c.typ != nil:
		s, err := p.printer(c.file).typ(c.typ)
		if err != nil {
			return valueType{}, err
		}
		t = typed(s)
	case c.val == nil:
		return valueType{}, c.file.errorf(c.name, "constant %s has no value", name)
	default:
		var err error
		t, err = p.constExpr(c.file, c.val)
		if err != nil {
			return valueType{}, fmt.Errorf("%w (constant %s; declare it with an explicit type)", err, name)
		}
	}
	p.memo[key] = t
	return t, nil
}

// constExpr is the type of a constant expression written in f.
func (p *pkgInfo) constExpr(f *fileCtx, e ast.Expr) (valueType, error) {
	switch e := e.(type) {
	case *ast.BasicLit:
		switch e.Kind {
		case token.INT:
			return untyped("int"), nil
		case token.FLOAT:
			return untyped("float"), nil
		case token.IMAG:
			return untyped("complex"), nil
		case token.CHAR:
			return untyped("rune"), nil
		case token.STRING:
			return untyped("string"), nil
		}
	case *ast.Ident:
		switch {
		case e.Name == "true" || e.Name == "false":
			return untyped("bool"), nil
		case e.Name == "iota":
			return untyped("int"), nil
		case p.consts[e.Name] != nil:
			return p.constType(e.Name)
		}
		return valueType{}, f.errorf(e, "cannot infer the type of %s: not a constant of the generated files", e.Name)
	case *ast.SelectorExpr:
		if dep, name, ok := p.imported(f, e); ok && dep.consts[name] != nil {
			t, err := dep.constType(name)
			return dep.qualify(t), err
		}
	case *ast.ParenExpr:
		return p.constExpr(f, e.X)
	case *ast.UnaryExpr:
		return p.constExpr(f, e.X)
	case *ast.BinaryExpr:
		switch e.Op {
		case token.EQL, token.NEQ, token.LSS, token.LEQ, token.GTR, token.GEQ:
			return untyped("bool"), nil
		case token.SHL, token.SHR:
			x, err := p.constExpr(f, e.X)
			if err != nil {
				return valueType{}, err
			}
			if x.untyped == "float" || x.untyped == "complex" {
				x = untyped("int")
			}
			return x, nil
		}
		x, err := p.constExpr(f, e.X)
		if err != nil {
			return valueType{}, err
		}
		y, err := p.constExpr(f, e.Y)
		if err != nil {
			return valueType{}, err
		}
		return combine(x, y), nil
	case *ast.CallExpr:
		if id, ok := e.Fun.(*ast.Ident); ok && p.consts[id.Name] == nil {
			switch id.Name {
			case "len", "cap":
				return typed("int"), nil
			case "real", "imag":
				return untyped("float"), nil
			case "complex":
				return untyped("complex"), nil
			case "min", "max":
				var t valueType
				for i, a := range e.Args {
					at, err := p.constExpr(f, a)
					if err != nil {
						return valueType{}, err
					}
					if i == 0 {
						t = at
					} else {
						t = combine(t, at)
					}
				}
				return t, nil
			}
		}
		if sel, ok := e.Fun.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "unsafe" {
				return typed("uintptr"), nil
			}
		}
		// In a constant declaration every other call is a conversion.
		s, err := p.printer(f).typ(e.Fun)
		if err != nil {
			return valueType{}, err
		}
		return typed(s), nil
	}
	return valueType{}, f.errorf(e, "cannot infer the type of %s from the generated files alone", f.text(e))
}

// combine is the type of a binary operation on constants of types x and y.
func combine(x, y valueType) valueType {
	switch {
	case x.isTyped():
		return x
	case y.isTyped():
		return y
	case untypedRank[y.untyped] > untypedRank[x.untyped]:
		return y
	}
	return x
}

// varType returns the type of the package-level variable name.
func (p *pkgInfo) varType(name string) (valueType, error) {
	key := "var " + name
	if t, ok := p.memo[key]; ok {
		return t, nil
	}
	v := p.vars[name]
	if err := p.enter(key, v.name, v.file); err != nil {
		return valueType{}, err
	}
	defer delete(p.visiting, key)
	var t valueType
	var err error
	switch {
	case v.typ != nil:
		var s string
		s, err = p.printer(v.file).typ(v.typ)
		t = typed(s)
	case v.multi:
		// var a, b = f()
		var ts []valueType
		ts, err = p.results(v.file, v.vals[0])
		if err == nil && v.idx >= len(ts) {
			err = v.file.errorf(v.name, "%s: %d values for %d variables", name, len(ts), v.idx+1)
		}
		if err == nil {
			t = ts[v.idx]
		}
	case v.idx < len(v.vals):
		t, err = p.valueExpr(v.file, v.vals[v.idx])
	default:
		err = v.file.errorf(v.name, "variable %s has neither a type nor a value", name)
	}
	if err != nil {
		return valueType{}, fmt.Errorf("%w (variable %s; declare it with an explicit type)", err, name)
	}
	t = t.defaulted()
	p.memo[key] = t
	return t, nil
}

// valueExpr is the type of a single-valued expression written in f.
func (p *pkgInfo) valueExpr(f *fileCtx, e ast.Expr) (valueType, error) {
	pr := p.printer(f)
	switch e := e.(type) {
	case *ast.BasicLit:
		return p.constExpr(f, e)
	case *ast.Ident:
		switch {
		case p.consts[e.Name] != nil:
			return p.constType(e.Name)
		case p.vars[e.Name] != nil:
			return p.varType(e.Name)
		case p.funcs[e.Name] != nil:
			fd := p.funcs[e.Name]
			s, err := p.printer(fd.file).typ(fd.decl.Type)
			return typed(s), err
		case e.Name == "true" || e.Name == "false":
			return untyped("bool"), nil
		}
		return valueType{}, f.errorf(e, "cannot infer the type of %s: not declared in the generated files", e.Name)
	case *ast.SelectorExpr:
		if dep, name, ok := p.imported(f, e); ok {
			switch {
			case dep.consts[name] != nil:
				t, err := dep.constType(name)
				return dep.qualify(t), err
			case dep.vars[name] != nil:
				t, err := dep.varType(name)
				return dep.qualify(t), err
			case dep.funcs[name] != nil:
				fd := dep.funcs[name]
				s, err := dep.printer(fd.file).typ(fd.decl.Type)
				return dep.qualify(typed(s)), err
			}
		} else if x, ok := e.X.(*ast.Ident); !ok || f.paths[x.Name] == "" || p.vars[x.Name] != nil || p.consts[x.Name] != nil {
			// A field of a value of a struct type the recorded files declare.
			xt, err := p.valueExpr(f, e.X)
			if err != nil {
				return valueType{}, err
			}
			if t, ok := p.field(xt.defaulted().typ, e.Sel.Name); ok {
				return t, nil
			}
		}
	case *ast.ParenExpr:
		return p.valueExpr(f, e.X)
	case *ast.CompositeLit:
		if e.Type == nil {
			return valueType{}, f.errorf(e, "composite literal without a type")
		}
		s, err := pr.typ(e.Type)
		return typed(s), err
	case *ast.FuncLit:
		s, err := pr.typ(e.Type)
		return typed(s), err
	case *ast.TypeAssertExpr:
		if e.Type == nil {
			break
		}
		s, err := pr.typ(e.Type)
		return typed(s), err
	case *ast.UnaryExpr:
		switch e.Op {
		case token.AND:
			x, err := p.valueExpr(f, e.X)
			if err != nil {
				return valueType{}, err
			}
			return typed("*" + x.defaulted().typ), nil
		case token.ARROW:
		default:
			return p.valueExpr(f, e.X)
		}
	case *ast.BinaryExpr:
		switch e.Op {
		case token.EQL, token.NEQ, token.LSS, token.LEQ, token.GTR, token.GEQ:
			return untyped("bool"), nil
		case token.SHL, token.SHR:
			return p.valueExpr(f, e.X)
		}
		x, err := p.valueExpr(f, e.X)
		if err != nil {
			return valueType{}, err
		}
		y, err := p.valueExpr(f, e.Y)
		if err != nil {
			return valueType{}, err
		}
		return combine(x, y), nil
	case *ast.CallExpr:
		ts, err := p.results(f, e)
		if err != nil {
			return valueType{}, err
		}
		if len(ts) != 1 {
			return valueType{}, f.errorf(e, "call has %d results, want 1", len(ts))
		}
		return ts[0], nil
	}
	return valueType{}, f.errorf(e, "cannot infer the type of %s from the generated files alone", f.text(e))
}

// results are the types of the values of a call (or of a single-valued
// expression) written in f.
func (p *pkgInfo) results(f *fileCtx, e ast.Expr) ([]valueType, error) {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		t, err := p.valueExpr(f, e)
		return []valueType{t}, err
	}
	pr := p.printer(f)
	conversion := func() ([]valueType, error) {
		s, err := pr.typ(call.Fun)
		return []valueType{typed(s)}, err
	}
	fun := ast.Unparen(call.Fun)
	switch fn := fun.(type) {
	case *ast.Ident:
		if p.vars[fn.Name] == nil && p.consts[fn.Name] == nil && p.funcs[fn.Name] == nil {
			switch fn.Name {
			case "new":
				if len(call.Args) == 1 {
					s, err := pr.typ(call.Args[0])
					return []valueType{typed("*" + s)}, err
				}
			case "make":
				if len(call.Args) > 0 {
					s, err := pr.typ(call.Args[0])
					return []valueType{typed(s)}, err
				}
			case "len", "cap", "copy":
				return []valueType{typed("int")}, nil
			case "append":
				if len(call.Args) > 0 {
					t, err := p.valueExpr(f, call.Args[0])
					return []valueType{t}, err
				}
			}
			if p.types[fn.Name] || predeclaredTypes[fn.Name] {
				return conversion()
			}
			return nil, f.errorf(fn, "cannot infer the result of %s: not declared in the generated files", fn.Name)
		}
		if fd := p.funcs[fn.Name]; fd != nil {
			return p.funcResults(fd, fn.Name)
		}
	case *ast.SelectorExpr:
		if x, ok := fn.X.(*ast.Ident); ok && p.vars[x.Name] == nil && p.consts[x.Name] == nil && p.funcs[x.Name] == nil && !p.types[x.Name] {
			// A package's function.
			q := x.Name
			if v, ok := f.quals[q]; ok {
				q = v
			}
			if r, ok := knownResults[q+"."+fn.Sel.Name]; ok {
				return []valueType{typed(r)}, nil
			}
			if dep, name, ok := p.imported(f, fn); ok {
				if fd := dep.funcs[name]; fd != nil {
					rs, err := dep.funcResults(fd, name)
					for i := range rs {
						rs[i] = dep.qualify(rs[i])
					}
					return rs, err
				}
				if dep.types[name] {
					return []valueType{typed(dep.name + "." + name)}, nil
				}
			}
			return nil, f.errorf(fn, "cannot infer the result of %s.%s without type-checking its package", x.Name, fn.Sel.Name)
		}
		// A method of a value of a package type.
		x, err := p.valueExpr(f, fn.X)
		if err != nil {
			return nil, err
		}
		base := strings.TrimPrefix(x.defaulted().typ, "*")
		if md := p.methods[base][fn.Sel.Name]; md != nil {
			return p.funcResults(md, base+"."+fn.Sel.Name)
		}
		return nil, f.errorf(fn, "cannot infer the result of %s.%s: no such method in the generated files", base, fn.Sel.Name)
	case *ast.FuncLit:
		rs, err := pr.fields(fn.Type.Results)
		if err != nil {
			return nil, err
		}
		out := make([]valueType, len(rs))
		for i, r := range rs {
			out[i] = typed(r)
		}
		return out, nil
	case *ast.ArrayType, *ast.StarExpr, *ast.MapType, *ast.ChanType, *ast.FuncType, *ast.InterfaceType, *ast.StructType:
		return conversion()
	}
	return nil, f.errorf(call, "cannot infer the result of %s from the generated files alone", f.text(call))
}

func (p *pkgInfo) funcResults(fd *funcDecl, name string) ([]valueType, error) {
	if fd.decl.Type.TypeParams != nil || (fd.decl.Recv != nil && len(receiverParams(fd.decl)) > 0) {
		return nil, fd.file.errorf(fd.decl, "cannot infer the result of generic %s", name)
	}
	rs, err := p.printer(fd.file).fields(fd.decl.Type.Results)
	if err != nil {
		return nil, err
	}
	out := make([]valueType, len(rs))
	for i, r := range rs {
		out[i] = typed(r)
	}
	return out, nil
}

func receiverParams(d *ast.FuncDecl) []string {
	_, _, tps := receiver(d)
	return tps
}

// imported resolves pkg.Name written in f to a recorded package other than
// p (see SDKAPI) and the name in it.
func (p *pkgInfo) imported(f *fileCtx, e *ast.SelectorExpr) (*pkgInfo, string, bool) {
	x, ok := e.X.(*ast.Ident)
	if !ok || p.vars[x.Name] != nil || p.consts[x.Name] != nil || p.funcs[x.Name] != nil || p.types[x.Name] {
		return nil, "", false
	}
	dep := p.deps[f.paths[x.Name]]
	if dep == nil || dep == p {
		return nil, "", false
	}
	return dep, e.Sel.Name, true
}

// qualify spells a type printed inside p as another package sees it: every
// package-level type name of p gets p's package name as its qualifier
// (Kind becomes wire.Kind, *ClassError *wire.ClassError). Untyped kinds
// and predeclared types are unchanged.
func (p *pkgInfo) qualify(t valueType) valueType {
	if !t.isTyped() {
		return t
	}
	var s scanner.Scanner
	fset := token.NewFileSet()
	src := []byte(t.typ)
	s.Init(fset.AddFile("", -1, len(src)), src, nil, 0)
	var b strings.Builder
	last, prev := 0, token.ILLEGAL
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		off := fset.Position(pos).Offset
		if tok == token.IDENT && prev != token.PERIOD && p.types[lit] {
			b.WriteString(t.typ[last:off])
			b.WriteString(p.name + ".")
			last = off
		}
		prev = tok
	}
	b.WriteString(t.typ[last:])
	return typed(b.String())
}

// field returns the type of field name of the struct type typ (or a
// pointer to it), as package p spells it, when one of the recorded
// packages declares that type with that field (not promoted).
func (p *pkgInfo) field(typ, name string) (valueType, bool) {
	base := strings.TrimPrefix(typ, "*")
	owner := p
	if q, n, ok := strings.Cut(base, "."); ok {
		owner = nil
		for _, d := range p.deps {
			if d.name == q && d != p {
				owner = d
			}
		}
		base = n
	}
	if owner == nil {
		return valueType{}, false
	}
	td := owner.specs[base]
	if td == nil || td.spec.TypeParams != nil {
		return valueType{}, false
	}
	st, ok := td.spec.Type.(*ast.StructType)
	if !ok {
		return valueType{}, false
	}
	for _, fl := range st.Fields.List {
		for _, n := range fl.Names {
			if n.Name != name {
				continue
			}
			s, err := owner.printer(td.file).typ(fl.Type)
			if err != nil {
				return valueType{}, false
			}
			if owner != p {
				return owner.qualify(typed(s)), true
			}
			return typed(s), true
		}
	}
	return valueType{}, false
}
