package hosttools

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// BashArgs are the options the Bash tool runs a command with, before the
// command itself: no profile, no rc file, the command as the script.
var BashArgs = []string{"--noprofile", "--norc", "-c"}

// MinBashMajor is the oldest bash whose dialect matches what the permission
// engine analyses (mvdan.cc/sh/v3/syntax, LangBash): bash 3.2 (macOS
// /bin/bash) does not know &>> or |&, and reads `ls &>>f touch m` as `ls &`
// followed by `>>f touch m`.
const MinBashMajor = 4

// Shell is the bash that runs the Bash tool's commands: the shell whose
// dialect the permission engine analyses.
type Shell struct {
	// Path is the absolute path of the bash binary.
	Path string
	// Version is its $BASH_VERSION, e.g. "5.2.15(1)-release".
	Version string
}

// String is how a result records the shell: "/usr/bin/bash 5.2.15(1)-release".
func (s Shell) String() string { return s.Path + " " + s.Version }

// FindBash resolves and checks the bash that runs commands. path is an
// absolute path, a name looked up in PATH, or empty for "bash" in PATH. The
// binary is run once (with the same options and environment filter as the
// commands) to read $BASH_VERSION: a "bash" that is really another shell, or
// a bash older than MinBashMajor, is refused with an error saying so.
func FindBash(path string) (Shell, error) {
	if path == "" {
		path = "bash"
	}
	found, err := exec.LookPath(path)
	if err != nil {
		return Shell{}, fmt.Errorf("host tools need bash (the dialect the permission engine analyses): %w", err)
	}
	abs, err := filepath.Abs(found)
	if err != nil {
		return Shell{}, fmt.Errorf("host tools: bash path %s: %w", found, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, abs, append(append([]string{}, BashArgs...), `printf %s "$BASH_VERSION"`)...)
	cmd.Env = CommandEnv(nil)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return Shell{}, fmt.Errorf("host tools: %s does not run as bash: %w", abs, err)
	}
	version := strings.TrimSpace(out.String())
	if version == "" {
		return Shell{}, fmt.Errorf("host tools: %s is not bash (no $BASH_VERSION); the permission engine analyses bash, so commands must run in bash", abs)
	}
	major, _, _ := strings.Cut(version, ".")
	if n, err := strconv.Atoi(major); err != nil || n < MinBashMajor {
		return Shell{}, fmt.Errorf("host tools: %s is bash %s, older than the bash %d dialect the permission engine analyses; install a newer bash and configure its path", abs, version, MinBashMajor)
	}
	return Shell{Path: abs, Version: version}, nil
}

// defaultShell is FindBash("") resolved once per process, for a Runner
// built without NewRunner.
var defaultShell = sync.OnceValues(func() (Shell, error) { return FindBash("") })

// NewRunner returns a Runner on workspace whose Bash tool runs commands in
// the bash at bashPath (empty: "bash" in PATH), resolved and checked now, so
// a host without a usable bash fails at start-up rather than per task.
func NewRunner(workspace, bashPath string) (Runner, error) {
	sh, err := FindBash(bashPath)
	if err != nil {
		return Runner{}, err
	}
	return Runner{Workspace: workspace, Shell: sh}, nil
}

// shell is the Runner's bash: its configured one, or the default resolved once.
func (r Runner) shell() (Shell, error) {
	if r.Shell.Path != "" {
		return r.Shell, nil
	}
	return defaultShell()
}

// strippedEnv are the variables bash reads to change what a command string
// means or runs before, around or instead of it. The permission engine
// analyses the command text alone, so none of them may reach the shell.
var strippedEnv = map[string]string{
	"BASH_ENV":            "a file bash sources before a non-interactive command (--norc does not stop it)",
	"ENV":                 "the same in POSIX mode",
	"SHELLOPTS":           "set -o options enabled at start (xtrace, posix...)",
	"BASHOPTS":            "shopt options enabled at start (expand_aliases turns on aliases)",
	"POSIXLY_CORRECT":     "POSIX mode (aliases expand in scripts, other parsing rules)",
	"BASH_COMPAT":         "an older bash's behaviour",
	"CDPATH":              "cd into a directory elsewhere than the analysed path",
	"OLDPWD":              "where cd - goes (bash imports it; the analysis cannot know it)",
	"GLOBIGNORE":          "changes what patterns expand to",
	"EXECIGNORE":          "changes which program a name runs",
	"BASH_LOADABLES_PATH": "where enable -f finds builtins",
	"IFS":                 "word splitting (bash resets it, but no shell should inherit it)",
	"PS0":                 "prompt strings are expanded (and run command substitutions)",
	"PS1":                 "prompt",
	"PS2":                 "prompt",
	"PS3":                 "prompt",
	"PS4":                 "expanded before each traced command under xtrace",
	"PROMPT_COMMAND":      "a command run before each prompt",
	"BASH_XTRACEFD":       "where xtrace writes",
}

// strippedPrefixes: exported functions (bash imports BASH_FUNC_name%%=() {...}
// as a function that shadows a command of that name) and the lifecycle's own
// configuration (LIFECYCLE_TOKEN is the host worker's credential).
var strippedPrefixes = []string{"BASH_FUNC_", "LIFECYCLE_"}

// CommandEnv is the environment a Bash command runs with: environ (nil: the
// process environment) without the variables that change what bash does
// with the command text (strippedEnv, exported functions) and without the
// lifecycle's own LIFECYCLE_* variables. Everything else passes, so the
// command sees the developer's PATH, HOME and toolchain variables. Entries
// that are not NAME=value with a shell identifier as the name are dropped:
// no analysed program can refer to them, and bash would pass them on
// unseen.
func CommandEnv(environ []string) []string {
	if environ == nil {
		environ = os.Environ()
	}
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || !identifier(name) || strippedEnv[name] != "" || hasAnyPrefix(name, strippedPrefixes) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// identifier reports whether name is a shell variable name.
func identifier(name string) bool {
	if name == "" {
		return false
	}
	for i, c := range name {
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && '0' <= c && c <= '9':
		default:
			return false
		}
	}
	return true
}
