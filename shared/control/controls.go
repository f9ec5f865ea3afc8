package control

import (
	"fmt"

	"github.com/openprogram/lifecycle/shared/actionflow"
)

// Controls lists the controls an execution supports now, in display
// order: what the UI and API advertise (Debug Adapter Protocol style
// capabilities). Anything else is refused by Check with the reason.
func Controls(e actionflow.Execution) []Control {
	var out []Control
	for _, c := range UserControls {
		if Check(e, c) == nil {
			out = append(out, c)
		}
	}
	return out
}

// Check returns nil when e supports control c now, or an
// *UnsupportedError saying why not.
//
// By status: running → Pause, Steer, End, Cancel, Fork; paused →
// Continue, Step, Steer, End, Cancel, Fork; cancelling → nothing
// (cancellation takes precedence over everything else, and no child may
// appear while it reaches the descendants); cancelled, completed, failed →
// Fork, Retry. By kind: agent_chat supports all; function has no Steer (no
// model to instruct); job has no Step, Steer or Fork (a job is retried, not
// branched); End applies to every kind. The system controls are never
// advertised.
func Check(e actionflow.Execution, c Control) error {
	no := func(format string, a ...any) error {
		return &UnsupportedError{Control: c, Status: e.Status, Kind: e.Kind, Reason: fmt.Sprintf(format, a...)}
	}
	if c.system() {
		return nil // preconditions are checked when applied (restart.go)
	}
	if c == SetRevisionPolicy {
		// A setting of what later actions run on: while the execution can
		// still run (running or paused), never during a cancellation.
		if e.Status == actionflow.ExecRunning || e.Status == actionflow.ExecPaused {
			return nil
		}
		if e.Status == actionflow.ExecCancelling || e.Status == actionflow.ExecCancelled {
			return no("the execution is %s; cancellation takes precedence", e.Status)
		}
		return no("the execution has ended (%s); its revision policy no longer matters", e.Status)
	}
	switch e.Kind {
	case "function":
		if c == Steer {
			return no("function executions have no model to steer")
		}
	case "job":
		switch c {
		case Step, Steer, Fork:
			return no("%s is not supported for job executions", c)
		}
	}
	if c == End {
		switch e.Status {
		case actionflow.ExecRunning, actionflow.ExecPaused:
			return nil
		case actionflow.ExecCancelling, actionflow.ExecCancelled:
			return no("the execution is %s; cancellation takes precedence", e.Status)
		}
		return no("the execution has ended (%s)", e.Status)
	}
	switch e.Status {
	case actionflow.ExecRunning:
		switch c {
		case Pause, Steer, Cancel, Fork:
			return nil
		case Continue, Step:
			return no("the execution is running; %s applies to a paused execution", c)
		case Retry:
			return no("retry applies to an ended execution; fork a running one")
		}
	case actionflow.ExecPaused:
		switch c {
		case Continue, Step, Steer, Cancel, Fork:
			return nil
		case Pause:
			return no("the execution is already paused")
		case Retry:
			return no("retry applies to an ended execution; continue or fork a paused one")
		}
	case actionflow.ExecCancelling:
		// Not even Fork: a child created while the cancellation runs would
		// escape it. Fork or Retry once it is cancelled.
		return no("the execution is being cancelled; cancellation takes precedence (fork or retry it once it is cancelled)")
	case actionflow.ExecCancelled, actionflow.ExecCompleted, actionflow.ExecFailed:
		if c == Fork || c == Retry {
			return nil
		}
		return no("the execution has ended (%s)", e.Status)
	}
	return no("unknown execution status %q", e.Status)
}
