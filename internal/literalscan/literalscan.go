// Package literalscan checks hand-written code for protocol literals: the
// facts the manifest holds (class words, field and state names, key types
// and classes, kinds, reserve members and their fields, the version) must
// come from the generated package or the model, never be written again.
// The tests of every package with hand-written protocol code call Scan.
package literalscan

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/echomq/echomq/gen/model"
)

// Literals lists what hand-written code must not repeat.
func Literals(p *model.Protocol) []string {
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
	for _, s := range p.Sets {
		lits = append(lits, s.Key, s.Score)
	}
	for _, k := range p.KeyTypes {
		lits = append(lits, k.Name)
	}
	for _, c := range p.KeyClasses {
		lits = append(lits, c.Parts[0].Lit)
	}
	for _, k := range p.Kinds {
		lits = append(lits, k.Name)
	}
	for _, m := range p.Reserve {
		lits = append(lits, m.Ident())
		for _, f := range m.Fields {
			lits = append(lits, f.Parts[0].Lit)
		}
	}
	return append(lits, p.VersionRecord(), p.Version.String(), p.Name+":", p.Name)
}

// Scan reports every line of files, outside comments and test files, that
// holds one of lits as a string literal (or starting or ending one); hint
// says where the name should come from.
func Scan(t testing.TB, lits, files []string, hint string) {
	t.Helper()
	for _, file := range files {
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
					t.Errorf("%s:%d repeats the protocol literal %q; %s", file, i+1, lit, hint)
				}
			}
		}
	}
}

// ScanQuotes is Scan for languages with several string quotes: every line
// of files, outside // comments, that holds one of lits quoted with one of
// quotes (or starting or ending such a string) is reported.
func ScanQuotes(t testing.TB, lits, files, quotes []string, hint string) {
	t.Helper()
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			code := line
			if trimmed := strings.TrimSpace(line); strings.HasPrefix(trimmed, "//") || strings.HasPrefix(trimmed, "*") || strings.HasPrefix(trimmed, "/*") {
				continue
			}
			for _, lit := range lits {
				for _, q := range quotes {
					if strings.Contains(code, q+lit+q) || strings.Contains(code, q+lit) && strings.Contains(code, lit+q) {
						t.Errorf("%s:%d repeats the protocol literal %q; %s", file, i+1, lit, hint)
						break
					}
				}
			}
		}
	}
}

// ScanPython is ScanQuotes for Python: every line of files, outside #
// comments, that holds one of lits in single or double quotes (or starting
// or ending such a string) is reported. Docstrings are code here: a
// protocol literal quoted in one is reported too.
func ScanPython(t testing.TB, lits, files []string, hint string) {
	t.Helper()
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			code := pythonCode(line)
			for _, lit := range lits {
				for _, q := range []string{`"`, `'`} {
					if strings.Contains(code, q+lit+q) || strings.Contains(code, q+lit) && strings.Contains(code, lit+q) {
						t.Errorf("%s:%d repeats the protocol literal %q; %s", file, i+1, lit, hint)
						break
					}
				}
			}
		}
	}
}

// pythonCode is line without its # comment: the first # outside a string
// literal and everything after it.
func pythonCode(line string) string {
	quote := byte(0)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0 && c == '\\':
			i++
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
		case quote == 0 && c == '#':
			return line[:i]
		}
	}
	return line
}
