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

// Windows reads a session's own restart window (its policy's
// restart_window_seconds: -1 unlimited, 0 disabled, > 0 seconds); set is
// false when the session set none, and Config.Window applies.
// *policystore.Store satisfies it.
type Windows interface {
	SessionRestartWindow(ctx context.Context, session ids.SessionID) (seconds int64, set bool, err error)
}
