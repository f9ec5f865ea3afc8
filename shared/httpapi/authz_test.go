package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/process"
)

// victim is session ses_1 with one of everything a route can address.
type victim struct {
	action    httpapi.ActionView // risky, waiting for approval
	approval  httpapi.ApprovalView
	hostTask  httpapi.ActionView // Bash, published for a host
	execution ids.ExecutionID
	question  actionflow.Question // AskUserQuestion, pending
	process   string              // a running managed process of the host task
	replay    string              // a stored policy replay of the session
}

func seedVictim(t *testing.T, s *stack) victim {
	t.Helper()
	owner := s.token(auth.RoleAgent, "ses_1")
	var v victim
	v.action = s.submit(owner, "ses_1", "risky", submitBody("risky", `{"cmd":"deploy"}`, "c1"))
	v.approval = s.pendingApproval(owner, "ses_1", v.action.ActionID)
	v.execution = v.action.ExecutionID
	v.hostTask = s.submit(owner, "ses_1", "bash", submitBody("Bash", `{"command":"echo hi"}`, "c2"))
	asked := s.submit(owner, "ses_1", "ask", submitBody("AskUserQuestion", `{"questions":[{"question":"Deploy?","kind":"confirm"}]}`, "c3"))
	v.question = s.pendingQuestion(owner, "ses_1", asked.ActionID)
	deadline := time.Now().Add(10 * time.Second)
	for {
		tasks, err := s.svc.HostTasks(context.Background(), "ses_1", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(tasks) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the host task was not published")
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.waiting(v.action.ActionID, v.hostTask.ActionID, v.question.ActionID)
	p, err := process.ForFlow(s.svc).Start(context.Background(), process.Record{ProcessID: process.NewID(), SessionID: "ses_1",
		ExecutionID: v.hostTask.ExecutionID, ActionID: v.hostTask.ActionID, Command: "sleep 9", Supervisor: process.Supervisor{ID: "sup_1", Host: "h"}})
	if err != nil {
		t.Fatal(err)
	}
	v.process = p.ProcessID
	r := s.do(req{method: "POST", path: "/v1/sessions/ses_1/policy/replays", token: s.token(auth.RoleHuman, "ses_1"),
		body: map[string]any{"policy": map[string]any{"version": "c", "mode": "default"}, "since": time.Now().Add(-time.Hour)}})
	var rep struct {
		ReplayID string `json:"replay_id"`
	}
	r.decode(t, &rep)
	if r.status != http.StatusCreated || rep.ReplayID == "" {
		t.Fatalf("seed replay: %d %s", r.status, r.body)
	}
	v.replay = rep.ReplayID
	return v
}

// attempt is one request of the matrix.
type attempt struct {
	route string // the route pattern it exercises
	req   req
	// humanOnly routes are also attempted by the session's own agent.
	humanOnly bool
}

func attempts(v victim) []attempt {
	one := int64(1)
	fence := int64(1)
	return []attempt{
		{route: "POST /v1/sessions/{session_id}/actions", req: req{method: "POST", path: "/v1/sessions/ses_1/actions",
			body: submitBody("noop", `{}`, "c9"), header: map[string]string{"Idempotency-Key": "attack"}}},
		{route: "GET /v1/actions/{action_id}", req: req{method: "GET", path: "/v1/actions/" + string(v.action.ActionID)}},
		{route: "GET /v1/actions/{action_id}/machine", req: req{method: "GET", path: "/v1/actions/" + string(v.action.ActionID) + "/machine"}},
		{route: "GET /v1/sessions/{session_id}/approvals", req: req{method: "GET", path: "/v1/sessions/ses_1/approvals"}},
		{route: "POST /v1/approvals/{approval_id}", humanOnly: true, req: req{method: "POST", path: "/v1/approvals/" + string(v.approval.ApprovalID),
			body: httpapi.DecisionBody{Decision: "approve", Digest: v.approval.ArgsDigest}, header: map[string]string{auth.OriginHeader: "ui"}}},
		{route: "GET /v1/sessions/{session_id}/questions", req: req{method: "GET", path: "/v1/sessions/ses_1/questions"}},
		{route: "GET /v1/questions/{question_id}", req: req{method: "GET", path: "/v1/questions/" + v.question.QuestionID}},
		{route: "POST /v1/questions/{question_id}/answer", humanOnly: true, req: req{method: "POST", path: "/v1/questions/" + v.question.QuestionID + "/answer",
			body: actionflow.AnswerBody{CommandID: "cmd_q", Answers: map[string]json.RawMessage{"q1": json.RawMessage("true")}}, header: map[string]string{auth.OriginHeader: "ui"}}},
		{route: "POST /v1/actions/{action_id}/reconciliation", humanOnly: true, req: req{method: "POST", path: "/v1/actions/" + string(v.hostTask.ActionID) + "/reconciliation",
			body: actionflow.ReconcileRequest{Outcome: "succeeded", Note: "trust me"}, header: map[string]string{auth.OriginHeader: "ui"}}},
		{route: "POST /v1/executions/{execution_id}/commands", humanOnly: true, req: req{method: "POST", path: "/v1/executions/" + string(v.execution) + "/commands",
			body: httpapi.CommandBody{CommandID: "cmd_x", Type: "cancel", ExpectedVersion: &one}}},
		{route: "POST /v1/executions/{execution_id}/end", req: req{method: "POST", path: "/v1/executions/" + string(v.execution) + "/end",
			body: httpapi.CommandBody{CommandID: "cmd_y", ExpectedVersion: &one, Payload: []byte(`{"status":"completed"}`)}}},
		{route: "GET /v1/executions/{execution_id}", req: req{method: "GET", path: "/v1/executions/" + string(v.execution)}},
		{route: "POST /v1/executions/{execution_id}/model-requests", req: req{method: "POST", path: "/v1/executions/" + string(v.execution) + "/model-requests",
			body: map[string]any{"request_id": "req_x", "provider": "p", "model": "m"}}},
		{route: "POST /v1/executions/{execution_id}/model-requests/{request_id}/completion", req: req{method: "POST", path: "/v1/executions/" + string(v.execution) + "/model-requests/req_x/completion",
			body: map[string]any{"status": "completed"}}},
		{route: "GET /v1/sessions/{session_id}/activity", req: req{method: "GET", path: "/v1/sessions/ses_1/activity"}},
		{route: "GET /v1/sessions/{session_id}/events", req: req{method: "GET", path: "/v1/sessions/ses_1/events?wait=0"}},
		{route: "GET /v1/sessions/{session_id}/audit", humanOnly: true, req: req{method: "GET", path: "/v1/sessions/ses_1/audit"}},
		{route: "GET /v1/tools", req: req{method: "GET", path: "/v1/tools?session_id=ses_1"}},
		{route: "GET /v1/revisions", req: req{method: "GET", path: "/v1/revisions?session_id=ses_1"}},
		{route: "PUT /v1/sessions/{session_id}/policy", humanOnly: true, req: req{method: "PUT", path: "/v1/sessions/ses_1/policy",
			body: map[string]any{"expected_version": 0, "policy": map[string]any{"mode": "bypass"}}}},
		{route: "GET /v1/sessions/{session_id}/policy", req: req{method: "GET", path: "/v1/sessions/ses_1/policy"}},
		{route: "GET /v1/hosts/tasks", req: req{method: "GET", path: "/v1/hosts/tasks?session_id=ses_1&wait=0"}},
		{route: "POST /v1/hosts/tasks/{action_id}/start", req: req{method: "POST", path: "/v1/hosts/tasks/" + string(v.hostTask.ActionID) + "/start",
			body: httpapi.HostStartBody{AttemptID: "att_evil"}}},
		{route: "POST /v1/hosts/tasks/{action_id}/result", req: req{method: "POST", path: "/v1/hosts/tasks/" + string(v.hostTask.ActionID) + "/result",
			body: map[string]any{"attempt_id": "att_evil", "fence": fence, "result": map[string]any{"outcome": "succeeded"}}}},
		{route: "POST /v1/hosts/tasks/{action_id}/heartbeat", req: req{method: "POST", path: "/v1/hosts/tasks/" + string(v.hostTask.ActionID) + "/heartbeat",
			body: map[string]any{"attempt_id": "att_evil", "fence": fence}}},
		{route: "GET /v1/executions/{execution_id}/processes", req: req{method: "GET", path: "/v1/executions/" + string(v.execution) + "/processes"}},
		{route: "GET /v1/sessions/{session_id}/processes", req: req{method: "GET", path: "/v1/sessions/ses_1/processes"}},
		{route: "GET /v1/processes/{process_id}", req: req{method: "GET", path: "/v1/processes/" + v.process}},
		{route: "GET /v1/processes/{process_id}/output", req: req{method: "GET", path: "/v1/processes/" + v.process + "/output"}},
		{route: "POST /v1/processes/{process_id}/stop", req: req{method: "POST", path: "/v1/processes/" + v.process + "/stop",
			body: httpapi.StopBody{CommandID: "cmd_evil"}}},
		{route: "POST /v1/hosts/tasks/{action_id}/process", req: req{method: "POST", path: "/v1/hosts/tasks/" + string(v.hostTask.ActionID) + "/process",
			body: httpapi.HostProcessBody{ProcessID: "proc_evil", Command: "x", Supervisor: process.Supervisor{ID: "sup_evil", Host: "h"}}}},
		{route: "POST /v1/hosts/processes/{process_id}/report", req: req{method: "POST", path: "/v1/hosts/processes/" + v.process + "/report",
			body: process.Report{Supervisor: process.Supervisor{ID: "sup_1", Host: "h"}, Exit: &process.Exit{Code: 0}}}},
		{route: "POST /v1/hosts/processes/recover", req: req{method: "POST", path: "/v1/hosts/processes/recover?session_id=ses_1",
			body: httpapi.HostRecoverBody{Supervisor: process.Supervisor{ID: "sup_evil", Host: "h"}}}},
		{route: "POST /v1/sessions/{session_id}/policy/replays", humanOnly: true, req: req{method: "POST", path: "/v1/sessions/ses_1/policy/replays",
			body: map[string]any{"policy": map[string]any{"version": "x"}, "since": time.Now().Add(-time.Hour)}}},
		{route: "POST /v1/policy/replays", humanOnly: true, req: req{method: "POST", path: "/v1/policy/replays",
			body: map[string]any{"policy": map[string]any{"version": "x"}, "since": time.Now().Add(-time.Hour), "sessions": []string{"ses_1"}}}},
		{route: "GET /v1/policy/replays/{replay_id}", req: req{method: "GET", path: "/v1/policy/replays/" + v.replay}},
		{route: "PUT /v1/sessions/{session_id}/policy/options", humanOnly: true, req: req{method: "PUT", path: "/v1/sessions/ses_1/policy/options",
			body: map[string]any{"require_replay": false}}},
	}
}

// TestCrossSessionAndCrossRoleRefused: every route, attempted by an agent
// and a human of another session, and every human-only route attempted by
// the session's own agent, answers 403 and writes exactly one audit event
// into the victim session's log — nothing else.
func TestCrossSessionAndCrossRoleRefused(t *testing.T) {
	s := newStack(t)
	v := seedVictim(t, s)
	callers := []struct {
		name      string
		token     string
		principal actionflow.Principal
		humanOnly bool // attempts only the human-only routes
	}{
		{"agent of another session", s.token(auth.RoleAgent, "ses_2"), actionflow.Principal{Role: "agent", Session: "ses_2"}, false},
		{"human of another session", s.token(auth.RoleHuman, "ses_2"), actionflow.Principal{Role: "human", Session: "ses_2"}, false},
		{"the session's own agent on a human route", s.token(auth.RoleAgent, "ses_1"), actionflow.Principal{Role: "agent", Session: "ses_1"}, true},
	}
	covered := map[string]bool{}
	for _, c := range callers {
		for _, a := range attempts(v) {
			if c.humanOnly && !a.humanOnly {
				continue
			}
			covered[a.route] = true
			t.Run(c.name+"/"+a.route, func(t *testing.T) {
				r := a.req
				r.token = c.token
				mark := s.st.mark()
				got := s.do(r)
				if got.status != http.StatusForbidden || got.errorBody(t).Code != "forbidden" {
					t.Fatalf("%s %s: %d %s", r.method, r.path, got.status, got.body)
				}
				// A role without the capability is refused before the id
				// is looked up, so its trace goes to the session the path
				// names, or else to the caller's own.
				auditIn := "ses_1"
				if a.humanOnly && c.principal.Role == "agent" && !strings.Contains(a.req.path, "/sessions/") {
					auditIn = string(c.principal.Session)
				}
				ev := onlyAudit(t, s.st.since(mark), auditIn)
				var data struct {
					Role         string `json:"role"`
					TokenSession string `json:"token_session"`
					Route        string `json:"route"`
				}
				if err := jsonUnmarshal(ev.Data, &data); err != nil {
					t.Fatal(err)
				}
				if data.Role != c.principal.Role || data.TokenSession != string(c.principal.Session) || data.Route != a.route {
					t.Fatalf("audit data %s", ev.Data)
				}
			})
		}
	}
	var missing []string
	for _, rt := range httpapi.Routes() {
		if !covered[rt] {
			missing = append(missing, rt)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("routes without a refusal case: %s", strings.Join(missing, ", "))
	}
	// Nothing the attempts addressed changed.
	ap, err := s.svc.GetApproval(context.Background(), v.action.ActionID)
	if err != nil || ap.Status != actionflow.ApprovalPending {
		t.Fatalf("approval after the attempts: %+v %v", ap, err)
	}
	if tasks, _ := s.svc.HostTasks(context.Background(), "ses_1", 10); len(tasks) != 1 {
		t.Fatal("the host task was claimed by an attacker")
	}
	if q, err := s.svc.QuestionOfAction(context.Background(), v.question.ActionID); err != nil || q.Status != actionflow.QuestionPending {
		t.Fatalf("question after the attempts: %+v %v", q, err)
	}
	if s.exec.calls.Load() != 0 {
		t.Fatal("an attempt reached an executor")
	}
	if p, err := process.ForFlow(s.svc).Get(context.Background(), v.process); err != nil || p.Status != process.Running || p.Stop != nil || p.Version != 1 {
		t.Fatalf("process after the attempts: %+v %v", p, err)
	}
}

// TestUnauthenticatedWritesNothing: no token, a garbage token and a token
// signed with another key are 401 and leave no trace at all.
func TestUnauthenticatedWritesNothing(t *testing.T) {
	s := newStack(t)
	v := seedVictim(t, s)
	forger, _ := auth.NewIssuer(auth.Keys{Agent: []byte("forged-agent-key-forged-agent-key!!"), Human: []byte("forged-key-forged-key-forged-key-!!")})
	forged, _ := forger.Issue(auth.RoleAdmin, "", time.Hour)
	// Signed with the stack's agent key, claiming admin: the agent key never mints a human or admin.
	agentKeyForger, _ := auth.NewIssuer(auth.Keys{Agent: []byte("unrelated-key-unrelated-key-unrelated"), Human: []byte("agent-key-agent-key-agent-key-agent")})
	agentSigned, _ := agentKeyForger.Issue(auth.RoleAdmin, "", time.Hour)
	for _, tok := range []struct{ name, token string }{{"none", ""}, {"garbage", "abc.def.ghi"}, {"other key", forged}, {"agent key claiming admin", agentSigned}} {
		for _, a := range attempts(v) {
			t.Run(tok.name+"/"+a.route, func(t *testing.T) {
				r := a.req
				r.token = tok.token
				mark := s.st.mark()
				got := s.do(r)
				if got.status != http.StatusUnauthorized || got.header.Get("WWW-Authenticate") == "" {
					t.Fatalf("%d %s", got.status, got.body)
				}
				if ws := s.st.since(mark); len(ws) != 0 {
					t.Fatalf("an unauthenticated request wrote %d items", len(ws))
				}
			})
		}
	}
}

// TestAdminReachesEverySession and an owner reaches its own.
func TestOwnersAndAdminAreAllowed(t *testing.T) {
	s := newStack(t)
	v := seedVictim(t, s)
	for _, tok := range []string{s.token(auth.RoleHuman, "ses_1"), s.token(auth.RoleAdmin, "")} {
		for _, path := range []string{"/v1/actions/" + string(v.action.ActionID), "/v1/sessions/ses_1/approvals",
			"/v1/executions/" + string(v.execution), "/v1/sessions/ses_1/policy", "/v1/hosts/tasks?session_id=ses_1", "/v1/sessions/ses_1/audit"} {
			if r := s.do(req{method: "GET", path: path, token: tok}); r.status != 200 {
				t.Fatalf("GET %s: %d %s", path, r.status, r.body)
			}
		}
	}
	// An admin without a session lists every session's host tasks.
	r := s.do(req{method: "GET", path: "/v1/hosts/tasks", token: s.token(auth.RoleAdmin, "")})
	var l httpapi.HostTaskList
	r.decode(t, &l)
	if r.status != 200 || len(l.Tasks) != 1 || l.Tasks[0].ActionID != v.hostTask.ActionID {
		t.Fatalf("admin host tasks: %d %s", r.status, r.body)
	}
}

// TestIDsCannotBeProbed (issue 11, point 6): on every route that names a
// record by id, a caller outside the record's session gets the same answer
// for an id that exists and one that does not (403, same code, same message
// but for the id), so it cannot learn which ids exist; an agent deciding
// an approval, reconciling an outcome or sending a command is refused for
// its role, before any
// lookup, with the same answer whatever the id.
func TestIDsCannotBeProbed(t *testing.T) {
	s := newStack(t)
	v := seedVictim(t, s)
	one := int64(1)
	fakeAction := "act_01JZZZZZZZZZZZZZZZZZZZZZZZ"
	fakeApproval := fakeAction + string(v.approval.ApprovalID)[len(v.action.ActionID):]
	type probe struct {
		route     string
		humanOnly bool
		make      func(id string) req
		real      string
		fake      string
	}
	probes := []probe{
		{"GET /v1/actions/{action_id}", false, func(id string) req { return req{method: "GET", path: "/v1/actions/" + id} }, string(v.action.ActionID), fakeAction},
		{"GET /v1/actions/{action_id}/machine", false, func(id string) req { return req{method: "GET", path: "/v1/actions/" + id + "/machine"} }, string(v.action.ActionID), fakeAction},
		{"POST /v1/approvals/{approval_id}", true, func(id string) req {
			return req{method: "POST", path: "/v1/approvals/" + id, body: httpapi.DecisionBody{Decision: "approve", Digest: v.approval.ArgsDigest}}
		}, string(v.approval.ApprovalID), fakeApproval},
		{"POST /v1/actions/{action_id}/reconciliation", true, func(id string) req {
			return req{method: "POST", path: "/v1/actions/" + id + "/reconciliation", body: actionflow.ReconcileRequest{Outcome: "failed", Note: "x"}}
		}, string(v.action.ActionID), fakeAction},
		{"POST /v1/executions/{execution_id}/commands", true, func(id string) req {
			return req{method: "POST", path: "/v1/executions/" + id + "/commands", body: httpapi.CommandBody{CommandID: "cmd_x", Type: "cancel", ExpectedVersion: &one}}
		}, string(v.execution), "exe_01JZZZZZZZZZZZZZZZZZZZZZZZ"},
		{"GET /v1/executions/{execution_id}", false, func(id string) req { return req{method: "GET", path: "/v1/executions/" + id} }, string(v.execution), "exe_01JZZZZZZZZZZZZZZZZZZZZZZZ"},
		{"POST /v1/hosts/tasks/{action_id}/start", false, func(id string) req {
			return req{method: "POST", path: "/v1/hosts/tasks/" + id + "/start", body: httpapi.HostStartBody{AttemptID: "att_evil"}}
		}, string(v.hostTask.ActionID), fakeAction},
		{"POST /v1/hosts/tasks/{action_id}/result", false, func(id string) req {
			return req{method: "POST", path: "/v1/hosts/tasks/" + id + "/result", body: map[string]any{"attempt_id": "att_evil", "fence": 1, "result": map[string]any{"outcome": "succeeded"}}}
		}, string(v.hostTask.ActionID), fakeAction},
	}
	callers := []struct {
		name      string
		token     string
		humanOnly bool
	}{
		{"agent of another session", s.token(auth.RoleAgent, "ses_2"), false},
		{"human of another session", s.token(auth.RoleHuman, "ses_2"), false},
		{"the session's own agent on a human route", s.token(auth.RoleAgent, "ses_1"), true},
	}
	for _, c := range callers {
		for _, p := range probes {
			if c.humanOnly && !p.humanOnly {
				continue
			}
			t.Run(c.name+"/"+p.route, func(t *testing.T) {
				answer := func(id string) (int, httpapi.ErrorDetail) {
					r := p.make(id)
					r.token = c.token
					got := s.do(r)
					e := got.errorBody(t)
					e.Message = strings.ReplaceAll(e.Message, id, "<id>")
					return got.status, e
				}
				rs, re := answer(p.real)
				fs, fe := answer(p.fake)
				if rs != http.StatusForbidden || re.Code != "forbidden" {
					t.Fatalf("existing id: %d %+v", rs, re)
				}
				if fs != rs || fe.Code != re.Code || fe.Message != re.Message || fe.Field != re.Field {
					t.Fatalf("an existing and an unknown id are told apart: %d %+v / %d %+v", rs, re, fs, fe)
				}
			})
		}
	}
}
