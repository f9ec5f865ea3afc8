package httpapi

import (
	"net/http"
	"strings"

	"github.com/openprogram/lifecycle/shared/actionflow"
)

// reconcile applies a human's reconciliation of an action whose outcome is
// unknown (POST /v1/actions/{action_id}/reconciliation). 201: applied now;
// 200: the same reconciliation again (idempotent, the stored record);
// 409 already_reconciled: a different one was applied first (the first
// record is in error.current); 409 not_reconcilable: the outcome is not a
// delivered unknown (the action is in error.current). An agent token is
// refused before any lookup (the route needs the decide capability).
func (h *api) reconcile(w http.ResponseWriter, r *http.Request, c *call) error {
	var b actionflow.ReconcileRequest
	if err := decodeBody(r, h.cfg.MaxBodyBytes, &b); err != nil {
		return err
	}
	switch {
	case b.Outcome == "":
		return badRequest("missing_field", "outcome", "outcome is required: succeeded or failed")
	case strings.TrimSpace(b.Note) == "":
		return badRequest("missing_field", "note", "note is required: say what you checked")
	}
	rec, applied, err := h.svc.Reconcile(r.Context(), c.t.Action.ActionID, b, c.p)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if applied {
		status = http.StatusCreated
	}
	writeJSON(w, status, rec)
	return nil
}
