package recovery

import (
	"context"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
)

// sweepExecutions finishes what is pending on executions: commands that
// were saved but not applied (a crashed applier, a lease that was held),
// cancellations waiting for their last action's receipt, and every pause
// owned by restart recovery that is not expired: decided again with the
// start-up rules and command identities (resumed once unblocked, within
// the deadline; expired after it; still blocked while unresolved); and
// running executions idle past their idle timeout, ended failed with
// reason abandoned (abandonIfIdle).
func (s *Sweeper) sweepExecutions(ctx context.Context, attempt ids.AttemptID) ([]ExecutionReport, error) {
	var out []ExecutionReport
	pending, err := s.cfg.Control.PendingExecutions(ctx)
	if err != nil {
		return nil, err
	}
	done := map[ids.ExecutionID]bool{}
	open, err := s.openActionsByExecution(ctx)
	if err != nil {
		return nil, err
	}
	for _, exec := range pending {
		done[exec] = true
		er := ExecutionReport{ExecutionID: exec, Did: "commands"}
		if err := s.cfg.Control.Reconcile(ctx, exec); err != nil {
			er.Error = err.Error()
		}
		out = append(out, er)
	}
	err = s.eachOpenExecution(ctx, func(e actionflow.Execution) {
		switch {
		case e.Status == actionflow.ExecCancelling && !done[e.ExecutionID]:
			er := ExecutionReport{ExecutionID: e.ExecutionID, Did: "cancelling"}
			if err := s.cfg.Control.Reconcile(ctx, e.ExecutionID); err != nil {
				er.Error = err.Error()
			} else if got, err := s.cfg.Flow.GetExecution(ctx, e.ExecutionID); err == nil && got.Status == actionflow.ExecCancelled {
				er.Did = "cancelled"
			}
			out = append(out, er)
		case e.Status == actionflow.ExecRunning && e.IdleTimeoutSeconds > 0 && !done[e.ExecutionID]:
			// A control saved for it this sweep was pending: not idle.
			if er, acted := s.abandonIfIdle(ctx, e, open[e.ExecutionID]); acted {
				out = append(out, er)
			}
		case e.Status == actionflow.ExecPaused && restartOwned(e):
			// Every pause owned by restart recovery (blocked, or a shutdown
			// pause no start-up decided) is decided again by the same rules
			// as at start-up; running executions are their owners'.
			er := s.restartOne(ctx, attempt, e.ExecutionID, true, open[e.ExecutionID])
			if er.Did != "skipped" && er.Did != "kept" {
				out = append(out, er)
			}
		}
	})
	return out, err
}
