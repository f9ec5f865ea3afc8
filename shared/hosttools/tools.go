package hosttools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/identity"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/sandbox"
)

// Limits of the host tools.
const (
	DefaultBashTimeout = 2 * time.Minute
	MaxBashTimeout     = 10 * time.Minute
	MaxOutputBytes     = 256 << 10 // output kept per call; the rest is cut
	MaxFileBytes       = 8 << 20
	// OutputGrace is how long a Bash call waits, after its shell ended or
	// was killed, for processes it left behind to close its output.
	OutputGrace = 2 * time.Second
)

// Runner runs host tools in one workspace.
type Runner struct {
	Workspace string
	// Shell is the bash that runs Bash commands (NewRunner resolves and
	// checks it at start-up). Zero: "bash" in PATH, resolved once per
	// process on first use.
	Shell Shell
	// Sandbox is how calls are confined (NewConfinement). Nil: bubblewrap
	// in PATH and the credential stores under $HOME hidden, resolved once
	// per process on first use.
	Sandbox *Confinement
}

// Invalid is a structured invalid-arguments result: nothing ran.
func invalid(problems ...actionflow.FieldProblem) actionflow.ToolResult {
	msgs := make([]string, len(problems))
	for i, p := range problems {
		msgs[i] = p.Field + ": " + p.Problem
	}
	return actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "invalid_arguments",
		Error: strings.Join(msgs, "; "), Validation: problems}
}

// Run executes one tool call in the default sandbox profile (RunIn).
func (r Runner) Run(ctx context.Context, tool string, args []byte) (actionflow.ToolResult, error) {
	return r.RunIn(ctx, sandbox.Default(), tool, args)
}

// RunIn executes one tool call in the sandbox profile p (the decision's).
// Deterministic failures are results with outcome failed; an error means
// the outcome is unknown. A call this host cannot confine (bubblewrap
// missing, the profile not off) is a not_started result: nothing ran.
// Every result of a call that ran records p (ToolResult.Sandbox).
func (r Runner) RunIn(ctx context.Context, p sandbox.Profile, tool string, args []byte) (actionflow.ToolResult, error) {
	if err := r.Unavailable(p); err != nil {
		return notStarted("sandbox_unavailable", err), nil
	}
	var (
		res actionflow.ToolResult
		err error
	)
	// bash, read_file, write_file and edit_file are Bash, Read, Write and
	// Edit: the one list the permission engine judges them by.
	switch identity.CanonicalTool(tool) {
	case "Bash":
		if IsBackground(tool, args) {
			// Never run in the foreground what asked for a managed process:
			// only a worker's supervisor starts it (StartBackground).
			return invalid(actionflow.FieldProblem{Field: "run_in_background", Problem: "a background process is started by the host worker's supervisor, not run here"}), nil
		}
		res, err = r.bash(ctx, p, args)
	case "Read":
		res, err = r.read(p, args)
	case "Write":
		res, err = r.write(p, args)
	case "Edit":
		res, err = r.edit(p, args)
	default:
		return invalid(actionflow.FieldProblem{Field: "tool", Problem: "this host does not run " + tool}), nil
	}
	if res.Outcome != lifecycle.OutcomeNotStarted && res.ErrorCode != "invalid_arguments" {
		res.Sandbox = &p
	}
	return res, err
}

func decodeArgs(args []byte, v any) *actionflow.FieldProblem {
	dec := json.NewDecoder(bytes.NewReader(args))
	if err := dec.Decode(v); err != nil {
		return &actionflow.FieldProblem{Field: "arguments", Problem: err.Error()}
	}
	return nil
}

// fileArg is the file argument of Read, Write and Edit: file_path, or path
// (the read_file/write_file/edit_file spelling).
type fileArg struct {
	FilePath string `json:"file_path"`
	Path     string `json:"path"`
}

func (f fileArg) name() string {
	if f.FilePath != "" {
		return f.FilePath
	}
	return f.Path
}

// resolve maps a tool path into the workspace.
func (r Runner) resolve(field, p string) (string, *actionflow.FieldProblem) {
	if p == "" {
		return "", &actionflow.FieldProblem{Field: field, Problem: "required"}
	}
	full, err := actionflow.WorkspacePath(r.Workspace, p)
	if err != nil {
		return "", &actionflow.FieldProblem{Field: field, Problem: err.Error()}
	}
	return full, nil
}

func (r Runner) bash(ctx context.Context, profile sandbox.Profile, args []byte) (actionflow.ToolResult, error) {
	var a struct {
		Command     string `json:"command"`
		Description string `json:"description"`
		Timeout     int64  `json:"timeout"` // milliseconds
		Cwd         string `json:"cwd"`
	}
	if p := decodeArgs(args, &a); p != nil {
		return invalid(*p), nil
	}
	if strings.TrimSpace(a.Command) == "" {
		return invalid(actionflow.FieldProblem{Field: "command", Problem: "required"}), nil
	}
	timeout := DefaultBashTimeout
	if a.Timeout < 0 || time.Duration(a.Timeout)*time.Millisecond > MaxBashTimeout {
		return invalid(actionflow.FieldProblem{Field: "timeout", Problem: fmt.Sprintf("must be 0..%d milliseconds", MaxBashTimeout.Milliseconds())}), nil
	}
	if a.Timeout > 0 {
		timeout = time.Duration(a.Timeout) * time.Millisecond
	}
	// The command runs in the workspace root: that is where the permission
	// engine resolves its relative paths (it does not read cwd), so a cwd
	// elsewhere would run `cat .env` on a file the decision never judged.
	// A cwd naming the root itself is accepted.
	dir, p := r.resolve("cwd", ".")
	if p != nil {
		return invalid(*p), nil
	}
	if a.Cwd != "" {
		d, p := r.resolve("cwd", a.Cwd)
		if p != nil {
			return invalid(*p), nil
		}
		if d != dir {
			return invalid(actionflow.FieldProblem{Field: "cwd", Problem: "commands run in the workspace root, where the permission engine resolves paths; start the command with cd DIR && instead"}), nil
		}
	}
	sh, err := r.shell()
	if err != nil {
		// Nothing ran: without bash the command cannot run as analysed.
		return actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "shell_unavailable", Error: err.Error()}, nil
	}
	// The program the permission engine analysed (bash dialect) is the one
	// that runs: bash itself, no startup files, and an environment without
	// the variables that make bash run or parse anything else (CommandEnv),
	// inside bubblewrap's sandbox of the call's profile (unless it is off).
	argv := append(append([]string{sh.Path}, BashArgs...), a.Command)
	if profile.Mode != sandbox.ModeOff {
		v, c, err := r.view(profile)
		if err != nil {
			return actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "sandbox_invalid", Error: err.Error()}, nil
		}
		bw, err := v.Args()
		if err != nil {
			return actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "sandbox_invalid", Error: err.Error()}, nil
		}
		argv = append(append([]string{c.Bwrap}, bw...), argv...)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = CommandEnv(nil)
	cmd.Stdin = nil // /dev/null: nothing to read, no prompt to answer
	// Its own session: no controlling terminal (a program cannot prompt on
	// /dev/tty), and one process group a timeout or cancel kills whole.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A process that left the group (setsid) or a background job may hold
	// the output open after the shell ended or was killed: stop waiting
	// for it after OutputGrace.
	cmd.WaitDelay = OutputGrace
	var out boundedBuffer
	out.limit = MaxOutputBytes
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "shell_unavailable",
			Error: fmt.Sprintf("start %s: %v", sh.Path, err)}, nil
	}
	err = cmd.Wait()
	res := actionflow.ToolResult{Output: out.String(), Truncated: out.cut, Shell: sh.String()}
	if cmd.ProcessState != nil {
		code := cmd.ProcessState.ExitCode()
		res.ExitCode = &code
	}
	switch {
	case ctx.Err() != nil:
		// The caller's context ended (shutdown, or its own deadline): not
		// the command's timeout, and the outcome is the caller's to judge.
		return res, fmt.Errorf("bash cancelled while running: %w", ctx.Err())
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		res.Outcome, res.ErrorCode, res.Error = lifecycle.OutcomeFailed, "timeout", fmt.Sprintf("killed after %s", timeout)
	case err == nil:
		res.Outcome = lifecycle.OutcomeSucceeded
	case errors.Is(err, exec.ErrWaitDelay):
		// The shell exited 0; something it started kept the output open.
		res.Outcome = lifecycle.OutcomeSucceeded
		res.Output += fmt.Sprintf("\n[output still open %s after the command ended (a background process?); not captured further]\n", OutputGrace)
	default:
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return res, fmt.Errorf("run bash: %w", err)
		}
		res.Outcome, res.ErrorCode, res.Error = lifecycle.OutcomeFailed, fmt.Sprintf("exit_%d", *res.ExitCode), err.Error()
		// The command ran and failed: if its output shows the sandbox
		// blocked it, say so and how to ask for more (sandbox.Detect's
		// heuristics; the exit status stays on the result).
		if d, ok := sandbox.Detect(profile, res.Output); ok {
			res.ErrorCode, res.Error = "sandbox_denied", d.Explain()
		}
	}
	return res, nil
}

type boundedBuffer struct {
	bytes.Buffer
	limit int
	cut   bool
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := b.limit - b.Len(); room < len(p) {
		b.cut = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return n, nil
	}
	b.Buffer.Write(p)
	return n, nil
}

func (r Runner) read(profile sandbox.Profile, args []byte) (actionflow.ToolResult, error) {
	var a struct {
		fileArg
	}
	if p := decodeArgs(args, &a); p != nil {
		return invalid(*p), nil
	}
	full, p := r.resolve("file_path", a.name())
	if p != nil {
		return invalid(*p), nil
	}
	if denied := r.fileAccess(profile, full, false); denied != nil {
		return *denied, nil
	}
	f, err := os.Open(full)
	if err != nil {
		return actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "read_failed", Error: err.Error()}, nil
	}
	defer f.Close()
	var buf boundedBuffer
	buf.limit = MaxOutputBytes
	if _, err := buf.ReadFrom(f); err != nil {
		return actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "read_failed", Error: err.Error()}, nil
	}
	return actionflow.ToolResult{Outcome: lifecycle.OutcomeSucceeded, Output: buf.String(), Truncated: buf.cut}, nil
}

func (r Runner) write(profile sandbox.Profile, args []byte) (actionflow.ToolResult, error) {
	var a struct {
		fileArg
		Content string `json:"content"`
	}
	if p := decodeArgs(args, &a); p != nil {
		return invalid(*p), nil
	}
	full, p := r.resolve("file_path", a.name())
	if p != nil {
		return invalid(*p), nil
	}
	if denied := r.fileAccess(profile, full, true); denied != nil {
		return *denied, nil
	}
	if len(a.Content) > MaxFileBytes {
		return invalid(actionflow.FieldProblem{Field: "content", Problem: fmt.Sprintf("more than %d bytes", MaxFileBytes)}), nil
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "write_failed", Error: err.Error()}, nil
	}
	if err := writeAtomic(full, []byte(a.Content)); err != nil {
		return actionflow.ToolResult{}, fmt.Errorf("write %s: %w", a.name(), err)
	}
	return actionflow.ToolResult{Outcome: lifecycle.OutcomeSucceeded, Output: fmt.Sprintf("wrote %d bytes to %s", len(a.Content), a.name())}, nil
}

func (r Runner) edit(profile sandbox.Profile, args []byte) (actionflow.ToolResult, error) {
	var a struct {
		fileArg
		OldString  string `json:"old_string"`
		NewString  string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
	}
	if p := decodeArgs(args, &a); p != nil {
		return invalid(*p), nil
	}
	full, p := r.resolve("file_path", a.name())
	if p != nil {
		return invalid(*p), nil
	}
	if denied := r.fileAccess(profile, full, true); denied != nil {
		return *denied, nil
	}
	if a.OldString == "" {
		return invalid(actionflow.FieldProblem{Field: "old_string", Problem: "required"}), nil
	}
	data, err := os.ReadFile(full)
	if err != nil {
		return actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "read_failed", Error: err.Error()}, nil
	}
	n := strings.Count(string(data), a.OldString)
	switch {
	case n == 0:
		return actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "old_string_not_found", Error: "old_string does not occur in the file"}, nil
	case n > 1 && !a.ReplaceAll:
		return actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "old_string_not_unique",
			Error: fmt.Sprintf("old_string occurs %d times; give more context or set replace_all", n)}, nil
	}
	updated := strings.Replace(string(data), a.OldString, a.NewString, map[bool]int{true: -1, false: 1}[a.ReplaceAll])
	if err := writeAtomic(full, []byte(updated)); err != nil {
		return actionflow.ToolResult{}, fmt.Errorf("edit %s: %w", a.name(), err)
	}
	return actionflow.ToolResult{Outcome: lifecycle.OutcomeSucceeded, Output: fmt.Sprintf("replaced %d occurrence(s) in %s", map[bool]int{true: n, false: 1}[a.ReplaceAll], a.name())}, nil
}

func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".lifecycle-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
