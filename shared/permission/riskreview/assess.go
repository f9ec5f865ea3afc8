package riskreview

import (
	"context"
	"errors"
	"time"

	"github.com/openprogram/lifecycle/shared/permission"
)

// ProvenSafe is the category of a low-risk reason.
const ProvenSafe = "proven_safe"

// modelRiskTimeout bounds the model's opinion on an ask outside auto mode:
// the person is waiting for the card, and the opinion is optional.
const modelRiskTimeout = 15 * time.Second

var _ permission.RiskAssessor = (*Reviewer)(nil)

// highRisk are the categories graded high: they destroy, leak or run code
// nobody has seen. The other known risks (a write outside the project, a
// history rewrite, a command computed at run time) are medium.
var highRisk = set(Destructive, DownloadExec, CredentialAccess, Exfiltration, SecurityDisable, PrivilegeEscalation)

// Assess grades an asked call with the same deterministic analysis Review
// uses, collecting every known risk (and the multi-step download-and-run
// pattern over the execution's earlier calls): high for a destructive,
// download-and-run, credential, exfiltration, security or privilege risk,
// medium for the other risks and for anything not proven safe, low for
// what the known-safe analysis proves harmless. It never decides.
//
// With a model (WithModel), the model's reasons are added, marked
// model-generated: verdict's when the decision already carries the
// model's verdict (auto mode), else one review of the model (bounded by
// modelRiskTimeout; its failure adds nothing). They never change the level.
func (r *Reviewer) Assess(ctx context.Context, in permission.ReviewInput, verdict *permission.Verdict) (permission.Risk, error) {
	risk := permission.Risk{Assessor: Name}
	a, err := r.analyse(ctx, in, true)
	var nv *permission.NoVerdictError
	switch {
	case errors.As(err, &nv) && ctx.Err() == nil:
		// Input it cannot judge is graded, not refused: the person sees why.
		risk.Level = permission.RiskMedium
		risk.Reasons = append(risk.Reasons, permission.RiskReason{Text: "the call could not be analysed: " + nv.Error(), Category: NotProvenSafe, Source: Name})
	case err != nil:
		return permission.Risk{}, err
	case len(a.findings) > 0:
		risk.Level = permission.RiskMedium
		for _, f := range a.findings {
			if highRisk[f.category] {
				risk.Level = permission.RiskHigh
			}
			risk.Reasons = append(risk.Reasons, permission.RiskReason{Text: f.reason, Category: f.category, Source: Name})
		}
	case a.safe:
		risk.Level = permission.RiskLow
		risk.Reasons = append(risk.Reasons, permission.RiskReason{Text: "proven safe by the known-safe analysis", Category: ProvenSafe, Source: Name})
	default:
		risk.Level = permission.RiskMedium
		risk.Reasons = append(risk.Reasons, permission.RiskReason{Text: "not proven safe: " + a.why, Category: NotProvenSafe, Source: Name})
	}
	if r.model == nil {
		return risk, nil
	}
	mv := verdict
	if mv == nil || mv.Reviewer == Name || mv.Reviewer == "" {
		// No model verdict on the decision: ask the model once.
		mv = nil
		mctx, cancel := context.WithTimeout(ctx, modelRiskTimeout)
		v, err := r.model.Review(mctx, in)
		cancel()
		if err == nil && v.Valid() && v.Reason != "" {
			mv = &v
		}
	}
	if mv != nil && mv.Reason != "" {
		src := mv.Reviewer
		if src == "" || src == Name {
			src = "model"
		}
		risk.Reasons = append(risk.Reasons, permission.RiskReason{Text: mv.Reason, Category: mv.Category, Source: src, ModelGenerated: true})
	}
	return risk, nil
}
