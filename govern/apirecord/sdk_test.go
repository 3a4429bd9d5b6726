package apirecord

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/echomq/echomq/gen/target"
)

func file(path, src string) target.File { return target.File{Path: path, Data: []byte(src)} }

const depSrc = `package dep

import "errors"

type Kind string

const KindA Kind = "A"

const Name = "n"

type Problem struct{ Msg string }

func (p *Problem) Error() string { return p.Msg }

var ErrA = &Problem{}

var ErrB = errors.New("b")

func Parse(s string) (Kind, error) { return Kind(s), nil }

type Runner interface{ Run() error }
`

const topSrc = `package top

import (
	"context"

	"github.com/echomq/echomq/sdk/go/top/dep"
)

type Kind = dep.Kind

const (
	KindA = dep.KindA
	Name  = dep.Name
)

var (
	ErrA = dep.ErrA
	ErrB = dep.ErrB
	Parse = dep.Parse
	Parsed, ParseErr = dep.Parse("x")
	Msg = "top: " + dep.ErrA.Msg
	Local = local.Name
)

type holder struct{ Name []byte }

var local = &holder{}

type Worker struct{}

func (w *Worker) Run(ctx context.Context) error { return nil }
`

// TestSDKAPI checks the package-qualified record of two packages, one
// re-exporting the other: every line names its package, and untyped
// re-exports take the other package's types, qualified.
func TestSDKAPI(t *testing.T) {
	got, err := SDKAPI([]target.File{
		file("sdk/go/top/dep/dep_gen.go", depSrc),
		file("sdk/go/top/top.go", topSrc),
		file("sdk/go/top/top_test.go", "package top\n\nfunc TestOnly() {}\n"),
		file("sdk/lua/x.lua", "return 1\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	dep, top := "pkg "+ModulePath+"/sdk/go/top/dep, ", "pkg "+ModulePath+"/sdk/go/top, "
	want := []string{
		dep + "const KindA Kind",
		dep + "const Name untyped string",
		dep + "func Parse(string) (Kind, error)",
		dep + "method (*Problem) Error() string",
		dep + "type Kind string",
		dep + "type Problem struct",
		dep + "type Problem struct, Msg string",
		dep + "type Runner interface",
		dep + "type Runner interface, Run() error",
		dep + "var ErrA *Problem",
		dep + "var ErrB error",
		top + "const KindA dep.Kind",
		top + "const Name untyped string",
		top + "method (*Worker) Run(context.Context) error",
		top + "type Kind = dep.Kind",
		top + "type Worker struct",
		top + "var ErrA *dep.Problem",
		top + "var ErrB error",
		top + "var Local []uint8",
		top + "var Msg string",
		top + "var Parse func(string) (dep.Kind, error)",
		top + "var ParseErr error",
		top + "var Parsed dep.Kind",
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SDKAPI mismatch (-want +got):\n%s", diff)
	}
	for _, l := range got {
		f, err := parseLine(l)
		if err != nil {
			t.Error(err)
			continue
		}
		if !strings.HasPrefix(f.key, f.pkg) || f.pkg == "" {
			t.Errorf("%q: key %q does not start with its package %q", l, f.key, f.pkg)
		}
	}

	// The same name in two packages is two features: removing one is
	// one break, keyed by its package.
	var without []string
	for _, l := range got {
		if l != top+"method (*Worker) Run(context.Context) error" {
			without = append(without, l)
		}
	}
	bs := CompareAPI(got, without)
	if len(bs) != 1 || bs[0].Kind != Removed || bs[0].Where != top+"method (*Worker) Run" {
		t.Errorf("breaks = %+v, want method (*Worker) Run of top removed", bs)
	}
	// An open interface of a qualified record that gains a method breaks
	// its implementations.
	grown := append(slices.Clone(got), dep+"type Runner interface, Stop()")
	bs = CompareAPI(got, grown)
	if len(bs) != 1 || bs[0].Kind != Added || bs[0].Where != dep+"type Runner interface, Stop" {
		t.Errorf("breaks = %+v, want dep's Runner gaining Stop", bs)
	}
	// A changed signature keeps its package in the key.
	changed := slices.Clone(got)
	for i, l := range changed {
		if l == dep+"func Parse(string) (Kind, error)" {
			changed[i] = dep + "func Parse([]uint8) (Kind, error)"
		}
	}
	bs = CompareAPI(got, changed)
	if len(bs) != 1 || bs[0].Kind != Changed || bs[0].Where != dep+"func Parse" {
		t.Errorf("breaks = %+v, want dep's Parse changed", bs)
	}
}

func TestSDKAPIErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []target.File
		want  string
	}{
		{"no Go file", []target.File{file("sdk/lua/x.lua", "")}, "no Go file"},
		{"two packages in a directory", []target.File{file("sdk/go/a/a.go", "package a\n"), file("sdk/go/a/b.go", "package b\n")}, "b.go is package b, not a"},
		{"unknown package", []target.File{file("sdk/go/a/a.go", "package a\nimport \"example.com/x\"\nconst C = x.C\n")}, "a.go:3:11: cannot infer the type of x.C"},
		{"unknown name of a recorded package", []target.File{
			file("sdk/go/a/b/b.go", "package b\n"),
			file("sdk/go/a/a.go", "package a\nimport \"github.com/echomq/echomq/sdk/go/a/b\"\nvar V = b.Missing\n"),
		}, "a.go:3:9: cannot infer the type of b.Missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := SDKAPI(tc.files)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestRealSDKAPI checks the generated part of the real SDK: the wire
// package records what GoAPI records for it, qualified, and package emq
// records its re-exports with the wire types.
func TestRealSDKAPI(t *testing.T) {
	_, files := realBundle(t)
	got, err := SDKAPI(files)
	if err != nil {
		t.Fatal(err)
	}
	wire, err := GoAPI(wireFiles(files))
	if err != nil {
		t.Fatal(err)
	}
	has := set(got)
	for _, l := range wire {
		if !has[Qualify(LegacyPackage, l)] {
			t.Errorf("SDKAPI lacks the wire line %q", l)
		}
	}
	emq := ModulePath + "/sdk/go/emq"
	for _, l := range []string{"type ID = wire.ID", "const WorkKind wire.Kind", "const Version untyped string", "var ErrID error", "var ErrStale *wire.ClassError", "func ParseID(string) (ID, error)"} {
		if !has[Qualify(emq, l)] {
			t.Errorf("SDKAPI lacks %q of package emq", l)
		}
	}
}

// TestLegacyRecord checks how a record written before records were
// package-qualified is read: ReadAPI returns its lines as written,
// Normalize reads them as lines of LegacyPackage (where the generated
// layer they describe lives now), and a record mixing both forms is
// refused.
func TestLegacyRecord(t *testing.T) {
	head := "# " + Header[2:] + "\n# Version: 2.1.1\n"
	old := head + "const Version untyped string\nfunc ParseID(string) (ID, error)\n"
	lines, err := ReadAPI(strings.NewReader(old))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"const Version untyped string", "func ParseID(string) (ID, error)"}, lines); diff != "" {
		t.Errorf("ReadAPI (-want +got):\n%s", diff)
	}
	want := []string{
		"pkg github.com/echomq/echomq/sdk/go/emq/wire, const Version untyped string",
		"pkg github.com/echomq/echomq/sdk/go/emq/wire, func ParseID(string) (ID, error)",
	}
	if diff := cmp.Diff(want, Normalize(lines)); diff != "" {
		t.Errorf("Normalize (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, Normalize(want)); diff != "" {
		t.Errorf("Normalize changed qualified lines (-want +got):\n%s", diff)
	}
	// A new record round-trips qualified.
	var b strings.Builder
	if err := WriteAPI(&b, "2.2.0", want); err != nil {
		t.Fatal(err)
	}
	back, err := ReadAPI(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, back); diff != "" {
		t.Errorf("qualified round trip (-want +got):\n%s", diff)
	}
	for _, text := range []string{
		head + "const Version untyped string\npkg x, func F()\n",
		head + "pkg x, func F()\nvar V int\n",
	} {
		if _, err := ReadAPI(strings.NewReader(text)); err == nil || !strings.Contains(err.Error(), "line 4") || !strings.Contains(err.Error(), "mixes") {
			t.Errorf("mixed record: err = %v, want line 4 mixes", err)
		}
	}
	for _, bad := range []string{"pkg , func F()", "pkg x func F()", "pkg x, bogus", "pkg a b, func F()"} {
		if _, err := parseLine(bad); err == nil {
			t.Errorf("parseLine(%q) accepted it", bad)
		}
	}
}
