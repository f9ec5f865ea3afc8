package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/httpapi"
)

// The ended execution's view (end, iteration_limit, iterations), the end
// route's answers and the submission's iteration_limit, all checked
// against api/openapi.yaml by the harness.
func TestEndAndIterationLimitMatchTheOpenAPI(t *testing.T) {
	s := newStack(t)
	agent := s.token(auth.RoleAgent, "ses_1")
	body := submitBody("noop", `{}`, "c1")
	body["iteration_limit"] = 1
	v := s.submit(agent, "ses_1", "k1", body)
	s.waitAction(agent, v.ActionID)
	over := submitBody("noop", `{"n":2}`, "c2")
	over["execution_id"] = v.ExecutionID
	refused := s.waitAction(agent, s.submit(agent, "ses_1", "k2", over).ActionID)
	if refused.Decision == nil || refused.Decision.Reason.Code != "iteration_limit" {
		t.Fatalf("call over the limit: %+v", refused.Decision)
	}
	var ev httpapi.ExecutionView
	r := s.do(req{method: "GET", path: "/v1/executions/" + string(v.ExecutionID), token: agent})
	r.decode(t, &ev)
	if e := ev.Execution; e.Status != actionflow.ExecFailed || e.End == nil || e.End.Reason != "iteration_limit" || e.IterationLimit != 1 || len(e.Iterations) != 1 {
		t.Fatalf("execution after the limit: %s", r.body)
	}

	second := s.submit(agent, "ses_1", "k3", submitBody("noop", `{}`, "c3"))
	s.waitAction(agent, second.ActionID)
	path := "/v1/executions/" + string(second.ExecutionID) + "/end"
	one := int64(1)
	cases := []struct {
		name   string
		token  string
		body   httpapi.CommandBody
		status int
		code   string
	}{
		{"a human of another session", s.token(auth.RoleHuman, "ses_2"), httpapi.CommandBody{CommandID: "cmd_a", ExpectedVersion: &one, Payload: []byte(`{"status":"completed"}`)}, http.StatusForbidden, "forbidden"},
		{"no command id", agent, httpapi.CommandBody{ExpectedVersion: &one, Payload: []byte(`{"status":"completed"}`)}, http.StatusBadRequest, "missing_field"},
		{"another type", agent, httpapi.CommandBody{CommandID: "cmd_b", Type: "cancel", ExpectedVersion: &one}, http.StatusBadRequest, "invalid_field"},
		{"bad status", agent, httpapi.CommandBody{CommandID: "cmd_c", ExpectedVersion: &one, Payload: []byte(`{"status":"done"}`)}, http.StatusBadRequest, "invalid_field"},
		{"the agent ends it", agent, httpapi.CommandBody{CommandID: "cmd_d", ExpectedVersion: &one, Payload: []byte(`{"status":"completed","message":"ok"}`)}, http.StatusAccepted, ""},
		{"ended already", agent, httpapi.CommandBody{CommandID: "cmd_e", ExpectedVersion: func() *int64 { v := int64(2); return &v }(), Payload: []byte(`{"status":"completed"}`)}, http.StatusConflict, "control_unavailable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := s.do(req{method: "POST", path: path, token: tc.token, body: tc.body})
			if r.status != tc.status || (tc.code != "" && r.errorBody(t).Code != tc.code) {
				t.Fatalf("%d %s", r.status, r.body)
			}
		})
	}
	r = s.do(req{method: "GET", path: "/v1/executions/" + string(second.ExecutionID), token: agent})
	r.decode(t, &ev)
	if e := ev.Execution; e.Status != actionflow.ExecCompleted || e.End == nil || e.End.By != "agent" || e.End.Message != "ok" {
		t.Fatalf("ended execution: %s", r.body)
	}
}
