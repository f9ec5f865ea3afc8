//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package clientcmd

import (
	"errors"
	"os"
)

func inForeground(*os.File) error {
	return errors.New("confirming on a terminal is supported on Unix systems only")
}
