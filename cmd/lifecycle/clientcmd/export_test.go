package clientcmd

import "io"

// SetTerminal replaces the terminal the token command confirms on and
// returns a function that restores it.
func SetTerminal(open func() (io.ReadWriteCloser, error)) (restore func()) {
	old := openTerminal
	openTerminal = open
	return func() { openTerminal = old }
}
