package actionflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store"
)

// ReasonIterationLimit is the End reason (and the refusal's reason code)
// when an execution exhausts its iteration limit.
const ReasonIterationLimit = "iteration_limit"

// admitIteration counts action a against its execution's iteration limit
// at initial authorization (compare-and-swap on the execution, so parallel
// actions cannot both take the last iteration). An iteration is a tool
// call of the execution that reaches authorization while the execution
// admits work, whatever the permission decision then is (model requests
// are accounted by package modelreq and do not count). Counting the same action
// again is idempotent. The call that would exceed the limit is refused and
// ends the execution failed with reason iteration_limit, keeping its
// history: its other unstarted actions are closed (pending approvals
// cancelled) and started ones finish and record.
func (s *Service) admitIteration(ctx context.Context, a Action) (Decision, bool, error) {
	for i := 0; ; i++ {
		exe, err := s.GetExecution(ctx, a.ExecutionID)
		if err != nil {
			return Decision{}, false, err
		}
		for _, id := range exe.Iterations {
			if id == a.ActionID {
				return Decision{}, false, nil
			}
		}
		if d, stop := controlDecision(exe, a.ActionID); stop {
			return d, true, nil
		}
		if exe.IterationLimit <= 0 {
			return Decision{}, false, nil
		}
		exhausted := len(exe.Iterations) >= exe.IterationLimit
		now := s.now()
		if exhausted {
			exe.Status, exe.PauseOwner, exe.PauseReason, exe.StepBudget, exe.Restart = ExecFailed, "", "", 0, nil
			exe.End = &EndInfo{Status: ExecFailed, Reason: ReasonIterationLimit, By: "system", At: now,
				Message: fmt.Sprintf("the execution used its %d iterations (tool calls); %s %s was refused", exe.IterationLimit, a.Tool, a.ActionID)}
		} else {
			exe.Iterations = append(exe.Iterations, a.ActionID)
		}
		exe.LastActivity = now
		err = s.SaveExecution(ctx, &exe, exe.Version, 0)
		var vc *store.VersionConflictError
		// A lost race means another writer moved the execution (at most
		// once per counted call, plus control writes), so this ends.
		if errors.As(err, &vc) && i < exe.IterationLimit+16 {
			continue
		}
		if err != nil {
			return Decision{}, false, fmt.Errorf("count iteration: %w", err)
		}
		if !exhausted {
			return Decision{}, false, nil
		}
		s.logFor(&a).Info("iteration limit exhausted: execution failed", "iteration_limit", exe.IterationLimit)
		if _, err := s.AppendEvent(ctx, Event{Type: "execution.ended", SessionID: exe.SessionID, ExecutionID: exe.ExecutionID},
			map[string]any{"execution_version": exe.Version, "end": exe.End}); err != nil {
			s.logFor(&a).Warn("execution.ended event not appended", "error", err)
		}
		if err := s.CloseUnstarted(ctx, exe.ExecutionID, "execution_ended", a.ActionID); err != nil {
			return Decision{}, false, err
		}
		return Decision{Permission: lifecycle.PermissionDeny,
			Reason: Reason{Source: "execution_control", Code: ReasonIterationLimit,
				Detail: fmt.Sprintf("the execution reached its iteration limit (%d tool calls) and has ended (failed: iteration_limit)", exe.IterationLimit)},
			Resolution: "start a new execution (Retry or Fork)"}, true, nil
	}
}

// CloseUnstarted closes every action of execution exec that has not
// started (except except), with reason, and fails its wait (a pending
// approval becomes cancelled); started actions finish and record their
// results. Every end of an execution passes through it (End, the
// iteration limit, Cancel and its sweeps), so it also has Config.RunWork
// close the run's other open work (model requests reported started and
// never completed are closed incomplete). Idempotent.
func (s *Service) CloseUnstarted(ctx context.Context, exec ids.ExecutionID, reason string, except ids.ActionID) error {
	after := ""
	for {
		page, next, err := s.OpenActions(ctx, after, store.MaxLimit)
		if err != nil {
			return err
		}
		for _, a := range page {
			if a.ExecutionID != exec || a.ActionID == except {
				continue
			}
			if _, err := s.CancelAction(ctx, a.ActionID, reason); err != nil {
				return err
			}
		}
		if next == "" {
			break
		}
		after = next
	}
	if s.cfg.RunWork != nil {
		if err := s.cfg.RunWork.CloseExecution(ctx, exec, reason); err != nil {
			return fmt.Errorf("close the open work of %s: %w", exec, err)
		}
	}
	return nil
}
