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
package sandbox
