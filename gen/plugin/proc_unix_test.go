//go:build unix

package plugin_test

import (
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq/gen/plugin"
	"github.com/echomq/echomq/gen/target"
	"github.com/echomq/echomq/gen/targets"
)

// TestTimeoutKillsTheGroup runs a plugin whose child outlives it and holds
// its stdout: the timeout kills the whole process group, so the run ends
// promptly instead of waiting for the child.
func TestTimeoutKillsTheGroup(t *testing.T) {
	s := plugin.Spec{Name: "sleepy", Run: []string{"sh", "-c", "sleep 30 & wait"}, Out: "sdk/sleepy", Dir: t.TempDir(), Timeout: 200 * time.Millisecond}
	start := time.Now()
	_, err := targets.Run(input(t, "../../protocol.yaml"), []target.Target{plugin.Target(s)})
	if err == nil || !strings.Contains(err.Error(), "plugin sleepy") || !strings.Contains(err.Error(), "timed out after 200ms") {
		t.Fatalf("err = %v, want a timeout naming plugin sleepy", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the run took %s after a 200ms timeout: the child was not killed with the plugin", d)
	}
}
