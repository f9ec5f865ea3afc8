// Package hosttools implements the tools a host worker runs on the agent's
// machine, confined to one workspace directory: Bash, Read, Write and Edit
// (also under the names read_file, write_file, edit_file).
//
// Bash runs the command in bash (`<bash> --noprofile --norc -c <command>`),
// the dialect the permission engine analyses (mvdan.cc/sh LangBash), never
// /bin/sh: under dash, `ls &>/dev/null rm -rf ~` would run rm. The bash is
// resolved once to an absolute path and checked to be bash 4 or later
// (NewRunner, FindBash); every result records it (ToolResult.Shell). So
// that nothing but the command text decides what runs, the environment is
// the process's minus what bash reads to run or parse anything else
// (BASH_ENV, ENV, exported BASH_FUNC_* functions, SHELLOPTS, BASHOPTS,
// POSIXLY_CORRECT, BASH_COMPAT, CDPATH, OLDPWD, GLOBIGNORE, EXECIGNORE, IFS, the
// prompt variables, see CommandEnv) and minus the lifecycle's own
// LIFECYCLE_* variables (the host worker's token); stdin is /dev/null; the
// command runs in its own session (no controlling terminal, so nothing can
// prompt on /dev/tty) and process group, which a timeout or cancel kills
// whole. Output is bounded; a background process that keeps the output
// open is not waited for longer than OutputGrace after the shell ended.
//
// StartBackground starts a Bash call with run_in_background the same way
// (program, environment, directory, session and group) with pipes for its
// two streams and no timeout; the host worker's supervisor owns it. Run
// refuses such a call: it never runs a background request in the
// foreground.
//
// A Bash command runs in the workspace root, where the permission engine
// resolves its relative paths; a cwd argument other than the root is
// refused (the command itself may cd, which the engine follows).
//
// Every call runs in the sandbox of its profile (sandbox.Profile, the
// decision's; RunIn): Bash as `bwrap <sandbox.View.Args> <bash> ...`, the
// file tools in-process with the same view (sandbox.View.Classify): a
// hidden path (the state directory, the credential stores of
// permission.DefaultCredentialStores under $HOME) is neither read nor
// written. NewConfinement finds bubblewrap and probes it once; when it is
// missing or unusable, a call whose profile is not off is not started
// (sandbox_unavailable, with the fix: apt-get install bubblewrap). A Bash
// call that failed because the sandbox blocked it (sandbox.Detect) fails
// with code sandbox_denied and an error that says what was blocked and how
// to ask for more ("network": true, "dangerouslyDisableSandbox": true).
// Every result of a call that ran records its profile (ToolResult.Sandbox).
//
// Path arguments are resolved inside the workspace; a path that escapes it
// (.., an absolute path elsewhere, a symlink pointing out) is refused as
// invalid arguments before anything runs. This package does not decide
// permission: it runs only tasks the lifecycle authorized.
package hosttools
