package httpapi

import (
	"math"
	"net/http"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/audit"
	"github.com/openprogram/lifecycle/shared/ids"
)

// AuditPage answers GET /v1/sessions/{session_id}/audit: entries of the
// session's tamper-evident decision log (its event log, a hash chain) after
// a position, each with its digest, the previous entry's hash and its own.
type AuditPage struct {
	SessionID ids.SessionID `json:"session_id"`
	Entries   []audit.Entry `json:"entries"`
	// Next is the position to pass as ?after= for the next page; an empty
	// page means the chain ends there.
	Next int64 `json:"next"`
}

// auditLog pages the chain from ?after=N (default 0) in ?limit= entries
// (default 100, at most 1000), like the events route. It answers what the
// store holds; it does not verify: `lifecycle audit verify` (package
// audit) recomputes the chain on the reader's side.
func (h *api) auditLog(w http.ResponseWriter, r *http.Request, c *call) error {
	after, err := intParam(r, "after", 0, 0, math.MaxInt64)
	if err != nil {
		return err
	}
	limit, err := intParam(r, "limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	entries, err := h.svc.Store().ReadLog(r.Context(), actionflow.SessionStream(c.t.Session), after, int(limit))
	if err != nil {
		return err
	}
	out := AuditPage{SessionID: c.t.Session, Entries: make([]audit.Entry, 0, len(entries)), Next: after}
	for _, e := range entries {
		out.Entries = append(out.Entries, audit.FromLog(e))
	}
	if n := len(entries); n > 0 {
		out.Next = entries[n-1].Seq
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
