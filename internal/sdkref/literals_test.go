package sdkref_test

import (
	"github.com/echomq/echomq/internal/literalscan"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoProtocolLiterals scans the hand-written files of the SDK for
// protocol literals the manifest holds (class words, field and state
// names, key prefixes, the version): hand-written code uses generated
// names only.
func TestNoProtocolLiterals(t *testing.T) {
	files, _ := filepath.Glob("../../sdk/go/emq/*.go")
	var hand []string
	for _, f := range files {
		if !strings.HasSuffix(f, "_gen.go") {
			hand = append(hand, f)
		}
	}
	literalscan.Scan(t, literalscan.Literals(reference(t)), hand, "use the generated name")
}
