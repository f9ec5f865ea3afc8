package httpapi

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/activity"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/process"
)

// processScope reads the process a route addresses ({process_id}).
func (h *api) processScope(r *http.Request, _ actionflow.Principal) (target, error) {
	id := r.PathValue("process_id")
	if err := ids.Validate("process_id", id); err != nil {
		return target{}, badRequest("invalid_field", "process_id", err.Error())
	}
	rec, err := h.procs.Get(r.Context(), id)
	if err != nil {
		return target{}, err
	}
	return target{Session: rec.SessionID, Process: &rec}, nil
}

// ProcessList is a listing of managed processes.
type ProcessList struct {
	Processes []process.Record `json:"processes"`
}

func processList(rs []process.Record) ProcessList {
	if rs == nil {
		rs = []process.Record{}
	}
	return ProcessList{Processes: rs}
}

// listExecutionProcesses: GET /v1/executions/{execution_id}/processes.
func (h *api) listExecutionProcesses(w http.ResponseWriter, r *http.Request, c *call) error {
	rs, err := h.procs.ListExecution(r.Context(), c.t.Execution.ExecutionID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, processList(rs))
	return nil
}

// listSessionProcesses: GET /v1/sessions/{session_id}/processes.
func (h *api) listSessionProcesses(w http.ResponseWriter, r *http.Request, c *call) error {
	rs, err := h.procs.ListSession(r.Context(), c.t.Session)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, processList(rs))
	return nil
}

// getProcess: GET /v1/processes/{process_id}.
func (h *api) getProcess(w http.ResponseWriter, _ *http.Request, c *call) error {
	writeJSON(w, http.StatusOK, c.t.Process)
	return nil
}

// OutputPage is a page of a process's output (one stream).
type OutputPage struct {
	process.Page
	// Data is the page's bytes as text (invalid UTF-8 replaced).
	Data string `json:"data"`
}

// processOutput: GET /v1/processes/{process_id}/output?stream=&after=&limit=.
func (h *api) processOutput(w http.ResponseWriter, r *http.Request, c *call) error {
	q := r.URL.Query()
	stream := q.Get("stream")
	if stream == "" {
		stream = process.Stdout
	}
	if !process.ValidStream(stream) {
		return badRequest("invalid_field", "stream", "stream is stdout or stderr, not "+strconv.Quote(stream))
	}
	var after int64
	if s := q.Get("after"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return badRequest("invalid_field", "after", "after is a cursor (the next of a page: an integer >= 0), not "+strconv.Quote(s))
		}
		after = n
	}
	limit := 0
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > process.MaxPageBytes {
			return badRequest("invalid_field", "limit", "limit is 1.."+strconv.Itoa(process.MaxPageBytes)+" bytes")
		}
		limit = n
	}
	p, err := h.procs.Output(r.Context(), c.t.Process.ProcessID, stream, after, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, OutputPage{Page: p, Data: string(p.Data)})
	return nil
}

// StopBody is a stop request.
type StopBody struct {
	CommandID ids.CommandID `json:"command_id"`
}

// stopProcess: POST /v1/processes/{process_id}/stop. A human of the
// session or its agent (the owner) asks; the stop is saved on the record
// and the supervisor carries it out at its next poll. 202 accepted (saved,
// or already requested), 200 applied (the process has ended) or rejected
// (it was lost: nothing can stop it from here; the request acknowledges it).
func (h *api) stopProcess(w http.ResponseWriter, r *http.Request, c *call) error {
	var b StopBody
	if err := decodeBody(r, h.cfg.MaxBodyBytes, &b); err != nil {
		return err
	}
	if err := ids.Validate("command_id", string(b.CommandID)); err != nil {
		return badRequest("invalid_field", "command_id", err.Error())
	}
	res, err := h.procs.RequestStop(r.Context(), c.t.Process.ProcessID,
		process.StopRequest{CommandID: b.CommandID, By: c.p.Subject, Role: string(c.p.Role)})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if res.Status == "accepted" {
		status = http.StatusAccepted
	}
	writeJSON(w, status, res)
	return nil
}

// HostProcessBody is a remote supervisor's record of a process it started
// for a task it claimed (POST /v1/hosts/tasks/{action_id}/process).
type HostProcessBody struct {
	ProcessID   string             `json:"process_id"`
	Command     string             `json:"command"`
	Description string             `json:"description,omitempty"`
	Supervisor  process.Supervisor `json:"supervisor"`
	PID         int                `json:"pid,omitempty"`
}

// hostProcessStart records a process for the addressed action: its
// owner (session, execution, action) comes from the action, not the body.
func (h *api) hostProcessStart(w http.ResponseWriter, r *http.Request, c *call) error {
	var b HostProcessBody
	if err := decodeBody(r, h.cfg.MaxBodyBytes, &b); err != nil {
		return err
	}
	a := c.t.Action
	rec, err := h.procs.Start(r.Context(), process.Record{ProcessID: b.ProcessID, SessionID: a.SessionID, ExecutionID: a.ExecutionID,
		ActionID: a.ActionID, Command: b.Command, Description: b.Description, Supervisor: b.Supervisor, PID: b.PID,
		// Its reports must come under the same identity (the token's).
		RegisteredBy: c.p.Subject})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, rec)
	return nil
}

// hostProcessReport: POST /v1/hosts/processes/{process_id}/report.
func (h *api) hostProcessReport(w http.ResponseWriter, r *http.Request, c *call) error {
	var b process.Report
	if err := decodeBody(r, h.cfg.MaxBodyBytes, &b); err != nil {
		return err
	}
	b.By = c.p.Subject
	rec, err := h.procs.Report(r.Context(), c.t.Process.ProcessID, b)
	var se *process.SupervisorError
	var ee *process.EndedError
	switch {
	case errors.As(err, &se):
		return &actionflow.ConflictError{Code: "not_supervisor", Msg: se.Error()}
	case errors.As(err, &ee):
		return &actionflow.ConflictError{Code: "process_ended", Msg: ee.Error(), Current: ee.Record}
	case err != nil:
		return err
	}
	writeJSON(w, http.StatusOK, rec)
	return nil
}

// HostRecoverBody is a supervisor's start-up report.
type HostRecoverBody struct {
	Supervisor process.Supervisor `json:"supervisor"`
	Running    []string           `json:"running"`
}

// HostRecoverResult lists the processes the report found lost.
type HostRecoverResult struct {
	Lost []string `json:"lost"`
}

// hostProcessRecover: POST /v1/hosts/processes/recover (the token's
// session: a session-scoped supervisor speaks only for its session).
func (h *api) hostProcessRecover(w http.ResponseWriter, r *http.Request, c *call) error {
	var b HostRecoverBody
	if err := decodeBody(r, h.cfg.MaxBodyBytes, &b); err != nil {
		return err
	}
	lost, err := h.procs.Recover(r.Context(), b.Supervisor, b.Running, c.t.Session, c.p.Subject)
	if err != nil {
		return err
	}
	if lost == nil {
		lost = []string{}
	}
	writeJSON(w, http.StatusOK, HostRecoverResult{Lost: lost})
	return nil
}

// addProcessFacts adds each execution's running and lost processes to its
// Activity facts.
func (h *api) addProcessFacts(r *http.Request, session ids.SessionID, facts map[ids.ExecutionID]activity.Facts) (map[ids.ExecutionID]activity.Facts, error) {
	rs, err := h.procs.ListSession(r.Context(), session)
	if err != nil || len(rs) == 0 {
		return facts, err
	}
	if facts == nil {
		facts = map[ids.ExecutionID]activity.Facts{}
	}
	for _, p := range rs {
		f := facts[p.ExecutionID]
		f.Processes = append(f.Processes, activity.ProcessRow{ProcessID: p.ProcessID, ActionID: p.ActionID, Command: p.Command,
			Status: string(p.Status), ExitCode: p.ExitCode, StartedAt: p.StartedAt, EndedAt: p.EndedAt})
		switch {
		case p.Status == process.Running:
			f.ActiveProcesses++
		case p.Status == process.Lost && p.Stop == nil:
			f.LostProcesses = append(f.LostProcesses, activity.LostProcess{ProcessID: p.ProcessID, ActionID: p.ActionID,
				Command: p.Command, Reason: p.LostReason})
		}
		facts[p.ExecutionID] = f
	}
	return facts, nil
}
