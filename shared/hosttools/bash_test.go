package hosttools_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/hosttools"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/permission/bashscan"
)

func newRunner(t *testing.T) hosttools.Runner {
	t.Helper()
	r, err := hosttools.NewRunner(t.TempDir(), "")
	if err != nil {
		t.Fatalf("this test needs bash: %v", err)
	}
	return r
}

func runBash(t *testing.T, r hosttools.Runner, command string, timeoutMS int64) actionflow.ToolResult {
	t.Helper()
	args, _ := json.Marshal(map[string]any{"command": command, "timeout": timeoutMS})
	res, err := r.Run(context.Background(), "Bash", args)
	if err != nil {
		t.Fatalf("run %q: %v", command, err)
	}
	return res
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// mayRunTouch is what the analysis says about the marker: true when the
// program contains a touch command or a command whose name is not known
// before run time (which could be touch).
func mayRunTouch(p *bashscan.Program) bool {
	for i := range p.Commands {
		c := &p.Commands[i]
		if c.BaseName() == "touch" || (c.Kind == bashscan.KindSimple && !c.Static()) {
			return true
		}
	}
	return false
}

// The program the permission engine analyses is the program that runs: for
// each construct where bash and dash disagree, a harmless payload (a marker
// file in the workspace) shows what bash ran, and the analysis of the same
// text (bashscan, what the engine judges) agrees with it. dashMarker is what
// /bin/sh (dash) does with the same text, for the record: the constructs
// are the ones where running sh instead of bash would run something else.
func TestBashRunsTheAnalysedProgram(t *testing.T) {
	cases := []struct {
		name, command string
		// marker is created by bash; dashMarker by dash -c (checked when
		// dash is installed: the payload shows a real difference).
		marker, dashMarker bool
		// unparsable: the analysis refuses the text (never allowed) and
		// bash runs nothing either.
		unparsable bool
		// conditional: the analysis lists touch, which bash may run but
		// does not here (the analysis over-approximates; never the reverse).
		conditional bool
	}{
		{name: "control: plain touch runs", command: "touch m", marker: true, dashMarker: true},
		{name: "&> is a redirection, the rest are ls arguments", command: "ls &>/dev/null touch m", dashMarker: true},
		{name: "[[ || ]] is a test, not a list", command: "[[ x || touch m = f ]]", unparsable: true, dashMarker: true},
		{name: "> inside [[ ]] compares strings", command: "[[ a > m ]]", dashMarker: true},
		{name: "(( 1 )) is arithmetic, true", command: "(( 1 )) || touch m", conditional: true, dashMarker: true},
		{name: "> inside (( )) compares numbers", command: "(( 2 > m ))", dashMarker: true},
		{name: "((...)) is not a nested subshell", command: "((touch m))", unparsable: true, dashMarker: true},
		{name: "ANSI-C quoting decodes the command name", command: `$'\x74ouch' m`, marker: true},
		// The analysis also judges an alias's literal value (it would run
		// wherever aliases are expanded), so it lists touch: conditional.
		{name: "an alias defined on one line is not expanded on the next", command: "alias ls='touch m'\nls >/dev/null", conditional: true, dashMarker: true},
	}
	r := newRunner(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := r
			r.Workspace = t.TempDir()
			marker := filepath.Join(r.Workspace, "m")
			prog, aerr := bashscan.Analyze(c.command)
			var se *bashscan.SyntaxError
			if c.unparsable != errors.As(aerr, &se) {
				t.Fatalf("analysis: %v, want unparsable=%v", aerr, c.unparsable)
			}
			res := runBash(t, r, c.command, 10_000)
			if got := exists(t, marker); got != c.marker {
				t.Fatalf("bash created the marker: %v, want %v (result %+v)", got, c.marker, res)
			}
			if res.Shell != r.Shell.String() || !strings.Contains(res.Shell, "bash") {
				t.Fatalf("result records shell %q, want %q", res.Shell, r.Shell)
			}
			switch {
			case c.unparsable:
				// Refused by the analysis; bash reports the error and runs
				// none of it (the marker check above).
				if !strings.Contains(res.Output, "syntax error") && !strings.Contains(res.Output, "expected") {
					t.Fatalf("bash did not reject the text: %+v", res)
				}
			case c.marker && !mayRunTouch(prog):
				t.Fatalf("bash ran touch, the analysis sees no command that could: %+v", prog.Commands)
			case c.conditional && !mayRunTouch(prog):
				t.Fatalf("the analysis misses a touch bash could run: %+v", prog.Commands)
			case !c.marker && !c.conditional && mayRunTouch(prog):
				t.Fatalf("the analysis sees touch where bash runs none: %+v", prog.Commands)
			}
			if sh, err := exec.LookPath("dash"); err == nil {
				dir := t.TempDir()
				cmd := exec.Command(sh, "-c", c.command)
				cmd.Dir = dir
				cmd.Run()
				if c.dashMarker && !exists(t, filepath.Join(dir, "m")) {
					t.Errorf("dash did not create the marker: the case no longer shows a difference")
				}
			}
		})
	}
}

// The parent environment cannot make bash run or parse something other
// than the command text: startup files, exported functions, shell options,
// POSIX mode and CDPATH are not inherited, nor the lifecycle's credentials.
func TestBashEnvironmentCannotChangeTheProgram(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string // %m is the marker path, %d a directory outside the workspace
		command string
		// wantOut, if set, must be the output; marker must never be created.
		wantOut string
	}{
		{name: "BASH_ENV is not sourced", env: map[string]string{"BASH_ENV": "%d/rc"}, command: "true"},
		{name: "an exported function does not shadow a command", env: map[string]string{"BASH_FUNC_ls%%": "() { touch %m; }"}, command: "ls >/dev/null"},
		{name: "BASHOPTS cannot turn aliases on", env: map[string]string{"BASHOPTS": "expand_aliases"}, command: "alias ls='touch m'\nls >/dev/null"},
		{name: "POSIXLY_CORRECT cannot turn aliases on", env: map[string]string{"POSIXLY_CORRECT": "1"}, command: "alias ls='touch m'\nls >/dev/null"},
		{name: "SHELLOPTS cannot turn xtrace on (PS4 runs code)", env: map[string]string{"SHELLOPTS": "xtrace", "PS4": "$(touch %m)+ "}, command: "echo ok", wantOut: "ok\n"},
		{name: "CDPATH cannot move cd out of the workspace", env: map[string]string{"CDPATH": "%d"}, command: "cd sub >/dev/null && touch m"},
		{name: "OLDPWD cannot send cd - out of the workspace", env: map[string]string{"OLDPWD": "%d"}, command: "cd - >/dev/null && touch m"},
		{name: "the host's token is not visible", env: map[string]string{"LIFECYCLE_TOKEN": "secret"}, command: `printf %s "${LIFECYCLE_TOKEN-unset}"`, wantOut: "unset"},
		{name: "control: an ordinary variable passes", env: map[string]string{"HOSTTOOLS_TEST_VAR": "seen"}, command: `printf %s "$HOSTTOOLS_TEST_VAR"`, wantOut: "seen"},
	}
	r := newRunner(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := r
			r.Workspace = t.TempDir()
			outside := t.TempDir()
			marker := filepath.Join(r.Workspace, "m")
			// Both places a payload could touch: the marker, and sub/m under
			// the CDPATH directory; the rc file touches the marker.
			os.MkdirAll(filepath.Join(outside, "sub"), 0o755)
			os.MkdirAll(filepath.Join(r.Workspace, "sub"), 0o755)
			os.WriteFile(filepath.Join(outside, "rc"), []byte("touch "+marker+"\n"), 0o644)
			for k, v := range c.env {
				t.Setenv(k, strings.NewReplacer("%m", marker, "%d", outside).Replace(v))
			}
			res := runBash(t, r, c.command, 10_000)
			if exists(t, marker) {
				t.Fatalf("the environment changed the program: marker created (%+v)", res)
			}
			if exists(t, filepath.Join(outside, "sub", "m")) || exists(t, filepath.Join(outside, "m")) {
				t.Fatalf("cd left the workspace (%+v)", res)
			}
			if c.wantOut != "" && res.Output != c.wantOut {
				t.Fatalf("output %q, want %q", res.Output, c.wantOut)
			}
		})
	}
}

func TestCommandEnv(t *testing.T) {
	in := []string{"PATH=/usr/bin", "HOME=/home/a", "OLDPWD=/etc", "BASH_ENV=/x", "ENV=/x", "BASH_FUNC_ls%%=() { :; }", "SHELLOPTS=xtrace",
		"BASHOPTS=expand_aliases", "POSIXLY_CORRECT=1", "CDPATH=/", "GLOBIGNORE=*", "PS4=$(x)", "PROMPT_COMMAND=x", "IFS=o",
		"LIFECYCLE_TOKEN=t", "LIFECYCLE_API=http://x", "GOPATH=/go", "weird-name=1", "noequals", "_under=1"}
	got := hosttools.CommandEnv(in)
	want := []string{"PATH=/usr/bin", "HOME=/home/a", "GOPATH=/go", "_under=1"}
	if !slices.Equal(got, want) {
		t.Fatalf("CommandEnv = %q, want %q", got, want)
	}
}

// The command runs in its own session and process group without a
// controlling terminal, with /dev/null as stdin.
func TestBashSessionAndStdin(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	r := newRunner(t)
	// Fields 5-7 of /proc/PID/stat: process group, session, tty_nr.
	res := runBash(t, r, `read -r pid comm state ppid pgrp sid tty rest < /proc/$$/stat; echo "$pid $pgrp $sid $tty"; readlink /proc/$$/fd/0`, 10_000)
	lines := strings.Split(strings.TrimSpace(res.Output), "\n")
	if res.Outcome != lifecycle.OutcomeSucceeded || len(lines) != 2 {
		t.Fatalf("%+v", res)
	}
	f := strings.Fields(lines[0])
	// In the sandbox the command is pid 2 of its own PID namespace, in the
	// session and group of the namespace's init (pid 1, bubblewrap's
	// --new-session); unconfined it leads its own.
	if len(f) != 4 || f[1] != f[2] || (f[1] != f[0] && f[1] != "1") || f[3] != "0" {
		t.Fatalf("pid pgrp sid tty = %q: want its own session and group, no terminal", lines[0])
	}
	if lines[1] != os.DevNull {
		t.Fatalf("stdin is %q, want %s", lines[1], os.DevNull)
	}
}

// A timeout or a cancel kills the whole process group: a background child
// does not live on to do its work.
func TestBashTimeoutAndCancelKillTheGroup(t *testing.T) {
	const command = "(sleep 1; touch late) & sleep 30"
	t.Run("timeout", func(t *testing.T) {
		r := newRunner(t)
		began := time.Now()
		res := runBash(t, r, command, 300)
		if res.Outcome != lifecycle.OutcomeFailed || res.ErrorCode != "timeout" {
			t.Fatalf("%+v", res)
		}
		if d := time.Since(began); d > 20*time.Second {
			t.Fatalf("took %s after a 300ms timeout", d)
		}
		time.Sleep(2500 * time.Millisecond)
		if exists(t, filepath.Join(r.Workspace, "late")) {
			t.Fatal("a child of the timed-out command lived on")
		}
	})
	t.Run("cancel", func(t *testing.T) {
		r := newRunner(t)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		args, _ := json.Marshal(map[string]any{"command": command})
		if _, err := r.Run(ctx, "Bash", args); err == nil {
			t.Fatal("a cancelled command reported a result")
		}
		time.Sleep(2500 * time.Millisecond)
		if exists(t, filepath.Join(r.Workspace, "late")) {
			t.Fatal("a child of the cancelled command lived on")
		}
	})
}

// A background process that keeps the output open does not hold the call
// beyond OutputGrace after the shell ended.
func TestBashBackgroundOutputDoesNotHoldTheCall(t *testing.T) {
	r := newRunner(t)
	began := time.Now()
	res := runBash(t, r, "sleep 8 & echo started", 60_000)
	if d := time.Since(began); d > hosttools.OutputGrace+4*time.Second {
		t.Fatalf("the call took %s", d)
	}
	if res.Outcome != lifecycle.OutcomeSucceeded || !strings.HasPrefix(res.Output, "started\n") {
		t.Fatalf("%+v", res)
	}
}

func TestFindBash(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "oldbash")
	os.WriteFile(old, []byte("#!/bin/sh\nprintf '3.2.57(1)-release'\n"), 0o755)
	notBash := filepath.Join(dir, "notbash")
	os.WriteFile(notBash, []byte("#!/bin/sh\nexit 0\n"), 0o755)
	cases := []struct {
		name, path, wantErr string
	}{
		{name: "default is bash in PATH", path: ""},
		{name: "missing", path: "no-such-bash-anywhere", wantErr: "host tools need bash"},
		{name: "not bash", path: notBash, wantErr: "is not bash"},
		{name: "too old", path: old, wantErr: "older than the bash 4 dialect"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sh, err := hosttools.FindBash(c.path)
			if c.wantErr == "" {
				if err != nil || !filepath.IsAbs(sh.Path) || sh.Version == "" {
					t.Fatalf("%+v %v", sh, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("error %v, want %q", err, c.wantErr)
			}
		})
	}
}

// The command runs where the permission engine resolved its paths: the
// workspace root. A cwd elsewhere is refused before anything runs.
func TestBashRunsInTheWorkspaceRoot(t *testing.T) {
	r := newRunner(t)
	os.MkdirAll(filepath.Join(r.Workspace, "sub"), 0o755)
	root, _ := filepath.EvalSymlinks(r.Workspace)
	cases := []struct {
		name, cwd string
		ok        bool
	}{
		{name: "no cwd", cwd: "", ok: true},
		{name: "dot", cwd: ".", ok: true},
		{name: "the root, absolute", cwd: r.Workspace, ok: true},
		{name: "a subdirectory", cwd: "sub"},
		{name: "outside", cwd: ".."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(filepath.Join(r.Workspace, "m"))
			args, _ := json.Marshal(map[string]any{"command": "pwd -P; touch m", "cwd": c.cwd})
			res, err := r.Run(context.Background(), "Bash", args)
			if err != nil {
				t.Fatal(err)
			}
			if !c.ok {
				if res.ErrorCode != "invalid_arguments" || exists(t, filepath.Join(r.Workspace, "sub", "m")) {
					t.Fatalf("cwd %q: %+v", c.cwd, res)
				}
				return
			}
			if res.Outcome != lifecycle.OutcomeSucceeded || strings.TrimSpace(res.Output) != root || !exists(t, filepath.Join(r.Workspace, "m")) {
				t.Fatalf("cwd %q: %+v, want it run in %s", c.cwd, res, root)
			}
		})
	}
}
