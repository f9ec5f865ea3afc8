package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/audit"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
)

// auditChain pages the whole decision log of a session, three entries a page.
func (s *stack) auditChain(token string, session ids.SessionID) []audit.Entry {
	s.t.Helper()
	var all []audit.Entry
	for after := int64(0); ; {
		r := s.do(req{method: "GET", path: fmt.Sprintf("/v1/sessions/%s/audit?after=%d&limit=3", session, after), token: token})
		var p httpapi.AuditPage
		r.decode(s.t, &p)
		if r.status != http.StatusOK {
			s.t.Fatalf("audit: %d %s", r.status, r.body)
		}
		if len(p.Entries) == 0 {
			return all
		}
		all = append(all, p.Entries...)
		after = p.Next
	}
}

// TestDecisionLogRecordsEveryAuthority: every decision that carries
// authority is an entry of the session's chain, with what the issue asks
// of it (the permission decision's reason, policy version and args digest;
// who decided an approval, a command and a policy change, and from which
// origin; a refusal), a refused change leaves no entry, and the chain
// verifies.
func TestDecisionLogRecordsEveryAuthority(t *testing.T) {
	s := newStack(t)
	agent := s.token(auth.RoleAgent, "ses_1")
	human := s.token(auth.RoleHuman, "ses_1")
	admin := s.token(auth.RoleAdmin, "")
	ui := map[string]string{auth.OriginHeader: "ui"}

	if r := s.do(req{method: "PUT", path: "/v1/sessions/ses_1/policy", token: human, header: ui,
		body: map[string]any{"expected_version": 0, "policy": map[string]any{"mode": "default"}}}); r.status != http.StatusOK {
		t.Fatalf("policy: %d %s", r.status, r.body)
	}
	before := len(s.auditChain(human, "ses_1"))
	if r := s.do(req{method: "PUT", path: "/v1/sessions/ses_1/policy", token: human,
		body: map[string]any{"expected_version": 0, "policy": map[string]any{"mode": "plan"}}}); r.status != http.StatusConflict {
		t.Fatalf("stale policy: %d %s", r.status, r.body)
	}
	if n := len(s.auditChain(human, "ses_1")); n != before {
		t.Fatalf("a refused policy change left %d entries", n-before)
	}

	asked := s.submit(agent, "ses_1", "k1", submitBody("risky", `{"n":1}`, "c1"))
	ap := s.pendingApproval(human, "ses_1", asked.ActionID)
	if r := s.do(req{method: "POST", path: "/v1/approvals/" + string(ap.ApprovalID), token: human, header: ui,
		body: httpapi.DecisionBody{Decision: "approve", Digest: ap.ArgsDigest}}); r.status != http.StatusOK {
		t.Fatalf("approve: %d %s", r.status, r.body)
	}
	s.waitAction(agent, asked.ActionID)
	var ev httpapi.ExecutionView
	s.do(req{method: "GET", path: "/v1/executions/" + string(asked.ExecutionID), token: human}).decode(t, &ev)
	version := ev.Execution.Version
	if r := s.do(req{method: "POST", path: "/v1/executions/" + string(asked.ExecutionID) + "/commands", token: human,
		body: httpapi.CommandBody{CommandID: "cmd_1", Type: "pause", ExpectedVersion: &version}}); r.status != http.StatusAccepted {
		t.Fatalf("pause: %d %s", r.status, r.body)
	}
	if r := s.do(req{method: "GET", path: "/v1/sessions/ses_1/audit", token: agent}); r.status != http.StatusForbidden {
		t.Fatalf("the agent read the audit log: %d %s", r.status, r.body)
	}

	// The command is applied asynchronously: wait for its entry.
	var chain []audit.Entry
	byType := map[string][]map[string]any{}
	deadline := time.Now().Add(10 * time.Second)
	for {
		chain = s.auditChain(admin, "ses_1")
		clear(byType)
		for _, e := range chain {
			var ev struct {
				Type string         `json:"type"`
				Data map[string]any `json:"data"`
			}
			if err := json.Unmarshal(e.Event, &ev); err != nil {
				t.Fatal(err)
			}
			byType[ev.Type] = append(byType[ev.Type], ev.Data)
		}
		if len(byType["command.applied"]) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no command.applied entry in %d entries", len(chain))
		}
		time.Sleep(20 * time.Millisecond)
	}
	res, err := audit.Verify(chain)
	if err != nil || !res.OK || res.Unchained != 0 {
		t.Fatalf("verify: %+v %v", res, err)
	}

	field := func(m map[string]any, path ...string) any {
		var cur any = m
		for _, p := range path {
			mm, ok := cur.(map[string]any)
			if !ok {
				return nil
			}
			cur = mm[p]
		}
		return cur
	}
	first := func(typ string) map[string]any {
		t.Helper()
		if len(byType[typ]) == 0 {
			t.Fatalf("no %s entry; entries: %v", typ, keys(byType))
		}
		return byType[typ][0]
	}
	checks := []struct {
		name string
		typ  string
		path []string
		want any
	}{
		{"permission decision: reason", "action.decided", []string{"decision", "reason", "code"}, "ask"},
		{"permission decision: policy version", "action.decided", []string{"decision", "policy_version"}, "v1"},
		{"permission decision: args digest", "action.decided", []string{"decision", "args_digest"}, asked.ArgsDigest},
		{"approval: who", "approval.approved", []string{"decided_by", "role"}, "human"},
		{"approval: from which origin", "approval.approved", []string{"decided_by", "origin"}, "ui"},
		{"command: who", "command.accepted", []string{"by", "role"}, "human"},
		{"command: from which origin", "command.applied", []string{"by", "origin"}, "api"},
		{"policy change: who", "policy.updated", []string{"by", "origin"}, "ui"},
		{"refusal: the route", "audit.denied", []string{"route"}, "GET /v1/sessions/{session_id}/audit"},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if got := field(first(c.typ), c.path...); got != c.want {
				t.Fatalf("%s %v = %v, want %v (%v)", c.typ, c.path, got, c.want, first(c.typ))
			}
		})
	}
	if d, _ := field(first("policy.updated"), "policy_digest").(string); len(d) != 64 {
		t.Fatalf("policy.updated names no document digest: %v", first("policy.updated"))
	}
	// The revalidation after the approval is a decision of its own.
	if len(byType["action.decided"]) < 2 || field(byType["action.decided"][1], "decision", "mode") != "revalidate" {
		t.Fatalf("no revalidation entry: %v", byType["action.decided"])
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
