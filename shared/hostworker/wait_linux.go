package hostworker

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// waitExit blocks until p has exited without reaping it: while its zombie
// stays, its PID (and so its process group id) cannot be reused, so the
// supervisor may still signal the group until it reaps it (cmd.Wait). It
// returns nil: the state comes from cmd.Wait.
func waitExit(p *os.Process) *os.ProcessState {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, p.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return nil
		}
	}
}
