package httpapi

import (
	"context"
	"errors"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/activity"
	"github.com/openprogram/lifecycle/shared/control"
	"github.com/openprogram/lifecycle/shared/ids"
)

// ControlService adapts the command service (package control) to the API:
// it is the Controller (commands and advertised controls) and the
// FactSource of Activity (commands accepted but not applied yet).
type ControlService struct {
	Service *control.Service
}

var (
	_ Controller = ControlService{}
	_ FactSource = ControlService{}
)

// Command saves (and, when it can, applies) a command. A stale
// expected_version is a 409 "stale_version" with the current version; a
// control the execution does not support now is a 409
// "control_unavailable" with its status and the reason; a Fork or Retry
// from a saved point the execution does not have is a 409
// "saved_point_unavailable" with its current checkpoint version.
func (c ControlService) Command(ctx context.Context, req CommandRequest) (CommandResult, error) {
	rec, err := c.Service.Submit(ctx, req.ExecutionID, control.Command{ID: req.CommandID, Type: control.Control(req.Type),
		ExpectedVersion: req.ExpectedVersion, Payload: req.Payload}, req.Principal)
	var stale *control.StaleVersionError
	var unsupported *control.UnsupportedError
	var point *actionflow.SavedPointError
	switch {
	case errors.As(err, &point):
		return CommandResult{}, &actionflow.ConflictError{Code: "saved_point_unavailable", Msg: point.Error(),
			Current: map[string]any{"execution_id": point.ExecutionID, "requested": point.Requested, "checkpoint_version": point.Current}}
	case errors.As(err, &stale):
		return CommandResult{}, &actionflow.ConflictError{Code: "stale_version", Msg: stale.Error(),
			Current: map[string]any{"execution_id": stale.ExecutionID, "execution_version": stale.Actual}}
	case errors.As(err, &unsupported):
		return CommandResult{}, &actionflow.ConflictError{Code: "control_unavailable", Msg: unsupported.Error(),
			Current: map[string]any{"control": unsupported.Control, "status": unsupported.Status, "kind": unsupported.Kind, "reason": unsupported.Reason}}
	case err != nil:
		return CommandResult{}, err
	}
	out := CommandResult{CommandID: rec.CommandID, ExecutionID: rec.ExecutionID, Type: string(rec.Type), Status: string(rec.Status),
		Reason: rec.Reason, ExecutionVersion: rec.ResultVersion, ChildExecutionID: rec.Child}
	for _, d := range rec.Descendants {
		out.Descendants = append(out.Descendants, CancelledDescendant{ExecutionID: d.ExecutionID, ParentID: d.ParentID, Depth: d.Depth,
			CommandID: d.CommandID, Status: d.Status})
	}
	if out.ExecutionVersion == 0 {
		// Accepted, not applied yet: the version the command was saved against.
		out.ExecutionVersion = rec.ExpectedVersion
	}
	return out, nil
}

// Controls lists the controls the execution supports now.
func (c ControlService) Controls(_ context.Context, e actionflow.Execution) ([]string, error) {
	cs := control.Controls(e)
	out := make([]string, len(cs))
	for i, ctl := range cs {
		out[i] = string(ctl)
	}
	return out, nil
}

// reader reads command records on behalf of the API, after the gate
// authorized the session.
var reader = actionflow.Principal{Subject: "api:activity", Role: "system", Origin: "system"}

// Facts lists each execution's commands accepted but not applied.
func (c ControlService) Facts(ctx context.Context, _ ids.SessionID, recs actionflow.SessionRecords) (map[ids.ExecutionID]activity.Facts, error) {
	out := map[ids.ExecutionID]activity.Facts{}
	for _, e := range recs.Executions {
		cmds, err := c.Service.Commands(ctx, e.ExecutionID, reader)
		if err != nil {
			return nil, err
		}
		var f activity.Facts
		for _, r := range cmds {
			if r.Status == control.StatusAccepted {
				f.PendingCommands = append(f.PendingCommands, string(r.Type))
			}
		}
		if len(f.PendingCommands) > 0 {
			out[e.ExecutionID] = f
		}
	}
	return out, nil
}
