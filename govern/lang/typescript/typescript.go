// Package typescript is the TypeScript SDK's entry of the language
// contract (govern/lang): the public API of sdk/ts (@echomq/sdk), read
// from its declarations (apirecord.TSAPI: tsc under node, cached by the
// digest of its inputs), recorded as <version>.ts-api.txt beside a frozen
// release.
package typescript

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/echomq/echomq/gen/manifest"
	"github.com/echomq/echomq/gen/target"
	gents "github.com/echomq/echomq/gen/targets/ts"
	"github.com/echomq/echomq/govern/apirecord"
	"github.com/echomq/echomq/govern/lang"
)

// Language is the TypeScript SDK's API record.
var Language lang.Language = tsLang{}

type tsLang struct{}

func (tsLang) Name() string         { return "ts" }
func (tsLang) Title() string        { return "TypeScript" }
func (tsLang) RulePrefix() string   { return "TS" }
func (tsLang) Dir() string          { return "sdk/ts" }
func (tsLang) RecordSuffix() string { return ".ts-api.txt" }
func (tsLang) FromManifest() bool   { return false }
func (tsLang) Target() string       { return "" }

func (tsLang) Purposes() (removed, changed string) {
	return "Code written against the TypeScript SDK stops compiling when an exported name, class member or interface member it uses is gone.",
		"Code written against the TypeScript SDK stops compiling, or calls with the wrong arguments, when an exported name or member changes its type or signature."
}

func (l tsLang) Present(root string) bool {
	_, err := os.Stat(filepath.Join(root, filepath.FromSlash(l.Dir()), "package.json"))
	return err == nil
}

func (l tsLang) Read(ctx context.Context, src lang.Source) ([]string, error) {
	if !l.Present(src.Root) {
		return nil, fmt.Errorf("%s: %w", filepath.Join(src.Root, filepath.FromSlash(l.Dir())), lang.ErrAbsent)
	}
	return apirecord.TSAPI(ctx, filepath.Join(src.Root, filepath.FromSlash(l.Dir())))
}

func (tsLang) Format(version string, lines []string) ([]byte, error) {
	var b strings.Builder
	if err := apirecord.WriteTSAPI(&b, version, lines); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

func (tsLang) Parse(data []byte) ([]string, map[string]int, error) {
	lines, err := apirecord.ReadTSAPI(strings.NewReader(string(data)))
	if err != nil {
		return nil, nil, err
	}
	if lines == nil {
		lines = []string{}
	}
	return lines, lang.LineNumbers(data), nil
}

func (tsLang) Compare(old, new []string) []apirecord.Break { return apirecord.CompareTSAPI(old, new) }

func (tsLang) Explain(b apirecord.Break) (string, string) { return lang.ExplainLine("TypeScript", b) }

// Annotate returns the TypeScript target's annotations of its wire layer
// (sdk/ts/src/gen).
func (tsLang) Annotate(m *manifest.Manifest) ([]target.Annotation, error) {
	a, ok := gents.Target.(target.Annotator)
	if !ok {
		return nil, nil
	}
	return a.Annotate(m)
}
