//go:build unix

package plugin

import (
	"os/exec"
	"syscall"
)

// ownGroup starts the plugin in a process group of its own and makes
// cancellation (the timeout) kill the whole group, so that the programs a
// plugin starts (go run's compiled binary, a shell's children) end with
// it.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
