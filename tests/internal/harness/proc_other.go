//go:build !linux

package harness

import "os/exec"

func dieWithTest(*exec.Cmd) {}
