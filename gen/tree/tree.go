// Package tree keeps a working tree in step with the generated files: it
// writes a file only when its bytes change, removes generated files that no
// target produces any longer, and reports stale files as unified diffs.
//
// A file is the generator's to remove only when it sits in a directory the
// targets write into and carries the generated-file header; hand-written
// files beside generated ones (sdk/go/emq/client.go) are never touched.
package tree

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/hexops/gotextdiff"
	"github.com/hexops/gotextdiff/myers"
	"github.com/hexops/gotextdiff/span"

	"github.com/echomq/echomq/gen/header"
	"github.com/echomq/echomq/gen/target"
)

// Change is one file that differs between the tree and the artifacts.
type Change struct {
	Path string
	Old  []byte // nil when the file is missing
	New  []byte // nil when the file is to be removed
}

// Diff returns the unified diff of the change.
func (c Change) Diff() string {
	old, new := string(c.Old), string(c.New)
	edits := myers.ComputeEdits(span.URIFromPath(c.Path), old, new)
	from, to := "a/"+c.Path, "b/"+c.Path
	if c.Old == nil {
		from = "/dev/null"
	}
	if c.New == nil {
		to = "/dev/null"
	}
	return fmt.Sprint(gotextdiff.ToUnified(from, to, old, edits))
}

// Compare lists the changes that writing files under root would make.
func Compare(root string, files []target.File) ([]Change, error) {
	var changes []Change
	want := map[string]bool{}
	for _, f := range files {
		want[f.Path] = true
		old, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.Path)))
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		if err != nil {
			old = nil
		}
		if old == nil || !bytes.Equal(old, f.Data) {
			changes = append(changes, Change{Path: f.Path, Old: old, New: f.Data})
		}
	}
	for _, dir := range dirs(files) {
		entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(dir)))
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		for _, e := range entries {
			path := dir + "/" + e.Name()
			if e.Type().IsRegular() && !want[path] {
				old, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path)))
				if err != nil {
					return nil, err
				}
				if header.Check(path, old) == nil {
					changes = append(changes, Change{Path: path, Old: old})
				}
			}
		}
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	return changes, nil
}

// Apply writes the changes under root: new and changed files are written,
// removed ones deleted.
func Apply(root string, changes []Change) error {
	for _, c := range changes {
		path := filepath.Join(root, filepath.FromSlash(c.Path))
		if c.New == nil {
			if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
				return err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, c.New, fs.FileMode(0o644)); err != nil {
			return err
		}
	}
	return nil
}

// dirs lists the directories the files are written into, sorted.
func dirs(files []target.File) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range files {
		d := path.Dir(f.Path)
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out
}
