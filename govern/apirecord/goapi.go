package apirecord

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"sort"
	"strings"

	"github.com/echomq/echomq/gen/target"
)

// GoAPI returns the exported API of the generated Go package: every file
// of files whose path ends in _gen.go is parsed (they must all declare the
// same package) and each exported feature becomes one line, in the style
// of Go's api/go1.*.txt files without their "pkg p, " prefix. The lines
// are sorted and free of duplicates:
//
//	const Version untyped string
//	const KindJOB Kind
//	var ErrID error
//	func ParseID(string) (ID, error)
//	method (ID) String() string
//	method (*ClaimCall) Exec(context.Context, rueidis.Client) (ClaimReply, bool, error)
//	type Kind string
//	type Alias = Other
//	type ClaimReply struct
//	type ClaimReply struct, ID ID
//	type Outer struct, embedded *Inner
//	type Runner interface
//	type Runner interface, Run(context.Context) error
//	type Runner interface, embedded io.Closer
//	type Runner interface, unexported methods
//	type List[$0 interface{}] struct
//	method (*List[$0]) Push($0)
//
// A constant is recorded with its type, never its value: values are
// version-dependent and governed elsewhere. An untyped constant's type is
// "untyped int", "untyped float", "untyped rune", "untyped complex",
// "untyped string" or "untyped bool". Names of parameters and results
// appear nowhere (renaming one breaks no caller); type parameters are
// numbered $0, $1, ... by position; byte, rune and any are spelled uint8,
// int32 and interface{}, the types they alias. Methods of unexported types
// and exported fields of unexported types are left out, as are fields and
// methods promoted from an embedded unexported type.
//
// Types are read from the syntax alone, without type-checking the
// package's imports: a constant or variable declared without a type must
// have a value whose type the declarations of the generated files decide
// (a literal, a conversion, a composite literal, a call of a function
// declared in them, errors.New or fmt.Errorf, ...); any other is reported
// as an error asking for an explicit type, rather than guessed.
func GoAPI(files []target.File) ([]string, error) {
	var gen []target.File
	for _, f := range files {
		if strings.HasSuffix(f.Path, "_gen.go") {
			gen = append(gen, f)
		}
	}
	if len(gen) == 0 {
		return nil, fmt.Errorf("surface: no _gen.go file among %d files", len(files))
	}
	sort.Slice(gen, func(i, j int) bool { return gen[i].Path < gen[j].Path })
	pkg := &pkgInfo{
		fset:     token.NewFileSet(),
		consts:   map[string]*constDecl{},
		vars:     map[string]*varDecl{},
		funcs:    map[string]*funcDecl{},
		methods:  map[string]map[string]*funcDecl{},
		types:    map[string]bool{},
		memo:     map[string]valueType{},
		visiting: map[string]bool{},
	}
	var name string
	for _, f := range gen {
		af, err := parser.ParseFile(pkg.fset, f.Path, f.Data, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("surface: %w", err)
		}
		if name == "" {
			name = af.Name.Name
		} else if af.Name.Name != name {
			return nil, fmt.Errorf("surface: %s is package %s, not %s", f.Path, af.Name.Name, name)
		}
		pkg.files = append(pkg.files, &parsedFile{ast: af, ctx: newFileCtx(pkg.fset, af)})
	}
	pkg.collect()

	seen := map[string]bool{}
	var lines []string
	add := func(l string) {
		if !seen[l] {
			seen[l] = true
			lines = append(lines, l)
		}
	}
	for _, f := range pkg.files {
		if err := pkg.fileLines(f, add); err != nil {
			return nil, err
		}
	}
	sort.Strings(lines)
	return lines, nil
}

type parsedFile struct {
	ast *ast.File
	ctx *fileCtx
}

// pkgInfo is the package-level declarations of the generated files, for
// printing and for inferring the types of untyped declarations.
type pkgInfo struct {
	fset    *token.FileSet
	files   []*parsedFile
	consts  map[string]*constDecl
	vars    map[string]*varDecl
	funcs   map[string]*funcDecl
	methods map[string]map[string]*funcDecl // receiver base type -> name -> decl
	types   map[string]bool                 // package-level type names

	memo     map[string]valueType // "const X" / "var X" -> type
	visiting map[string]bool
}

type constDecl struct {
	name *ast.Ident
	typ  ast.Expr // nil when untyped in the source
	val  ast.Expr // nil when missing (an error)
	file *fileCtx
}

type varDecl struct {
	name *ast.Ident
	typ  ast.Expr
	vals []ast.Expr
	idx  int
	// multi is set when the names share one multi-valued call.
	multi bool
	file  *fileCtx
}

type funcDecl struct {
	decl *ast.FuncDecl
	file *fileCtx
}

func (p *pkgInfo) collect() {
	for _, f := range p.files {
		for _, d := range f.ast.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				fd := &funcDecl{decl: d, file: f.ctx}
				if d.Recv == nil {
					p.funcs[d.Name.Name] = fd
					continue
				}
				if base, _, _ := receiver(d); base != "" {
					if p.methods[base] == nil {
						p.methods[base] = map[string]*funcDecl{}
					}
					p.methods[base][d.Name.Name] = fd
				}
			case *ast.GenDecl:
				switch d.Tok {
				case token.TYPE:
					for _, s := range d.Specs {
						p.types[s.(*ast.TypeSpec).Name.Name] = true
					}
				case token.CONST:
					// A spec without type and values repeats the
					// previous one's (iota aside, which is untyped int
					// anyway).
					var typ ast.Expr
					var vals []ast.Expr
					for _, s := range d.Specs {
						vs := s.(*ast.ValueSpec)
						if vs.Type != nil || len(vs.Values) > 0 {
							typ, vals = vs.Type, vs.Values
						}
						for i, n := range vs.Names {
							c := &constDecl{name: n, typ: typ, file: f.ctx}
							if i < len(vals) {
								c.val = vals[i]
							}
							p.consts[n.Name] = c
						}
					}
				case token.VAR:
					for _, s := range d.Specs {
						vs := s.(*ast.ValueSpec)
						for i, n := range vs.Names {
							p.vars[n.Name] = &varDecl{name: n, typ: vs.Type, vals: vs.Values, idx: i, multi: len(vs.Names) > 1 && len(vs.Values) == 1, file: f.ctx}
						}
					}
				}
			}
		}
	}
}

func (p *pkgInfo) printer(f *fileCtx) *typePrinter {
	return &typePrinter{file: f, local: p.types}
}

// fileLines emits the lines of one file's declarations.
func (p *pkgInfo) fileLines(f *parsedFile, add func(string)) error {
	for _, d := range f.ast.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if err := p.funcLine(f.ctx, d, add); err != nil {
				return err
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if err := p.typeLines(f.ctx, s, add); err != nil {
						return err
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if !n.IsExported() {
							continue
						}
						if d.Tok == token.CONST {
							t, err := p.constType(n.Name)
							if err != nil {
								return err
							}
							add("const " + n.Name + " " + t.String())
							continue
						}
						t, err := p.varType(n.Name)
						if err != nil {
							return err
						}
						add("var " + n.Name + " " + t.String())
					}
				}
			}
		}
	}
	return nil
}

// receiver returns the base type name of a method's receiver, whether it
// is a pointer, and its type parameter names by position.
func receiver(d *ast.FuncDecl) (base string, star bool, tparams []string) {
	if d.Recv == nil || len(d.Recv.List) != 1 {
		return "", false, nil
	}
	t := ast.Unparen(d.Recv.List[0].Type)
	if s, ok := t.(*ast.StarExpr); ok {
		star = true
		t = ast.Unparen(s.X)
	}
	var idx []ast.Expr
	switch x := t.(type) {
	case *ast.IndexExpr:
		t, idx = x.X, []ast.Expr{x.Index}
	case *ast.IndexListExpr:
		t, idx = x.X, x.Indices
	}
	id, ok := t.(*ast.Ident)
	if !ok {
		return "", false, nil
	}
	for _, e := range idx {
		if n, ok := e.(*ast.Ident); ok {
			tparams = append(tparams, n.Name)
		} else {
			tparams = append(tparams, "_")
		}
	}
	return id.Name, star, tparams
}

func (p *pkgInfo) funcLine(f *fileCtx, d *ast.FuncDecl, add func(string)) error {
	if !d.Name.IsExported() {
		return nil
	}
	pr := p.printer(f)
	if d.Recv == nil {
		sig, err := pr.signature(d.Type)
		if err != nil {
			return err
		}
		add("func " + d.Name.Name + sig)
		return nil
	}
	base, star, tps := receiver(d)
	if base == "" {
		return f.errorf(d.Recv, "unsupported receiver")
	}
	if !ast.IsExported(base) {
		return nil
	}
	recv := base
	if len(tps) > 0 {
		pr.tparams = map[string]string{}
		nums := make([]string, len(tps))
		for i, n := range tps {
			nums[i] = fmt.Sprintf("$%d", i)
			if n != "_" {
				pr.tparams[n] = nums[i]
			}
		}
		recv += "[" + strings.Join(nums, ", ") + "]"
	}
	if star {
		recv = "*" + recv
	}
	sig, err := pr.signature(d.Type)
	if err != nil {
		return err
	}
	add("method (" + recv + ") " + d.Name.Name + sig)
	return nil
}

// embeddedName is the field name an embedded type declares: its type name
// without pointer, qualifier or type arguments; "" when e is no name.
func embeddedName(e ast.Expr) string {
	e = ast.Unparen(e)
	if s, ok := e.(*ast.StarExpr); ok {
		e = ast.Unparen(s.X)
	}
	switch x := e.(type) {
	case *ast.IndexExpr:
		e = x.X
	case *ast.IndexListExpr:
		e = x.X
	}
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return x.Sel.Name
	}
	return ""
}

func (p *pkgInfo) typeLines(f *fileCtx, ts *ast.TypeSpec, add func(string)) error {
	if !ts.Name.IsExported() {
		return nil
	}
	pr := p.printer(f)
	head := "type " + ts.Name.Name
	if ts.TypeParams != nil && len(ts.TypeParams.List) > 0 {
		inner, tp, err := pr.withTypeParams(ts.TypeParams)
		if err != nil {
			return err
		}
		pr, head = inner, head+tp
	}
	if ts.Assign.IsValid() {
		t, err := pr.typ(ts.Type)
		if err != nil {
			return err
		}
		add(head + " = " + t)
		return nil
	}
	switch t := ts.Type.(type) {
	case *ast.StructType:
		add(head + " struct")
		for _, fld := range t.Fields.List {
			ft, err := pr.typ(fld.Type)
			if err != nil {
				return err
			}
			if len(fld.Names) == 0 {
				if ast.IsExported(embeddedName(fld.Type)) {
					add(head + " struct, embedded " + ft)
				}
				continue
			}
			for _, n := range fld.Names {
				if n.IsExported() {
					add(head + " struct, " + n.Name + " " + ft)
				}
			}
		}
	case *ast.InterfaceType:
		add(head + " interface")
		for _, m := range t.Methods.List {
			if len(m.Names) == 0 {
				et, err := pr.typ(m.Type)
				if err != nil {
					return err
				}
				add(head + " interface, embedded " + et)
				continue
			}
			ft, ok := m.Type.(*ast.FuncType)
			if !ok {
				return f.errorf(m, "interface method without a signature")
			}
			sig, err := pr.signature(ft)
			if err != nil {
				return err
			}
			for _, n := range m.Names {
				if n.IsExported() {
					add(head + " interface, " + n.Name + sig)
				} else {
					add(head + " interface, unexported methods")
				}
			}
		}
	default:
		u, err := pr.typ(ts.Type)
		if err != nil {
			return err
		}
		add(head + " " + u)
	}
	return nil
}
