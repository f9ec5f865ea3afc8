package httpapi

import (
	"errors"
	"net/http"
	"strings"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/process"
	"github.com/openprogram/lifecycle/shared/store"
)

// route is one /v1 route: what it needs and how it finds the session it touches.
type route struct {
	pattern string
	need    auth.Capability
	scope   func(r *http.Request, p actionflow.Principal) (target, error)
	serve   func(w http.ResponseWriter, r *http.Request, c *call) error
}

// target is what a request addresses, read before authorization (never
// written) so the handler does not read it twice.
type target struct {
	Session   ids.SessionID
	Action    *actionflow.Action
	Execution *actionflow.Execution
	Approval  *actionflow.Approval
	Question  *actionflow.Question
	Process   *process.Record
}

// call is an authorized request.
type call struct {
	p actionflow.Principal
	t target
}

// table is the whole /v1 surface and its authorization, in one place.
func (h *api) table() []route {
	return []route{
		{"POST /v1/sessions/{session_id}/actions", auth.CapSubmit, pathSession, h.submit},
		{"GET /v1/actions/{action_id}", auth.CapRead, h.actionScope, h.getAction},
		{"GET /v1/actions/{action_id}/machine", auth.CapRead, h.actionScope, h.machine},
		{"POST /v1/actions/{action_id}/reconciliation", auth.CapDecide, h.actionScope, h.reconcile},
		{"GET /v1/sessions/{session_id}/approvals", auth.CapRead, pathSession, h.listApprovals},
		{"POST /v1/approvals/{approval_id}", auth.CapDecide, h.approvalScope, h.decide},
		{"GET /v1/sessions/{session_id}/questions", auth.CapRead, pathSession, h.listQuestions},
		{"GET /v1/questions/{question_id}", auth.CapRead, h.questionScope, h.getQuestion},
		{"POST /v1/questions/{question_id}/answer", auth.CapDecide, h.questionScope, h.answerQuestion},
		{"POST /v1/executions/{execution_id}/commands", auth.CapCommand, h.executionScope, h.command},
		{"POST /v1/executions/{execution_id}/end", auth.CapEnd, h.executionScope, h.end},
		{"GET /v1/executions/{execution_id}", auth.CapRead, h.executionScope, h.getExecution},
		{"POST /v1/executions/{execution_id}/model-requests", auth.CapSubmit, h.executionScope, h.startModelRequest},
		{"POST /v1/executions/{execution_id}/model-requests/{request_id}/completion", auth.CapSubmit, h.executionScope, h.completeModelRequest},
		{"GET /v1/sessions/{session_id}/activity", auth.CapRead, pathSession, h.activity},
		{"GET /v1/sessions/{session_id}/events", auth.CapRead, pathSession, h.events},
		{"GET /v1/sessions/{session_id}/audit", auth.CapAudit, pathSession, h.auditLog},
		{"GET /v1/tools", auth.CapRead, querySession(true), h.tools},
		{"PUT /v1/sessions/{session_id}/policy", auth.CapPolicy, pathSession, h.putPolicy},
		{"GET /v1/sessions/{session_id}/policy", auth.CapRead, pathSession, h.getPolicy},
		{"GET /v1/hosts/tasks", auth.CapHost, querySession(false), h.hostTasks},
		{"POST /v1/hosts/tasks/{action_id}/start", auth.CapHost, h.actionScope, h.hostStart},
		{"POST /v1/hosts/tasks/{action_id}/result", auth.CapHost, h.actionScope, h.hostResult},
		{"POST /v1/hosts/tasks/{action_id}/heartbeat", auth.CapHost, h.actionScope, h.hostHeartbeat},
		{"GET /v1/executions/{execution_id}/processes", auth.CapRead, h.executionScope, h.listExecutionProcesses},
		{"GET /v1/sessions/{session_id}/processes", auth.CapRead, pathSession, h.listSessionProcesses},
		{"GET /v1/processes/{process_id}", auth.CapRead, h.processScope, h.getProcess},
		{"GET /v1/processes/{process_id}/output", auth.CapRead, h.processScope, h.processOutput},
		{"POST /v1/processes/{process_id}/stop", auth.CapEnd, h.processScope, h.stopProcess},
		{"POST /v1/hosts/tasks/{action_id}/process", auth.CapHost, h.actionScope, h.hostProcessStart},
		{"POST /v1/hosts/processes/{process_id}/report", auth.CapHost, h.processScope, h.hostProcessReport},
		{"POST /v1/hosts/processes/recover", auth.CapHost, querySession(true), h.hostProcessRecover},
		{"POST /v1/sessions/{session_id}/policy/replays", auth.CapPolicy, pathSession, h.sessionReplay},
		{"POST /v1/policy/replays", auth.CapPolicy, tokenSession, h.replayAll},
		{"GET /v1/policy/replays/{replay_id}", auth.CapRead, h.replayScope, h.getReplay},
		{"PUT /v1/sessions/{session_id}/policy/options", auth.CapPolicy, pathSession, h.putPolicyOptions},
		{"GET /v1/revisions", auth.CapRead, querySession(true), h.revisions},
	}
}

// gate authenticates, resolves the target, authorizes, then serves.
func (h *api) gate(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := h.cfg.Auth.Authenticate(r)
		if err != nil {
			var ue *auth.UnauthenticatedError
			if !errors.As(err, &ue) {
				err = &auth.UnauthenticatedError{Msg: err.Error()}
			}
			h.fail(w, r, err)
			return
		}
		r = r.WithContext(auth.WithPrincipal(r.Context(), p))
		// A role without the capability is refused before anything is
		// looked up: an agent deciding an approval or sending a command
		// learns nothing about which ids exist.
		if !auth.Can(p.Role, rt.need) {
			err := auth.Authorize(p, rt.need, "")
			h.audit(r, rt, p, target{Session: pathSessionOr(r, p.Session)}, err)
			h.fail(w, r, err)
			return
		}
		t, err := rt.scope(r, p)
		kind, id := addressedID(r)
		if err != nil {
			if kind != "" && isNotFound(err) && p.Role != auth.RoleAdmin {
				// An id that does not exist answers like an id of another
				// session, so ids cannot be probed across sessions.
				denied := hiddenID(rt, kind, id)
				h.audit(r, rt, p, target{}, denied)
				h.fail(w, r, denied)
				return
			}
			h.fail(w, r, err)
			return
		}
		if err := auth.Authorize(p, rt.need, t.Session); err != nil {
			h.audit(r, rt, p, t, err)
			if kind != "" {
				// The role may use the route (checked above), so the
				// session is what differs: answered exactly like an id
				// that does not exist.
				err = hiddenID(rt, kind, id)
			}
			h.fail(w, r, err)
			return
		}
		if err := rt.serve(w, r, &call{p: p, t: t}); err != nil {
			h.fail(w, r, err)
		}
	})
}

// audit appends the one trace a refused request leaves: an "audit.denied"
// event in the log of the session it touched (or the caller's own session
// when it named none).
func (h *api) audit(r *http.Request, rt route, p actionflow.Principal, t target, denied error) {
	session := t.Session
	if session == "" {
		session = p.Session
	}
	if session == "" {
		h.log.WarnContext(r.Context(), "api: denied request without a session to audit", "subject", p.Subject, "route", rt.pattern)
		return
	}
	ev := actionflow.Event{Type: "audit.denied", SessionID: session}
	if t.Action != nil {
		ev.ActionID, ev.ExecutionID = t.Action.ActionID, t.Action.ExecutionID
	}
	if t.Execution != nil {
		ev.ExecutionID = t.Execution.ExecutionID
	}
	var de *auth.DeniedError
	reason := denied.Error()
	if errors.As(denied, &de) {
		reason = de.Reason
	}
	data := map[string]any{"subject": p.Subject, "role": p.Role, "token_session": p.Session, "origin": p.Origin,
		"capability": rt.need, "route": rt.pattern, "path": r.URL.Path, "reason": reason}
	if _, err := h.svc.AppendEvent(r.Context(), ev, data); err != nil {
		h.log.ErrorContext(r.Context(), "api: audit event not written", "error", err, "subject", p.Subject, "route", rt.pattern)
	}
}

// addressedID is the record id a route addresses in its path, if any.
func addressedID(r *http.Request) (kind, id string) {
	for _, k := range []string{"approval_id", "question_id", "execution_id", "action_id", "process_id", "replay_id"} {
		if v := r.PathValue(k); v != "" {
			return strings.TrimSuffix(k, "_id"), v
		}
	}
	return "", ""
}

// hiddenID is the one answer to a non-admin addressing a record outside
// its token's session, whether the record exists or not.
func hiddenID(rt route, kind, id string) error {
	return &auth.DeniedError{Capability: rt.need, Reason: kind + " " + id + " is not in the token's session"}
}

// pathSessionOr is the session named in the path, or def.
func pathSessionOr(r *http.Request, def ids.SessionID) ids.SessionID {
	if s := r.PathValue("session_id"); s != "" && ids.Validate("session_id", s) == nil {
		return ids.SessionID(s)
	}
	return def
}

// tokenSession is the token's own session (none for an admin token
// without one); the handler authorizes each session the body names.
func tokenSession(_ *http.Request, p actionflow.Principal) (target, error) {
	return target{Session: p.Session}, nil
}

func pathSession(r *http.Request, _ actionflow.Principal) (target, error) {
	s := r.PathValue("session_id")
	if err := ids.Validate("session_id", s); err != nil {
		return target{}, badRequest("invalid_field", "session_id", err.Error())
	}
	return target{Session: ids.SessionID(s)}, nil
}

// querySession reads ?session_id=, defaulting to the token's session. An
// admin may omit it where all sessions make sense (required == false).
func querySession(required bool) func(r *http.Request, p actionflow.Principal) (target, error) {
	return func(r *http.Request, p actionflow.Principal) (target, error) {
		s := r.URL.Query().Get("session_id")
		if s == "" {
			s = string(p.Session)
		}
		if s == "" {
			if required {
				return target{}, badRequest("invalid_field", "session_id", "name the session (?session_id=)")
			}
			return target{}, nil
		}
		if err := ids.Validate("session_id", s); err != nil {
			return target{}, badRequest("invalid_field", "session_id", err.Error())
		}
		return target{Session: ids.SessionID(s)}, nil
	}
}

func (h *api) actionScope(r *http.Request, _ actionflow.Principal) (target, error) {
	id := r.PathValue("action_id")
	if err := ids.Validate("action_id", id); err != nil {
		return target{}, badRequest("invalid_field", "action_id", err.Error())
	}
	a, err := h.svc.GetAction(r.Context(), ids.ActionID(id))
	if err != nil {
		return target{}, err
	}
	return target{Session: a.SessionID, Action: &a}, nil
}

func (h *api) executionScope(r *http.Request, _ actionflow.Principal) (target, error) {
	id := r.PathValue("execution_id")
	if err := ids.Validate("execution_id", id); err != nil {
		return target{}, badRequest("invalid_field", "execution_id", err.Error())
	}
	e, err := h.svc.GetExecution(r.Context(), ids.ExecutionID(id))
	if err != nil {
		return target{}, err
	}
	return target{Session: e.SessionID, Execution: &e}, nil
}

func (h *api) approvalScope(r *http.Request, _ actionflow.Principal) (target, error) {
	id := r.PathValue("approval_id")
	if err := ids.Validate("approval_id", id); err != nil {
		return target{}, badRequest("invalid_field", "approval_id", err.Error())
	}
	action, ok := actionflow.ActionOfApproval(ids.ApprovalID(id))
	if !ok {
		return target{}, &actionflow.NotFoundError{What: "approval " + id}
	}
	ap, err := h.svc.GetApproval(r.Context(), action)
	if errors.Is(err, store.ErrNotFound) {
		return target{}, &actionflow.NotFoundError{What: "approval " + id}
	}
	if err != nil {
		return target{}, err
	}
	return target{Session: ap.SessionID, Approval: &ap}, nil
}

func isNotFound(err error) bool {
	var nf *actionflow.NotFoundError
	return errors.Is(err, store.ErrNotFound) || errors.As(err, &nf)
}
