package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/openprogram/lifecycle/shared/activity"
	"github.com/openprogram/lifecycle/shared/ids"
)

// CommandBody is the body of POST /v1/executions/{execution_id}/commands.
type CommandBody struct {
	CommandID       ids.CommandID   `json:"command_id"`
	Type            string          `json:"type"`
	ExpectedVersion *int64          `json:"expected_version"`
	Payload         json.RawMessage `json:"payload,omitempty"`
}

func (h *api) command(w http.ResponseWriter, r *http.Request, c *call) error {
	var b CommandBody
	if err := decodeBody(r, h.cfg.MaxBodyBytes, &b); err != nil {
		return err
	}
	return h.sendCommand(w, r, c, b)
}

// end sends the End command (POST /v1/executions/{id}/end): the one
// command an agent token may send, for its own session's executions. The
// body is a command without type (or with type "end").
func (h *api) end(w http.ResponseWriter, r *http.Request, c *call) error {
	var b CommandBody
	if err := decodeBody(r, h.cfg.MaxBodyBytes, &b); err != nil {
		return err
	}
	if b.Type != "" && b.Type != "end" {
		return badRequest("invalid_field", "type", "this route sends only the end command; send "+b.Type+" to /v1/executions/{execution_id}/commands")
	}
	b.Type = "end"
	return h.sendCommand(w, r, c, b)
}

func (h *api) sendCommand(w http.ResponseWriter, r *http.Request, c *call, b CommandBody) error {
	switch {
	case b.CommandID == "":
		return badRequest("missing_field", "command_id", "command_id is required (the same id repeats the same command)")
	case b.Type == "":
		return badRequest("missing_field", "type", "type is required")
	case b.ExpectedVersion == nil:
		return badRequest("missing_field", "expected_version", "expected_version is required (the execution version you saw)")
	case len(b.Payload) > 0 && string(b.Payload) != "null" && b.Payload[0] != '{':
		return badRequest("wrong_type", "payload", "payload must be a JSON object")
	}
	if err := ids.Validate("command_id", string(b.CommandID)); err != nil {
		return badRequest("invalid_field", "command_id", err.Error())
	}
	if h.cfg.Control == nil {
		return &requestError{Status: http.StatusNotImplemented, Code: "not_implemented", Msg: "no command service is configured"}
	}
	res, err := h.cfg.Control.Command(r.Context(), CommandRequest{ExecutionID: c.t.Execution.ExecutionID, CommandID: b.CommandID,
		Type: b.Type, ExpectedVersion: *b.ExpectedVersion, Payload: b.Payload, Principal: c.p})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, res)
	return nil
}

func (h *api) getExecution(w http.ResponseWriter, r *http.Request, c *call) error {
	e := *c.t.Execution
	ck, err := h.svc.GetCheckpoint(r.Context(), e.ExecutionID)
	if err != nil {
		return err
	}
	v := ExecutionView{Execution: e, Controls: []string{},
		Checkpoint: CheckpointView{Version: ck.Version, Recorded: ck.Recorded, LastActionID: ck.LastActionID, Reconciled: ck.Reconciled, Revision: ck.Revision}}
	if !ck.UpdatedAt.IsZero() {
		v.Checkpoint.UpdatedAt = &ck.UpdatedAt
	}
	points, truncated, err := h.svc.SavedPoints(r.Context(), e)
	if err != nil {
		return err
	}
	v.SavedPointsTruncated = truncated
	v.SavedPoints = make([]SavedPointView, 0, len(points))
	for _, p := range points {
		v.SavedPoints = append(v.SavedPoints, SavedPointView{Version: p.Version, LastActionID: p.LastActionID, At: p.At})
	}
	if v.ModelRequests, err = h.models.ListExecution(r.Context(), e.ExecutionID); err != nil {
		return err
	}
	if h.cfg.Control != nil {
		controls, err := h.cfg.Control.Controls(r.Context(), e)
		if err != nil {
			return err
		}
		if controls != nil {
			v.Controls = controls
		}
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (h *api) activity(w http.ResponseWriter, r *http.Request, c *call) error {
	recs, err := h.svc.ListSessionRecords(r.Context(), c.t.Session)
	if err != nil {
		return err
	}
	var facts map[ids.ExecutionID]activity.Facts
	if h.cfg.Facts != nil {
		if facts, err = h.cfg.Facts.Facts(r.Context(), c.t.Session, recs); err != nil {
			return err
		}
	}
	if facts, err = h.addModelFacts(r, c.t.Session, facts); err != nil {
		return err
	}
	if facts, err = h.addQuestionFacts(r, c.t.Session, facts); err != nil {
		return err
	}
	if facts, err = h.addProcessFacts(r, c.t.Session, facts); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, activity.Build(activity.FromRecords(c.t.Session, h.cfg.Clock(), recs, facts)))
	return nil
}
