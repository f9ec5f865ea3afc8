package asl

import (
	"fmt"
	"strings"
)

// Error names defined by the Amazon States Language (appendix A) that this
// package knows. A name starting with "States." that is not listed here is
// refused in ErrorEquals: it would be a typo that silently never matches.
const (
	ErrALL                   = "States.ALL"
	ErrDataLimitExceeded     = "States.DataLimitExceeded"
	ErrHeartbeatTimeout      = "States.HeartbeatTimeout"
	ErrTimeout               = "States.Timeout"
	ErrTaskFailed            = "States.TaskFailed"
	ErrPermissions           = "States.Permissions"
	ErrResultPathMatch       = "States.ResultPathMatchFailure"
	ErrParameterPathFailure  = "States.ParameterPathFailure"
	ErrBranchFailed          = "States.BranchFailed"
	ErrNoChoiceMatched       = "States.NoChoiceMatched"
	ErrIntrinsicFailure      = "States.IntrinsicFailure"
	ErrRuntime               = "States.Runtime"
	ErrExceedToleratedFailed = "States.ExceedToleratedFailureThreshold"
)

var knownStatesErrors = map[string]bool{
	ErrALL: true, ErrDataLimitExceeded: true, ErrHeartbeatTimeout: true, ErrTimeout: true,
	ErrTaskFailed: true, ErrPermissions: true, ErrResultPathMatch: true, ErrParameterPathFailure: true,
	ErrBranchFailed: true, ErrNoChoiceMatched: true, ErrIntrinsicFailure: true, ErrRuntime: true,
	ErrExceedToleratedFailed: true,
}

// Terminal reports whether an error ends the execution without consulting
// Retry or Catch. Step Functions documents that States.Runtime is not
// retriable and that States.ALL catches neither it nor
// States.DataLimitExceeded.
func Terminal(name string) bool {
	return name == ErrRuntime || name == ErrDataLimitExceeded
}

// MatchesError reports whether an ErrorEquals list matches an error name:
//   - terminal errors (States.Runtime, States.DataLimitExceeded) never match;
//   - States.ALL matches every other name;
//   - States.TaskFailed matches every other name except the timeouts
//     (States.Timeout and States.HeartbeatTimeout: the specification defines
//     States.Timeout as covering heartbeat expiry, and a generic
//     "the task failed" retrier must not quietly retry an expired wait);
//   - States.Timeout also matches States.HeartbeatTimeout, for the same reason;
//   - any other entry matches exactly (names are case-sensitive).
func MatchesError(errorEquals []string, name string) bool {
	if Terminal(name) {
		return false
	}
	isTimeout := name == ErrTimeout || name == ErrHeartbeatTimeout
	for _, e := range errorEquals {
		switch {
		case e == ErrALL:
			return true
		case e == ErrTaskFailed && !isTimeout:
			return true
		case e == ErrTimeout && isTimeout:
			return true
		case e == name:
			return true
		}
	}
	return false
}

// RuntimeError is a failure raised while executing a state. Name is the
// Step Functions error name; Cause the human-readable cause.
type RuntimeError struct {
	Name  string
	Cause string
}

func (e *RuntimeError) Error() string { return e.Name + ": " + e.Cause }

func runtimeErrorf(format string, args ...any) *RuntimeError {
	return &RuntimeError{Name: ErrRuntime, Cause: fmt.Sprintf(format, args...)}
}

// Problem is one reason a definition was refused.
type Problem struct {
	// Path is the JSON path of the offending field, e.g.
	// "States.Authorize.Retry[0].ErrorEquals".
	Path    string
	Message string
}

func (p Problem) String() string {
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}

// ValidationError lists every problem found in a definition.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	if len(lines) == 1 {
		return "invalid state machine definition: " + lines[0]
	}
	return fmt.Sprintf("invalid state machine definition (%d problems):\n  %s", len(lines), strings.Join(lines, "\n  "))
}
