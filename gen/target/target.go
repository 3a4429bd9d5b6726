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
