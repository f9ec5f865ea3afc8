package recovery

import (
	"context"

	"github.com/openprogram/lifecycle/shared/ids"
)

// Machines reads the state machine execution of an action (named after
// the action). shared/sfnclient.Client satisfies it in AWS and against the
// embedded engine; tests use flowtest.Engine.
type Machines interface {
	// Status is "RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"
	// or "PENDING_REDRIVE", and "" when the action's machine was never started.
	Status(ctx context.Context, a ids.ActionID) (string, error)
}

// Machine statuses the sweeper routes on.
const (
	MachineNone    = ""
	MachineRunning = "RUNNING"
)
