package compat

import (
	"sync"
	"testing"

	"github.com/echomq/echomq/gen/model"
)

var surfaces sync.Map // manifest text -> *Surface (nil when it does not resolve)

// fixtureSurface generates the surface of a fixture's manifest when the
// manifest resolves, so that the artifact rules run on every fixture they
// can; a manifest that does not resolve is compared on its leaves only.
func fixtureSurface(t *testing.T, file, text string) *Surface {
	t.Helper()
	if s, ok := surfaces.Load(text); ok {
		return s.(*Surface)
	}
	var s *Surface
	if p, err := model.Parse(file, []byte(text)); err == nil {
		if s, err = SurfaceOf("../..", p); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	surfaces.Store(text, s)
	return s
}
