package main

import (
	"slices"
	"testing"

	"github.com/echomq/echomq/conformance/runner"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/internal/literalscan"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// The wire mode has a generated call for every per-queue script of the
// bundle: a script added without one would answer unsupported there, and
// the witness fail on it.
func TestWireOpsCoverTheBundle(t *testing.T) {
	n := 0
	for _, s := range wire.Scripts() {
		if isReserve(s) {
			continue
		}
		n++
		if wireOps[s.Name] == nil {
			t.Errorf("the wire mode has no generated call for the script %s: add it to wireOps (wire.go)", s.Name)
		}
	}
	if n == 0 || len(wireOps) != n {
		t.Errorf("%d per-queue scripts, %d wire ops: every entry of wireOps must be a per-queue script", n, len(wireOps))
	}
}

// TestNoProtocolLiterals scans the testee for protocol literals: it takes
// every protocol fact from the SDK, never writes one again.
func TestNoProtocolLiterals(t *testing.T) {
	p, err := model.Load("../../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lits := slices.DeleteFunc(literalscan.Literals(p), func(l string) bool { return slices.Contains(runner.ContractWords, l) })
	literalscan.Scan(t, lits, []string{"main.go", "wire.go"}, "take it from package emq")
}
