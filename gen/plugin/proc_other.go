//go:build !unix

package plugin

import "os/exec"

// ownGroup leaves the process as exec starts it: cancellation kills the
// plugin's own process only.
func ownGroup(cmd *exec.Cmd) {}
