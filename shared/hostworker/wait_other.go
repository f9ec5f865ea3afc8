//go:build !linux

package hostworker

import "os"

// waitExit reaps p (this platform has no waitid WNOWAIT in Go): the
// group is signalled once more right after, a window in which its PID
// could in principle be reused; on Linux there is none.
func waitExit(p *os.Process) *os.ProcessState {
	st, _ := p.Wait()
	return st
}
