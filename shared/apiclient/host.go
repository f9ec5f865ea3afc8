package apiclient

import (
	"context"
	"net/url"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/hostworker"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
)

// Host is the hostworker.Host of a remote worker: the API's host routes.
type Host struct {
	Client *Client
	// Session lists only this session's tasks (admin tokens; others are
	// always limited to their token's session).
	Session ids.SessionID
}

var _ hostworker.Host = Host{}

// Tasks long-polls for published host tasks.
func (h Host) Tasks(ctx context.Context, wait time.Duration) ([]ids.ActionID, error) {
	q := url.Values{}
	q.Set("wait", seconds(wait))
	if h.Session != "" {
		q.Set("session_id", string(h.Session))
	}
	var out httpapi.HostTaskList
	if _, err := h.Client.do(ctx, "GET", "/v1/hosts/tasks?"+q.Encode(), nil, nil, &out); err != nil {
		return nil, err
	}
	idsOut := make([]ids.ActionID, len(out.Tasks))
	for i, t := range out.Tasks {
		idsOut[i] = t.ActionID
	}
	return idsOut, nil
}

// Start claims a task for an attempt; a task someone else claimed is a
// *actionflow.ConflictError (the worker skips it).
func (h Host) Start(ctx context.Context, id ids.ActionID, attempt ids.AttemptID) (actionflow.Task, error) {
	var tv httpapi.TaskView
	if _, err := h.Client.do(ctx, "POST", "/v1/hosts/tasks/"+esc(string(id))+"/start", nil, httpapi.HostStartBody{AttemptID: attempt}, &tv); err != nil {
		return actionflow.Task{}, err
	}
	return tv.Task(), nil
}

// Result posts the attempt's result.
func (h Host) Result(ctx context.Context, id ids.ActionID, attempt ids.AttemptID, fence int64, res actionflow.ToolResult) error {
	_, err := h.Client.do(ctx, "POST", "/v1/hosts/tasks/"+esc(string(id))+"/result", nil,
		httpapi.HostResultBody{AttemptID: attempt, Fence: &fence, Result: &res}, nil)
	return err
}

// Heartbeat says the attempt still runs the task; a wait the lifecycle no
// longer keeps is a *actionflow.ConflictError "wait_ended".
func (h Host) Heartbeat(ctx context.Context, id ids.ActionID, attempt ids.AttemptID, fence int64) error {
	_, err := h.Client.do(ctx, "POST", "/v1/hosts/tasks/"+esc(string(id))+"/heartbeat", nil,
		httpapi.HostHeartbeatBody{AttemptID: attempt, Fence: &fence}, nil)
	return err
}
