// Package policystore keeps each session's policy document: the permission
// rules and mode (in the format package permission parses) and the
// execution settings beside it (Settings: the restart window, the iteration
// limit and the idle timeout of executions that start without their own;
// each "session" when the policy sets it, else the service's "default"),
// as one item SESSION#<session_id>/POLICY whose version is a
// compare-and-swap counter. Every change names the version it replaces; a
// stale one is a conflict carrying the current document, never a silent
// overwrite.
//
// It stores the permission part opaquely (json.RawMessage) and validates it
// through a Validator the caller supplies (the permission engine's parser),
// so this package never interprets rules. ExecutionDefaults is what an
// execution that starts now runs under (actionflow copies it onto the
// execution, so a later change never alters a running one). It imports no AWS package.
package policystore
