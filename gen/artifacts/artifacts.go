// Package artifacts builds every generated file from a model and keeps the
// tree in step with it: it writes a file only when its bytes change,
// removes generated files the model no longer produces, and reports stale
// files as unified diffs.
package artifacts

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hexops/gotextdiff"
	"github.com/hexops/gotextdiff/myers"
	"github.com/hexops/gotextdiff/span"

	"github.com/echomq/echomq/gen/docs"
	"github.com/echomq/echomq/gen/emit"
	"github.com/echomq/echomq/gen/golang"
	"github.com/echomq/echomq/gen/lua"
	"github.com/echomq/echomq/gen/model"
)

// Build renders every artifact of p, sorted by path.
func Build(p *model.Protocol) ([]emit.File, error) {
	b, err := lua.Render(p)
	if err != nil {
		return nil, err
	}
	luaFiles, err := lua.Emit(p, b)
	if err != nil {
		return nil, err
	}
	goFiles, err := golang.Emit(p, b)
	if err != nil {
		return nil, err
	}
	shas := map[string]string{}
	for _, s := range b.Scripts {
		shas[s.Name] = s.SHA1
	}
	docFiles, err := docs.Emit(p, b.Digest, shas)
	if err != nil {
		return nil, err
	}
	files := append(append(luaFiles, goFiles...), docFiles...)
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

// owned reports whether path (slash-separated, relative to the root) is a
// file the generator owns: it may remove such a file when no artifact has
// its path.
func owned(path string) bool {
	dir, name := filepath.ToSlash(filepath.Dir(path)), filepath.Base(path)
	switch dir {
	case lua.Dir:
		return strings.HasSuffix(name, ".lua") || name == "index.json"
	case golang.Dir:
		return strings.HasSuffix(name, "_gen.go")
	}
	return false
}

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
func Compare(root string, files []emit.File) ([]Change, error) {
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
	for _, dir := range []string{lua.Dir, golang.Dir} {
		entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(dir)))
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		for _, e := range entries {
			path := dir + "/" + e.Name()
			if e.Type().IsRegular() && owned(path) && !want[path] {
				old, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path)))
				if err != nil {
					return nil, err
				}
				if bytes.Contains(old, []byte(emit.Marker)) {
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
