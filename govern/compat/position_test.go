package compat

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/echomq/echomq/gen/model"
)

// A Go API finding always carries a position, also for a wire-layer name
// no single manifest element generates (ScriptNamed, the QueueKeys type):
// the section of the manifest it comes from.
func TestGoAPIFindingsArePositioned(t *testing.T) {
	old, new := selfSides(t)
	p, err := model.Load("../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := SurfaceOf("../..", p)
	if err != nil {
		t.Fatal(err)
	}
	old.Surface = s
	ns := *s
	ns.Records = maps.Clone(s.Records)
	ns.SetRecord("go", &Record{Lines: slices.DeleteFunc(slices.Clone(s.Record("go").Lines), func(l string) bool {
		return strings.Contains(l, "emq/wire, func ScriptNamed(") || strings.Contains(l, "emq/wire, type QueueKeys struct")
	})})
	new.Surface = &ns
	n := 0
	for _, f := range Compare(old, new) {
		if f.Rule != "GO_API_NO_DELETE" {
			continue
		}
		n++
		if f.Line == 0 || f.File == "" {
			t.Errorf("%s %s: no position (%s:%d:%d)", f.Rule, f.Path, f.File, f.Line, f.Column)
		}
		if strings.Contains(f.Path, "ScriptNamed") && f.Line != new.Manifest.Scripts[0].Pos.Line && f.Line <= 1 {
			t.Errorf("%s %s at line %d: want the scripts section", f.Rule, f.Path, f.Line)
		}
	}
	if n < 2 {
		t.Errorf("%d GO_API_NO_DELETE findings; want one per removed line", n)
	}
}
