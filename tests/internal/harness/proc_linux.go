package harness

import (
	"os/exec"
	"syscall"
)

// dieWithTest makes the kernel kill the child when the test binary dies
// (a panic, a -timeout), so no serve outlives its test.
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
