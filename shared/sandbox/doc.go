// Package sandbox describes the confinement a host tool runs in: the
// profile the permission decision chooses, that the host worker applies
// (bubblewrap on Linux) and that the receipt records as what actually ran.
//
// A Profile names the mode (bwrap: confined; off: the policy explicitly
// turned the sandbox off, which every receipt then says), whether the
// network is reachable, and the paths the policy adds to the default
// view: the workspace and a private temporary directory are writable,
// the rest of the filesystem is read-only, the service's state directory
// and the user's credential stores are not visible at all.
//
// View.Args is bubblewrap's command line for a profile on a host:
// --ro-bind / /, --dev /dev, --proc /proc, --tmpfs /tmp (a private temp
// dir), the workspace and writable extras bound writable, read-only
// extras bound read-only, then every hidden path masked (a directory by a
// read-only empty tmpfs, a file by an empty read-only file: bubblewrap
// binds /dev/null nodev, so reading it would fail with EACCES instead of
// finding nothing), --unshare-net unless Network, --unshare-pid,
// --new-session and --die-with-parent. Extra paths must be absolute,
// clean and exist; a writable extra may not be, contain or lie inside a
// hidden path, and "/" is never a writable extra (that is mode off).
// Hidden paths look empty from inside, not absent: mounts cannot remove a
// name from a read-only directory.
//
// View.Classify is the same view as a question about one path (hidden,
// read-only, writable), for tools that run in-process. Detect reads a
// failed command's output for what the sandbox blocked: EROFS on a write
// outside the view, and with the network closed an unreachable network, a
// failed name lookup or a refused connection. A hidden path cannot be
// detected (it looks like an empty place, by design).
package sandbox
