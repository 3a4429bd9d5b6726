package manifest_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/echomq/echomq/gen/manifest"
)

// TestSyntaxErrorAtItsOpener: a quote or a flow collection left open is
// reported where it opened, with the column, not where yaml.v3 gave up
// (the enclosing mapping, or the end of the stream).
func TestSyntaxErrorAtItsOpener(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"double quote", "a: 1\nb:\n  c: \"open\n  d: 2\ne: \"x\"\nf: y\n", "f.yaml:3:6: YAML syntax: did not find expected key (the double-quoted string that begins here is not closed on its line)"},
		{"single quote at the end of the stream", "a: 1\nb: 'open\n", "f.yaml:2:4: YAML syntax: found unexpected end of stream (the single-quoted string that begins here is not closed on its line)"},
		{"flow sequence", "a: 1\nb:\n  - [1, 2\n  - 3\nc: 4\n", "f.yaml:3:5: YAML syntax: did not find expected ',' or ']' (the [ that begins here is not closed on its line)"},
		{"flow mapping in a flow sequence", "a: [{x: 1}, {y: 2]\nb: 1\n", "f.yaml:1:18: YAML syntax: did not find expected ',' or '}' (this closes a flow collection that needs })"},
		{"quote inside a block scalar is not an opener", "body: |\n  it's \"lua\n  x = [\nb: [1\n", "f.yaml:4:4: YAML syntax: did not find expected ',' or ']' (the [ that begins here is not closed on its line)"},
		{"a legitimate multi-line string is not blamed", "a: \"one\n  two\"\nb: 1\n  c: 2\n", "f.yaml:4:1: YAML syntax: mapping values are not allowed in this context"},
		{"an apostrophe in a plain scalar is not a quote", "a: it's\nb: [1\n", "f.yaml:2:4: YAML syntax: did not find expected ',' or ']' (the [ that begins here is not closed on its line)"},
	} {
		_, err := manifest.Parse("f.yaml", []byte(tc.src))
		var es *manifest.Errors
		if !errors.As(err, &es) {
			t.Errorf("%s: error %v, want *manifest.Errors", tc.name, err)
			continue
		}
		if got := err.Error(); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// TestExcerpt: each positioned problem is followed by its source line and
// a caret under the column (tabs kept, so the caret lines up); problems
// without a position, or past the end of the file, get no excerpt.
func TestExcerpt(t *testing.T) {
	src := []byte("a: 1\n\tb: 2\nversion: two\n")
	es := &manifest.Errors{File: "f.yaml"}
	es.Add(manifest.Pos{Line: 3, Col: 10}, `version: "two" is not a version`)
	es.Add(manifest.Pos{Line: 2, Col: 2}, "a tab")
	es.Add(manifest.Pos{}, "the whole file")
	es.Add(manifest.Pos{Line: 9, Col: 1}, "past the end")
	_ = es.Err()
	want := strings.Join([]string{
		"f.yaml: the whole file",
		"f.yaml:2:2: a tab",
		"    \tb: 2",
		"    \t^",
		`f.yaml:3:10: version: "two" is not a version`,
		"    version: two",
		"             ^",
		"f.yaml:9:1: past the end",
	}, "\n")
	if got := es.Excerpt(src); got != want {
		t.Errorf("Excerpt:\n%s\nwant:\n%s", got, want)
	}
}
