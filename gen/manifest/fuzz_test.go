package manifest

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// FuzzParse feeds the decoder arbitrary bytes: it must never panic, and
// whatever it refuses it refuses as *Errors, one file:line:col: message
// (or file: message) per line.
//
//	go test ./gen/manifest -run XXX -fuzz FuzzParse -fuzztime 30s
func FuzzParse(f *testing.F) {
	real, err := os.ReadFile("../../protocol.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(real)
	for _, s := range []string{
		"",
		"# only a comment\n",
		"protocol: echomq\nversion: 2.0.0\n",
		"protocol: [echomq\n",
		"protocol: echomq\nprotocol: echomq\n",
		"ids:\n  length: fourteen\n",
		"ids: &a {length: 14}\nkeys: *a\n",
		"kinds:\n  - {name: JOB, work: maybe}\n",
		"scripts:\n  - name: x\n    body: |\n      return 1\n",
		"scripts:\n  - name: x\n    body: |\n\n\n",
		"scripts:\n  - name: x\n    body: >\n      a\n      b\n",
		"a: 1\n---\nb: 2\n",
		"reserve:\n  - probe:\n      steps:\n        - with: {\"a\\nb\": [1]}\n",
		"\tprotocol: echomq\n",
		"- 1\n- 2\n",
		"~\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse("protocol.yaml", data)
		if err == nil {
			if m == nil {
				t.Fatal("Parse returned neither a manifest nor an error")
			}
			return
		}
		var es *Errors
		if !errors.As(err, &es) {
			t.Fatalf("error is %T, want *Errors: %v", err, err)
		}
		if len(es.List) == 0 {
			t.Fatal("*Errors with no error in it")
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			if !strings.HasPrefix(line, "protocol.yaml:") {
				t.Fatalf("line %q does not start with the file name; the whole error:\n%s", line, err)
			}
		}
	})
}
