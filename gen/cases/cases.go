// Package cases reads emqgen's golden cases, golden/cases/<case>/, in the
// manner of sqlc's end-to-end tests: each case is one small manifest and
// what emqgen must make of it.
//
// A case's manifest is either
//
//   - protocol.yaml, a complete manifest used as it is, or
//   - protocol.patch, a unified diff whose "---" line names the manifest it
//     applies to, relative to the repository root (a frozen release under
//     golden/releases, which is never rewritten, or another case's
//     protocol.yaml, such as golden/cases/minimal/protocol.yaml).
//
// Its expectation is either stderr, exactly what the model reports for an
// invalid manifest (one protocol.yaml:line:col: message per line), or out/,
// the files every registered target generates from a valid one, at their
// repository paths (out/sdk/go/emq/keys_gen.go, out/docs/protocol.md, ...).
// The runner is gen/cases's test: go test ./gen/cases [-update].
package cases

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// Dir is where the cases live, relative to the repository root.
const Dir = "golden/cases"

// The files of a case.
const (
	ManifestFile = "protocol.yaml"  // a complete manifest
	PatchFile    = "protocol.patch" // a unified diff against a base manifest
	StderrFile   = "stderr"         // the expected errors of an invalid manifest
	OutDir       = "out"            // the expected files of a valid one
)

// Case is one golden case.
type Case struct {
	Name     string // the folder's name
	Dir      string // the folder, under the repository root given to List
	Input    string // ManifestFile or PatchFile
	Base     string // for a patch, the repository path of the manifest it applies to
	Manifest []byte // the manifest the case feeds to emqgen
}

// Invalid reports whether the case expects errors (it has a stderr file)
// rather than generated files.
func (c Case) Invalid() bool {
	_, err := os.Stat(filepath.Join(c.Dir, StderrFile))
	return err == nil
}

// List reads every case under root/golden/cases, sorted by name, with its
// manifest composed (patches applied). A folder with neither or both of
// protocol.yaml and protocol.patch, or a patch that does not apply, is an
// error naming the folder.
func List(root string) ([]Case, error) {
	entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(Dir)))
	if err != nil {
		return nil, err
	}
	var out []Case
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		c, err := load(root, e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func load(root, name string) (Case, error) {
	c := Case{Name: name, Dir: filepath.Join(root, filepath.FromSlash(Dir), name)}
	full, ferr := os.ReadFile(filepath.Join(c.Dir, ManifestFile))
	patch, perr := os.ReadFile(filepath.Join(c.Dir, PatchFile))
	for _, err := range []error{ferr, perr} {
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return c, err
		}
	}
	switch {
	case ferr == nil && perr == nil:
		return c, fmt.Errorf("%s: a case has %s or %s, not both", c.Dir, ManifestFile, PatchFile)
	case ferr == nil:
		c.Input, c.Manifest = ManifestFile, full
		return c, nil
	case perr == nil:
		c.Input = PatchFile
		base, data, err := Apply(root, patch)
		if err != nil {
			return c, fmt.Errorf("%s: %w", filepath.Join(c.Dir, PatchFile), err)
		}
		c.Base, c.Manifest = base, data
		return c, nil
	}
	return c, fmt.Errorf("%s: a case needs %s or %s", c.Dir, ManifestFile, PatchFile)
}

// Apply applies a unified diff of one file to the base its "---" line
// names (a repository path, read under root) and returns that path and the
// patched bytes. Every hunk must apply exactly, at its line.
func Apply(root string, patch []byte) (string, []byte, error) {
	files, _, err := gitdiff.Parse(bytes.NewReader(patch))
	if err != nil {
		return "", nil, fmt.Errorf("parse the patch: %w", err)
	}
	if len(files) != 1 {
		return "", nil, fmt.Errorf("the patch must change exactly one file (it changes %d)", len(files))
	}
	f := files[0]
	// The library settles on one name for both sides of a traditional
	// header; the base is the "---" line's, read here.
	base := ""
	for _, line := range strings.Split(string(patch), "\n") {
		if name, ok := strings.CutPrefix(line, "--- "); ok {
			base, _, _ = strings.Cut(name, "\t")
			break
		}
	}
	if base == "" || path.IsAbs(base) || path.Clean(base) != base {
		return "", nil, fmt.Errorf("the patch's --- line must name its base by a clean repository path, not %q", base)
	}
	src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(base)))
	if err != nil {
		return "", nil, fmt.Errorf("the patch's base: %w", err)
	}
	var out bytes.Buffer
	if err := gitdiff.Apply(&out, bytes.NewReader(src), f); err != nil {
		return "", nil, fmt.Errorf("the patch does not apply to %s: %w", base, err)
	}
	return base, out.Bytes(), nil
}
