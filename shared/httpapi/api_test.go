package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/policystore"
)

func TestSubmitAllowRunsOnceAndIsIdempotent(t *testing.T) {
	s := newStack(t)
	agent := s.token(auth.RoleAgent, "ses_1")
	body := submitBody("noop", `{"b":2,"a":1}`, "call_1")
	v := s.submit(agent, "ses_1", "key-1", body)
	if v.SessionID != "ses_1" || v.Tool != "noop" || string(v.Arguments) != `{"a":1,"b":2}` || v.States.Delivery != lifecycle.DeliveryPending {
		t.Fatalf("submitted %+v", v)
	}
	done := s.waitAction(agent, v.ActionID)
	want := lifecycle.States{Permission: lifecycle.PermissionAllow, Outcome: lifecycle.OutcomeSucceeded, Delivery: lifecycle.DeliveryProjected, Started: true}
	if done.States != want || done.Decision == nil || done.Decision.Reason.Source != "test_rule" || done.Receipt.Output != "done" {
		t.Fatalf("finished %+v", done)
	}

	r := s.do(req{method: "POST", path: "/v1/sessions/ses_1/actions", token: agent, body: body, header: map[string]string{"Idempotency-Key": "key-1"}})
	var again httpapi.ActionView
	r.decode(t, &again)
	if r.status != http.StatusAccepted || again.ActionID != v.ActionID || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("same key, same body: %d %s", r.status, r.body)
	}
	if n := s.exec.calls.Load(); n != 1 {
		t.Fatalf("executor called %d times", n)
	}
	r = s.do(req{method: "POST", path: "/v1/sessions/ses_1/actions", token: agent, body: submitBody("noop", `{"a":2}`, "call_1"),
		header: map[string]string{"Idempotency-Key": "key-1"}})
	if e := r.errorBody(t); r.status != http.StatusConflict || e.Code != "idempotency_key_reused" {
		t.Fatalf("same key, other body: %d %s", r.status, r.body)
	}
	// The same key in another session is another action.
	other := s.submit(s.token(auth.RoleAgent, "ses_2"), "ses_2", "key-1", body)
	if other.ActionID == v.ActionID {
		t.Fatal("an idempotency key crossed sessions")
	}
}

func TestDeniedActionNeverDispatches(t *testing.T) {
	s := newStack(t)
	agent := s.token(auth.RoleAgent, "ses_1")
	v := s.submit(agent, "ses_1", "k", submitBody("forbidden", `{}`, "c1"))
	done := s.waitAction(agent, v.ActionID)
	if done.States.Permission != lifecycle.PermissionDeny || done.States.Outcome != lifecycle.OutcomeNotStarted || s.exec.calls.Load() != 0 {
		t.Fatalf("denied: %+v calls %d", done.States, s.exec.calls.Load())
	}
	if done.Decision.Reason.Code != "deny" || !strings.HasPrefix(done.Receipt.ErrorCode, "permission_denied") {
		t.Fatalf("reason %+v receipt %+v", done.Decision.Reason, done.Receipt)
	}
}

func TestApprovalByHumanOnly(t *testing.T) {
	s := newStack(t)
	agent := s.token(auth.RoleAgent, "ses_1")
	human := s.token(auth.RoleHuman, "ses_1")
	v := s.submit(agent, "ses_1", "k", submitBody("risky", `{"cmd":"deploy"}`, "c1"))
	ap := s.pendingApproval(agent, "ses_1", v.ActionID)
	if ap.Tool != "risky" || ap.ArgsDigest != v.ArgsDigest || ap.Status != actionflow.ApprovalPending {
		t.Fatalf("approval %+v", ap)
	}
	path := "/v1/approvals/" + string(ap.ApprovalID)
	decision := httpapi.DecisionBody{Decision: "approve", Digest: ap.ArgsDigest}

	// An agent cannot approve, even claiming to be the UI.
	s.waiting(v.ActionID)
	mark := s.st.mark()
	r := s.do(req{method: "POST", path: path, token: agent, body: decision, header: map[string]string{auth.OriginHeader: "ui"}})
	if r.status != http.StatusForbidden {
		t.Fatalf("agent approval: %d %s", r.status, r.body)
	}
	onlyAudit(t, s.st.since(mark), "ses_1")

	// A digest that does not match the action is refused.
	r = s.do(req{method: "POST", path: path, token: human, body: httpapi.DecisionBody{Decision: "approve", Digest: "sha256:0000"}})
	if e := r.errorBody(t); r.status != http.StatusBadRequest || e.Field != "digest" {
		t.Fatalf("wrong digest: %d %s", r.status, r.body)
	}
	r = s.do(req{method: "POST", path: path, token: human, body: decision, header: map[string]string{auth.OriginHeader: "ui"}})
	if r.status != http.StatusOK {
		t.Fatalf("human approval: %d %s", r.status, r.body)
	}
	var decided httpapi.ApprovalView
	r.decode(t, &decided)
	if decided.Status != actionflow.ApprovalApproved || decided.DecidedBy == nil ||
		decided.DecidedBy.Role != auth.RoleHuman || decided.DecidedBy.Origin != auth.OriginUI {
		t.Fatalf("decided %+v by %+v", decided, decided.DecidedBy)
	}
	// A second decision gets 409 with the first decision.
	r = s.do(req{method: "POST", path: path, token: human, body: httpapi.DecisionBody{Decision: "decline", Digest: ap.ArgsDigest}})
	e := r.errorBody(t)
	cur, _ := e.Current.(map[string]any)
	if r.status != http.StatusConflict || e.Code != "already_decided" || cur["status"] != "approved" || cur["task_token"] != nil {
		t.Fatalf("second decision: %d %s", r.status, r.body)
	}
	done := s.waitAction(agent, v.ActionID)
	if done.States.Outcome != lifecycle.OutcomeSucceeded || s.exec.calls.Load() != 1 || done.Approval.Status != actionflow.ApprovalApproved {
		t.Fatalf("after approval: %+v calls %d", done.States, s.exec.calls.Load())
	}
}

func TestDeclinedApprovalIsNotStarted(t *testing.T) {
	s := newStack(t)
	human := s.token(auth.RoleHuman, "ses_1")
	v := s.submit(human, "ses_1", "k", submitBody("risky", `{}`, "c1"))
	ap := s.pendingApproval(human, "ses_1", v.ActionID)
	r := s.do(req{method: "POST", path: "/v1/approvals/" + string(ap.ApprovalID), token: human, body: httpapi.DecisionBody{Decision: "decline", Digest: ap.ArgsDigest}})
	if r.status != http.StatusOK {
		t.Fatalf("decline: %d %s", r.status, r.body)
	}
	done := s.waitAction(human, v.ActionID)
	if done.States.Outcome != lifecycle.OutcomeNotStarted || done.States.Permission != lifecycle.PermissionDeny || s.exec.calls.Load() != 0 {
		t.Fatalf("declined: %+v", done.States)
	}
	if done.Receipt.ErrorCode != "approval_declined" {
		t.Fatalf("receipt %+v", done.Receipt)
	}
}

func TestGetActionWaitIsBounded(t *testing.T) {
	s := newStack(t)
	agent := s.token(auth.RoleAgent, "ses_1")
	v := s.submit(agent, "ses_1", "k", submitBody("risky", `{}`, "c1"))
	s.pendingApproval(agent, "ses_1", v.ActionID)
	start := time.Now()
	r := s.do(req{method: "GET", path: "/v1/actions/" + string(v.ActionID) + "?wait=0.3", token: agent})
	var got httpapi.ActionView
	r.decode(t, &got)
	if r.status != http.StatusOK || got.Receipt != nil || got.Approval == nil || got.Approval.Status != actionflow.ApprovalPending {
		t.Fatalf("waiting action: %d %s", r.status, r.body)
	}
	if time.Since(start) < 300*time.Millisecond {
		t.Fatal("the long poll returned before its wait without an outcome")
	}
	for _, bad := range []string{"-1", "abc", "NaN"} {
		r := s.do(req{method: "GET", path: "/v1/actions/" + string(v.ActionID) + "?wait=" + bad, token: agent})
		if e := r.errorBody(t); r.status != http.StatusBadRequest || e.Field != "wait" {
			t.Fatalf("wait=%s: %d %s", bad, r.status, r.body)
		}
	}
}

func TestPolicyVersions(t *testing.T) {
	s := newStack(t)
	human := s.token(auth.RoleHuman, "ses_1")
	agent := s.token(auth.RoleAgent, "ses_1")
	r := s.do(req{method: "GET", path: "/v1/sessions/ses_1/policy", token: agent})
	var d policystore.Document
	r.decode(t, &d)
	if r.status != 200 || d.Version != 0 || d.RestartWindowSeconds != -1 {
		t.Fatalf("default policy: %d %s", r.status, r.body)
	}
	put := func(tok string, expected int64, policy string, window *int64) resp {
		return s.do(req{method: "PUT", path: "/v1/sessions/ses_1/policy", token: tok,
			body: httpapi.PolicyBody{ExpectedVersion: &expected, Policy: json.RawMessage(policy), RestartWindowSeconds: window}})
	}
	window := int64(7200)
	if r := put(human, 0, `{"mode":"default","rules":[]}`, &window); r.status != 200 || r.header.Get("ETag") != `"1"` {
		t.Fatalf("first put: %d %s", r.status, r.body)
	}
	r = put(human, 0, `{"mode":"plan"}`, nil)
	e := r.errorBody(t)
	if cur, _ := e.Current.(map[string]any); r.status != 409 || e.Code != "stale_policy_version" || cur["version"] != float64(1) {
		t.Fatalf("stale put: %d %s", r.status, r.body)
	}
	if r := put(human, 1, `["not","an","object"]`, nil); r.status != 400 || r.errorBody(t).Field != "policy" {
		t.Fatalf("bad policy: %d %s", r.status, r.body)
	}
	bad := int64(-5)
	if r := put(human, 1, `{}`, &bad); r.status != 400 || r.errorBody(t).Field != "restart_window_seconds" {
		t.Fatalf("bad window: %d %s", r.status, r.body)
	}
	if r := put(agent, 1, `{}`, nil); r.status != 403 {
		t.Fatalf("agent put: %d %s", r.status, r.body)
	}
	r = s.do(req{method: "GET", path: "/v1/sessions/ses_1/policy", token: agent})
	r.decode(t, &d)
	if d.Version != 1 || d.RestartWindowSeconds != 7200 || d.UpdatedBy.Role != auth.RoleHuman {
		t.Fatalf("policy %+v", d)
	}
}

func TestExecutionControlsAndCommands(t *testing.T) {
	s := newStack(t)
	human := s.token(auth.RoleHuman, "ses_1")
	v := s.submit(human, "ses_1", "k", submitBody("noop", `{}`, "c1"))
	s.waitAction(human, v.ActionID)
	execution := func() httpapi.ExecutionView {
		var ev httpapi.ExecutionView
		r := s.do(req{method: "GET", path: "/v1/executions/" + string(v.ExecutionID), token: s.token(auth.RoleAgent, "ses_1")})
		r.decode(t, &ev)
		if r.status != 200 {
			t.Fatalf("execution: %d %s", r.status, r.body)
		}
		return ev
	}
	ev := execution()
	has := func(cs []string, c string) bool { return strings.Contains(","+strings.Join(cs, ",")+",", ","+c+",") }
	if ev.Execution.ExecutionID != v.ExecutionID || ev.Checkpoint.Recorded != 1 || !has(ev.Controls, "pause") || !has(ev.Controls, "end") || has(ev.Controls, "continue") {
		t.Fatalf("running execution %+v", ev)
	}
	path := "/v1/executions/" + string(v.ExecutionID) + "/commands"
	version := ev.Execution.Version
	send := func(id, typ string, expected int64) resp {
		return s.do(req{method: "POST", path: path, token: human, body: httpapi.CommandBody{CommandID: ids.CommandID(id), Type: typ, ExpectedVersion: &expected}})
	}
	r := send("cmd_1", "pause", version)
	var cr httpapi.CommandResult
	r.decode(t, &cr)
	if r.status != 202 || cr.CommandID != "cmd_1" || (cr.Status != "applied" && cr.Status != "accepted") {
		t.Fatalf("pause: %d %s", r.status, r.body)
	}
	// The same command again is the same command.
	if r := send("cmd_1", "pause", version); r.status != 202 {
		t.Fatalf("repeated pause: %d %s", r.status, r.body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for ev = execution(); ev.Execution.Status != actionflow.ExecPaused; ev = execution() {
		if time.Now().After(deadline) {
			t.Fatalf("not paused: %+v", ev.Execution)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !has(ev.Controls, "continue") || !has(ev.Controls, "end") || has(ev.Controls, "pause") {
		t.Fatalf("paused execution advertises %v", ev.Controls)
	}
	// The version the pause was sent against is stale now: a non-cancel
	// command made against it is refused (a cancel would not be).
	r = send("cmd_2", "continue", version)
	e := r.errorBody(t)
	if cur, _ := e.Current.(map[string]any); r.status != 409 || e.Code != "stale_version" || cur["execution_version"] != float64(ev.Execution.Version) {
		t.Fatalf("stale command: %d %s", r.status, r.body)
	}
	// A control the execution does not support now.
	r = send("cmd_3", "pause", ev.Execution.Version)
	if e := r.errorBody(t); r.status != 409 || e.Code != "control_unavailable" {
		t.Fatalf("pause of a paused execution: %d %s", r.status, r.body)
	}
	// Activity: a user pause needs attention.
	var act struct {
		NeedsAttention []struct {
			Status string `json:"status"`
		} `json:"needs_attention"`
	}
	s.do(req{method: "GET", path: "/v1/sessions/ses_1/activity", token: human}).decode(t, &act)
	if len(act.NeedsAttention) != 1 || act.NeedsAttention[0].Status != "Paused" {
		t.Fatalf("activity after pause: %+v", act)
	}
	r = s.do(req{method: "POST", path: path, token: human, body: map[string]any{"command_id": "cmd_4", "type": "continue"}})
	if r.status != 400 || r.errorBody(t).Field != "expected_version" {
		t.Fatalf("command without version: %d %s", r.status, r.body)
	}
}

func TestNotConfiguredServicesAnswer501(t *testing.T) {
	s := newStack(t, func(c *httpapi.Config) { c.Control, c.Tools = nil, nil })
	human := s.token(auth.RoleHuman, "ses_1")
	v := s.submit(human, "ses_1", "k", submitBody("noop", `{}`, "c1"))
	one := int64(1)
	r := s.do(req{method: "POST", path: "/v1/executions/" + string(v.ExecutionID) + "/commands", token: human,
		body: httpapi.CommandBody{CommandID: "cmd_1", Type: "pause", ExpectedVersion: &one}})
	if r.status != 501 {
		t.Fatalf("command without service: %d %s", r.status, r.body)
	}
	if r := s.do(req{method: "GET", path: "/v1/tools", token: human}); r.status != 501 {
		t.Fatalf("tools without catalog: %d %s", r.status, r.body)
	}
	r = s.do(req{method: "GET", path: "/v1/executions/" + string(v.ExecutionID), token: human})
	var ev httpapi.ExecutionView
	r.decode(t, &ev)
	if r.status != 200 || len(ev.Controls) != 0 {
		t.Fatalf("execution without control service: %d %s", r.status, r.body)
	}
}

func TestToolsAndActivityAndHealth(t *testing.T) {
	s := newStack(t)
	agent := s.token(auth.RoleAgent, "ses_1")
	r := s.do(req{method: "GET", path: "/v1/tools", token: agent})
	var tl httpapi.ToolsResponse
	r.decode(t, &tl)
	if r.status != 200 || tl.SessionID != "ses_1" || len(tl.Tools) != 1 {
		t.Fatalf("tools: %d %s", r.status, r.body)
	}
	if r := s.do(req{method: "GET", path: "/v1/tools", token: s.token(auth.RoleAdmin, "")}); r.status != 400 || r.errorBody(t).Field != "session_id" {
		t.Fatalf("admin tools without session: %d %s", r.status, r.body)
	}
	v1 := s.submit(agent, "ses_1", "k1", submitBody("noop", `{}`, "c1"))
	s.waitAction(agent, v1.ActionID)
	// Continuing the same execution adds an action, not a row.
	b := submitBody("risky", `{}`, "c2")
	b["execution_id"] = string(v1.ExecutionID)
	v2 := s.submit(agent, "ses_1", "k2", b)
	s.pendingApproval(agent, "ses_1", v2.ActionID)
	r = s.do(req{method: "GET", path: "/v1/sessions/ses_1/activity", token: agent})
	var act struct {
		NeedsAttention []struct {
			BranchID   string `json:"branch_id"`
			Status     string `json:"status"`
			Executions []struct {
				Actions []struct {
					Label string `json:"label"`
				} `json:"actions"`
			} `json:"executions"`
		} `json:"needs_attention"`
		Counts map[string]int `json:"counts"`
	}
	r.decode(t, &act)
	if r.status != 200 || act.Counts["needs_attention"] != 1 || act.Counts["in_progress"]+act.Counts["history"] != 0 {
		t.Fatalf("activity: %d %s", r.status, r.body)
	}
	if row := act.NeedsAttention[0]; row.Status != "Waiting for your response" || len(row.Executions) != 1 || len(row.Executions[0].Actions) != 2 {
		t.Fatalf("row %+v", row)
	}
	if r := s.do(req{method: "GET", path: "/healthz"}); r.status != 200 {
		t.Fatalf("healthz: %d %s", r.status, r.body)
	}
}

func TestUnknownRoutesAndMethodsAreJSON(t *testing.T) {
	s := newStack(t)
	tok := s.token(auth.RoleAgent, "ses_1")
	if r := s.do(req{method: "GET", path: "/v1/nothing", token: tok}); r.status != 404 || r.errorBody(t).Code != "not_found" {
		t.Fatalf("unknown route: %d %s", r.status, r.body)
	}
	r := s.do(req{method: "DELETE", path: "/v1/sessions/ses_1/policy", token: tok})
	if r.status != 405 || r.errorBody(t).Code != "method_not_allowed" || !strings.Contains(r.header.Get("Allow"), "GET") {
		t.Fatalf("wrong method: %d %s %v", r.status, r.body, r.header)
	}
}

func TestUIIsServed(t *testing.T) {
	s := newStack(t)
	res, err := s.client.Get(s.url + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	page, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || !strings.Contains(string(page), "app.js") {
		t.Fatalf("ui: %d %s", res.StatusCode, page)
	}
	if res.Header.Get("Content-Security-Policy") == "" {
		t.Fatal("the UI is served without a content security policy")
	}
	noRedirect := *s.client
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res2, err := noRedirect.Get(s.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	res2.Body.Close()
	if res2.StatusCode != http.StatusFound || res2.Header.Get("Location") != "/ui/" {
		t.Fatalf("/: %d %v", res2.StatusCode, res2.Header)
	}
}
