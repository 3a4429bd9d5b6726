package gate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The tripwire's floor is proven from the frozen releases: at 2.1.1 every
// script of every release from it on that declares the active key begins
// with its guard; at 2.0.0 the releases 2.0.0 and 2.1.0 do not (their
// claim writes before it reaches the active key), each named with its
// scripts.
func TestTripwireFloorProvenFromFrozenReleases(t *testing.T) {
	const root = "../.."
	old, err := Side(root, filepath.Join(root, "golden", "releases", "2.6.1.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "protocol.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "floor: 2.1.1") {
		t.Fatal("protocol.yaml declares no tripwire floor 2.1.1")
	}
	for _, c := range []struct {
		floor string
		bad   []string // releases named, in order
	}{
		{"2.1.1", nil},
		{"2.0.0", []string{"release 2.0.0's scripts claim, extend, complete, retry, bury, reap ", "release 2.1.0's scripts claim, extend, complete, retry, bury, reap, claim_many, complete_claim "}},
	} {
		file := filepath.Join(t.TempDir(), "protocol.yaml")
		if err := os.WriteFile(file, []byte(strings.Replace(string(data), "floor: 2.1.1", "floor: "+c.floor, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		new, err := Side(root, file)
		if err != nil {
			t.Fatal(err)
		}
		fs, err := tripwires(root, old, new)
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) != len(c.bad) {
			t.Fatalf("floor %s: %d findings, want %d: %+v", c.floor, len(fs), len(c.bad), fs)
		}
		for i, f := range fs {
			if f.Rule != "TRIPWIRE_UNPROVEN" || f.Path != "keys.types[active].tripwire.floor" || !strings.Contains(f.Message, c.bad[i]) || f.Line == 0 {
				t.Errorf("floor %s: finding %d = %+v, want TRIPWIRE_UNPROVEN at the floor naming %q", c.floor, i, f, c.bad[i])
			}
		}
	}
	// A baseline that already has the tripwire proves nothing again: a
	// later minor beside it adds none.
	cur, err := Side(root, filepath.Join(root, "protocol.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if fs, err := tripwires(root, cur, cur); err != nil || len(fs) != 0 {
		t.Errorf("no tripwire added: %v %v", fs, err)
	}
}
