package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/policystore"
)

// The session policy's iteration_limit and idle_timeout_seconds: validated
// (400 naming the field), shown with their source, taken by executions
// that start without their own (the submission's own limit wins), and
// fixed when an execution starts (a later policy change does not alter it).
func TestSessionPolicyExecutionDefaults(t *testing.T) {
	s := newStack(t)
	agent := s.token(auth.RoleAgent, "ses_1")
	human := s.token(auth.RoleHuman, "ses_1")
	var d policystore.Document
	s.do(req{method: "GET", path: "/v1/sessions/ses_1/policy", token: human}).decode(t, &d)
	if d.IterationLimit != 0 || d.IterationLimitSource != "default" || d.IdleTimeoutSeconds != 0 || d.IdleTimeoutSource != "default" {
		t.Fatalf("defaults: %+v", d)
	}
	put := func(expected int64, body map[string]any) resp {
		body["expected_version"] = expected
		body["policy"] = map[string]any{}
		return s.do(req{method: "PUT", path: "/v1/sessions/ses_1/policy", token: human, body: body})
	}
	for _, c := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"limit over 1000", map[string]any{"iteration_limit": 1001}, "iteration_limit"},
		{"idle timeout of 5 s", map[string]any{"idle_timeout_seconds": 5}, "idle_timeout_seconds"},
		{"idle timeout as text", map[string]any{"idle_timeout_seconds": "1h"}, "idle_timeout_seconds"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := put(0, c.body)
			if e := r.errorBody(t); r.status != http.StatusBadRequest || e.Field != c.field {
				t.Fatalf("%d %s", r.status, r.body)
			}
		})
	}
	r := put(0, map[string]any{"iteration_limit": 2, "idle_timeout_seconds": 3600})
	r.decode(t, &d)
	if r.status != http.StatusOK || d.IterationLimit != 2 || d.IterationLimitSource != "session" || d.IdleTimeoutSeconds != 3600 || d.IdleTimeoutSource != "session" {
		t.Fatalf("put: %d %s", r.status, r.body)
	}

	execution := func(id ids.ExecutionID) actionflow.Execution {
		var ev httpapi.ExecutionView
		s.do(req{method: "GET", path: "/v1/executions/" + string(id), token: human}).decode(t, &ev)
		return ev.Execution
	}
	byPolicy := s.submit(agent, "ses_1", "k1", submitBody("noop", `{}`, "c1"))
	own := submitBody("noop", `{}`, "c2")
	own["iteration_limit"] = 5
	byCall := s.submit(agent, "ses_1", "k2", own)
	s.waitAction(agent, byPolicy.ActionID)
	s.waitAction(agent, byCall.ActionID)
	if e := execution(byPolicy.ExecutionID); e.IterationLimit != 2 || e.IterationLimitSource != actionflow.LimitFromSessionPolicy || e.IdleTimeoutSeconds != 3600 {
		t.Fatalf("execution started under the policy: %+v", e)
	}
	if e := execution(byCall.ExecutionID); e.IterationLimit != 5 || e.IterationLimitSource != actionflow.LimitFromSubmission || e.IdleTimeoutSeconds != 3600 {
		t.Fatalf("execution started with its own limit: %+v", e)
	}

	// A later policy change leaves the running execution as it started.
	r = put(1, map[string]any{"iteration_limit": 9, "idle_timeout_seconds": 0})
	if r.status != http.StatusOK {
		t.Fatalf("second put: %d %s", r.status, r.body)
	}
	next := submitBody("noop", `{"n":2}`, "c3")
	next["execution_id"] = byPolicy.ExecutionID
	s.waitAction(agent, s.submit(agent, "ses_1", "k3", next).ActionID)
	if e := execution(byPolicy.ExecutionID); e.IterationLimit != 2 || e.IdleTimeoutSeconds != 3600 || len(e.Iterations) != 2 {
		t.Fatalf("after the policy changed: %+v", e)
	}
	third := submitBody("noop", `{"n":3}`, "c4")
	third["execution_id"] = byPolicy.ExecutionID
	refused := s.waitAction(agent, s.submit(agent, "ses_1", "k4", third).ActionID)
	if refused.Decision == nil || refused.Decision.Reason.Code != actionflow.ReasonIterationLimit {
		t.Fatalf("the third call under the policy's limit of 2: %+v", refused.Decision)
	}
	fresh := s.submit(agent, "ses_1", "k5", submitBody("noop", `{}`, "c5"))
	if e := execution(fresh.ExecutionID); e.IterationLimit != 9 || e.IdleTimeoutSeconds != 0 {
		t.Fatalf("execution started after the change: %+v", e)
	}
}
