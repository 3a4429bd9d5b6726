//go:build !linux

package chaos

import "os/exec"

// dieWithParent is a no-op where the kernel offers no parent-death signal;
// the harness kills its worker processes itself on every exit path.
func dieWithParent(*exec.Cmd) {}
