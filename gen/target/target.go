// Package target is the contract between emqgen and the targets that turn
// a protocol into files: the Input every target receives (the resolved
// model and the rendered bundle, computed once), the File a target
// returns, and the Target interface. The host (gen/targets) runs every
// registered target on the same Input, checks each file's header and
// determinism, and owns writing and -check.
//
// A target never imports another target and never reads YAML: what it
// emits is a pure function of its Input.
package target

import (
	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/manifest"
	"github.com/echomq/echomq/gen/model"
)

// File is one generated file: its path relative to the repository root
// (slash-separated) and its exact bytes.
type File struct {
	Path string
	Data []byte
}

// Input is what every target receives.
type Input struct {
	Protocol *model.Protocol
	Bundle   *bundle.Bundle
}

// Target turns an Input into files.
type Target interface {
	// Name is the target's short name, as `emqgen gen -target` takes it.
	Name() string
	// Generate returns the target's files. It must be deterministic: the
	// same Input yields the same files in the same order, byte for byte.
	Generate(in *Input) ([]File, error)
}

// Func adapts a name and a function to a Target.
func Func(name string, gen func(*Input) ([]File, error)) Target { return funcTarget{name, gen} }

type funcTarget struct {
	name string
	gen  func(*Input) ([]File, error)
}

func (t funcTarget) Name() string                       { return t.name }
func (t funcTarget) Generate(in *Input) ([]File, error) { return t.gen(in) }

// Annotation ties one identifier a target declares to the manifest
// element it is generated from, as protoc's annotate_code ties generated
// code to the .proto element: the gate names an element by each
// language's identifier and locates a break of an SDK's API at the element
// it comes from, without knowing any target's naming.
type Annotation struct {
	// Path is the element's manifest path as the classifier names it
	// (govern/compat): "scripts[complete_claim]", "keys.types[audit]",
	// "scripts[claim].argv[limit]"; for an identifier the whole of a
	// section generates (Section), the section: "keys".
	Path string
	// Ident is the identifier as the language spells it: "ScriptClaim";
	// a member of a generated type as Type.Member: "QueueKeys.Audit". An
	// element's first annotation is the name findings show.
	Ident string
	// Section marks an identifier that the whole of the section at Path
	// generates rather than one element of it (a wire-layer type over
	// every key type).
	Section bool
}

// Annotator is a Target that also says where its identifiers come from.
type Annotator interface {
	// Annotate returns the annotations of the identifiers Generate
	// declares for the elements of a decoded manifest (what
	// Protocol.Source holds), every element's primary name first; it
	// reads names only, so a manifest that does not validate is annotated
	// too (its elements named as they would be generated). It is
	// deterministic, like Generate.
	Annotate(m *manifest.Manifest) ([]Annotation, error)
}
