package httpapi

import (
	"net/http"

	"github.com/openprogram/lifecycle/shared/activity"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/modelreq"
)

// startModelRequest records an agent's started model request
// (POST /v1/executions/{execution_id}/model-requests). 201: recorded now,
// with its model_request.started event; 200: the same report again (the
// stored record); 409 conflict: the request_id was reported with another
// provider or model (the stored record in error.current); 409
// execution_ended: the execution takes no new requests.
func (h *api) startModelRequest(w http.ResponseWriter, r *http.Request, c *call) error {
	var b modelreq.StartReport
	if err := decodeBody(r, h.cfg.MaxBodyBytes, &b); err != nil {
		return err
	}
	rec, created, err := h.models.Report(r.Context(), *c.t.Execution, b)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, rec)
	return nil
}

// completeModelRequest records how an agent's model request ended
// (POST /v1/executions/{execution_id}/model-requests/{request_id}/completion).
// 200: the stored record (the same completion again is the same answer);
// 409 conflict: another completion was stored first (in error.current);
// 404: the execution has no request of that id.
func (h *api) completeModelRequest(w http.ResponseWriter, r *http.Request, c *call) error {
	var b modelreq.Completion
	if err := decodeBody(r, h.cfg.MaxBodyBytes, &b); err != nil {
		return err
	}
	rec, err := h.models.Finish(r.Context(), *c.t.Execution, r.PathValue("request_id"), b)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rec)
	return nil
}

// modelRequestRows is the Activity form of an execution's model requests.
func modelRequestRows(rs []modelreq.Record) []activity.ModelRequestRow {
	out := make([]activity.ModelRequestRow, 0, len(rs))
	for _, m := range rs {
		out = append(out, activity.ModelRequestRow{RequestID: m.RequestID, Provider: m.Provider, Model: m.Model, Purpose: m.Purpose,
			Status: string(m.Status), Usage: activity.TokenUsage{InputTokens: m.Usage.InputTokens, OutputTokens: m.Usage.OutputTokens},
			ErrorCode: m.ErrorCode, StartedAt: m.StartedAt, CompletedAt: m.CompletedAt})
	}
	return out
}

// addModelFacts adds each execution's model requests to its Activity facts:
// the rows, and ResponseRecordMissing when one was closed incomplete (no
// terminal event: the response record is missing). A failed request has
// its record (an error) and is not missing.
func (h *api) addModelFacts(r *http.Request, session ids.SessionID, facts map[ids.ExecutionID]activity.Facts) (map[ids.ExecutionID]activity.Facts, error) {
	rs, err := h.models.ListSession(r.Context(), session)
	if err != nil {
		return facts, err
	}
	byExec := map[ids.ExecutionID][]modelreq.Record{}
	for _, m := range rs {
		if m.ExecutionID != "" {
			byExec[m.ExecutionID] = append(byExec[m.ExecutionID], m)
		}
	}
	if len(byExec) == 0 {
		return facts, nil
	}
	if facts == nil {
		facts = map[ids.ExecutionID]activity.Facts{}
	}
	for exec, ms := range byExec {
		f := facts[exec]
		f.ModelRequests = modelRequestRows(ms)
		for _, m := range ms {
			if m.Status == modelreq.Incomplete {
				f.ResponseRecordMissing = true
			}
		}
		facts[exec] = f
	}
	return facts, nil
}
