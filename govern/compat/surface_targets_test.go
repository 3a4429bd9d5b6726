package compat

import (
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/gen/target"
	"github.com/echomq/echomq/gen/targets"
)

// SurfaceOf generates only SurfaceTargets: they must emit every Go file,
// Lua file and bundle index that all the targets emit, so that a surface
// read from them is the surface of everything generated.
func TestSurfaceTargetsCoverTheSurface(t *testing.T) {
	p, err := model.Load("../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	surface := func(ts []target.Target) []string {
		files, err := targets.Generate(p, ts)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range files {
			if strings.HasSuffix(f.Path, ".go") || strings.HasSuffix(f.Path, ".lua") || path.Base(f.Path) == "index.json" {
				out = append(out, f.Path+"\x00"+string(f.Data))
			}
		}
		return out
	}
	all, sub := surface(nil), surface(SurfaceTargets())
	if len(all) == 0 || !slices.Equal(all, sub) {
		t.Errorf("all targets emit %d Go/Lua/index files, SurfaceTargets %d: a target outside SurfaceTargets emits part of the surface", len(all), len(sub))
	}
}
