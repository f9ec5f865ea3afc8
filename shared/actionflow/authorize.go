package actionflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/openprogram/lifecycle/shared/identity"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store"
)

// AuthorizeOutput is what the Choice states route on ($.decision).
type AuthorizeOutput struct {
	Permission    lifecycle.Permission `json:"permission"`
	Executor      string               `json:"executor,omitempty"`
	ReasonSource  string               `json:"reason_source"`
	ReasonCode    string               `json:"reason_code"`
	PolicyVersion string               `json:"policy_version"`
	ArgsDigest    string               `json:"args_digest"`
	Fallback      bool                 `json:"fallback,omitempty"`
}

func outputOf(d Decision) AuthorizeOutput {
	return AuthorizeOutput{Permission: d.Permission, Executor: d.Executor, ReasonSource: d.Reason.Source,
		ReasonCode: d.Reason.Code, PolicyVersion: d.PolicyVersion, ArgsDigest: d.ArgsDigest, Fallback: d.Fallback}
}

// Authorize is the authorize step. Mode "initial" decides the action;
// mode "revalidate" re-checks it after an approval, immediately before
// dispatch. The decision is written bound to action, execution, tool call,
// policy version and args digest.
func (s *Service) Authorize(ctx context.Context, in StepInput) (AuthorizeOutput, error) {
	out, err := s.authorize(ctx, in)
	return out, stepError("authorize "+string(in.ActionID), err)
}

func (s *Service) authorize(ctx context.Context, in StepInput) (AuthorizeOutput, error) {
	if s.cfg.Decider == nil {
		return AuthorizeOutput{}, &PermanentError{Code: "misconfigured", Msg: "no permission decider configured"}
	}
	a, err := s.getAction(ctx, in.ActionID)
	if err != nil {
		return AuthorizeOutput{}, err
	}
	mode := in.Mode
	if mode == "" {
		mode = "initial"
	}
	// Idempotent re-invocation: a decision of this mode already stands.
	if a.Decision != nil && a.Decision.Mode == mode && (mode == "initial" || a.States.Permission != lifecycle.PermissionAsk) {
		return outputOf(*a.Decision), nil
	}
	var d Decision
	switch mode {
	case "initial":
		d, err = s.decideInitial(ctx, a)
	case "revalidate":
		d, err = s.revalidate(ctx, a)
	default:
		return AuthorizeOutput{}, &PermanentError{Code: "bad_mode", Msg: fmt.Sprintf("authorize mode %q", mode)}
	}
	if err != nil {
		return AuthorizeOutput{}, err
	}
	d.ActionID, d.ExecutionID, d.ToolCallID, d.ArgsDigest = a.ActionID, a.ExecutionID, a.ToolCallID, a.ArgsDigest
	d.Mode, d.DecidedAt = mode, s.now()
	if d.Permission == lifecycle.PermissionAllow {
		kind, ok := s.route(a.Tool)
		if !ok {
			d.Permission = lifecycle.PermissionDeny
			d.Reason = Reason{Source: "no_executor", Code: "no_executor", Detail: "no executor is configured for tool " + a.Tool}
			d.Resolution = "configure an executor for this tool"
		}
		d.Executor = kind
	}
	// The decision and its "action.decided" event are written together.
	saved, _, changed, err := s.updateWithEvent(ctx, a.ActionID, &a, 0, func(cur *Action) error {
		if cur.Decision != nil && cur.Decision.Mode == mode && cur.States.Permission != lifecycle.PermissionAsk {
			return errStop // a concurrent run decided first; keep its decision (and its event)
		}
		st, err := cur.States.WithPermission(d.Permission)
		if err != nil {
			return &PermanentError{Code: "illegal_transition", Msg: err.Error()}
		}
		cur.States = st
		if mode == "revalidate" && cur.Decision != nil && cur.Decision.Mode == "initial" {
			cur.InitialDecision = cur.Decision // policy replay compares against it
		}
		dd := d
		cur.Decision = &dd
		return nil
	}, func(cur *Action) (Event, any) {
		return Event{Type: "action.decided", SessionID: cur.SessionID, ExecutionID: cur.ExecutionID, ActionID: cur.ActionID},
			map[string]any{"decision": eventDecision(cur.Decision), "states": cur.States}
	})
	if err != nil {
		return AuthorizeOutput{}, err
	}
	if changed {
		s.logFor(&saved).Info("decided", "permission", saved.Decision.Permission, "reason_source", saved.Decision.Reason.Source,
			"reason_code", saved.Decision.Reason.Code, "policy_version", saved.Decision.PolicyVersion, "mode", mode)
	}
	return outputOf(*saved.Decision), nil
}

// eventDecision is the decision as its event carries it: what the API's
// action view shows, without the decider's own record (policy and context
// digests, file preconditions), which stays on the action for
// revalidation. Leaving it out halves the event (about 1.2 KB to 0.6 KB,
// so 2 write units instead of 4 in the transaction that appends it).
func eventDecision(d *Decision) *Decision {
	if d == nil {
		return nil
	}
	dd := *d
	dd.Engine = nil
	return &dd
}

func (s *Service) route(tool string) (string, bool) {
	if s.cfg.Router == nil {
		return "", false
	}
	kind, ok := s.cfg.Router.Route(tool)
	if !ok {
		return "", false
	}
	if kind == ExecutorHost || kind == ExecutorQuestion {
		return kind, true
	}
	_, ok = s.cfg.Executors[kind]
	return kind, ok
}

// decideInitial admits an action into its execution, then decides it.
//
// Execution control gates admission here, before anything is published:
// an ended execution admits nothing (execution_ended); a call beyond the
// execution's iteration limit is refused and ends it (admitIteration);
// a cancelled (or cancelling) execution admits nothing; a paused one admits
// nothing new, and says how to continue (the model sees a precise
// not_started reason, never a completed task). A Step admits exactly one
// action and pauses the execution again. Pause does not gate revalidation:
// an action admitted before the pause that a human then approves is the
// "current action" that may finish (cancellation does gate it).
func (s *Service) decideInitial(ctx context.Context, a Action) (Decision, error) {
	if a.Invalid != nil {
		// Found at prepare: the permission engine is not asked, so no rule,
		// grant, mode or approval can lift it.
		return invalidDecision(a.Invalid), nil
	}
	exe, err := s.GetExecution(ctx, a.ExecutionID)
	if err != nil {
		return Decision{}, err
	}
	if d, stop := controlDecision(exe, a.ActionID); stop {
		return d, nil
	}
	if exe.IterationLimit > 0 {
		if d, stop, err := s.admitIteration(ctx, a); err != nil || stop {
			return d, err
		}
	}
	d, err := s.cfg.Decider.Decide(ctx, a)
	if err != nil {
		return Decision{}, fmt.Errorf("decide: %w", err)
	}
	if d.Permission == lifecycle.PermissionDeny {
		return d, nil
	}
	// Repeat suppression: an operation that already failed deterministically
	// under the same conditions (policy version) is not run again until its
	// execution-relevant input or the conditions change. Changing only a
	// presentation field (Bash's description) keeps the identity.
	ck, err := s.GetCheckpoint(ctx, a.ExecutionID)
	if err != nil {
		return Decision{}, err
	}
	if e, suppressed := ck.RecentFailures.Suppressed(identity.Identity{Tool: a.Tool, Digest: a.ArgsDigest}, d.PolicyVersion); suppressed {
		return Decision{Permission: lifecycle.PermissionDeny, PolicyVersion: d.PolicyVersion,
			Reason: Reason{Source: "repeat_suppression", Code: "repeat_suppressed",
				Detail: fmt.Sprintf("the same operation already failed %d time(s) with %s under policy %s", e.Count, e.ErrorCode, d.PolicyVersion)},
			Resolution: "change the execution-relevant arguments or the conditions (files, policy) before trying again"}, nil
	}
	if exe.StepBudget == 0 && exe.StepAdmitted != a.ActionID {
		return d, nil
	}
	// A denied action is not a step: only an admitted one consumes the budget.
	if cd, stop, err := s.admitStep(ctx, a); err != nil || stop {
		return cd, err
	}
	return d, nil
}

// controlDecision is the execution-control refusal of a new action, if any.
func controlDecision(exe Execution, action ids.ActionID) (Decision, bool) {
	switch {
	case exe.Status == ExecCancelled || exe.Status == ExecCancelling:
		return Decision{Permission: lifecycle.PermissionDeny,
			Reason:     Reason{Source: "execution_control", Code: "execution_cancelled", Detail: "the execution was cancelled"},
			Resolution: "start a new execution (Retry or Fork)"}, true
	case exe.Status == ExecPaused && exe.StepAdmitted != action:
		detail := "the execution is paused"
		if exe.PauseOwner != "" {
			detail += " (" + exe.PauseOwner
			if exe.PauseReason != "" {
				detail += ": " + exe.PauseReason
			}
			detail += ")"
		}
		return Decision{Permission: lifecycle.PermissionDeny,
			Reason:     Reason{Source: "execution_control", Code: "execution_paused", Detail: detail},
			Resolution: "Continue (or Step) the execution, then submit the call again"}, true
	case exe.Status == ExecCompleted || exe.Status == ExecFailed:
		detail := "the execution has ended (" + string(exe.Status)
		if exe.End != nil && exe.End.Reason != "" {
			detail += ": " + exe.End.Reason
		}
		detail += ")"
		return Decision{Permission: lifecycle.PermissionDeny,
			Reason:     Reason{Source: "execution_control", Code: "execution_ended", Detail: detail},
			Resolution: "start a new execution (Retry or Fork)"}, true
	}
	return Decision{}, false
}

// admitStep consumes one unit of a Step's budget for action a (compare-
// and-swap on the execution, so parallel actions cannot both take the last
// unit); the last unit pauses the execution again. Re-admitting the action
// that already took a unit is idempotent.
func (s *Service) admitStep(ctx context.Context, a Action) (Decision, bool, error) {
	for i := 0; ; i++ {
		exe, err := s.GetExecution(ctx, a.ExecutionID)
		if err != nil {
			return Decision{}, false, err
		}
		if exe.StepAdmitted == a.ActionID {
			return Decision{}, false, nil
		}
		if d, stop := controlDecision(exe, a.ActionID); stop {
			return d, true, nil
		}
		if exe.StepBudget <= 0 {
			return Decision{}, false, nil // a Continue lifted the step limit meanwhile
		}
		exe.StepBudget--
		exe.StepAdmitted = a.ActionID
		if exe.StepBudget == 0 {
			exe.Status, exe.PauseOwner, exe.PauseReason = ExecPaused, PauseByUser, "step"
		}
		exe.LastActivity = s.now()
		err = s.SaveExecution(ctx, &exe, exe.Version, 0)
		var vc *store.VersionConflictError
		if errors.As(err, &vc) && i < 8 {
			continue
		}
		if err != nil {
			return Decision{}, false, fmt.Errorf("admit step: %w", err)
		}
		s.logFor(&a).Info("step admitted", "steps_left", exe.StepBudget)
		return Decision{}, false, nil
	}
}

func (s *Service) revalidate(ctx context.Context, a Action) (Decision, error) {
	deny := func(code, detail string) (Decision, error) {
		pv := ""
		if a.Decision != nil {
			pv = a.Decision.PolicyVersion
		}
		return Decision{Permission: lifecycle.PermissionDeny, PolicyVersion: pv,
			Reason: Reason{Source: "revalidation", Code: code, Detail: detail}}, nil
	}
	if a.Decision == nil {
		return deny("no_prior_decision", "revalidation without an initial decision")
	}
	ap, err := s.getApproval(ctx, a.ActionID)
	if errors.Is(err, store.ErrNotFound) {
		return deny("no_approval", "no approval wait exists for this action")
	}
	if err != nil {
		return Decision{}, err
	}
	if ap.Status != ApprovalApproved {
		return deny("approval_"+string(ap.Status), "the approval is "+string(ap.Status))
	}
	if ap.ArgsDigest != a.ArgsDigest {
		return deny("digest_mismatch", "the approval was for different arguments")
	}
	exe, err := s.GetExecution(ctx, a.ExecutionID)
	if err != nil {
		return Decision{}, err
	}
	if exe.Status == ExecCancelled || exe.Status == ExecCancelling {
		return deny("execution_cancelled", "the execution was cancelled during the wait")
	}
	d, err := s.cfg.Decider.Revalidate(ctx, a, *a.Decision, ap)
	if err != nil {
		return Decision{}, fmt.Errorf("revalidate: %w", err)
	}
	return d, nil
}
