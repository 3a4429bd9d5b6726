package apirecord

import (
	"bytes"
	"go/ast"
	"go/parser"
	"path"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/echomq/echomq/gen/targets"

	"github.com/google/go-cmp/cmp"

	"github.com/echomq/echomq/gen/header"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/gen/target"
	"github.com/echomq/echomq/gen/targets/golang"
)

var (
	realOnce  sync.Once
	realProto *model.Protocol
	realFiles []target.File
	realErr   error
)

// realBundle returns the model of the repository's manifest and its artifacts.
func realBundle(t *testing.T) (*model.Protocol, []target.File) {
	t.Helper()
	realOnce.Do(func() {
		realProto, realErr = model.Load("../../protocol.yaml")
		if realErr == nil {
			realFiles, realErr = targets.Generate(realProto, nil)
		}
	})
	if realErr != nil {
		t.Fatal(realErr)
	}
	return realProto, realFiles
}

// wireFiles are the files of the generated wire package among files.
func wireFiles(files []target.File) []target.File {
	var out []target.File
	for _, f := range files {
		if path.Dir(f.Path) == golang.Dir {
			out = append(out, f)
		}
	}
	return out
}

// realAPI returns the model and the API of the generated wire package.
func realAPI(t *testing.T) (*model.Protocol, []string) {
	t.Helper()
	p, files := realBundle(t)
	lines, err := GoAPI(wireFiles(files))
	if err != nil {
		t.Fatal(err)
	}
	return p, lines
}

// fold spells a manifest name the way a Go name folds to: run_at_ms and
// RunAtMS both fold to runatms.
func fold(s string) string {
	return strings.ToLower(strings.NewReplacer("_", "", "-", "", ":", "", ".", "").Replace(s))
}

// named finds the identifier in lines that starts a line with prefix,
// continues with a name folding to want and then with suffix.
func named(lines []string, prefix, want, suffix string) (string, bool) {
	for _, l := range lines {
		rest, ok := strings.CutPrefix(l, prefix)
		if !ok {
			continue
		}
		n := identLen(rest)
		if fold(rest[:n]) == fold(want) && strings.HasPrefix(rest[n:], suffix) {
			return rest[:n], true
		}
	}
	return "", false
}

func withPrefix(lines []string, prefix string) []string {
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// TestGoAPIFollowsModel checks the generated API against the model: every
// script has its call struct with one field per slot, its decoder, its
// Exec method and its Script variable; every reply element, reply value,
// id kind and wire class has its Go feature.
func TestGoAPIFollowsModel(t *testing.T) {
	p, lines := realAPI(t)
	has := set(lines)
	for _, s := range p.Scripts {
		camel, ok := named(lines, "type ", s.Name+"call", " struct")
		if !ok {
			t.Errorf("script %s: no type <Camel>Call struct line", s.Name)
			continue
		}
		base := strings.TrimSuffix(camel, "Call")
		fields := withPrefix(lines, "type "+camel+" struct, ")
		slots := append(keyNames(s), argNames(s)...)
		if group, _ := s.RepeatedArgs(); len(group) > 1 {
			// A repeated ARGV group of records is one field of entries,
			// each entry a struct with one field per member.
			entry := base + "Entry"
			if !has["type "+camel+" struct, Entries []"+entry] {
				t.Errorf("%s: no field Entries []%s for the group of %d", camel, entry, len(group))
			}
			efields := withPrefix(lines, "type "+entry+" struct, ")
			if len(efields) != len(group) {
				t.Errorf("%s: %d fields, want one per member of the group (%d):\n%s", entry, len(efields), len(group), strings.Join(efields, "\n"))
			}
			for _, a := range group {
				found := false
				for _, f := range efields {
					name := strings.Fields(strings.TrimPrefix(f, "type "+entry+" struct, "))[0]
					found = found || strings.HasPrefix(fold(a.Name), fold(name))
				}
				if !found {
					t.Errorf("%s: no field for member %s", entry, a.Name)
				}
			}
			slots = append(keyNames(s), argNames(s)[:len(s.Argv)-len(group)]...)
			slots = append(slots, "entries")
		}
		if got, want := len(fields), len(slots); got != want {
			t.Errorf("%s: %d fields, want one per KEYS and ARGV slot (%d):\n%s", camel, got, want, strings.Join(fields, "\n"))
		}
		for _, slot := range slots {
			found := false
			for _, f := range fields {
				name := strings.Fields(strings.TrimPrefix(f, "type "+camel+" struct, "))[0]
				found = found || strings.HasPrefix(fold(name), fold(slot))
			}
			if !found {
				t.Errorf("%s: no field for slot %s", camel, slot)
			}
		}
		for _, prefix := range []string{
			"func Decode" + base + "(rueidis.RedisResult) ",
			"method (*" + camel + ") Exec(context.Context, rueidis.Client) ",
			"method (*" + camel + ") Keys() []string",
			"method (*" + camel + ") Args() []string",
		} {
			if len(withPrefix(lines, prefix)) != 1 {
				t.Errorf("script %s: no line starting %q", s.Name, prefix)
			}
		}
		if !has["var Script"+base+" *Script"] {
			t.Errorf("script %s: no var Script%s *Script", s.Name, base)
		}
		if len(s.Reply.Elements) > 0 {
			if !has["type "+base+"Reply struct"] {
				t.Errorf("script %s: no type %sReply struct", s.Name, base)
			}
			if got := len(withPrefix(lines, "type "+base+"Reply struct, ")); got != len(s.Reply.Elements) {
				t.Errorf("%sReply: %d fields, want %d", base, got, len(s.Reply.Elements))
			}
		}
		for _, v := range s.Reply.Values {
			if _, ok := named(lines, "const "+base, v.Name, " int64"); !ok {
				t.Errorf("script %s: no const %s<%s> int64", s.Name, base, v.Name)
			}
		}
	}
	for _, k := range p.Kinds {
		if _, ok := named(lines, "const Kind", k.Name, " Kind"); !ok {
			t.Errorf("kind %s: no const Kind<Name> Kind", k.Name)
		}
	}
	for _, c := range p.Classes {
		if _, ok := named(lines, "var Err", c.Name, " *ClassError"); !ok {
			t.Errorf("class %s: no var Err<Name> *ClassError", c.Word)
		}
	}
	for _, l := range []string{"const Version untyped string", "const VersionRecord untyped string", "const Protocol untyped string", "type Kind string"} {
		if !has[l] {
			t.Errorf("no line %q", l)
		}
	}
	// Values are governed elsewhere: none is recorded.
	for _, l := range lines {
		for _, v := range []string{p.Version.String(), p.VersionRecord(), `"`} {
			if strings.Contains(l, v) {
				t.Errorf("line %q records a value (%s)", l, v)
			}
		}
	}
}

func keyNames(s model.Script) []string {
	var out []string
	for _, k := range s.Keys {
		out = append(out, k.Name)
	}
	return out
}

func argNames(s model.Script) []string {
	var out []string
	for _, a := range s.Argv {
		out = append(out, a.Name)
	}
	return out
}

// TestGoAPINoParameterNames parses every recorded signature and type back
// and checks that no function type in it names a parameter or result.
func TestGoAPINoParameterNames(t *testing.T) {
	_, lines := realAPI(t)
	checked := 0
	for _, l := range lines {
		f, err := parseLine(l)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		src := strings.TrimPrefix(f.sig, "untyped ")
		if f.member == "unexported" {
			continue
		}
		if strings.HasPrefix(l, "func ") || strings.HasPrefix(l, "method ") || f.member == "method" {
			src = "func" + src
		}
		if strings.HasPrefix(src, " ") || f.sig == "struct" || f.sig == "interface" {
			continue
		}
		e, err := parser.ParseExpr(strings.ReplaceAll(src, "$", "P"))
		if err != nil {
			t.Errorf("%q: %q does not parse: %v", l, src, err)
			continue
		}
		ast.Inspect(e, func(n ast.Node) bool {
			ft, ok := n.(*ast.FuncType)
			if !ok {
				return true
			}
			checked++
			for _, fl := range []*ast.FieldList{ft.Params, ft.Results} {
				if fl == nil {
					continue
				}
				for _, fld := range fl.List {
					if len(fld.Names) > 0 {
						t.Errorf("%q names a parameter or result: %s", l, fld.Names[0].Name)
					}
				}
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("no signature checked")
	}
}

func TestGoAPIDeterministic(t *testing.T) {
	_, files := realBundle(t)
	files = wireFiles(files)
	a, err := GoAPI(files)
	if err != nil {
		t.Fatal(err)
	}
	// Reversed input order makes no difference.
	rev := append([]target.File(nil), files...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	b, err := GoAPI(rev)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("GoAPI differs between runs (-first +second):\n%s", diff)
	}
	if !sort.StringsAreSorted(a) {
		t.Error("lines are not sorted")
	}
	for i := 1; i < len(a); i++ {
		if a[i] == a[i-1] {
			t.Errorf("duplicate line %q", a[i])
		}
	}
	if len(a) == 0 {
		t.Fatal("no lines")
	}
}

func goFile(name, src string) target.File {
	return target.File{Path: "sdk/go/emq/" + name, Data: []byte(src)}
}

const shapesSrc = `package emq

import (
	"github.com/echomq/echomq/gen/targets"
	"context"
	"errors"
	"fmt"
	stdio "io"
	"time"
)

type Kind string

const (
	KindA Kind = "A"
	KindB Kind = "B"
)

const (
	First = iota
	Second
	third
)

const (
	Big    = 1<<62 - 1
	Ratio  = 1.5
	Letter = 'x'
	Name   = "emq"
	Yes    = Big > 3
	Lim    = time.Duration(5)
	Mixed  = KindA + "x"
	Count  = len(Name)
	Shift  = 2.0 << 3
	Work   = KindB
	unexp  = 1
)

var (
	ErrA    = errors.New("a")
	ErrB    = fmt.Errorf("b: %w", ErrA)
	ErrC    = &Problem{}
	Default = NewThing(3)
	Named   = Default.Label()
	Table   = map[string]int{}
	Hook    func(ctx context.Context, n int) (ok bool, err error)
	X, Y    = pair()
	Plain   = 3
	Many    = []byte("x")
	hidden  = 1
)

type Problem struct{ Msg string }

func (p *Problem) Error() string { return p.Msg }

type Thing struct {
	Name, Alias string
	Opts        struct {
		N int ` + "`json:\"n\"`" + `
	}
	*Problem
	stdio.Reader
	secret  int
	helper
}

type helper struct{ Visible int }

func (helper) Exported() {}

func NewThing(n int) *Thing { return &Thing{} }

func (t *Thing) Label() string { return "" }

func (t Thing) Each(fn func(key string, value []byte) error, rest ...any) (count int, err error) {
	return 0, nil
}

func pair() (int, string) { return 0, "" }

type Runner interface {
	Run(ctx context.Context) error
	stdio.Closer
	reset()
}

type Source interface{ Next() (Kind, bool) }

type Number interface{ ~int | ~int64 }

type List[E any, N Number] struct {
	Items []E
	n     N
}

func (l *List[T, _]) Push(v T) {}

func Map[A, B any](in []A, f func(A) B) []B { return nil }

type Alias = List[string, int]

type Func func(done <-chan struct{}, out chan<- error)
`

func TestGoAPIShapes(t *testing.T) {
	got, err := GoAPI([]target.File{goFile("shapes_gen.go", shapesSrc), goFile("hand.go", "package other\n")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"const Big untyped int",
		"const Count int",
		"const First untyped int",
		"const KindA Kind",
		"const KindB Kind",
		"const Letter untyped rune",
		"const Lim time.Duration",
		"const Mixed Kind",
		"const Name untyped string",
		"const Ratio untyped float",
		"const Second untyped int",
		"const Shift untyped int",
		"const Work Kind",
		"const Yes untyped bool",
		"func Map[$0 interface{}, $1 interface{}]([]$0, func($0) $1) []$1",
		"func NewThing(int) *Thing",
		"method (*List[$0, $1]) Push($0)",
		"method (*Problem) Error() string",
		"method (*Thing) Label() string",
		"method (Thing) Each(func(string, []uint8) error, ...interface{}) (int, error)",
		"type Alias = List[string, int]",
		"type Func func(<-chan struct{}, chan<- error)",
		"type Kind string",
		"type List[$0 interface{}, $1 Number] struct",
		"type List[$0 interface{}, $1 Number] struct, Items []$0",
		"type Number interface",
		"type Number interface, embedded ~int | ~int64",
		"type Problem struct",
		"type Problem struct, Msg string",
		"type Runner interface",
		"type Runner interface, Run(context.Context) error",
		"type Runner interface, embedded io.Closer",
		"type Runner interface, unexported methods",
		"type Source interface",
		"type Source interface, Next() (Kind, bool)",
		"type Thing struct",
		"type Thing struct, Alias string",
		"type Thing struct, Name string",
		"type Thing struct, Opts struct{ N int \"json:\\\"n\\\"\" }",
		"type Thing struct, embedded *Problem",
		"type Thing struct, embedded io.Reader",
		"var Default *Thing",
		"var ErrA error",
		"var ErrB error",
		"var ErrC *Problem",
		"var Hook func(context.Context, int) (bool, error)",
		"var Many []uint8",
		"var Named string",
		"var Plain int",
		"var Table map[string]int",
		"var X int",
		"var Y string",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GoAPI mismatch (-want +got):\n%s", diff)
	}
	for _, l := range got {
		if _, err := parseLine(l); err != nil {
			t.Error(err)
		}
	}
}

func TestGoAPIErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []target.File
		want  string
	}{
		{"no generated file", []target.File{goFile("hand.go", "package emq\n")}, "no _gen.go file"},
		{"syntax", []target.File{goFile("a_gen.go", "package emq\nfunc (")}, "a_gen.go:2"},
		{"two packages", []target.File{goFile("a_gen.go", "package emq\n"), goFile("b_gen.go", "package other\n")}, "b_gen.go is package other"},
		{"foreign constant", []target.File{goFile("a_gen.go", "package emq\nimport \"time\"\nconst Tick = time.Second\n")}, "a_gen.go:3:14: cannot infer the type of time.Second from the generated files alone (constant Tick; declare it with an explicit type)"},
		{"foreign call", []target.File{goFile("a_gen.go", "package emq\nimport \"os\"\nvar Out = os.Stdout.Name()\n")}, "a_gen.go:3"},
		{"cycle", []target.File{goFile("a_gen.go", "package emq\nconst A = B\nconst B = A\n")}, "cyclic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := GoAPI(tc.files)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestCompareAPI(t *testing.T) {
	old := []string{
		"const Version untyped string",
		"func ParseID(string) (ID, error)",
		"method (*Queue) Claim(context.Context) (Job, error)",
		"type ClaimReply struct",
		"type ClaimReply struct, ID ID",
		"type ClaimReply struct, Token int64",
		"type Kind string",
		"type Open interface",
		"type Open interface, Run() error",
		"type Sealed interface",
		"type Sealed interface, Run() error",
		"type Sealed interface, unexported methods",
		"type Wrapper struct",
		"type Wrapper struct, embedded Inner",
		"var ErrID error",
	}
	for _, tc := range []struct {
		name string
		new  []string
		want []Break
	}{
		{"unchanged", old, nil},
		{"added only", append(append([]string(nil), old...),
			"func NewQueue(string) *Queue",
			"type ClaimReply struct, Payload string",
			"method (*Queue) Close() error",
			"type Sealed interface, Stop() error",
			"type Fresh interface",
			"type Fresh interface, Go()",
		), nil},
		{"removed and changed", replace(old, map[string]string{
			"func ParseID(string) (ID, error)":                    "func ParseID(string, Kind) (ID, error)",
			"type ClaimReply struct, Token int64":                 "",
			"const Version untyped string":                        "const Version string",
			"type Kind string":                                    "type Kind int",
			"var ErrID error":                                     "",
			"type Wrapper struct, embedded Inner":                 "type Wrapper struct, embedded *Inner",
			"method (*Queue) Claim(context.Context) (Job, error)": "method (Queue) Claim(context.Context) (Job, error)",
		}), []Break{
			{Kind: Changed, Where: "const Version", Old: "const Version untyped string", New: "const Version string", Message: "const Version changed from untyped string to string"},
			{Kind: Changed, Where: "func ParseID", Old: "func ParseID(string) (ID, error)", New: "func ParseID(string, Kind) (ID, error)", Message: "func ParseID changed from (string) (ID, error) to (string, Kind) (ID, error)"},
			{Kind: Removed, Where: "method (*Queue) Claim", Old: "method (*Queue) Claim(context.Context) (Job, error)", Message: "method (*Queue) Claim was removed (it was method (*Queue) Claim(context.Context) (Job, error))"},
			{Kind: Removed, Where: "type ClaimReply struct, Token", Old: "type ClaimReply struct, Token int64", Message: "type ClaimReply struct, Token was removed (it was type ClaimReply struct, Token int64)"},
			{Kind: Changed, Where: "type Kind", Old: "type Kind string", New: "type Kind int", Message: "type Kind changed from string to int"},
			{Kind: Changed, Where: "type Wrapper struct, embedded Inner", Old: "type Wrapper struct, embedded Inner", New: "type Wrapper struct, embedded *Inner", Message: "type Wrapper struct, embedded Inner changed from Inner to *Inner"},
			{Kind: Removed, Where: "var ErrID", Old: "var ErrID error", Message: "var ErrID was removed (it was var ErrID error)"},
		}},
		{"interface gains a method", append(append([]string(nil), old...), "type Open interface, Stop() error"), []Break{
			{Kind: Added, Where: "type Open interface, Stop", New: "type Open interface, Stop() error", Message: "interface Open gained method Stop: types outside the package that implemented it no longer do"},
		}},
		{"struct becomes interface", replace(old, map[string]string{
			"type ClaimReply struct":              "type ClaimReply interface",
			"type ClaimReply struct, ID ID":       "",
			"type ClaimReply struct, Token int64": "",
		}), []Break{
			{Kind: Changed, Where: "type ClaimReply", Old: "type ClaimReply struct", New: "type ClaimReply interface", Message: "type ClaimReply changed from struct to interface"},
			{Kind: Removed, Where: "type ClaimReply struct, ID", Old: "type ClaimReply struct, ID ID", Message: "type ClaimReply struct, ID was removed (it was type ClaimReply struct, ID ID)"},
			{Kind: Removed, Where: "type ClaimReply struct, Token", Old: "type ClaimReply struct, Token int64", Message: "type ClaimReply struct, Token was removed (it was type ClaimReply struct, Token int64)"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CompareAPI(old, tc.new)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CompareAPI mismatch (-want +got):\n%s", diff)
			}
			// Deterministic whatever the input order.
			shuffled := append([]string(nil), tc.new...)
			sort.Sort(sort.Reverse(sort.StringSlice(shuffled)))
			if diff := cmp.Diff(got, CompareAPI(old, shuffled)); diff != "" {
				t.Errorf("CompareAPI depends on input order:\n%s", diff)
			}
		})
	}
}

// replace returns lines with each key of m replaced by its value, or
// dropped when the value is empty.
func replace(lines []string, m map[string]string) []string {
	var out []string
	for _, l := range lines {
		v, ok := m[l]
		switch {
		case !ok:
			out = append(out, l)
		case v != "":
			out = append(out, v)
		}
	}
	return out
}

// TestCompareAPIParameterRename renames parameters and results between two
// sources: the API is the same and nothing breaks.
func TestCompareAPIParameterRename(t *testing.T) {
	a := "package emq\n\nfunc Claim(queue string, leaseMS int64) (id string, err error) { return }\n\ntype Q struct{}\n\nfunc (q *Q) Do(fn func(key string) error) {}\n"
	b := "package emq\n\nfunc Claim(name string, lease int64) (string, error) { return \"\", nil }\n\ntype Q struct{}\n\nfunc (other *Q) Do(callback func(k string) error) {}\n"
	oldAPI, err := GoAPI([]target.File{goFile("a_gen.go", a)})
	if err != nil {
		t.Fatal(err)
	}
	newAPI, err := GoAPI([]target.File{goFile("a_gen.go", b)})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(oldAPI, newAPI); diff != "" {
		t.Errorf("renaming parameters changed the API (-old +new):\n%s", diff)
	}
	if bs := CompareAPI(oldAPI, newAPI); len(bs) != 0 {
		t.Errorf("renaming parameters breaks: %v", bs)
	}
	// A change of a parameter's type does break.
	c := strings.Replace(b, "lease int64", "lease int32", 1)
	changed, err := GoAPI([]target.File{goFile("a_gen.go", c)})
	if err != nil {
		t.Fatal(err)
	}
	bs := CompareAPI(oldAPI, changed)
	if len(bs) != 1 || bs[0].Kind != Changed || bs[0].Where != "func Claim" {
		t.Errorf("retyping a parameter: breaks = %+v, want one change of func Claim", bs)
	}
}

// TestLuaSlotsFollowModel reads the real bundle's slots, from index.json
// and from the headers alone.
func TestLuaSlotsFollowModel(t *testing.T) {
	p, files := realBundle(t)
	want := map[string]Slots{}
	for _, s := range p.Scripts {
		sl := Slots{Keys: []string{}, Argv: []string{}}
		for _, k := range s.Keys {
			sl.Keys = append(sl.Keys, k.Name+repeatedMark(k.Repeated))
		}
		for _, a := range s.Argv {
			sl.Argv = append(sl.Argv, a.Name+repeatedMark(a.Repeated))
		}
		want[s.Name] = sl
	}
	got, err := LuaSlots(files)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LuaSlots mismatch (-model +bundle):\n%s", diff)
	}
	var noIndex []target.File
	for _, f := range files {
		if !strings.HasSuffix(f.Path, "/index.json") {
			noIndex = append(noIndex, f)
		}
	}
	got, err = LuaSlots(noIndex)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LuaSlots from headers mismatch (-model +headers):\n%s", diff)
	}
}

func TestLuaSlotsErrors(t *testing.T) {
	_, files := realBundle(t)
	s := realProto.Scripts[0]
	if len(s.Keys) == 0 {
		t.Skip("first script has no KEYS")
	}
	header := "-- KEYS[1] -> " + s.Keys[0].Name + ":"
	tamper := func(f target.File) target.File {
		if strings.Contains(string(f.Data), header) && strings.HasSuffix(f.Path, "/"+s.Name+".lua") {
			f.Data = []byte(strings.Replace(string(f.Data), header, "-- KEYS[1] -> renamed:", 1))
		}
		return f
	}
	var tampered, extra []target.File
	for _, f := range files {
		tampered = append(tampered, tamper(f))
		extra = append(extra, f)
	}
	extra = append(extra, target.File{Path: "sdk/lua/stray.lua", Data: []byte("-- KEYS[1] -> a: x\nreturn 1\n")})
	for _, tc := range []struct {
		name  string
		files []target.File
		want  string
	}{
		{"header disagrees with index", tampered, "but the header of sdk/lua/" + s.Name + ".lua says"},
		{"script missing from index", extra, "sdk/lua/stray.lua is not listed in sdk/lua/index.json"},
		{"slots out of order", []target.File{{Path: "x.lua", Data: []byte("-- KEYS[2] -> a: x\n")}}, "x.lua:1: KEYS[2] out of order"},
		{"index without scripts", []target.File{{Path: "lua/index.json", Data: []byte("{}")}}, "has no scripts list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LuaSlots(tc.files)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestCompareSlots(t *testing.T) {
	old := map[string]Slots{
		"claim": {Keys: []string{"pending", "active"}, Argv: []string{"prefix", "lease_ms"}},
		"bury":  {Keys: []string{"active", "row", "dead"}, Argv: []string{"id", "token"}},
	}
	for _, tc := range []struct {
		name string
		new  map[string]Slots
		want []Break
	}{
		{"unchanged", map[string]Slots{
			"claim": {Keys: []string{"pending", "active"}, Argv: []string{"prefix", "lease_ms"}},
			"bury":  {Keys: []string{"active", "row", "dead"}, Argv: []string{"id", "token"}},
			"fresh": {Keys: []string{"x"}},
		}, nil},
		{"removed script", map[string]Slots{
			"claim": old["claim"],
		}, []Break{
			{Kind: Removed, Where: "script bury", Old: "KEYS active, row, dead; ARGV id, token", Message: "script bury was removed"},
		}},
		{"reordered argv", map[string]Slots{
			"claim": {Keys: []string{"pending", "active"}, Argv: []string{"lease_ms", "prefix"}},
			"bury":  old["bury"],
		}, []Break{
			{Kind: Changed, Where: "script claim ARGV", Old: "prefix, lease_ms", New: "lease_ms, prefix", Message: "script claim ARGV changed: reordered; slot 1 was prefix, now lease_ms; slot 2 was lease_ms, now prefix"},
		}},
		{"lost keys slot", map[string]Slots{
			"claim": old["claim"],
			"bury":  {Keys: []string{"active", "row"}, Argv: []string{"id", "token"}},
		}, []Break{
			{Kind: Changed, Where: "script bury KEYS", Old: "active, row, dead", New: "active, row", Message: "script bury KEYS changed: 3 slots, now 2 (lost dead)"},
		}},
		{"appended slot", map[string]Slots{
			"claim": {Keys: []string{"pending", "active"}, Argv: []string{"prefix", "lease_ms", "limit"}},
			"bury":  old["bury"],
		}, []Break{
			{Kind: Changed, Where: "script claim ARGV", Old: "prefix, lease_ms", New: "prefix, lease_ms, limit", Message: "script claim ARGV changed: 2 slots, now 3 (appended limit): callers of the old shape pass too few"},
		}},
		{"renamed key and argv", map[string]Slots{
			"claim": {Keys: []string{"pending", "leased"}, Argv: []string{"prefix", "lease"}},
			"bury":  old["bury"],
		}, []Break{
			{Kind: Changed, Where: "script claim ARGV", Old: "prefix, lease_ms", New: "prefix, lease", Message: "script claim ARGV changed: slot 2 was lease_ms, now lease"},
			{Kind: Changed, Where: "script claim KEYS", Old: "pending, active", New: "pending, leased", Message: "script claim KEYS changed: slot 2 was active, now leased"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CompareSlots(old, tc.new)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CompareSlots mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompareSlotsReal(t *testing.T) {
	_, files := realBundle(t)
	s, err := LuaSlots(files)
	if err != nil {
		t.Fatal(err)
	}
	if bs := CompareSlots(s, s); len(bs) != 0 {
		t.Errorf("a bundle breaks itself: %v", bs)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	p, lines := realAPI(t)
	var buf bytes.Buffer
	if err := WriteAPI(&buf, p.Version.String(), lines); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	if first, _, _ := strings.Cut(text, "\n"); first != "# "+header.Marker {
		t.Errorf("first line = %q", first)
	}
	if !strings.Contains(text, "\n# Version: "+p.Version.String()+"\n") {
		t.Errorf("no version line in:\n%.200s", text)
	}
	got, err := ReadAPI(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(lines, got); diff != "" {
		t.Errorf("round trip mismatch (-written +read):\n%s", diff)
	}
	// CRLF line ends, blank lines and comments are tolerated.
	crlf := strings.ReplaceAll(strings.Replace(text, "\n", "\n\n# note\n", 3), "\n", "\r\n")
	got, err = ReadAPI(strings.NewReader(crlf))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(lines, got); diff != "" {
		t.Errorf("CRLF round trip mismatch:\n%s", diff)
	}
	// WriteAPI sorts and dedupes.
	buf.Reset()
	if err := WriteAPI(&buf, "1.0.0", []string{"var B int", "const A untyped int", "var B int"}); err != nil {
		t.Fatal(err)
	}
	if want := "# " + header.Marker + "\n# Version: 1.0.0\nconst A untyped int\nvar B int\n"; buf.String() != want {
		t.Errorf("WriteAPI = %q, want %q", buf.String(), want)
	}
}

func TestRecordErrors(t *testing.T) {
	head := "# " + header.Marker + "\n# Version: 1.0.0\n"
	for _, tc := range []struct {
		name, text, want string
	}{
		{"malformed", head + "const A untyped int\nbogus line\n", "line 4: malformed API line \"bogus line\""},
		{"duplicate", head + "const A untyped int\n\nconst A untyped int\n", "line 5: duplicate"},
		{"out of order", head + "var B int\nconst A untyped int\n", "line 4: \"const A untyped int\" is out of order"},
		{"indented", head + " const A untyped int\n", "line 3: malformed"},
		{"missing type", head + "var B\n", "line 3: malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadAPI(strings.NewReader(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	var buf bytes.Buffer
	if err := WriteAPI(&buf, "", nil); err == nil {
		t.Error("WriteAPI accepted an empty version")
	}
	if err := WriteAPI(&buf, "1.0.0", []string{"nonsense"}); err == nil {
		t.Error("WriteAPI accepted a malformed line")
	}
	if buf.Len() != 0 {
		t.Errorf("WriteAPI wrote %q after failing", buf.String())
	}
}
