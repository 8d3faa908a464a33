//go:build linux

package e2e

import (
	"os/exec"
	"syscall"
)

// dieWithTest makes the kernel kill the broker when the test binary dies
// (a go test killed by its timeout or a signal runs no cleanups).
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
