package runner

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestSchedulesOracle runs the schedules oracle
// (conformance/vectors/schedules.py, the standard library's zoneinfo and a
// walk over UTC minutes) and fails when the committed vectors every SDK's
// scheduler tests read differ from what it writes now.
func TestSchedulesOracle(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 runs the schedules oracle: apt-get install python3 (./test.sh installs it)")
	}
	dir := filepath.Join("..", "vectors")
	cmd := exec.Command(py, "schedules.py")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("schedules.py: %v\n%s", err, stderr.String())
	}
	want, err := os.ReadFile(filepath.Join(dir, "schedules.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("conformance/vectors/schedules.json is stale: run python3 conformance/vectors/schedules.py > conformance/vectors/schedules.json")
	}
}
