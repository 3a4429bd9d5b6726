// Package python is the Python SDK's entry of the language contract
// (govern/lang): the public API of sdk/python's package echomq, read from
// its sources with Python's ast module (apirecord.PyAPI, nothing
// imported), recorded as <version>.py-api.txt beside a frozen release.
package python

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/echomq/echomq/gen/manifest"
	"github.com/echomq/echomq/gen/target"
	"github.com/echomq/echomq/govern/apirecord"
	"github.com/echomq/echomq/govern/lang"
)

// Language is the Python SDK's API record.
var Language lang.Language = pyLang{}

type pyLang struct{}

func (pyLang) Name() string         { return "py" }
func (pyLang) Title() string        { return "Python" }
func (pyLang) RulePrefix() string   { return "PY" }
func (pyLang) Dir() string          { return "sdk/python/src/echomq" }
func (pyLang) RecordSuffix() string { return ".py-api.txt" }
func (pyLang) FromManifest() bool   { return false }
func (pyLang) Target() string       { return "" }

func (pyLang) Purposes() (removed, changed string) {
	return "Code written against the Python SDK fails (ImportError, AttributeError) when a public module, name, class member or Enum member it uses is gone.",
		"Code written against the Python SDK calls with the wrong arguments (a parameter renamed, required or reordered, sync made async) or gets another type when a public name or member changes its signature or type; parameters added with defaults are compatible."
}

func (l pyLang) Present(root string) bool {
	_, err := os.Stat(filepath.Join(root, filepath.FromSlash(l.Dir()), "__init__.py"))
	return err == nil
}

func (l pyLang) Read(ctx context.Context, src lang.Source) ([]string, error) {
	if !l.Present(src.Root) {
		return nil, fmt.Errorf("%s: %w", filepath.Join(src.Root, filepath.FromSlash(l.Dir())), lang.ErrAbsent)
	}
	return apirecord.PyAPI(ctx, filepath.Join(src.Root, filepath.FromSlash(l.Dir())))
}

func (pyLang) Format(version string, lines []string) ([]byte, error) {
	var b strings.Builder
	if err := apirecord.WritePyAPI(&b, version, lines); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

func (pyLang) Parse(data []byte) ([]string, map[string]int, error) {
	lines, err := apirecord.ReadPyAPI(strings.NewReader(string(data)))
	if err != nil {
		return nil, nil, err
	}
	if lines == nil {
		lines = []string{}
	}
	return lines, lang.LineNumbers(data), nil
}

func (pyLang) Compare(old, new []string) []apirecord.Break { return apirecord.ComparePyAPI(old, new) }

func (pyLang) Explain(b apirecord.Break) (string, string) { return lang.ExplainLine("Python", b) }

// Annotate: the Python plugin returns no annotations yet.
func (pyLang) Annotate(*manifest.Manifest) ([]target.Annotation, error) { return nil, nil }
