package tree_test

import (
	"bytes"
	"github.com/echomq/echomq/gen/targets"
	"go/format"
	"path/filepath"
	"strings"
	"testing"

	"github.com/echomq/echomq/gen/header"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/gen/target"
	"github.com/echomq/echomq/gen/tree"
)

const root = "../.."

func build(t *testing.T) []target.File {
	t.Helper()
	p, err := model.Load(filepath.Join(root, "protocol.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := targets.Generate(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestCommittedUpToDate fails when a committed generated file is stale,
// missing, or no longer produced: run go run ./cmd/emqgen gen.
func TestCommittedUpToDate(t *testing.T) {
	changes, err := tree.Compare(root, build(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		t.Errorf("%s is stale; run go run ./cmd/emqgen gen:\n%s", c.Path, c.Diff())
	}
}

// TestDeterministic renders twice and compares byte for byte.
func TestDeterministic(t *testing.T) {
	a, b := build(t), build(t)
	if len(a) != len(b) {
		t.Fatalf("%d files, then %d", len(a), len(b))
	}
	for i := range a {
		if a[i].Path != b[i].Path || !bytes.Equal(a[i].Data, b[i].Data) {
			t.Errorf("%s differs between two renders", a[i].Path)
		}
	}
}

// TestHeaders checks every file starts with its generated-file header and
// every Go file is gofmt-clean.
func TestHeaders(t *testing.T) {
	for _, f := range build(t) {
		first, _, _ := strings.Cut(string(f.Data), "\n")
		switch filepath.Ext(f.Path) {
		case ".go":
			if first != "// "+header.Marker {
				t.Errorf("%s starts %q", f.Path, first)
			}
			if src, err := format.Source(f.Data); err != nil || !bytes.Equal(src, f.Data) {
				t.Errorf("%s is not gofmt-clean (err %v)", f.Path, err)
			}
		case ".lua":
			if first != "-- "+header.Marker {
				t.Errorf("%s starts %q", f.Path, first)
			}
		case ".md":
			if first != "<!-- "+header.Marker+" -->" {
				t.Errorf("%s starts %q", f.Path, first)
			}
		case ".json":
			if !bytes.Contains(f.Data, []byte(header.Marker)) {
				t.Errorf("%s lacks the generated marker", f.Path)
			}
		}
	}
}
