package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
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
	// The manifest with other line breaks yaml.v3 counts lines by: every
	// position must still be in the file as yaml.v3 counts its lines.
	for _, br := range []string{"\r\n", "\r", "\u2028"} {
		f.Add(bytes.ReplaceAll(real, []byte("\n"), []byte(br)))
	}
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
		m2, err2 := Parse("protocol.yaml", data)
		if !reflect.DeepEqual(m, m2) || fmt.Sprint(err) != fmt.Sprint(err2) {
			t.Fatalf("Parse is not deterministic:\n%v\n%v", err, err2)
		}
		lines := splitLines(data)
		if err == nil {
			if m == nil {
				t.Fatal("Parse returned neither a manifest nor an error")
			}
			// Every position the manifest remembers is in the file.
			walkPos(reflect.ValueOf(m).Elem(), "manifest", func(path string, p Pos) {
				if p.IsZero() {
					return
				}
				if p.Line < 1 || p.Line > len(lines) || p.Col < 1 || p.Col > len(lines[p.Line-1])+1 {
					t.Fatalf("%s at %d:%d is outside the file (%d lines)", path, p.Line, p.Col, len(lines))
				}
			})
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
		for i, e := range es.List {
			// A position is in the file; a syntax error may point just past
			// its last line (an unexpected end of the file).
			if e.Pos.Line < 0 || e.Pos.Line > len(lines)+1 || (e.Pos.Line > 0 && e.Pos.Col < 1) {
				t.Fatalf("%v points outside the file (%d lines)", e, len(lines))
			}
			if i > 0 && (es.List[i-1].Pos.Line > e.Pos.Line || es.List[i-1].Pos.Line == e.Pos.Line && es.List[i-1].Pos.Col > e.Pos.Col) {
				t.Fatalf("the errors are not sorted by position:\n%s", err)
			}
		}
	})
}

// walkPos calls fn with every Pos held anywhere in v.
func walkPos(v reflect.Value, path string, fn func(string, Pos)) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			walkPos(v.Elem(), path, fn)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			walkPos(v.Index(i), fmt.Sprintf("%s[%d]", path, i), fn)
		}
	case reflect.Struct:
		if v.Type() == posType {
			fn(path, v.Interface().(Pos))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			walkPos(v.Field(i), path+"."+v.Type().Field(i).Name, fn)
		}
	}
}

// TestParseLineBreaks: the manifest written with any line break yaml.v3
// counts lines by (CR LF, CR, NEL) decodes to the same values at the same
// positions; block scalars included, whose positions the decoder computes
// from its own split of the file into lines (FuzzParse found a file of
// lone CRs placed outside itself).
func TestParseLineBreaks(t *testing.T) {
	real, err := os.ReadFile("../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Parse("protocol.yaml", real)
	if err != nil {
		t.Fatal(err)
	}
	for _, br := range []string{"\r\n", "\r", "\u0085"} {
		got, err := Parse("protocol.yaml", bytes.ReplaceAll(real, []byte("\n"), []byte(br)))
		if err != nil {
			t.Fatalf("line break %q: %v", br, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("line break %q: the manifest decodes otherwise than with \\n", br)
		}
	}
}
