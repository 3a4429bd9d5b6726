package apirecord

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"sort"
	"strings"

	"github.com/echomq/echomq/gen/target"
)

// GoAPI returns the exported API of one generated Go package: every file
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
	pkg, err := parsePackage(token.NewFileSet(), "", gen)
	if err != nil {
		return nil, err
	}
	return pkg.lines()
}

// parsePackage parses the files of one package, which must all declare
// the same package name, and collects its declarations.
func parsePackage(fset *token.FileSet, importPath string, files []target.File) (*pkgInfo, error) {
	files = append([]target.File(nil), files...)
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	pkg := &pkgInfo{
		fset:     fset,
		path:     importPath,
		consts:   map[string]*constDecl{},
		vars:     map[string]*varDecl{},
		funcs:    map[string]*funcDecl{},
		methods:  map[string]map[string]*funcDecl{},
		types:    map[string]bool{},
		specs:    map[string]*typeDecl{},
		memo:     map[string]valueType{},
		visiting: map[string]bool{},
	}
	for _, f := range files {
		af, err := parser.ParseFile(pkg.fset, f.Path, f.Data, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("surface: %w", err)
		}
		if pkg.name == "" {
			pkg.name = af.Name.Name
		} else if af.Name.Name != pkg.name {
			return nil, fmt.Errorf("surface: %s is package %s, not %s", f.Path, af.Name.Name, pkg.name)
		}
		pkg.files = append(pkg.files, &parsedFile{ast: af, ctx: newFileCtx(pkg.fset, af)})
	}
	pkg.collect()
	return pkg, nil
}

// lines returns the package's API lines, sorted and free of duplicates.
func (p *pkgInfo) lines() ([]string, error) {
	seen := map[string]bool{}
	var lines []string
	add := func(l string) {
		if !seen[l] {
			seen[l] = true
			lines = append(lines, l)
		}
	}
	for _, f := range p.files {
		if err := p.fileLines(f, add); err != nil {
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
	name    string              // the package name the files declare
	path    string              // the import path; "" for GoAPI's single package
	deps    map[string]*pkgInfo // the other recorded packages, by import path
	files   []*parsedFile
	consts  map[string]*constDecl
	vars    map[string]*varDecl
	funcs   map[string]*funcDecl
	methods map[string]map[string]*funcDecl // receiver base type -> name -> decl
	types   map[string]bool                 // package-level type names
	specs   map[string]*typeDecl            // package-level type declarations

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

type typeDecl struct {
	spec *ast.TypeSpec
	file *fileCtx
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
						ts := s.(*ast.TypeSpec)
						p.types[ts.Name.Name] = true
						p.specs[ts.Name.Name] = &typeDecl{spec: ts, file: f.ctx}
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

// ModulePath is the import path of the repository root: a directory dir
// of the tree holds the package ModulePath + "/" + dir (the Go SDK's own
// module, sdk/go, is github.com/echomq/echomq/sdk/go, so this holds there
// too).
const ModulePath = "github.com/echomq/echomq"

// LegacyPackage is the package that the unqualified lines of a record
// written before records were package-qualified describe: those records
// (2.0.0 to 2.1.1) held the generated wire layer, then package emq in
// sdk/go/emq and now package wire in sdk/go/emq/wire, with the same
// exported names. ReadAPI reads such a line as that package's.
const LegacyPackage = ModulePath + "/sdk/go/emq/wire"

// pkgPrefix starts every package-qualified line.
const pkgPrefix = "pkg "

// Qualify returns line as a line of the package importPath: "pkg
// <importPath>, <line>".
func Qualify(importPath, line string) string { return pkgPrefix + importPath + ", " + line }

// SDKAPI returns the whole public API of the Go packages among files:
// every .go file that is not a test is grouped by its directory, each
// directory is one package (ModulePath + "/" + directory), and each line
// GoAPI would give for the package's files — generated and hand-written
// alike — is package-qualified with Qualify, in the style of Go's
// api/go1.*.txt files:
//
//	pkg github.com/echomq/echomq/sdk/go/emq, method (*Worker) Run(context.Context) error
//	pkg github.com/echomq/echomq/sdk/go/emq/wire, func ParseID(string) (ID, error)
//
// Types are written as the package's own source spells them (an alias
// ID = wire.ID keeps ID in emq's signatures, and its own line "type ID =
// wire.ID" records what it stands for), except that a constant or
// variable declared without a type whose value is another recorded
// package's constant, variable or function takes that declaration's type,
// qualified (const KindJOB = wire.KindJOB records "const KindJOB
// wire.Kind").
//
// Why the syntax and not go/types (golang.org/x/tools/go/packages or
// golang.org/x/exp/apidiff): the frozen records under golden/releases are
// compared line by line with what this function produces, so the lines
// must keep exactly the spelling those records were written in; the gate
// runs on generated files that exist only in memory, beside hand-written
// files on disk, without building the SDK module or loading rueidis; and
// what the syntax cannot decide is refused with a position asking for an
// explicit type, never guessed. The cost is that a type is recorded as
// spelled: a change behind an alias shows up on the alias's own line, and
// a hand-written declaration must have a type the files decide.
func SDKAPI(files []target.File) ([]string, error) {
	byDir := map[string][]target.File{}
	for _, f := range files {
		if !strings.HasSuffix(f.Path, ".go") || strings.HasSuffix(f.Path, "_test.go") {
			continue
		}
		d := path.Dir(f.Path)
		byDir[d] = append(byDir[d], f)
	}
	if len(byDir) == 0 {
		return nil, fmt.Errorf("surface: no Go file among %d files", len(files))
	}
	fset := token.NewFileSet()
	pkgs := map[string]*pkgInfo{}
	var paths []string
	for d, fs := range byDir {
		ip := ModulePath + "/" + d
		p, err := parsePackage(fset, ip, fs)
		if err != nil {
			return nil, err
		}
		pkgs[ip] = p
		paths = append(paths, ip)
	}
	sort.Strings(paths)
	var out []string
	for _, ip := range paths {
		p := pkgs[ip]
		p.deps = pkgs
		lines, err := p.lines()
		if err != nil {
			return nil, err
		}
		for _, l := range lines {
			out = append(out, Qualify(ip, l))
		}
	}
	sort.Strings(out)
	return out, nil
}
