package main

import (
	"slices"
	"testing"

	"github.com/echomq/echomq/conformance/runner"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/internal/literalscan"
)

// TestNoProtocolLiterals scans the testee for protocol literals: it takes
// every protocol fact from the SDK, never writes one again.
func TestNoProtocolLiterals(t *testing.T) {
	p, err := model.Load("../../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lits := slices.DeleteFunc(literalscan.Literals(p), func(l string) bool { return slices.Contains(runner.ContractWords, l) })
	literalscan.Scan(t, lits, []string{"main.go"}, "take it from package emq")
}
