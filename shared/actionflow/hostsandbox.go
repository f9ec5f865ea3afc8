package actionflow

import (
	"context"
	"errors"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/sandbox"
)

// SandboxOf is the sandbox profile an action's host tool runs in: the one
// its permission decision chose (after an approval, the revalidated
// decision: a relaxed call runs relaxed only once a person approved it),
// sandbox.Default() when it chose none.
func SandboxOf(a Action) *sandbox.Profile {
	if a.Decision != nil && a.Decision.Sandbox != nil {
		p := *a.Decision.Sandbox
		return &p
	}
	p := sandbox.Default()
	return &p
}

// ErrSandboxOff is HostRefuse's answer for a task whose profile is off:
// the policy runs it unconfined, so a host without bubblewrap runs it.
var ErrSandboxOff = errors.New("the policy runs this call unconfined (sandbox off); it needs no sandbox")

// HostRefuse closes a published, unclaimed host task that the host cannot
// run at all (bubblewrap missing and the profile is not off) and completes
// its dispatch wait with res, whose outcome becomes not_started: nothing
// was claimed, so nothing started. The closure is a compare-and-swap on
// the action, so a racing claim either wins (and the refusal is a
// ConflictError) or loses. A task whose profile is off is not refused
// (ErrSandboxOff): the host runs it unconfined.
func (s *Service) HostRefuse(ctx context.Context, id ids.ActionID, res ToolResult) error {
	a, err := s.getAction(ctx, id)
	if err != nil {
		return err
	}
	if a.Host == nil {
		return &ConflictError{Code: "not_published", Msg: "the action is not waiting for a host"}
	}
	if p := SandboxOf(a); p.Mode == sandbox.ModeOff {
		return ErrSandboxOff
	}
	res.Outcome = lifecycle.OutcomeNotStarted
	a, err = s.updateLoaded(ctx, id, &a, 0, func(a *Action) error {
		if a.Start != nil {
			return &ConflictError{Code: "already_started", Msg: "attempt " + string(a.Start.AttemptID) + " started it"}
		}
		if a.Closed != nil {
			return errStop
		}
		r := res
		a.Closed = &Closure{Reason: "host_refused: " + res.ErrorCode, At: s.now()}
		a.Result = &r
		return nil
	})
	if err != nil {
		return err
	}
	if a.Result == nil || a.Result.ErrorCode != res.ErrorCode {
		return nil // closed otherwise before: that closure stands
	}
	return s.completeHostWait(ctx, a, *a.Result)
}
