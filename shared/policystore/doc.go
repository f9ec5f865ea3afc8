// Package policystore keeps each session's policy document: the permission
// rules and mode (in the format package permission parses) and the restart
// window, as one item SESSION#<session_id>/POLICY whose version is a
// compare-and-swap counter. Every change names the version it replaces; a
// stale one is a conflict carrying the current document, never a silent
// overwrite.
//
// It stores the permission part opaquely (json.RawMessage) and validates it
// through a Validator the caller supplies (the permission engine's parser),
// so this package never interprets rules. It imports no AWS package.
package policystore
