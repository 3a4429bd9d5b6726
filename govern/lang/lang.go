// Package lang is the contract between the gate and the languages whose
// public SDK API it records and compares: one Language per SDK (Go,
// TypeScript, Python; govern/langs lists them). A language says where its
// SDK lives, how its API is read into a record (one feature per line), how
// a record is written and read back beside a frozen release, which of two
// records' differences break its users (its compatibility rule), how a
// break is spelled in a finding, and which manifest element each of its
// generated identifiers comes from (its position annotations, as protoc's
// annotate_code ties generated code to the .proto it came from).
//
// Nothing outside a language's own folder knows its file names, tools or
// naming: the gate (govern/gate), the classifier (govern/compat), the
// frozen releases (govern/release) and emqgen's command line iterate over
// the list. Adding a language is a folder implementing Language and one
// entry in govern/langs.
package lang

import (
	"context"
	"errors"
	"strings"

	"github.com/echomq/echomq/gen/manifest"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/gen/target"
	"github.com/echomq/echomq/govern/apirecord"
)

// Language is one SDK language's API record.
type Language interface {
	// Name is the language's short name: the prefix of its findings'
	// paths ("ts: @echomq/sdk function connect") and of its record's
	// file name beside a frozen release (RecordSuffix).
	Name() string
	// Title names the language for people: "TypeScript".
	Title() string
	// RulePrefix starts the IDs of the language's two rules,
	// <prefix>_API_NO_DELETE and <prefix>_API_SAME_SIGNATURE.
	RulePrefix() string
	// Purposes say why a removal and a change of a feature break the
	// language's users (the rules' purposes in docs/reviewing.md).
	Purposes() (removed, changed string)
	// Dir is the SDK's directory (the one Read reads), relative to the
	// repository root, slash-separated.
	Dir() string
	// RecordSuffix is what follows the version in the name of the record
	// a frozen release keeps beside its manifest: ".ts-api.txt".
	RecordSuffix() string
	// FromManifest reports whether the record is read from what the
	// generator makes of a manifest (with the hand-written files of the
	// root): then a baseline that keeps no record is read the same way,
	// and the record is compared whenever both sides validate. Otherwise
	// the record is read from the SDK's sources alone, and compared only
	// against a baseline that keeps one.
	FromManifest() bool
	// Target names the generator target (gen/targets) whose files a
	// FromManifest language reads its record from; "" for the others.
	Target() string
	// Present reports whether root holds the language's SDK.
	Present(root string) bool
	// Read reads the SDK's public API: one feature per line, sorted. A
	// root without the SDK is an error wrapping ErrAbsent; a tool that is
	// missing says what to install.
	Read(ctx context.Context, src Source) ([]string, error)
	// Format writes the on-disk record of lines for a version.
	Format(version string, lines []string) ([]byte, error)
	// Parse reads an on-disk record: its lines (as Read returns them, in
	// today's form) and the 1-based line of the file each came from.
	Parse(data []byte) (lines []string, at map[string]int, err error)
	// Compare lists the breaks of new against old: the compatibility rule.
	Compare(old, new []string) []apirecord.Break
	// Explain spells a break for a finding: the feature (after the
	// language's name in the finding's path) and what happened to it.
	Explain(b apirecord.Break) (where, message string)
	// Annotate lists which manifest element each identifier the
	// language's generated code declares comes from, for a decoded
	// manifest (valid or not; target.Annotator); nil when the language's
	// target returns no annotations.
	Annotate(m *manifest.Manifest) ([]target.Annotation, error)
}

// Source is what a language reads its API from.
type Source struct {
	// Root is the repository root (the checkout under review).
	Root string
	// Protocol is the manifest's model; Files, when not nil, what the
	// surface targets generated from it (a FromManifest language uses
	// them rather than generating again).
	Protocol *model.Protocol
	Files    []target.File
}

// Unqualified is a record line or key without a package qualifier
// ("pkg <path>, "), as the Go record qualifies its lines: the feature
// whose identifiers locate a break.
func Unqualified(s string) string {
	if rest, ok := strings.CutPrefix(s, "pkg "); ok {
		if _, feature, ok := strings.Cut(rest, ", "); ok {
			return feature
		}
	}
	return s
}

// ErrAbsent means the root has no SDK of the language.
var ErrAbsent = errors.New("no SDK of the language here")
