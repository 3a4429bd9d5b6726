package golang_test

import (
	"os"
	"strings"
	"testing"

	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/gen/target"
	"github.com/echomq/echomq/gen/targets/golang"
)

// A deprecated element's generated name carries a Deprecated: paragraph,
// as go doc and linters read it; protocol.yaml, which deprecates nothing,
// generates none.
func TestDeprecatedNames(t *testing.T) {
	data, err := os.ReadFile("../../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	gen := func(text string) string {
		t.Helper()
		p, err := model.Parse("protocol.yaml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		b, err := bundle.Render(p)
		if err != nil {
			t.Fatal(err)
		}
		files, err := golang.Generate(&target.Input{Protocol: p, Bundle: b})
		if err != nil {
			t.Fatal(err)
		}
		var all strings.Builder
		for _, f := range files {
			all.Write(f.Data)
		}
		return all.String()
	}
	if strings.Contains(gen(string(data)), "Deprecated:") {
		t.Fatal("protocol.yaml deprecates nothing, yet the Go SDK says Deprecated:")
	}
	s := string(data)
	for _, e := range [][2]string{
		{"  - name: ARC\n    summary: An archive entry; platform scope.\n", "  - name: ARC\n    summary: An archive entry; platform scope.\n    deprecated: {since: 2.1.0, reason: archives move to their own service}\n"},
		{"  - word: EMQSTALE\n    name: stale\n", "  - word: EMQSTALE\n    name: stale\n    deprecated: {since: 2.0.0}\n"},
		{"    - {name: dead, set: dead, summary: Buried; only revive brings it back.}\n", "    - {name: dead, set: dead, summary: Buried; only revive brings it back., deprecated: {since: 2.1.1}}\n"},
	} {
		if strings.Count(s, e[0]) != 1 {
			t.Fatalf("%q is not in protocol.yaml exactly once", e[0])
		}
		s = strings.Replace(s, e[0], e[1], 1)
	}
	out := gen(s)
	for _, want := range []string{
		"\t//\n\t// Deprecated: since 2.1.0. archives move to their own service\n\tKindARC Kind = \"ARC\"",
		"\t//\n\t// Deprecated: since 2.0.0.\n\tErrStale = ",
		"\t//\n\t// Deprecated: since 2.1.1.\n\tStateDead State = \"dead\"",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the generated Go has no %q", want)
		}
	}
}
