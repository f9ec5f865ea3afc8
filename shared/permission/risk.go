package permission

import (
	"context"
	"encoding/json"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// RiskLevel grades what an asked call may do, for the person who decides.
type RiskLevel string

const (
	// RiskLow: the known-safe analysis proves the call harmless.
	RiskLow RiskLevel = "low"
	// RiskMedium: nothing known to be dangerous was found, but the call
	// is not proven safe either (the usual case for an ask).
	RiskMedium RiskLevel = "medium"
	// RiskHigh: a known risk was found (a broad recursive delete, a
	// download run by a shell, credentials read, data uploaded, ...).
	RiskHigh RiskLevel = "high"
)

// RiskReason is one plain sentence about a call's risk.
type RiskReason struct {
	Text string `json:"text"`
	// Category is the reviewer's risk category ("destructive",
	// "download_exec", ...; "not_proven_safe", "proven_safe").
	Category string `json:"category,omitempty"`
	// Source names who said it ("riskreview", "bedrock:<model>").
	Source string `json:"source"`
	// ModelGenerated marks a model's prose: an opinion, never the basis of
	// the level.
	ModelGenerated bool `json:"model_generated,omitempty"`
}

// Risk is the assessment attached to every ask decision. It informs the
// person deciding and never changes the decision (outside auto mode, where
// the reviewer's verdict already decided).
type Risk struct {
	Level   RiskLevel    `json:"level"`
	Reasons []RiskReason `json:"reasons"`
	// Assessor names the deterministic assessor ("riskreview").
	Assessor string `json:"assessor"`
}

// RiskAssessor grades an asked call. verdict is the automatic reviewer's
// verdict when the decision carries one (auto mode), so a model's reasons
// are reused rather than asked for again. An error leaves the decision
// without a risk; it never changes the decision.
type RiskAssessor interface {
	Assess(ctx context.Context, in ReviewInput, verdict *Verdict) (Risk, error)
}

// PriorCall is an earlier recorded call of the same execution, most
// recent first: what multi-step patterns (a download in one action, run by
// a later one) are judged against. Its arguments are untrusted data.
type PriorCall struct {
	ActionID   ids.ActionID         `json:"action_id"`
	Tool       string               `json:"tool"`
	Args       json.RawMessage      `json:"args"`
	Permission lifecycle.Permission `json:"permission"`
}

// RecentCalls returns the execution's earlier calls (bounded; most recent
// first). It is called lazily, only by a reviewer that needs them, so a
// decision that does not pays nothing.
type RecentCalls func(ctx context.Context) ([]PriorCall, error)

// assess attaches the risk of an ask decision.
func (e *Engine) assess(ctx context.Context, x *evalCtx, d Decision) *Risk {
	if e.cfg.Risk == nil {
		return nil
	}
	r, err := e.cfg.Risk.Assess(ctx, e.reviewInput(x), d.Reason.Verdict)
	if err != nil || r.Level == "" {
		return nil
	}
	return &r
}

func (e *Engine) reviewInput(x *evalCtx) ReviewInput {
	return ReviewInput{
		ActionID: x.req.Call.ActionID, PolicyVersion: x.pol.Version, Mode: x.pol.Mode,
		Trusted: x.req.Trusted, AdditionalDirectories: x.pol.AdditionalDirectories,
		Tool: x.req.Call.Tool, Args: x.req.Call.Args, ArgsDigest: x.digest, scope: &x.scope,
		Recent: x.req.Recent,
	}
}

// Replaying is a copy of the engine for a dry run (policy replay): the
// same configuration (file system, protected paths, contracts,
// thresholds), so hard constraints, grants, modes and the Bash analysis
// decide exactly as live, with its own classifier (the recorded verdicts)
// and its own counters (in memory), and no risk assessment. Nothing it
// decides is recorded anywhere.
func (e *Engine) Replaying(c Classifier, counters CounterStore) *Engine {
	cfg := e.cfg
	cfg.Classifier, cfg.Counters, cfg.Risk = c, counters, nil
	return &Engine{cfg: cfg, protect: e.protect}
}
