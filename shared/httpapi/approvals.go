package httpapi

import (
	"net/http"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
)

// DecisionBody is the body of POST /v1/approvals/{approval_id}.
type DecisionBody struct {
	Decision string `json:"decision"`
	// Digest is the action's args_digest as the person saw it: a decision
	// about other arguments is refused.
	Digest string `json:"digest"`
}

// ApprovalList answers GET /v1/sessions/{session_id}/approvals.
type ApprovalList struct {
	Approvals []ApprovalView `json:"approvals"`
}

func (h *api) listApprovals(w http.ResponseWriter, r *http.Request, c *call) error {
	aps, err := h.svc.PendingApprovals(r.Context(), c.t.Session)
	if err != nil {
		return err
	}
	out := ApprovalList{Approvals: make([]ApprovalView, 0, len(aps))}
	for _, ap := range aps {
		out.Approvals = append(out.Approvals, approvalView(ap))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// decide applies a human decision. 200: decided and the wait completed;
// 202: decided (durable) but the workflow has not heard it yet — recovery
// completes the wait from the stored decision; 409: already decided (the
// first decision is in error.current), superseded or expired.
func (h *api) decide(w http.ResponseWriter, r *http.Request, c *call) error {
	var b DecisionBody
	if err := decodeBody(r, h.cfg.MaxBodyBytes, &b); err != nil {
		return err
	}
	switch {
	case b.Decision == "":
		return badRequest("missing_field", "decision", "decision is required: approve or decline")
	case b.Decision != actionflow.DecisionApprove && b.Decision != actionflow.DecisionDecline:
		return badRequest("invalid_field", "decision", "decision must be approve or decline")
	case b.Digest == "":
		return badRequest("missing_field", "digest", "digest is required: the args_digest of the action you decided")
	}
	id := ids.ApprovalID(r.PathValue("approval_id"))
	decided, err := h.svc.DecideApproval(r.Context(), id, b.Decision, b.Digest, c.p)
	if err != nil {
		if decided.ApprovalID == "" || isTyped(err) {
			return err
		}
		h.log.ErrorContext(r.Context(), "api: decision saved, wait not completed", "approval_id", id, "error", err)
		writeJSON(w, http.StatusAccepted, approvalView(decided))
		return nil
	}
	writeJSON(w, http.StatusOK, approvalView(decided))
	return nil
}
