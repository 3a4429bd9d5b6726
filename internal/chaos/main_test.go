package chaos

import (
	"os"
	"testing"
)

// TestMain runs worker processes: the harness starts them by running this
// test binary again.
func TestMain(m *testing.M) {
	if IsWorker() {
		os.Exit(RunWorker())
	}
	os.Exit(m.Run())
}
