package redistest

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel SIGKILL the server when the process that
// started it dies, so that a tool killed without cleanup leaves no server
// behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
