package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/auth"
)

// TestMalformedRequestsNameTheField: each malformed request is refused
// with its status, the field named, and nothing written.
func TestMalformedRequestsNameTheField(t *testing.T) {
	s := newStack(t)
	v := seedVictim(t, s)
	human := s.token(auth.RoleHuman, "ses_1")
	submit := func(body string) req {
		return req{method: "POST", path: "/v1/sessions/ses_1/actions", body: body, header: map[string]string{"Idempotency-Key": "k"}}
	}
	host := "/v1/hosts/tasks/" + string(v.hostTask.ActionID)
	huge := `{"tool":"noop","tool_call_id":"c","interactive":true,"arguments":{"x":"` + strings.Repeat("a", 20<<10) + `"}}`
	cases := []struct {
		name   string
		req    req
		status int
		code   string
		field  string
	}{
		{"unknown field", submit(`{"tool":"noop","arguments":{},"tool_call_id":"c","interactive":true,"session_id":"ses_2"}`), 400, "unknown_field", "session_id"},
		{"wrong type", submit(`{"tool":5,"arguments":{},"tool_call_id":"c","interactive":true}`), 400, "wrong_type", "tool"},
		{"wrong type of a boolean", submit(`{"tool":"noop","arguments":{},"tool_call_id":"c","interactive":"yes"}`), 400, "wrong_type", "interactive"},
		{"arguments not an object", submit(`{"tool":"noop","arguments":[1],"tool_call_id":"c","interactive":true}`), 400, "wrong_type", "arguments"},
		{"malformed JSON", submit(`{"tool":"noop",`), 400, "malformed_json", "body"},
		{"syntax error", submit(`{"tool" "noop"}`), 400, "malformed_json", "body"},
		{"empty body", submit(``), 400, "malformed_json", "body"},
		{"trailing data", submit(`{"tool":"noop","arguments":{},"tool_call_id":"c","interactive":true} {}`), 400, "malformed_json", "body"},
		{"oversized body", submit(huge), 413, "body_too_large", "body"},
		{"missing field", submit(`{"tool":"noop","arguments":{},"interactive":true}`), 400, "missing_field", "tool_call_id"},
		{"missing interactive", submit(`{"tool":"noop","arguments":{},"tool_call_id":"c"}`), 400, "missing_field", "interactive"},
		{"invalid id", submit(`{"tool":"noop","arguments":{},"tool_call_id":"c#1","interactive":true}`), 400, "invalid_field", "tool_call_id"},
		{"missing idempotency key", req{method: "POST", path: "/v1/sessions/ses_1/actions", body: `{"tool":"noop","arguments":{},"tool_call_id":"c","interactive":true}`},
			400, "missing_field", "Idempotency-Key"},
		{"invalid session id in the path", req{method: "GET", path: "/v1/sessions/ses%231/approvals"}, 400, "invalid_field", "session_id"},
		{"not JSON", req{method: "POST", path: "/v1/approvals/" + string(v.approval.ApprovalID), body: "decision=approve",
			header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, 415, "unsupported_media_type", "Content-Type"},
		{"decision not approve or decline", req{method: "POST", path: "/v1/approvals/" + string(v.approval.ApprovalID),
			body: `{"decision":"maybe","digest":"` + v.approval.ArgsDigest + `"}`}, 400, "invalid_field", "decision"},
		{"nested wrong type", req{method: "POST", path: host + "/result",
			body: `{"attempt_id":"att_1","fence":1,"result":{"outcome":"succeeded","exit_code":"zero"}}`}, 400, "wrong_type", "result.exit_code"},
		{"nested unknown field", req{method: "POST", path: host + "/result",
			body: `{"attempt_id":"att_1","fence":1,"result":{"outcome":"succeeded","approved":true}}`}, 400, "unknown_field", "approved"},
		{"host result claiming not_started", req{method: "POST", path: host + "/result",
			body: `{"attempt_id":"att_1","fence":1,"result":{"outcome":"not_started"}}`}, 400, "invalid_field", "result.outcome"},
		{"fence of the wrong type", req{method: "POST", path: host + "/result",
			body: `{"attempt_id":"att_1","fence":1.5,"result":{"outcome":"succeeded"}}`}, 400, "wrong_type", "fence"},
		{"policy with a string version", req{method: "PUT", path: "/v1/sessions/ses_1/policy",
			body: `{"expected_version":"0","policy":{}}`}, 400, "wrong_type", "expected_version"},
		{"events from a bad position", req{method: "GET", path: "/v1/sessions/ses_1/events?wait=0", header: map[string]string{"Last-Event-ID": "x"}},
			400, "invalid_field", "Last-Event-ID"},
		{"events batch limit", req{method: "GET", path: "/v1/sessions/ses_1/events?wait=0&limit=5000"}, 400, "invalid_field", "limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.req
			r.token = human
			mark := s.st.mark()
			got := s.do(r)
			e := got.errorBody(t)
			if got.status != c.status || e.Code != c.code || e.Field != c.field {
				t.Fatalf("got %d %s, want %d %s field %q", got.status, got.body, c.status, c.code, c.field)
			}
			if ws := s.st.since(mark); len(ws) != 0 {
				t.Fatalf("a refused request wrote %d items (first %s %s)", len(ws), ws[0].Op, ws[0].Key)
			}
		})
	}
	// An unknown id answers a session's principal like another session's
	// id (403, so ids cannot be probed); an admin, who may read every
	// session, is told it does not exist.
	if got := s.do(req{method: "GET", path: "/v1/actions/act_nothing", token: human}); got.status != http.StatusForbidden {
		t.Fatalf("unknown action: %d %s", got.status, got.body)
	}
	if got := s.do(req{method: "GET", path: "/v1/actions/act_nothing", token: s.token(auth.RoleAdmin, "")}); got.status != http.StatusNotFound {
		t.Fatalf("unknown action, admin: %d %s", got.status, got.body)
	}
}
