package httpapi

import (
	"net/http"

	"github.com/openprogram/lifecycle/shared/ids"
)

// ToolsResponse answers GET /v1/tools.
type ToolsResponse struct {
	SessionID     ids.SessionID `json:"session_id"`
	PolicyVersion string        `json:"policy_version"`
	Tools         []Tool        `json:"tools"`
}

func (h *api) tools(w http.ResponseWriter, r *http.Request, c *call) error {
	if h.cfg.Tools == nil {
		return &requestError{Status: http.StatusNotImplemented, Code: "not_implemented", Msg: "no tool catalog is configured"}
	}
	tl, err := h.cfg.Tools.VisibleTools(r.Context(), c.t.Session)
	if err != nil {
		return err
	}
	out := ToolsResponse{SessionID: c.t.Session, PolicyVersion: tl.PolicyVersion, Tools: tl.Tools}
	if out.Tools == nil {
		out.Tools = []Tool{}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
