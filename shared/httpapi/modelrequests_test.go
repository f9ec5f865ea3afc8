package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/activity"
	"github.com/openprogram/lifecycle/shared/apiclient"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/modelreq"
)

func modelPath(exec ids.ExecutionID) string {
	return "/v1/executions/" + string(exec) + "/model-requests"
}

func completionPath(exec ids.ExecutionID, req string) string {
	return modelPath(exec) + "/" + req + "/completion"
}

// modelEvents returns the session's model_request events of one request.
func modelEvents(t *testing.T, s *stack, token string, session ids.SessionID, requestID string) (started, completed []modelreq.Record) {
	t.Helper()
	r := s.do(req{method: "GET", path: "/v1/sessions/" + string(session) + "/events?after=0&limit=1000&wait=0", token: token})
	var b httpapi.EventBatch
	r.decode(t, &b)
	for _, ev := range b.Events {
		if !strings.HasPrefix(ev.Type, "model_request.") {
			continue
		}
		var m modelreq.Record
		if err := json.Unmarshal(ev.Data, &m); err != nil {
			t.Fatal(err)
		}
		if m.RequestID != requestID {
			continue
		}
		switch ev.Type {
		case "model_request.started":
			started = append(started, m)
		case "model_request.completed":
			completed = append(completed, m)
		default:
			t.Fatalf("unexpected event type %s", ev.Type)
		}
	}
	return started, completed
}

// executionWithAction starts an execution of session by one allowed
// action and waits for it.
func executionWithAction(s *stack, token string, session ids.SessionID, key string, limit int) ids.ExecutionID {
	body := submitBody("noop", `{}`, "c_"+key)
	if limit > 0 {
		body["iteration_limit"] = limit
	}
	v := s.submit(token, session, key, body)
	s.waitAction(token, v.ActionID)
	return v.ExecutionID
}

func getExecution(t *testing.T, s *stack, token string, exec ids.ExecutionID) httpapi.ExecutionView {
	t.Helper()
	var ev httpapi.ExecutionView
	r := s.do(req{method: "GET", path: "/v1/executions/" + string(exec), token: token})
	if r.status != http.StatusOK {
		t.Fatalf("get execution: %d %s", r.status, r.body)
	}
	r.decode(t, &ev)
	return ev
}

// TestModelRequestReports (issue 12, "Provider (model) request events"):
// an agent reports a model request started and completed; each is
// idempotent per request_id (the same body returns the stored record,
// another body is 409 conflict with it), bad input is a 400 naming the
// field, a request of another execution is 404, another session is 403,
// and the session's event stream holds exactly one started and one
// completed event. Every response is checked against api/openapi.yaml.
func TestModelRequestReports(t *testing.T) {
	s := newStack(t)
	agent := s.token(auth.RoleAgent, "ses_1")
	exec := executionWithAction(s, agent, "ses_1", "k1", 0)
	other := executionWithAction(s, agent, "ses_1", "k2", 0)
	start := map[string]any{"request_id": "req_1", "provider": "anthropic", "model": "claude-sonnet-4"}

	var first modelreq.Record
	startCases := []struct {
		name   string
		token  string
		exec   ids.ExecutionID
		body   any
		status int
		code   string
		field  string
	}{
		{"started", agent, exec, start, http.StatusCreated, "", ""},
		{"the same report again", agent, exec, start, http.StatusOK, "", ""},
		{"another model under the same id", agent, exec, map[string]any{"request_id": "req_1", "provider": "anthropic", "model": "claude-opus-4"}, http.StatusConflict, "conflict", ""},
		{"request_id with a space", agent, exec, map[string]any{"request_id": "req 2", "provider": "p", "model": "m"}, http.StatusBadRequest, "invalid_field", "request_id"},
		{"request_id too long", agent, exec, map[string]any{"request_id": strings.Repeat("r", 81), "provider": "p", "model": "m"}, http.StatusBadRequest, "invalid_field", "request_id"},
		{"no provider", agent, exec, map[string]any{"request_id": "req_2", "model": "m"}, http.StatusBadRequest, "invalid_field", "provider"},
		{"unknown field", agent, exec, map[string]any{"request_id": "req_2", "provider": "p", "model": "m", "tokens": 3}, http.StatusBadRequest, "unknown_field", "tokens"},
		{"an agent of another session", s.token(auth.RoleAgent, "ses_2"), exec, start, http.StatusForbidden, "forbidden", ""},
		{"the same id on another execution is another request", agent, other, map[string]any{"request_id": "req_1", "provider": "openai", "model": "gpt-5"}, http.StatusCreated, "", ""},
	}
	for _, tc := range startCases {
		t.Run("start/"+tc.name, func(t *testing.T) {
			r := s.do(req{method: "POST", path: modelPath(tc.exec), token: tc.token, body: tc.body})
			if r.status != tc.status {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if tc.code != "" {
				e := r.errorBody(t)
				if e.Code != tc.code || e.Field != tc.field {
					t.Fatalf("error %+v", e)
				}
				if tc.code == "conflict" {
					cur, _ := json.Marshal(e.Current)
					var stored modelreq.Record
					json.Unmarshal(cur, &stored)
					if stored.Model != "claude-sonnet-4" || stored.RequestID != "req_1" {
						t.Fatalf("409 does not carry the stored record: %s", r.body)
					}
				}
				return
			}
			var m modelreq.Record
			r.decode(t, &m)
			if m.Status != modelreq.Open || m.Purpose != modelreq.PurposeAgent || m.RequestID != "req_1" {
				t.Fatalf("record %s", r.body)
			}
			if tc.exec == exec {
				if first.RequestID == "" {
					first = m
				} else if !m.StartedAt.Equal(first.StartedAt) {
					t.Fatalf("a repeat did not return the stored record: %s", r.body)
				}
			}
		})
	}

	var done modelreq.Record
	completed := map[string]any{"status": "completed", "usage": map[string]any{"input_tokens": 1200, "output_tokens": 345}}
	completeCases := []struct {
		name   string
		exec   ids.ExecutionID
		req    string
		body   any
		status int
		code   string
		field  string
	}{
		{"failed without error_code", exec, "req_1", map[string]any{"status": "failed"}, http.StatusBadRequest, "invalid_field", "error_code"},
		{"status open", exec, "req_1", map[string]any{"status": "open"}, http.StatusBadRequest, "invalid_field", "status"},
		{"negative usage", exec, "req_1", map[string]any{"status": "completed", "usage": map[string]any{"input_tokens": -1, "output_tokens": 0}}, http.StatusBadRequest, "invalid_field", "usage.input_tokens"},
		{"an unknown request", exec, "req_9", completed, http.StatusNotFound, "not_found", ""},
		{"completed", exec, "req_1", completed, http.StatusOK, "", ""},
		{"the same completion again", exec, "req_1", completed, http.StatusOK, "", ""},
		{"another completion after it", exec, "req_1", map[string]any{"status": "failed", "error_code": "provider_error"}, http.StatusConflict, "conflict", ""},
	}
	for _, tc := range completeCases {
		t.Run("complete/"+tc.name, func(t *testing.T) {
			r := s.do(req{method: "POST", path: completionPath(tc.exec, tc.req), token: agent, body: tc.body})
			if r.status != tc.status {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if tc.code != "" {
				e := r.errorBody(t)
				if e.Code != tc.code || e.Field != tc.field {
					t.Fatalf("error %+v", e)
				}
				if tc.code == "conflict" && !strings.Contains(string(r.body), `"status":"completed"`) {
					t.Fatalf("409 does not carry the first completion: %s", r.body)
				}
				return
			}
			var m modelreq.Record
			r.decode(t, &m)
			if m.Status != modelreq.Completed || m.Usage != (modelreq.Usage{InputTokens: 1200, OutputTokens: 345}) || m.CompletedAt == nil {
				t.Fatalf("record %s", r.body)
			}
			if done.RequestID == "" {
				done = m
			} else if !m.CompletedAt.Equal(*done.CompletedAt) {
				t.Fatalf("a repeat did not return the stored completion: %s", r.body)
			}
		})
	}

	// A request only the other execution has is not found through this
	// one (nothing says it exists elsewhere).
	if r := s.do(req{method: "POST", path: modelPath(other), token: agent, body: map[string]any{"request_id": "req_other", "provider": "p", "model": "m"}}); r.status != http.StatusCreated {
		t.Fatalf("start on the other execution: %d %s", r.status, r.body)
	}
	if r := s.do(req{method: "POST", path: completionPath(exec, "req_other"), token: agent, body: completed}); r.status != http.StatusNotFound || strings.Contains(string(r.body), string(other)) {
		t.Fatalf("another execution's request through this one: %d %s", r.status, r.body)
	}
	// The other execution's req_1 is its own record: still open.
	if v := getExecution(t, s, agent, other); len(v.ModelRequests) != 2 || v.ModelRequests[0].Status != modelreq.Open || v.ModelRequests[0].Model != "gpt-5" {
		t.Fatalf("the other execution's request: %+v", v.ModelRequests)
	}
	v := getExecution(t, s, agent, exec)
	if len(v.ModelRequests) != 1 || v.ModelRequests[0].Status != modelreq.Completed || v.ModelRequests[0].Usage.OutputTokens != 345 {
		t.Fatalf("execution's model requests: %+v", v.ModelRequests)
	}
	started, closed := modelEvents(t, s, agent, "ses_1", "req_1")
	// Two executions each have a req_1: one started event each, one
	// completion (the other is still open).
	if len(started) != 2 || len(closed) != 1 || closed[0].Status != modelreq.Completed || closed[0].ExecutionID != exec {
		t.Fatalf("events: %d started, %d completed %+v", len(started), len(closed), closed)
	}
}

// TestModelRequestRacesWriteOneEventEach: parallel identical reports and
// parallel different completions of one request id write one record, one
// started and one completed event; every loser gets the stored record
// (200) or, for a different completion, 409 with the winner.
func TestModelRequestRacesWriteOneEventEach(t *testing.T) {
	s := newStack(t)
	agent := s.token(auth.RoleAgent, "ses_1")
	exec := executionWithAction(s, agent, "ses_1", "k1", 0)
	const n = 8
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			statuses[i] = s.do(req{method: "POST", path: modelPath(exec), token: agent,
				body: map[string]any{"request_id": "req_race", "provider": "bedrock", "model": "m"}}).status
		}(i)
	}
	wg.Wait()
	created := 0
	for _, st := range statuses {
		switch st {
		case http.StatusCreated:
			created++
		case http.StatusOK:
		default:
			t.Fatalf("start statuses %v", statuses)
		}
	}
	if created != 1 {
		t.Fatalf("%d reports created the record: %v", created, statuses)
	}
	kinds := []string{"completed", "cancelled", "incomplete", "completed"}
	bodies := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := s.do(req{method: "POST", path: completionPath(exec, "req_race"), token: agent, body: map[string]any{"status": kinds[i%len(kinds)]}})
			statuses[i], bodies[i] = r.status, string(r.body)
		}(i)
	}
	wg.Wait()
	v := getExecution(t, s, agent, exec)
	if len(v.ModelRequests) != 1 || !v.ModelRequests[0].Status.Terminal() {
		t.Fatalf("after the race: %+v", v.ModelRequests)
	}
	winner := string(v.ModelRequests[0].Status)
	for i, st := range statuses {
		want := http.StatusConflict
		if kinds[i%len(kinds)] == winner {
			want = http.StatusOK
		}
		if st != want || !strings.Contains(bodies[i], `"status":"`+winner+`"`) {
			t.Fatalf("completion %d (%s): %d %s; the winner is %s", i, kinds[i%len(kinds)], st, bodies[i], winner)
		}
	}
	started, completed := modelEvents(t, s, agent, "ses_1", "req_race")
	if len(started) != 1 || len(completed) != 1 || string(completed[0].Status) != winner {
		t.Fatalf("events: %d started, %d completed", len(started), len(completed))
	}
}

// TestModelRequestsClosedWhenTheExecutionEnds: a request still open when
// its execution ends (the agent's End, the iteration limit) or is
// cancelled is closed incomplete (no_terminal_event) with exactly one
// completed event; a request completed before is left as it was. The
// execution then refuses new requests (409 execution_ended), a late
// completion is 409 with the closing, and Activity puts the branch in
// History as "Ended · response record incomplete" (an ended model request
// alone asks nothing of the user), but as the execution's own ending when
// no request was left open.
func TestModelRequestsClosedWhenTheExecutionEnds(t *testing.T) {
	cases := []struct {
		name string
		// end ends the execution the way the case names.
		end func(t *testing.T, s *stack, agent, human string, exec ids.ExecutionID)
		// limit is the execution's iteration limit.
		limit int
		// leaveOpen: a request is still open when it ends.
		leaveOpen bool
		status    string
		label     string
	}{
		{name: "the agent ends it", end: endCompleted, leaveOpen: true, status: "completed", label: activity.LabelResponseIncomplete},
		{name: "the iteration limit ends it", limit: 1, leaveOpen: true, status: "failed", label: activity.LabelResponseIncomplete,
			end: func(t *testing.T, s *stack, agent, _ string, exec ids.ExecutionID) {
				over := submitBody("noop", `{"n":2}`, "c_over")
				over["execution_id"] = exec
				s.waitAction(agent, s.submit(agent, "ses_1", "k_over", over).ActionID)
			}},
		{name: "a person cancels it", end: cancelExecution, leaveOpen: true, status: "cancelled", label: activity.LabelResponseIncomplete},
		{name: "ended with every request completed", end: endCompleted, status: "completed", label: activity.LabelCompleted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t)
			agent, human := s.token(auth.RoleAgent, "ses_1"), s.token(auth.RoleHuman, "ses_1")
			exec := executionWithAction(s, agent, "ses_1", "k1", tc.limit)
			for _, id := range []string{"req_done", "req_open"} {
				if r := s.do(req{method: "POST", path: modelPath(exec), token: agent, body: map[string]any{"request_id": id, "provider": "anthropic", "model": "m"}}); r.status != http.StatusCreated {
					t.Fatalf("start %s: %d %s", id, r.status, r.body)
				}
			}
			done := map[string]any{"status": "completed", "usage": map[string]any{"input_tokens": 10, "output_tokens": 5}}
			s.do(req{method: "POST", path: completionPath(exec, "req_done"), token: agent, body: done})
			if !tc.leaveOpen {
				s.do(req{method: "POST", path: completionPath(exec, "req_open"), token: agent, body: done})
			}
			tc.end(t, s, agent, human, exec)

			v := waitExecution(t, s, agent, exec, tc.status)
			byID := map[string]modelreq.Record{}
			for _, m := range v.ModelRequests {
				byID[m.RequestID] = m
			}
			if m := byID["req_done"]; m.Status != modelreq.Completed || m.Usage.InputTokens != 10 {
				t.Fatalf("a completed request was changed by the end: %+v", m)
			}
			open := byID["req_open"]
			if tc.leaveOpen && (open.Status != modelreq.Incomplete || open.ErrorCode != modelreq.CodeNoTerminalEvent || open.CompletedAt == nil) {
				t.Fatalf("the open request was not closed incomplete: %+v", open)
			}
			if _, completed := modelEvents(t, s, agent, "ses_1", "req_open"); len(completed) != 1 {
				t.Fatalf("%d completed events for req_open", len(completed))
			}
			r := s.do(req{method: "POST", path: modelPath(exec), token: agent, body: map[string]any{"request_id": "req_late", "provider": "anthropic", "model": "m"}})
			if r.status != http.StatusConflict || r.errorBody(t).Code != "execution_ended" {
				t.Fatalf("a new request on the ended execution: %d %s", r.status, r.body)
			}
			if tc.leaveOpen {
				r = s.do(req{method: "POST", path: completionPath(exec, "req_open"), token: agent, body: done})
				if r.status != http.StatusConflict || !strings.Contains(string(r.body), `"status":"incomplete"`) {
					t.Fatalf("a late completion: %d %s", r.status, r.body)
				}
			}
			row := historyRow(t, s, agent, exec)
			if row.Status != tc.label {
				t.Fatalf("history row status %q, want %q", row.Status, tc.label)
			}
			er := row.Executions[len(row.Executions)-1]
			if len(er.ModelRequests) != 2 || er.ModelRequests[0].Usage.OutputTokens+er.ModelRequests[1].Usage.OutputTokens < 5 {
				t.Fatalf("activity execution row's model requests: %+v", er.ModelRequests)
			}
		})
	}
}

func endCompleted(t *testing.T, s *stack, agent, _ string, exec ids.ExecutionID) {
	t.Helper()
	v := getExecution(t, s, agent, exec).Execution.Version
	r := s.do(req{method: "POST", path: "/v1/executions/" + string(exec) + "/end", token: agent,
		body: map[string]any{"command_id": "cmd_end", "expected_version": v, "payload": map[string]any{"status": "completed"}}})
	if r.status != http.StatusAccepted {
		t.Fatalf("end: %d %s", r.status, r.body)
	}
}

func cancelExecution(t *testing.T, s *stack, _, human string, exec ids.ExecutionID) {
	t.Helper()
	v := getExecution(t, s, human, exec).Execution.Version
	r := s.do(req{method: "POST", path: "/v1/executions/" + string(exec) + "/commands", token: human,
		body: map[string]any{"command_id": "cmd_cancel", "type": "cancel", "expected_version": v}})
	if r.status != http.StatusAccepted {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
}

// waitExecution polls until the execution has status.
func waitExecution(t *testing.T, s *stack, token string, exec ids.ExecutionID, status string) httpapi.ExecutionView {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		v := getExecution(t, s, token, exec)
		if string(v.Execution.Status) == status {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("execution %s is %s, want %s", exec, v.Execution.Status, status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// historyRow is the History row holding exec.
func historyRow(t *testing.T, s *stack, token string, exec ids.ExecutionID) activity.Row {
	t.Helper()
	var a activity.Activity
	r := s.do(req{method: "GET", path: "/v1/sessions/ses_1/activity", token: token})
	r.decode(t, &a)
	for _, row := range a.History {
		for _, e := range row.Executions {
			if e.ExecutionID == exec {
				return row
			}
		}
	}
	t.Fatalf("execution %s is not in History: %s", exec, fmt.Sprint(string(r.body)))
	return activity.Row{}
}

// TestModelRequestsThroughTheGoClient: an agent runner's client reports a
// request and its completion; a repeat is not created again, and a
// conflicting completion comes back as the typed conflict with the first.
func TestModelRequestsThroughTheGoClient(t *testing.T) {
	s := newStack(t)
	agent := s.token(auth.RoleAgent, "ses_1")
	exec := executionWithAction(s, agent, "ses_1", "k1", 0)
	c := &apiclient.Client{BaseURL: s.url, Token: agent, HTTP: s.client}
	ctx := context.Background()
	start := modelreq.StartReport{RequestID: "req_1", Provider: "anthropic", Model: "m"}
	for i, wantCreated := range []bool{true, false} {
		if r, created, err := c.StartModelRequest(ctx, exec, start); err != nil || created != wantCreated || r.Status != modelreq.Open {
			t.Fatalf("report %d: %+v created=%v %v", i, r, created, err)
		}
	}
	r, err := c.CompleteModelRequest(ctx, exec, "req_1", modelreq.Completion{Status: modelreq.Failed, ErrorCode: "rate_limited", Message: "429"})
	if err != nil || r.Status != modelreq.Failed || r.ErrorCode != "rate_limited" {
		t.Fatalf("completion: %+v %v", r, err)
	}
	_, err = c.CompleteModelRequest(ctx, exec, "req_1", modelreq.Completion{Status: modelreq.Completed})
	var ce *actionflow.ConflictError
	if !errors.As(err, &ce) || ce.Code != "conflict" {
		t.Fatalf("conflicting completion: %v", err)
	}
	if cur, ok := ce.Current.(json.RawMessage); !ok || !strings.Contains(string(cur), `"error_code":"rate_limited"`) {
		t.Fatalf("conflicting completion: %v", err)
	}
}
