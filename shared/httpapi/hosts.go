package httpapi

import (
	"net/http"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// HostTaskList answers GET /v1/hosts/tasks.
type HostTaskList struct {
	Tasks []HostTaskView `json:"tasks"`
}

// HostStartBody is the body of POST /v1/hosts/tasks/{action_id}/start.
type HostStartBody struct {
	AttemptID ids.AttemptID `json:"attempt_id"`
}

// HostResultBody is the body of POST /v1/hosts/tasks/{action_id}/result.
type HostResultBody struct {
	AttemptID ids.AttemptID          `json:"attempt_id"`
	Fence     *int64                 `json:"fence"`
	Result    *actionflow.ToolResult `json:"result"`
}

// HostHeartbeatBody is the body of POST /v1/hosts/tasks/{action_id}/heartbeat.
type HostHeartbeatBody struct {
	AttemptID ids.AttemptID `json:"attempt_id"`
	Fence     *int64        `json:"fence"`
}

// HostResultResponse answers a posted result ("accepted") or a heartbeat ("alive").
type HostResultResponse struct {
	ActionID ids.ActionID `json:"action_id"`
	Status   string       `json:"status"` // "accepted" | "alive"
}

// hostTaskLimit bounds one listing.
const hostTaskLimit = 64

// hostTasks lists published host tasks of the token's session (an admin
// without ?session_id= sees every session's), long-polling with ?wait=
// until one exists.
func (h *api) hostTasks(w http.ResponseWriter, r *http.Request, c *call) error {
	wait, _, err := waitParam(r, h.cfg.MaxWait)
	if err != nil {
		return err
	}
	session := c.t.Session
	var tasks []actionflow.Action
	wake := func(ev actionflow.Event) bool { return session == "" || ev.SessionID == session }
	err = h.waitFor(r.Context(), wait, wake, func() (bool, error) {
		var err error
		tasks, err = h.svc.HostTasks(r.Context(), session, hostTaskLimit)
		return len(tasks) > 0, err
	})
	if err != nil {
		return err
	}
	out := HostTaskList{Tasks: make([]HostTaskView, 0, len(tasks))}
	for _, a := range tasks {
		out.Tasks = append(out.Tasks, HostTaskView{ActionID: a.ActionID, ExecutionID: a.ExecutionID, SessionID: a.SessionID,
			ToolCallID: a.ToolCallID, Tool: a.Tool, ArgsDigest: a.ArgsDigest, PublishedAt: a.Host.PublishedAt})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *api) hostStart(w http.ResponseWriter, r *http.Request, c *call) error {
	var b HostStartBody
	if err := decodeBody(r, h.cfg.MaxBodyBytes, &b); err != nil {
		return err
	}
	if err := ids.Validate("attempt_id", string(b.AttemptID)); err != nil {
		return badRequest("invalid_field", "attempt_id", err.Error())
	}
	task, err := h.svc.HostStart(r.Context(), c.t.Action.ActionID, b.AttemptID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, taskView(task))
	return nil
}

func (h *api) hostResult(w http.ResponseWriter, r *http.Request, c *call) error {
	var b HostResultBody
	if err := decodeBody(r, h.cfg.MaxBodyBytes, &b); err != nil {
		return err
	}
	if err := checkAttempt(b.AttemptID, b.Fence); err != nil {
		return err
	}
	if b.Result == nil {
		return badRequest("missing_field", "result", "result is required")
	}
	switch b.Result.Outcome {
	case lifecycle.OutcomeSucceeded, lifecycle.OutcomeFailed, lifecycle.OutcomeUnknown:
	default:
		// A started task cannot report not_started: start evidence says it was dispatched.
		return badRequest("invalid_field", "result.outcome", "outcome must be succeeded, failed or unknown")
	}
	if err := h.svc.HostResult(r.Context(), c.t.Action.ActionID, b.AttemptID, *b.Fence, *b.Result); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, HostResultResponse{ActionID: c.t.Action.ActionID, Status: "accepted"})
	return nil
}

// hostHeartbeat: the owning attempt still runs the task (SendTaskHeartbeat
// of its dispatch wait). 409 wait_ended when the lifecycle stopped waiting
// (the worker should still post its result, kept as evidence).
func (h *api) hostHeartbeat(w http.ResponseWriter, r *http.Request, c *call) error {
	var b HostHeartbeatBody
	if err := decodeBody(r, h.cfg.MaxBodyBytes, &b); err != nil {
		return err
	}
	if err := checkAttempt(b.AttemptID, b.Fence); err != nil {
		return err
	}
	if err := h.svc.HostHeartbeat(r.Context(), c.t.Action.ActionID, b.AttemptID, *b.Fence); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, HostResultResponse{ActionID: c.t.Action.ActionID, Status: "alive"})
	return nil
}

// checkAttempt checks the attempt and fence a worker got from the start
// response, which it sends back with every heartbeat and its result.
func checkAttempt(attempt ids.AttemptID, fence *int64) error {
	if err := ids.Validate("attempt_id", string(attempt)); err != nil {
		return badRequest("invalid_field", "attempt_id", err.Error())
	}
	switch {
	case fence == nil:
		return badRequest("missing_field", "fence", "fence is required (from the start response)")
	case *fence <= 0:
		return badRequest("invalid_field", "fence", "fence must be positive")
	}
	return nil
}
