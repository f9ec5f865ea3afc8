package decider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/permission"
)

// Policies returns a session's live policy (nil, nil when it has none).
type Policies interface {
	Policy(ctx context.Context, session ids.SessionID) (*permission.Policy, error)
}

// DefaultPolicyDoc is the policy of a session that has none.
const DefaultPolicyDoc = `{"version": "default", "mode": "default"}`

// DefaultPolicy parses DefaultPolicyDoc.
func DefaultPolicy() *permission.Policy { return permission.MustParsePolicy(DefaultPolicyDoc) }

// Decider implements actionflow.Decider.
type Decider struct {
	Engine   *permission.Engine
	Policies Policies
	// ProjectRoot and WorkingDir (absolute) bound the project scope; HomeDir expands "~".
	ProjectRoot, WorkingDir, HomeDir string
	// History reads an execution's earlier actions (actionflow.History),
	// for the reviewer's multi-step patterns; nil: none are read.
	History Earlier
}

// Earlier reads at most limit actions of a's execution submitted before a,
// most recent first.
type Earlier interface {
	Before(ctx context.Context, a actionflow.Action, limit int) ([]actionflow.Action, error)
}

// priorCalls is the lookback of the multi-step review (riskreview's
// MaxPriorCalls, which the decider does not import).
const priorCalls = 32

// recent reads the execution's earlier calls lazily, for the reviewer.
func (d *Decider) recent(a actionflow.Action) permission.RecentCalls {
	if d.History == nil {
		return nil
	}
	return func(ctx context.Context) ([]permission.PriorCall, error) {
		prior, err := d.History.Before(ctx, a, priorCalls)
		if err != nil {
			return nil, err
		}
		out := make([]permission.PriorCall, 0, len(prior))
		for _, p := range prior {
			if p.States.Outcome == lifecycle.OutcomeNotStarted {
				continue // refused, declined or cancelled: it never ran
			}
			out = append(out, permission.PriorCall{ActionID: p.ActionID, Tool: p.Tool, Args: p.Arguments, Permission: p.States.Permission})
		}
		return out, nil
	}
}

var _ actionflow.Decider = (*Decider)(nil)

func (d *Decider) policy(ctx context.Context, session ids.SessionID) (*permission.Policy, error) {
	if d.Policies == nil {
		return DefaultPolicy(), nil
	}
	p, err := d.Policies.Policy(ctx, session)
	if err != nil {
		return nil, fmt.Errorf("load policy of %s: %w", session, err)
	}
	if p == nil {
		return DefaultPolicy(), nil
	}
	return p, nil
}

func (d *Decider) request(ctx context.Context, a actionflow.Action) (permission.Request, error) {
	p, err := d.policy(ctx, a.SessionID)
	if err != nil {
		return permission.Request{}, err
	}
	return permission.Request{
		Trusted: d.Trusted(a),
		Call:    permission.Call{ActionID: a.ActionID, Tool: a.Tool, Args: a.Arguments, Digest: a.ArgsDigest},
		Policy:  p,
		Recent:  d.recent(a),
	}, nil
}

// Trusted is the trusted context an action is decided in (policy replay
// decides recorded actions in it again).
func (d *Decider) Trusted(a actionflow.Action) permission.Trusted {
	wd := d.WorkingDir
	if wd == "" {
		wd = d.ProjectRoot
	}
	return permission.Trusted{SessionID: a.SessionID, WorkingDir: wd, ProjectRoot: d.ProjectRoot, HomeDir: d.HomeDir, Interactive: a.Interactive}
}

// Decide decides an action's first authorization.
func (d *Decider) Decide(ctx context.Context, a actionflow.Action) (actionflow.Decision, error) {
	req, err := d.request(ctx, a)
	if err != nil {
		return actionflow.Decision{}, err
	}
	pd, err := d.Engine.Decide(ctx, req)
	var ic *permission.InvalidCallError
	if errors.As(err, &ic) {
		return actionflow.Decision{Permission: lifecycle.PermissionDeny, PolicyVersion: req.Policy.Version,
			Reason:     actionflow.Reason{Source: "invalid_arguments", Code: "invalid_arguments", Detail: ic.Error()},
			Resolution: "correct the execution-relevant arguments (" + ic.Field + ")"}, nil
	}
	if err != nil {
		return actionflow.Decision{}, err
	}
	return translate(pd)
}

// Revalidate re-checks the action against the live policy with the approval.
func (d *Decider) Revalidate(ctx context.Context, a actionflow.Action, prior actionflow.Decision, ap actionflow.Approval) (actionflow.Decision, error) {
	var pd permission.Decision
	if len(prior.Engine) == 0 {
		return actionflow.Decision{Permission: lifecycle.PermissionDeny, PolicyVersion: prior.PolicyVersion,
			Reason: actionflow.Reason{Source: "revalidation", Code: "no_engine_decision", Detail: "the prior decision carries no engine record"}}, nil
	}
	if err := json.Unmarshal(prior.Engine, &pd); err != nil {
		return actionflow.Decision{}, fmt.Errorf("decode prior decision of %s: %w", a.ActionID, err)
	}
	req, err := d.request(ctx, a)
	if err != nil {
		return actionflow.Decision{}, err
	}
	rd, err := d.Engine.Revalidate(ctx, pd, evidence(ap), req)
	if err != nil {
		return actionflow.Decision{}, err
	}
	return translate(rd)
}

// ApprovalCompleted resets refusal counters for a declined fallback wait
// (the engine's Revalidate handles approved ones).
func (d *Decider) ApprovalCompleted(ctx context.Context, a actionflow.Action, ap actionflow.Approval) error {
	if ap.Status == actionflow.ApprovalApproved || a.Decision == nil || len(a.Decision.Engine) == 0 {
		return nil
	}
	var pd permission.Decision
	if err := json.Unmarshal(a.Decision.Engine, &pd); err != nil {
		return fmt.Errorf("decode decision of %s: %w", a.ActionID, err)
	}
	return d.Engine.ApprovalCompleted(ctx, pd, evidence(ap))
}

func evidence(ap actionflow.Approval) permission.ApprovalEvidence {
	ev := permission.ApprovalEvidence{ApprovalID: ap.ApprovalID, ActionID: ap.ActionID, ArgsDigest: ap.ArgsDigest,
		PolicyVersion: ap.PolicyVersion, Status: permission.ApprovalStatus(ap.Status)}
	if ap.DecidedBy != nil {
		ev.DecidedBy = ap.DecidedBy.Subject
	}
	return ev
}

func translate(pd permission.Decision) (actionflow.Decision, error) {
	raw, err := json.Marshal(pd)
	if err != nil {
		return actionflow.Decision{}, fmt.Errorf("encode decision: %w", err)
	}
	detail := pd.Reason.Detail
	if pd.Reason.Command != "" {
		detail = fmt.Sprintf("%s (command: %s)", detail, pd.Reason.Command)
	}
	reason := actionflow.Reason{Source: string(pd.Reason.Source), Code: string(pd.Reason.Code), Rule: pd.Reason.Rule, Detail: detail}
	if c := pd.Reason.Counter; c != nil {
		reason.Refusals = &actionflow.Refusals{Consecutive: c.Consecutive, Total: c.Total}
	}
	return actionflow.Decision{
		Permission:    pd.Permission,
		PolicyVersion: pd.PolicyVersion,
		Fallback:      pd.Fallback,
		Reason:        reason,
		Resolution:    resolution(pd),
		Sandbox:       pd.Sandbox,
		Risk:          RiskOf(pd.Risk),
		Engine:        raw,
	}, nil
}

// RiskOf is the lifecycle's record of the engine's risk assessment.
func RiskOf(r *permission.Risk) *actionflow.Risk {
	if r == nil {
		return nil
	}
	out := &actionflow.Risk{Level: string(r.Level), Assessor: r.Assessor, Reasons: []actionflow.RiskReason{}}
	for _, rr := range r.Reasons {
		out.Reasons = append(out.Reasons, actionflow.RiskReason{Text: rr.Text, Category: rr.Category, Source: rr.Source, ModelGenerated: rr.ModelGenerated})
	}
	return out
}

// resolution tells the model and the owner what would change the answer.
func resolution(pd permission.Decision) string {
	if pd.Permission == lifecycle.PermissionAllow {
		return ""
	}
	switch pd.Reason.Source {
	case permission.SourceHardConstraint:
		return "none: hard constraints cannot be overridden; do other allowed work or explain the blocker"
	case permission.SourceVisibility:
		return "the tool is not available in this session"
	case permission.SourceDenyRule, permission.SourceRestriction:
		return "the owner can change the policy; do not retry with reworded descriptions"
	case permission.SourceClassifier, permission.SourceCounter:
		if pd.Permission == lifecycle.PermissionAsk {
			return "waiting for the owner's approval"
		}
		return "ask the owner to approve it in an interactive session, or change the operation"
	case permission.SourceAnalysis:
		return "split the command into smaller, reviewable commands"
	case permission.SourceSandbox:
		if pd.Permission == lifecycle.PermissionAsk {
			return "waiting for the owner's approval to relax the sandbox"
		}
		return "run it in the sandbox (without dangerouslyDisableSandbox or network), or ask the owner for a rule whose sandbox settings allow the relaxation"
	}
	if pd.Permission == lifecycle.PermissionAsk {
		return "waiting for the owner's approval"
	}
	return "the owner can allow it with a rule or approve it interactively"
}
