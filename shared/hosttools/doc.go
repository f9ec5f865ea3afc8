// Package hosttools implements the tools a host worker runs on the agent's
// machine, confined to one workspace directory: Bash (sh -c with a timeout
// and bounded output, working directory inside the workspace), Read, Write
// and Edit (also under the names read_file, write_file, edit_file).
//
// Path arguments are resolved inside the workspace; a path that escapes it
// (.., an absolute path elsewhere, a symlink pointing out) is refused as
// invalid arguments before anything runs. This package does not decide
// permission: it runs only tasks the lifecycle authorized.
package hosttools
