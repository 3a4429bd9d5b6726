package main

import (
	"slices"
	"testing"

	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/internal/literalscan"
)

// contractWords are field names of the testee contract
// (conformance/README.md) that happen to equal manifest names today; the
// contract's names are its own and do not follow a rename in the manifest.
var contractWords = []string{"payload", "state", "attempts", "bundle", "version", "row", "run_at_ms"}

// TestNoProtocolLiterals scans the testee for protocol literals: it takes
// every protocol fact from the SDK, never writes one again.
func TestNoProtocolLiterals(t *testing.T) {
	p, err := model.Load("../../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lits := slices.DeleteFunc(literalscan.Literals(p), func(l string) bool { return slices.Contains(contractWords, l) })
	literalscan.Scan(t, lits, []string{"main.go"}, "take it from package emq")
}
