package model

import (
	"errors"
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/echomq/echomq/gen/manifest"
)

// TestShapeErrorAnywhereResolvesTheRest gives one scalar of the real
// manifest at a time (every 3rd) the wrong shape — a sequence — and
// resolves the result: Parse must never panic on the partial manifest the
// other sections are resolved from, must report the shape error, and
// every line of its error must be file:line:col: message.
func TestShapeErrorAnywhereResolvesTheRest(t *testing.T) {
	data, err := os.ReadFile(realManifest)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var scalars []*yaml.Node
	var walk func(n *yaml.Node, isKey bool)
	walk = func(n *yaml.Node, isKey bool) {
		if n.Kind == yaml.ScalarNode && !isKey {
			scalars = append(scalars, n)
		}
		for i, c := range n.Content {
			walk(c, n.Kind == yaml.MappingNode && i%2 == 0)
		}
	}
	walk(&doc, false)
	if len(scalars) < 500 {
		t.Fatalf("the manifest has %d scalar values; the walk is broken", len(scalars))
	}
	tried := 0
	for i := 0; i < len(scalars); i += 3 {
		n := scalars[i]
		saved := *n
		*n = yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: "x"}}}
		mutated, err := yaml.Marshal(&doc)
		*n = saved
		if err != nil {
			t.Fatal(err)
		}
		tried++
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("Parse panics when %q (line %d) is a sequence: %v", saved.Value, saved.Line, r)
				}
			}()
			_, err := Parse("protocol.yaml", mutated)
			var es *manifest.Errors
			if !errors.As(err, &es) {
				t.Errorf("%q (line %d) as a sequence: error %v, want *manifest.Errors", saved.Value, saved.Line, err)
				return
			}
			if !strings.Contains(err.Error(), "found a sequence") {
				t.Errorf("%q (line %d) as a sequence: the shape error is not reported:\n%v", saved.Value, saved.Line, err)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !errLineRE.MatchString(line) {
					t.Errorf("%q (line %d) as a sequence: line %q is not protocol.yaml:line:col: message", saved.Value, saved.Line, line)
				}
			}
		}()
	}
	t.Logf("%d mutations of %d scalar values", tried, len(scalars))
}
