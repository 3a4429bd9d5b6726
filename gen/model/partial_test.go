package model

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/echomq/echomq/gen/manifest"
)

// TestShapeErrorAnywhereResolvesTheRest gives scalars of the real
// manifest (every 3rd) the wrong shape — a sequence — three at a time, a
// third of the manifest apart, and resolves the result: Parse must never
// panic on the partial manifest the other sections are resolved from, must
// report each of the three shape errors (one error never hides another
// far from it), and every line of its error must be file:line:col:
// message.
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
	var every3rd []*yaml.Node
	for i := 0; i < len(scalars); i += 3 {
		every3rd = append(every3rd, scalars[i])
	}
	third := (len(every3rd) + 2) / 3
	tried := 0
	for g := 0; g < third; g++ {
		var group []*yaml.Node
		for k := g; k < len(every3rd); k += third {
			group = append(group, every3rd[k])
		}
		saved := make([]yaml.Node, len(group))
		var what []string
		for i, n := range group {
			saved[i] = *n
			what = append(what, fmt.Sprintf("%q (line %d)", n.Value, n.Line))
			*n = yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: "x"}}}
		}
		mutated, err := yaml.Marshal(&doc)
		for i, n := range group {
			*n = saved[i]
		}
		if err != nil {
			t.Fatal(err)
		}
		tried += len(group)
		label := strings.Join(what, ", ")
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("Parse panics when %s are sequences: %v", label, r)
				}
			}()
			_, err := Parse("protocol.yaml", mutated)
			var es *manifest.Errors
			if !errors.As(err, &es) {
				t.Errorf("%s as sequences: error %v, want *manifest.Errors", label, err)
				return
			}
			if got := strings.Count(err.Error(), "found a sequence"); got < len(group) {
				t.Errorf("%s as sequences: %d shape errors reported, want %d:\n%v", label, got, len(group), err)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !errLineRE.MatchString(line) {
					t.Errorf("%s as sequences: line %q is not protocol.yaml:line:col: message", label, line)
				}
			}
		}()
	}
	if tried != len(every3rd) {
		t.Fatalf("%d of %d scalars mutated", tried, len(every3rd))
	}
	t.Logf("%d mutations of %d scalar values, in %d parses", tried, len(scalars), third)
}
