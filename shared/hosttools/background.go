package hosttools

import (
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/identity"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/sandbox"
)

// Background is a Bash command started as a managed process: the shell
// runs in its own session and process group (Pgid == Pid), with stdin
// /dev/null and its two output streams as pipes the supervisor drains.
// Only the holder of Cmd may signal it (the whole group, -Pid).
type Background struct {
	Cmd         *exec.Cmd
	Stdout      io.ReadCloser
	Stderr      io.ReadCloser
	Command     string
	Description string
	Shell       Shell
}

// IsBackground reports whether a call of tool with args asks to run in
// the background (Bash with "run_in_background": true).
func IsBackground(tool string, args []byte) bool {
	if identity.CanonicalTool(tool) != "Bash" {
		return false
	}
	var a struct {
		RunInBackground bool `json:"run_in_background"`
	}
	return json.Unmarshal(args, &a) == nil && a.RunInBackground
}

// StartBackground starts a Bash call with run_in_background as a process
// that outlives the call: the same program, environment filter, working
// directory, session/group and sandbox (the call's profile, through
// bubblewrap unless it is off) as a foreground Bash call, without its
// timeout (a managed process runs until it exits or is stopped). A
// non-nil result means nothing started (invalid arguments, no shell, no
// bubblewrap for a confined profile).
func (r Runner) StartBackground(profile sandbox.Profile, args []byte) (*Background, *actionflow.ToolResult) {
	var a struct {
		Command         string `json:"command"`
		Description     string `json:"description"`
		Timeout         int64  `json:"timeout"`
		Cwd             string `json:"cwd"`
		RunInBackground bool   `json:"run_in_background"`
	}
	if p := decodeArgs(args, &a); p != nil {
		res := invalid(*p)
		return nil, &res
	}
	problem := func(field, msg string) (*Background, *actionflow.ToolResult) {
		res := invalid(actionflow.FieldProblem{Field: field, Problem: msg})
		return nil, &res
	}
	switch {
	case strings.TrimSpace(a.Command) == "":
		return problem("command", "required")
	case !a.RunInBackground:
		return problem("run_in_background", "must be true to start a managed process")
	case a.Timeout != 0:
		return problem("timeout", "a background process has no timeout (stop it with its own control); leave timeout out")
	}
	dir, p := r.resolve("cwd", ".")
	if p != nil {
		res := invalid(*p)
		return nil, &res
	}
	if a.Cwd != "" {
		if d, p := r.resolve("cwd", a.Cwd); p != nil || d != dir {
			return problem("cwd", "commands run in the workspace root, where the permission engine resolves paths; start the command with cd DIR && instead")
		}
	}
	sh, err := r.shell()
	if err != nil {
		return nil, &actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "shell_unavailable", Error: err.Error()}
	}
	argv := append(append([]string{sh.Path}, BashArgs...), a.Command)
	if profile.Mode != sandbox.ModeOff {
		if err := r.Unavailable(profile); err != nil {
			return nil, &actionflow.ToolResult{Outcome: lifecycle.OutcomeNotStarted, ErrorCode: "sandbox_unavailable", Error: err.Error()}
		}
		v, c, err := r.view(profile)
		if err != nil {
			return nil, &actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "sandbox_invalid", Error: err.Error()}
		}
		bw, err := v.Args()
		if err != nil {
			return nil, &actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "sandbox_invalid", Error: err.Error()}
		}
		argv = append(append([]string{c.Bwrap}, bw...), argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = CommandEnv(nil)
	cmd.Stdin = nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	stdout, err := cmd.StdoutPipe()
	if err == nil {
		var stderr io.ReadCloser
		if stderr, err = cmd.StderrPipe(); err == nil {
			if err = cmd.Start(); err == nil {
				return &Background{Cmd: cmd, Stdout: stdout, Stderr: stderr, Command: a.Command, Description: a.Description, Shell: sh}, nil
			}
		}
	}
	return nil, &actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "shell_unavailable",
		Error: fmt.Sprintf("start %s: %v", sh.Path, err)}
}
