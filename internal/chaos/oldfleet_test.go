package chaos

import (
	"os/exec"
	"testing"
)

// TestOldFleetBuilds builds the old side (the 2.2.1 release's Go SDK from
// git history, with testdata/oldfleet) and checks that the program runs.
func TestOldFleetBuilds(t *testing.T) {
	bin, err := oldFleetBinary()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin).CombinedOutput()
	if err == nil {
		t.Fatalf("oldfleet without a mode exited 0; want the usage (output %s)", out)
	}
	if string(out) == "" {
		t.Fatal("oldfleet without a mode printed nothing")
	}
}
