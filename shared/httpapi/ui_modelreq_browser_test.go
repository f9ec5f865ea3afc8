package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/auth"
)

// TestUIModelRequests: an execution's model requests appear in its
// details with their status and token usage; one left open when the agent
// ended the execution is closed incomplete (no_terminal_event) and the
// branch is in History as "Ended · response record incomplete".
// Screenshots go where TestUI's do.
func TestUIModelRequests(t *testing.T) {
	browser := newBrowser(t)
	s := newUIStack(t)
	const session = "ses_ui"
	human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
	v := s.submit(agent, session, "k1", submitBody("noop", `{}`, "c1"))
	s.waitAction(agent, v.ActionID)
	exec := v.ExecutionID
	report := func(path string, body any, want int) {
		t.Helper()
		if r := s.do(req{method: "POST", path: path, token: agent, body: body}); r.status != want {
			t.Fatalf("%s: %d %s", path, r.status, r.body)
		}
	}
	report(modelPath(exec), map[string]any{"request_id": "req_answer", "provider": "anthropic", "model": "claude-sonnet-4"}, http.StatusCreated)
	report(completionPath(exec, "req_answer"), map[string]any{"status": "completed", "usage": map[string]any{"input_tokens": 1200, "output_tokens": 345}}, http.StatusOK)
	report(modelPath(exec), map[string]any{"request_id": "req_cut", "provider": "anthropic", "model": "claude-sonnet-4"}, http.StatusCreated)
	ver := s.execution(agent, exec).Execution.Version
	report("/v1/executions/"+string(exec)+"/end", map[string]any{"command_id": "cmd_end", "expected_version": ver, "payload": map[string]any{"status": "completed"}}, http.StatusAccepted)

	p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
	p.ready()
	p.click(`.section[data-section="history"] ` + strings.TrimPrefix(branchOf(exec), "#activity "))
	row := func(id string) string {
		return execRow(exec) + ` .model-request[data-request-id="` + id + `"]`
	}
	p.wait(row("req_answer") + `[data-status="completed"]`)
	p.wait(row("req_cut") + `[data-status="incomplete"]`)
	for id, want := range map[string][]string{
		"req_answer": {"anthropic · claude-sonnet-4", "completed", "1200 in · 345 out tokens"},
		"req_cut":    {"incomplete", "0 in · 0 out tokens", "no_terminal_event"},
	} {
		got := p.text(row(id))
		for _, w := range want {
			if !strings.Contains(got, w) {
				p.fail("the model request row %s reads %q; want %q in it", id, got, w)
			}
		}
	}
	if got := p.text(branchOf(exec)); !strings.Contains(got, "Ended · response record incomplete") {
		p.fail("the History row reads %q", got)
	}
	p.noNotice()
	p.shot("model-requests")
}
