package actionflow

import (
	"errors"
	"fmt"

	"github.com/openprogram/lifecycle/shared/faults"
	"github.com/openprogram/lifecycle/shared/store"
)

// The errors below are the ones Step Functions routes on. Their Go type name
// IS the ASL ErrorEquals name (aws-lambda-go reports the type name, pointer
// stripped), so handlers return them unwrapped at top level. The ASL test
// checks that every ErrorEquals name in the state machine is one of them.

// TransientError: a dependency failed before anything irreversible happened
// (store unavailable, throttled). The step is idempotent; retrying is safe.
type TransientError struct{ Msg string }

func (e *TransientError) Error() string { return "transient: " + e.Msg }

// NotStartedError: dispatch failed before execution-start evidence was
// written, so the operation provably did not start. Retrying dispatch is safe.
type NotStartedError struct {
	Code string
	Msg  string
}

func (e *NotStartedError) Error() string { return fmt.Sprintf("not started (%s): %s", e.Code, e.Msg) }

// PermanentError: the step cannot succeed with this input (unknown action,
// invalid arguments, no executor for the tool). Never retried.
type PermanentError struct {
	Code string
	Msg  string
}

func (e *PermanentError) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Msg) }

// CheckpointError: the receipt is sealed but the checkpoint could not be
// written. It is a runtime failure, reported separately from the tool
// outcome; the receipt stands and recovery rebuilds the checkpoint from it.
type CheckpointError struct {
	ActionID string
	Msg      string
}

func (e *CheckpointError) Error() string {
	return fmt.Sprintf("checkpoint after receipt of %s: %s", e.ActionID, e.Msg)
}

// ApprovalDeclined is the SendTaskFailure error of a declined approval.
const ApprovalDeclined = "ApprovalDeclined"

// ApprovalSuperseded is the SendTaskFailure error of a wait replaced by a newer one.
const ApprovalSuperseded = "ApprovalSuperseded"

// ExecutionCancelled is the SendTaskFailure error when the execution was cancelled during a wait.
const ExecutionCancelled = "ExecutionCancelled"

// StepErrorNames lists every error name the handlers and the approval
// service produce, for the ASL consistency test.
var StepErrorNames = []string{
	"TransientError", "NotStartedError", "PermanentError", "CheckpointError",
	ApprovalDeclined, ApprovalSuperseded, ExecutionCancelled,
}

// stepError turns a store failure into the error Step Functions routes on.
func stepError(what string, err error) error {
	if err == nil {
		return nil
	}
	// An injected crash (test builds only) stays a crash: the engine must
	// see the handler die there, not a retryable failure.
	var crash *faults.CrashError
	if errors.As(err, &crash) {
		return crash
	}
	var te *TransientError
	var ns *NotStartedError
	var pe *PermanentError
	var ce *CheckpointError
	if errors.As(err, &te) {
		return te
	}
	if errors.As(err, &ns) {
		return ns
	}
	if errors.As(err, &pe) {
		return pe
	}
	if errors.As(err, &ce) {
		return ce
	}
	if errors.Is(err, store.ErrUnavailable) {
		return &TransientError{Msg: what + ": " + err.Error()}
	}
	if errors.Is(err, store.ErrNotFound) {
		return &PermanentError{Code: "not_found", Msg: what + ": " + err.Error()}
	}
	return &TransientError{Msg: what + ": " + err.Error()}
}

// ConflictError is an API-level conflict (a second approval decision, an
// idempotency key reused with another body).
type ConflictError struct {
	Code string
	Msg  string
	// Current carries the stored state the caller lost to (e.g. the first decision).
	Current any
}

func (e *ConflictError) Error() string { return e.Code + ": " + e.Msg }

// ValidationError names the field that is wrong.
type ValidationError struct {
	Field string
	Msg   string
}

func (e *ValidationError) Error() string { return e.Field + ": " + e.Msg }

// ForbiddenError: the principal may not do this.
type ForbiddenError struct{ Msg string }

func (e *ForbiddenError) Error() string { return "forbidden: " + e.Msg }

// NotFoundError: the addressed object does not exist (or is not visible).
type NotFoundError struct{ What string }

func (e *NotFoundError) Error() string { return e.What + " not found" }
