package chaos

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/echomq/echomq/gen/model"
)

// TestNoProtocolLiterals scans the harness and cmd/emqchaos for protocol
// literals the manifest holds (class words, field and state names, key
// prefixes, kinds, reserve members, the version): they use the SDK's
// generated names only.
func TestNoProtocolLiterals(t *testing.T) {
	p, err := model.Load("../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var lits []string
	for _, c := range p.Classes {
		lits = append(lits, c.Word)
	}
	for _, f := range p.Row.Fields {
		lits = append(lits, f.Name)
	}
	for _, s := range p.Row.States {
		lits = append(lits, s.Name)
	}
	for _, c := range p.KeyClasses {
		lits = append(lits, c.Parts[0].Lit)
	}
	for _, k := range p.Kinds {
		lits = append(lits, k.Name)
	}
	for _, m := range p.Reserve {
		lits = append(lits, m.Ident())
	}
	lits = append(lits, p.VersionRecord(), p.Version.String(), p.Name+":")
	files, _ := filepath.Glob("*.go")
	cmd, _ := filepath.Glob("../../cmd/emqchaos/*.go")
	for _, file := range append(files, cmd...) {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			code, _, _ := strings.Cut(line, "//")
			for _, lit := range lits {
				if strings.Contains(code, strconv.Quote(lit)) || strings.Contains(code, `"`+lit) && strings.Contains(code, lit+`"`) {
					t.Errorf("%s:%d repeats the protocol literal %q; use the generated name", file, i+1, lit)
				}
			}
		}
	}
}
