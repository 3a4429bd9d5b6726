package chaos

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel SIGKILL the child when the harness dies,
// so that no worker process outlives a harness killed without cleanup.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
