//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package clientcmd

import (
	"errors"
	"os"
	"syscall"
	"unsafe"
)

// inForeground refuses a terminal this process is not in the foreground
// of: a background job (like a tool started in its own process group by a
// service that still holds the terminal) must not prompt on it.
func inForeground(tty *os.File) error {
	var pgrp int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, tty.Fd(), uintptr(syscall.TIOCGPGRP), uintptr(unsafe.Pointer(&pgrp))); errno != 0 {
		return errors.New("cannot read the terminal's foreground process group: " + errno.Error())
	}
	if int(pgrp) != syscall.Getpgrp() {
		return errors.New("this process is not in the terminal's foreground (a background or service-started process cannot confirm)")
	}
	return nil
}
