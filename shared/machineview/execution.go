package machineview

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/openprogram/lifecycle/shared/ids"
)

// ErrNoExecution: the action has no state machine execution (its start
// failed, or it is not started yet).
var ErrNoExecution = errors.New("the action has no state machine execution")

// Reader reads an action's execution (sfnclient.Client).
type Reader interface {
	// ExecutionARN is the ARN the action's execution has (or will have).
	ExecutionARN(a ids.ActionID) string
	// ReadExecution reads the execution, its definition and its whole
	// history (oldest event first); ErrNoExecution when there is none.
	ReadExecution(ctx context.Context, a ids.ActionID) (Execution, error)
}

// Execution is one execution as Step Functions describes it.
type Execution struct {
	ExecutionARN    string
	StateMachineARN string
	// Status as Step Functions names it: RUNNING, SUCCEEDED, FAILED,
	// TIMED_OUT, ABORTED, PENDING_REDRIVE.
	Status    string
	StartDate time.Time
	StopDate  *time.Time
	// Error and Cause of an execution that did not succeed.
	Error, Cause string
	// Definition is the ASL the execution runs (DescribeStateMachineForExecution).
	Definition json.RawMessage
	// Events is the history, oldest first.
	Events []Event
}

// Event is one history event, with the fields every console shows of its
// details object: the state it names, its input and output (JSON text as
// Step Functions keeps it; empty and marked truncated when too large), the
// error and cause of a failure, the task's resource.
type Event struct {
	ID              int64     `json:"id"`
	PreviousID      int64     `json:"previous_id"`
	Timestamp       time.Time `json:"timestamp"`
	Type            string    `json:"type"`
	State           string    `json:"state,omitempty"`
	Input           *string   `json:"input,omitempty"`
	InputTruncated  bool      `json:"input_truncated,omitempty"`
	Output          *string   `json:"output,omitempty"`
	OutputTruncated bool      `json:"output_truncated,omitempty"`
	Error           string    `json:"error,omitempty"`
	Cause           string    `json:"cause,omitempty"`
	ResourceType    string    `json:"resource_type,omitempty"`
	Resource        string    `json:"resource,omitempty"`
}
