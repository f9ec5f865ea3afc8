// Package ids defines the identifiers of the action lifecycle's control plane
// (session, run, execution, attempt, revision, action, tool call, command,
// approval) as distinct string types, their validation and generation.
//
// It owns nothing else and imports nothing of the project: every other
// package may depend on it.
package ids
