package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/hostworker"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/process"
)

// Processes lists a session's managed processes.
func (c *Client) Processes(ctx context.Context, session ids.SessionID) ([]process.Record, error) {
	var v httpapi.ProcessList
	_, err := c.do(ctx, "GET", "/v1/sessions/"+esc(string(session))+"/processes", nil, nil, &v)
	return v.Processes, err
}

// ExecutionProcesses lists the managed processes an execution started.
func (c *Client) ExecutionProcesses(ctx context.Context, exec ids.ExecutionID) ([]process.Record, error) {
	var v httpapi.ProcessList
	_, err := c.do(ctx, "GET", "/v1/executions/"+esc(string(exec))+"/processes", nil, nil, &v)
	return v.Processes, err
}

// Process reads one managed process.
func (c *Client) Process(ctx context.Context, id string) (v process.Record, err error) {
	_, err = c.do(ctx, "GET", "/v1/processes/"+esc(id), nil, nil, &v)
	return v, err
}

// ProcessOutput reads a page of a process's stream after cursor after.
func (c *Client) ProcessOutput(ctx context.Context, id, stream string, after int64) (v httpapi.OutputPage, err error) {
	q := url.Values{}
	q.Set("stream", stream)
	q.Set("after", fmt.Sprint(after))
	_, err = c.do(ctx, "GET", "/v1/processes/"+esc(id)+"/output?"+q.Encode(), nil, nil, &v)
	return v, err
}

// StopProcess asks for a process's stop (idempotent by command id).
func (c *Client) StopProcess(ctx context.Context, id string, command ids.CommandID) (v process.StopResult, err error) {
	_, err = c.do(ctx, "POST", "/v1/processes/"+esc(id)+"/stop", nil, httpapi.StopBody{CommandID: command}, &v)
	return v, err
}

var _ hostworker.ProcessHost = Host{}

// ProcessStart records a process a remote supervisor started for a task.
func (h Host) ProcessStart(ctx context.Context, r process.Record) (v process.Record, err error) {
	_, err = h.Client.do(ctx, "POST", "/v1/hosts/tasks/"+esc(string(r.ActionID))+"/process", nil,
		httpapi.HostProcessBody{ProcessID: r.ProcessID, Command: r.Command, Description: r.Description, Supervisor: r.Supervisor, PID: r.PID}, &v)
	return v, err
}

// ProcessReport posts a supervisor's report; the API's 409s come back as
// the process package's errors, so the supervisor acts on them alike. A
// 403 (the process was recorded under another identity than this
// token's) is a *process.SupervisorError too: the process is not this
// supervisor's to report on, so nobody watches it and it is stopped.
func (h Host) ProcessReport(ctx context.Context, id string, rep process.Report) (v process.Record, err error) {
	_, err = h.Client.do(ctx, "POST", "/v1/hosts/processes/"+esc(id)+"/report", nil, rep, &v)
	var fe *actionflow.ForbiddenError
	if errors.As(err, &fe) {
		return v, &process.SupervisorError{ProcessID: id, Got: rep.Supervisor.ID, Want: "(" + fe.Msg + ")"}
	}
	var ce *actionflow.ConflictError
	if errors.As(err, &ce) {
		switch ce.Code {
		case "not_supervisor":
			return v, &process.SupervisorError{ProcessID: id, Got: rep.Supervisor.ID, Want: ce.Msg}
		case "process_ended":
			ee := &process.EndedError{}
			if raw, ok := ce.Current.(json.RawMessage); ok {
				_ = json.Unmarshal(raw, &ee.Record)
			}
			return v, ee
		}
	}
	return v, err
}

// ProcessRecover is the supervisor's start-up report.
func (h Host) ProcessRecover(ctx context.Context, sup process.Supervisor, running []string) ([]string, error) {
	q := ""
	if h.Session != "" {
		q = "?session_id=" + url.QueryEscape(string(h.Session))
	}
	var v httpapi.HostRecoverResult
	_, err := h.Client.do(ctx, "POST", "/v1/hosts/processes/recover"+q, nil, httpapi.HostRecoverBody{Supervisor: sup, Running: running}, &v)
	return v.Lost, err
}
