package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/activity"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
)

// Branch headings in the Activity JSON: the title given at start, else
// the first call's tool and argument summary, a fork saying so in words;
// a bad or changed title is a 400 naming the field. Every response is
// checked against api/openapi.yaml by the harness.
func TestActivityHeadingsOverHTTP(t *testing.T) {
	s := newStack(t)
	agent := s.token(auth.RoleAgent, "ses_1")
	human := s.token(auth.RoleHuman, "ses_1")

	titled := submitBody("noop", `{"q":"x"}`, "c1")
	titled["title"] = "Fix the flaky login test"
	a1 := s.submit(agent, "ses_1", "k1", titled)
	s.waitAction(agent, a1.ActionID)
	a2 := s.submit(agent, "ses_1", "k2", submitBody("noop", `{"path":"src/main.go","mode":"full text"}`, "c2"))
	s.waitAction(agent, a2.ActionID)

	bad := []struct {
		name, title string
		exec        ids.ExecutionID
	}{
		{"a newline", "two\nlines", ""},
		{"too long", strings.Repeat("x", 121), ""},
		{"another title for a started execution", "Renamed", a1.ExecutionID},
	}
	for i, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			body := submitBody("noop", `{}`, "cb")
			body["title"] = b.title
			if b.exec != "" {
				body["execution_id"] = b.exec
			}
			r := s.do(req{method: "POST", path: "/v1/sessions/ses_1/actions", token: agent, body: body,
				header: map[string]string{"Idempotency-Key": "bad" + string(rune('a'+i))}})
			if e := r.errorBody(t); r.status != http.StatusBadRequest || e.Field != "title" {
				t.Fatalf("%d %s", r.status, r.body)
			}
		})
	}

	var ev httpapi.ExecutionView
	s.do(req{method: "GET", path: "/v1/executions/" + string(a2.ExecutionID), token: human}).decode(t, &ev)
	one := ev.Execution.Version
	r := s.do(req{method: "POST", path: "/v1/executions/" + string(a2.ExecutionID) + "/commands", token: human,
		body: httpapi.CommandBody{CommandID: "fork_1", Type: "fork", ExpectedVersion: &one}})
	var cr httpapi.CommandResult
	r.decode(t, &cr)
	if cr.ChildExecutionID == "" {
		t.Fatalf("fork: %d %s", r.status, r.body)
	}

	var act activity.Activity
	s.do(req{method: "GET", path: "/v1/sessions/ses_1/activity", token: human}).decode(t, &act)
	headings := map[string]string{}
	for _, rows := range [][]activity.Row{act.NeedsAttention, act.InProgress, act.History} {
		for _, row := range rows {
			headings[row.BranchID] = row.Heading
		}
	}
	want := map[string]string{
		string(a1.ExecutionID):      "Fix the flaky login test",
		string(a2.ExecutionID):      `noop: mode="full text" path=src/main.go`,
		string(cr.ChildExecutionID): `noop: mode="full text" path=src/main.go · fork`,
	}
	for branch, h := range want {
		if headings[branch] != h {
			t.Errorf("branch %s heading %q, want %q (all: %v)", branch, headings[branch], h, headings)
		}
	}
}
