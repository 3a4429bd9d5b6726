// Package golang is the Go SDK's entry of the language contract
// (govern/lang): the public API of packages emq and emq/wire, read from
// the files the Go target generates from the manifest (in memory) with the
// hand-written files beside them in the working tree, recorded as
// <version>.api.txt beside a frozen release, compared as apidiff does.
package golang

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/echomq/echomq/gen/header"
	"github.com/echomq/echomq/gen/manifest"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/gen/target"
	"github.com/echomq/echomq/gen/targets"
	gengo "github.com/echomq/echomq/gen/targets/golang"
	"github.com/echomq/echomq/govern/apirecord"
	"github.com/echomq/echomq/govern/lang"
)

// Language is the Go SDK's API record.
var Language lang.Language = goLang{}

type goLang struct{}

func (goLang) Name() string         { return "go" }
func (goLang) Title() string        { return "Go" }
func (goLang) RulePrefix() string   { return "GO" }
func (goLang) Dir() string          { return "sdk/go" }
func (goLang) RecordSuffix() string { return ".api.txt" }
func (goLang) FromManifest() bool   { return true }

func (goLang) Purposes() (removed, changed string) {
	return "Code compiled against the Go SDK (packages emq and emq/wire, generated and hand-written) stops compiling when an exported name it uses is gone (golang.org/x/exp/apidiff: removal is incompatible).",
		"Code compiled against the Go SDK (packages emq and emq/wire, generated and hand-written) stops compiling when an exported name changes its type or signature, or an interface it implements grows."
}

// Present: the Go record is generated from the manifest; a root without
// hand-written files contributes none.
func (goLang) Present(root string) bool { return true }

// Read generates the Go SDK from src.Protocol (or takes src.Files, what
// the surface targets generated) and reads the exported API of its Go
// files with the hand-written files of the same directories under
// src.Root (HandWritten).
func (goLang) Read(_ context.Context, src lang.Source) ([]string, error) {
	files := src.Files
	if files == nil {
		if src.Protocol == nil {
			return nil, errors.New("golang: the Go API is read from a manifest's generated files: no manifest given")
		}
		var err error
		if files, err = targets.Generate(src.Protocol, []target.Target{gengo.Target}); err != nil {
			return nil, err
		}
	}
	var gofiles []target.File
	for _, f := range files {
		if strings.HasSuffix(f.Path, ".go") {
			gofiles = append(gofiles, f)
		}
	}
	hand, err := HandWritten(src.Root, gofiles)
	if err != nil {
		return nil, err
	}
	return apirecord.SDKAPI(append(gofiles, hand...))
}

func (goLang) Format(version string, lines []string) ([]byte, error) {
	var b strings.Builder
	if err := apirecord.WriteAPI(&b, version, lines); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

// Parse reads a recorded Go API, package-qualified (apirecord.Normalize
// reads the unqualified records of 2.0.0 to 2.1.1 as the wire package's),
// and the line of each feature in it, keyed by the qualified line.
func (goLang) Parse(data []byte) ([]string, map[string]int, error) {
	raw, err := apirecord.ReadAPI(strings.NewReader(string(data)))
	if err != nil {
		return nil, nil, err
	}
	api := apirecord.Normalize(raw)
	qualified := map[string]string{}
	for i, l := range raw {
		qualified[l] = api[i]
	}
	at := map[string]int{}
	for l, n := range lang.LineNumbers(data) {
		if q, ok := qualified[l]; ok {
			at[q] = n
		}
	}
	return api, at, nil
}

func (goLang) Compare(old, new []string) []apirecord.Break { return apirecord.CompareAPI(old, new) }

func (goLang) Explain(b apirecord.Break) (where, message string) {
	switch b.Kind {
	case apirecord.Removed:
		return shortGo(b.Where), "gone from the Go SDK's public API (was: " + shortGo(b.Old) + ")"
	case apirecord.Changed:
		return shortGo(b.Where), "was: " + shortGo(b.Old) + "; now: " + shortGo(b.New)
	}
	return shortGo(b.Where), b.Message
}

// Annotate returns the Go target's annotations.
func (goLang) Annotate(m *manifest.Manifest) ([]target.Annotation, error) {
	a, ok := gengo.Target.(target.Annotator)
	if !ok {
		return nil, fmt.Errorf("golang: the Go target returns no annotations")
	}
	return a.Annotate(m)
}

// sdkPackages is the import path prefix of the Go SDK's packages.
const sdkPackages = "pkg " + apirecord.ModulePath + "/sdk/go/"

// shortGo spells a package-qualified API line or key with the package's
// path inside the Go SDK module ("emq/wire, func ParseID"), for findings.
func shortGo(s string) string {
	if rest, ok := strings.CutPrefix(s, sdkPackages); ok {
		return rest
	}
	return s
}

// HandWritten reads, from the working tree at root, the hand-written Go
// files of every directory that generated holds a Go file in: each .go
// file there that is not a test, not among generated (the in-memory
// version is the one that counts) and does not carry the generated-file
// marker (a stale generated file the next emqgen gen removes). A
// directory missing from the tree contributes nothing.
func HandWritten(root string, generated []target.File) ([]target.File, error) {
	gen := map[string]bool{}
	dirs := map[string]bool{}
	for _, f := range generated {
		if strings.HasSuffix(f.Path, ".go") {
			gen[f.Path] = true
			dirs[path.Dir(f.Path)] = true
		}
	}
	sorted := make([]string, 0, len(dirs))
	for d := range dirs {
		sorted = append(sorted, d)
	}
	sort.Strings(sorted)
	var out []target.File
	for _, d := range sorted {
		entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(d)))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			n := e.Name()
			rel := d + "/" + n
			if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") || gen[rel] {
				continue
			}
			data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
			if err != nil {
				return nil, err
			}
			if header.Check(rel, data) == nil {
				continue
			}
			out = append(out, target.File{Path: rel, Data: data})
		}
	}
	return out, nil
}

// Target is the name of the generator target whose files the Go record is
// read from.
func (goLang) Target() string { return gengo.Target.Name() }

// Generate returns the files the Go target generates from p: the Go
// SDK's generated layer (the witness builds its testee on them).
func Generate(p *model.Protocol) ([]target.File, error) {
	return targets.Generate(p, []target.Target{gengo.Target})
}
