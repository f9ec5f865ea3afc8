package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/activity"
	"github.com/openprogram/lifecycle/shared/apiclient"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// unknownHostAction runs a host Bash action to an unknown outcome through
// the API: a worker claims it (start evidence) and then reports that it
// cannot tell what happened (its process was lost). The lifecycle seals an
// unknown receipt and projects it.
func unknownHostAction(t *testing.T, s *stack, agent string, key string) httpapi.ActionView {
	t.Helper()
	ctx := context.Background()
	v := s.submit(agent, "ses_1", key, submitBody("Bash", `{"command":"touch /tmp/x-`+key+`"}`, "c-"+key))
	host := apiclient.Host{Client: &apiclient.Client{BaseURL: s.url, Token: agent, HTTP: s.client}}
	deadline := time.Now().Add(20 * time.Second)
	for {
		tasks, err := host.Tasks(ctx, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(tasks) > 0 && tasks[0] == v.ActionID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the host task of %s was not published: %v", v.ActionID, tasks)
		}
	}
	task, err := host.Start(ctx, v.ActionID, ids.AttemptID("att_"+key))
	if err != nil {
		t.Fatal(err)
	}
	lost := actionflow.ToolResult{Outcome: lifecycle.OutcomeUnknown, ErrorCode: "worker_lost", Error: "the worker's process was lost mid-run"}
	if err := host.Result(ctx, v.ActionID, ids.AttemptID("att_"+key), task.Fence, lost); err != nil {
		t.Fatal(err)
	}
	done := s.waitAction(agent, v.ActionID)
	if done.States.Outcome != lifecycle.OutcomeUnknown || done.Receipt.Outcome != lifecycle.OutcomeUnknown {
		t.Fatalf("not unknown: %+v %+v", done.States, done.Receipt)
	}
	return done
}

// unresolvedIn lists the actions Activity shows as unresolved results
// under Needs attention.
func unresolvedIn(t *testing.T, s *stack, token string) []ids.ActionID {
	t.Helper()
	r := s.do(req{method: "GET", path: "/v1/sessions/ses_1/activity", token: token})
	if r.status != http.StatusOK {
		t.Fatalf("activity: %d %s", r.status, r.body)
	}
	var act activity.Activity
	r.decode(t, &act)
	var out []ids.ActionID
	for _, row := range act.NeedsAttention {
		for _, a := range row.Attention {
			if a.Kind == "unresolved_result" {
				out = append(out, a.ActionID)
			}
		}
	}
	return out
}

func eventsOfType(t *testing.T, s *stack, token, typ string, action ids.ActionID) []actionflow.Event {
	t.Helper()
	r := s.do(req{method: "GET", path: "/v1/sessions/ses_1/events?after=0&limit=1000&wait=0", token: token})
	var b httpapi.EventBatch
	r.decode(t, &b)
	var out []actionflow.Event
	for _, ev := range b.Events {
		if ev.Type == typ && ev.ActionID == action {
			out = append(out, ev)
		}
	}
	return out
}

// TestReconcileUnknownOverHTTP (issue 12, "Reconciling an unknown
// outcome"): a person reconciles an unknown outcome; the action takes the
// reconciled outcome (the receipt still says unknown), the event is in
// the session log, Activity no longer lists it under Needs attention and
// the checkpoint counts it. Agents are refused before any lookup; a known
// outcome is not reconcilable; a repeat is idempotent and a different
// second reconciliation is 409 with the first record.
func TestReconcileUnknownOverHTTP(t *testing.T) {
	s := newStack(t)
	agent := s.token(auth.RoleAgent, "ses_1")
	human := s.token(auth.RoleHuman, "ses_1")
	u := unknownHostAction(t, s, agent, "k1")
	path := "/v1/actions/" + string(u.ActionID) + "/reconciliation"
	if got := unresolvedIn(t, s, human); len(got) != 1 || got[0] != u.ActionID {
		t.Fatalf("before: unresolved %v, want [%s]", got, u.ActionID)
	}
	body := map[string]any{"outcome": "failed", "note": "checked: /tmp/x-k1 does not exist", "evidence": "ls: cannot access '/tmp/x-k1'"}

	// Refusals first: none of them writes anything.
	refusals := []struct {
		name   string
		path   string
		token  string
		body   any
		status int
		code   string
		field  string
	}{
		{"an agent is refused", path, agent, body, http.StatusForbidden, "forbidden", ""},
		{"an agent learns nothing about unknown ids", "/v1/actions/act_nope/reconciliation", agent, body, http.StatusForbidden, "forbidden", ""},
		{"outcome is required", path, human, map[string]any{"note": "x"}, http.StatusBadRequest, "missing_field", "outcome"},
		{"not_started is not a reconciliation", path, human, map[string]any{"outcome": "not_started", "note": "x"}, http.StatusBadRequest, "invalid_field", "outcome"},
		{"a note is required", path, human, map[string]any{"outcome": "failed", "note": "  "}, http.StatusBadRequest, "missing_field", "note"},
		{"unknown fields are refused", path, human, map[string]any{"outcome": "failed", "note": "x", "receipt": "rewrite"}, http.StatusBadRequest, "unknown_field", "receipt"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			mark := s.st.mark()
			r := s.do(req{method: "POST", path: tc.path, token: tc.token, body: tc.body})
			d := r.errorBody(t)
			if r.status != tc.status || d.Code != tc.code || d.Field != tc.field {
				t.Fatalf("%d %s, want %d %s field %q", r.status, r.body, tc.status, tc.code, tc.field)
			}
			for _, w := range s.st.since(mark) {
				if w.Op != "Append" || !strings.Contains(string(w.Body), "audit.denied") {
					t.Fatalf("a refused reconciliation wrote %s %s", w.Op, w.Key)
				}
			}
		})
	}

	// The reconciliation.
	r := s.do(req{method: "POST", path: path, token: human, body: body})
	if r.status != http.StatusCreated {
		t.Fatalf("reconcile: %d %s", r.status, r.body)
	}
	var rec actionflow.Reconciliation
	r.decode(t, &rec)
	if rec.Outcome != lifecycle.OutcomeFailed || rec.ReconciledBy.Role != auth.RoleHuman || rec.ReceiptDigest != u.Receipt.Digest {
		t.Fatalf("record: %+v", rec)
	}
	r = s.do(req{method: "GET", path: "/v1/actions/" + string(u.ActionID), token: agent})
	var after httpapi.ActionView
	r.decode(t, &after)
	switch {
	case after.States.Outcome != lifecycle.OutcomeFailed || !after.States.Reconciled || after.States.Delivery != lifecycle.DeliveryProjected:
		t.Fatalf("states after: %+v", after.States)
	case after.Reconciliation == nil || after.Reconciliation.Digest != rec.Digest || after.Reconciliation.Note != body["note"]:
		t.Fatalf("view's reconciliation: %+v", after.Reconciliation)
	case after.Receipt.Outcome != lifecycle.OutcomeUnknown || after.Receipt.Digest != u.Receipt.Digest:
		t.Fatalf("the receipt changed: %+v", after.Receipt)
	}
	evs := eventsOfType(t, s, agent, "action.reconciled", u.ActionID)
	if len(evs) != 1 {
		t.Fatalf("%d action.reconciled events", len(evs))
	}
	var data struct {
		Outcome      lifecycle.Outcome    `json:"outcome"`
		ReconciledBy actionflow.Principal `json:"reconciled_by"`
	}
	if err := json.Unmarshal(evs[0].Data, &data); err != nil || data.Outcome != lifecycle.OutcomeFailed || data.ReconciledBy.Role != auth.RoleHuman {
		t.Fatalf("event data %s: %v", evs[0].Data, err)
	}
	if got := unresolvedIn(t, s, human); len(got) != 0 {
		t.Fatalf("after: still unresolved %v", got)
	}
	r = s.do(req{method: "GET", path: "/v1/executions/" + string(u.ExecutionID), token: human})
	var ev httpapi.ExecutionView
	r.decode(t, &ev)
	if ev.Checkpoint.Reconciled != 1 {
		t.Fatalf("checkpoint: %+v", ev.Checkpoint)
	}

	// Repeats.
	t.Run("the same reconciliation again is the stored record", func(t *testing.T) {
		mark := s.st.mark()
		r := s.do(req{method: "POST", path: path, token: human, body: body})
		var again actionflow.Reconciliation
		r.decode(t, &again)
		if r.status != http.StatusOK || again.Digest != rec.Digest || !again.ReconciledAt.Equal(rec.ReconciledAt) {
			t.Fatalf("%d %s", r.status, r.body)
		}
		if w := s.st.since(mark); len(w) != 0 {
			t.Fatalf("an idempotent repeat wrote %+v", w)
		}
		if n := len(eventsOfType(t, s, agent, "action.reconciled", u.ActionID)); n != 1 {
			t.Fatalf("%d action.reconciled events", n)
		}
	})
	t.Run("a different second reconciliation is 409 with the first", func(t *testing.T) {
		r := s.do(req{method: "POST", path: path, token: human, body: map[string]any{"outcome": "succeeded", "note": "it worked after all"}})
		d := r.errorBody(t)
		cur, _ := json.Marshal(d.Current)
		var first actionflow.Reconciliation
		if err := json.Unmarshal(cur, &first); err != nil || r.status != http.StatusConflict || d.Code != "already_reconciled" ||
			first.Digest != rec.Digest || first.Outcome != lifecycle.OutcomeFailed {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
	t.Run("a succeeded action is not reconcilable", func(t *testing.T) {
		ok := s.submit(agent, "ses_1", "k2", submitBody("noop", `{}`, "c2"))
		s.waitAction(agent, ok.ActionID)
		mark := s.st.mark()
		r := s.do(req{method: "POST", path: "/v1/actions/" + string(ok.ActionID) + "/reconciliation", token: human, body: body})
		if d := r.errorBody(t); r.status != http.StatusConflict || d.Code != "not_reconcilable" {
			t.Fatalf("%d %s", r.status, r.body)
		}
		if w := s.st.since(mark); len(w) != 0 {
			t.Fatalf("a refused reconciliation wrote %+v", w)
		}
	})
}
