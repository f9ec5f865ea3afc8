package control

import (
	"fmt"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/store"
)

// StaleVersionError: the command was made against an execution version
// that is no longer current. Nothing was saved; re-read and decide again.
type StaleVersionError struct {
	ExecutionID ids.ExecutionID
	Expected    int64
	Actual      int64
}

func (e *StaleVersionError) Error() string {
	return fmt.Sprintf("execution %s is at version %d, the command expected %d", e.ExecutionID, e.Actual, e.Expected)
}
func (e *StaleVersionError) Is(t error) bool { return t == store.ErrConflict }

// UnsupportedError: the execution does not support this control now (its
// status or kind), with the reason to show.
type UnsupportedError struct {
	Control Control
	Status  actionflow.ExecutionStatus
	Kind    string
	Reason  string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("%s is not available: %s", e.Control, e.Reason)
}

// CompletionConflictError: marking a command applied or rejected lost a
// race to a different completion (a rejection, or an application at
// another result version). The stored completion stands; this is an error,
// never silently accepted.
type CompletionConflictError struct {
	Stored   Record
	Proposed Record
}

func (e *CompletionConflictError) Error() string {
	return fmt.Sprintf("command %s of %s completed as %s (result version %d); refused %s (result version %d)",
		e.Stored.CommandID, e.Stored.ExecutionID, e.Stored.Status, e.Stored.ResultVersion, e.Proposed.Status, e.Proposed.ResultVersion)
}
func (e *CompletionConflictError) Is(t error) bool { return t == store.ErrConflict }
