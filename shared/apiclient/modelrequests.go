package apiclient

import (
	"context"
	"net/http"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/modelreq"
)

// StartModelRequest reports a model request the agent dispatched for
// execution exec. created is false when the same report was recorded
// before (the stored record is returned); another provider or model under
// the same request_id is a *actionflow.ConflictError "conflict", and an
// ended execution one "execution_ended".
func (c *Client) StartModelRequest(ctx context.Context, exec ids.ExecutionID, r modelreq.StartReport) (rec modelreq.Record, created bool, err error) {
	res, err := c.do(ctx, "POST", "/v1/executions/"+esc(string(exec))+"/model-requests", nil, r, &rec)
	if err != nil {
		return rec, false, err
	}
	return rec, res.StatusCode == http.StatusCreated, nil
}

// CompleteModelRequest reports how a model request ended and returns the
// stored record; a different completion stored first is a
// *actionflow.ConflictError "conflict" carrying it.
func (c *Client) CompleteModelRequest(ctx context.Context, exec ids.ExecutionID, requestID string, done modelreq.Completion) (rec modelreq.Record, err error) {
	_, err = c.do(ctx, "POST", "/v1/executions/"+esc(string(exec))+"/model-requests/"+esc(requestID)+"/completion", nil, done, &rec)
	return rec, err
}
