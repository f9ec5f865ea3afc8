package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/activity"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/spf13/cobra"

	"github.com/openprogram/lifecycle/cmd/lifecycle/clientcmd"
)

// submitTo submits a Bash command to an existing execution as the agent.
func (s *serveStack) submitTo(t *testing.T, token string, exec ids.ExecutionID, command string) ids.ActionID {
	t.Helper()
	n := s.calls.Add(1)
	var v httpapi.ActionView
	if _, err := s.do("POST", "/v1/sessions/"+string(s.session)+"/actions", token,
		map[string]any{"tool": "Bash", "tool_call_id": fmt.Sprintf("call_%d", n), "interactive": true, "execution_id": exec,
			"arguments": map[string]any{"command": command}},
		&v, map[string]string{"Idempotency-Key": fmt.Sprintf("key_%d", n)}); err != nil {
		t.Fatal(err)
	}
	return v.ActionID
}

func (s *serveStack) execution(t *testing.T, token string, exec ids.ExecutionID) httpapi.ExecutionView {
	t.Helper()
	var v httpapi.ExecutionView
	if _, err := s.do("GET", "/v1/executions/"+string(exec), token, nil, &v, nil); err != nil {
		t.Fatal(err)
	}
	return v
}

// historyRow is the History row of exec's branch, if any.
func (s *serveStack) historyRow(t *testing.T, exec ids.ExecutionID) (activity.Row, bool) {
	t.Helper()
	var a activity.Activity
	if _, err := s.do("GET", "/v1/sessions/"+string(s.session)+"/activity", s.human, nil, &a, nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range a.History {
		for _, e := range r.Executions {
			if e.ExecutionID == exec && !e.Shared {
				return r, true
			}
		}
	}
	return activity.Row{}, false
}

// An execution ends through the HTTP API: an agent ends its own session's
// execution (and nothing else), a human may too; afterwards new actions
// are refused with execution_ended, a started action finishes and records,
// a pending approval is cancelled, and the branch is in History.
func TestEndAnExecutionThroughTheAPI(t *testing.T) {
	s := startServeStack(t)
	s.setPolicy(t, `{"version":"end","allow":["Bash(ls *)","Bash(sleep *)"]}`)
	agent := s.agent(t, s.session)
	other := s.agent(t, "ses_other")

	first := bashAction(t, s, s.session, "ls")
	exec := first.ExecutionID
	// A started action (in flight when the execution ends) and an
	// unstarted one waiting for approval.
	running := s.submitTo(t, agent, exec, "sleep 3")
	waiting := s.submitTo(t, agent, exec, "touch never")
	ask, err := s.settled(agent, waiting, 60*time.Second)
	if err != nil || ask.Approval == nil {
		t.Fatalf("no approval: %+v %v", ask, err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		var v httpapi.ActionView
		if _, err := s.do("GET", "/v1/actions/"+string(running), agent, nil, &v, nil); err != nil {
			t.Fatal(err)
		}
		if v.States.Started {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sleep never started: %+v", v.States)
		}
		time.Sleep(50 * time.Millisecond)
	}
	version := s.execution(t, agent, exec).Execution.Version
	end := func(id string, v int64, payload map[string]any) map[string]any {
		return map[string]any{"command_id": id, "expected_version": v, "payload": payload}
	}
	completed := map[string]any{"status": "completed", "message": "done"}

	// What an agent token may not do, and what bad input gets.
	refused := []struct {
		name, path, token string
		body              any
		status            int
	}{
		{"agent pauses", "/v1/executions/" + string(exec) + "/commands", agent,
			map[string]any{"command_id": "cmd_p", "type": "pause", "expected_version": version}, http.StatusForbidden},
		{"agent cancels", "/v1/executions/" + string(exec) + "/commands", agent,
			map[string]any{"command_id": "cmd_c", "type": "cancel", "expected_version": version}, http.StatusForbidden},
		{"agent steers", "/v1/executions/" + string(exec) + "/commands", agent,
			map[string]any{"command_id": "cmd_s", "type": "steer", "expected_version": version, "payload": map[string]any{"instructions": "x"}}, http.StatusForbidden},
		{"agent ends through the commands route", "/v1/executions/" + string(exec) + "/commands", agent,
			map[string]any{"command_id": "cmd_e", "type": "end", "expected_version": version, "payload": completed}, http.StatusForbidden},
		{"agent decides the approval", "/v1/approvals/" + string(ask.Approval.ApprovalID), agent,
			map[string]any{"decision": "approve"}, http.StatusForbidden},
		{"another session's agent ends it", "/v1/executions/" + string(exec) + "/end", other, end("cmd_o", version, completed), http.StatusForbidden},
		{"end route with another type", "/v1/executions/" + string(exec) + "/end", agent,
			map[string]any{"command_id": "cmd_t", "type": "pause", "expected_version": version}, http.StatusBadRequest},
		{"failed without a reason", "/v1/executions/" + string(exec) + "/end", agent, end("cmd_r", version, map[string]any{"status": "failed"}), http.StatusBadRequest},
		{"unknown status", "/v1/executions/" + string(exec) + "/end", agent, end("cmd_u", version, map[string]any{"status": "paused"}), http.StatusBadRequest},
		{"reason not a code", "/v1/executions/" + string(exec) + "/end", agent,
			end("cmd_x", version, map[string]any{"status": "failed", "reason": "Model Error!"}), http.StatusBadRequest},
		{"stale version", "/v1/executions/" + string(exec) + "/end", agent, end("cmd_v", version+1, completed), http.StatusConflict},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			st, err := s.do("POST", tc.path, tc.token, tc.body, nil, nil)
			if st != tc.status {
				t.Fatalf("got %d (%v), want %d", st, err, tc.status)
			}
		})
	}
	if v := s.execution(t, agent, exec); v.Execution.Status != actionflow.ExecRunning {
		t.Fatalf("a refused command changed the execution: %+v", v.Execution)
	}

	// The agent ends its execution: applied at once, idempotent.
	var res httpapi.CommandResult
	if _, err := s.do("POST", "/v1/executions/"+string(exec)+"/end", agent, end("cmd_end", version, completed), &res, nil); err != nil {
		t.Fatal(err)
	}
	if res.Status != "applied" || res.Type != "end" || res.ExecutionVersion != version+1 {
		t.Fatalf("end: %+v", res)
	}
	var again httpapi.CommandResult
	if _, err := s.do("POST", "/v1/executions/"+string(exec)+"/end", agent, end("cmd_end", version, completed), &again, nil); err != nil || !reflect.DeepEqual(again, res) {
		t.Fatalf("repeat: %+v %v", again, err)
	}
	if st, _ := s.do("POST", "/v1/executions/"+string(exec)+"/end", agent, end("cmd_end", version, map[string]any{"status": "failed", "reason": "aborted"}), nil, nil); st != http.StatusConflict {
		t.Fatalf("command id reused for another body: %d", st)
	}
	v := s.execution(t, agent, exec)
	if e := v.Execution; e.Status != actionflow.ExecCompleted || e.End == nil || e.End.Status != actionflow.ExecCompleted || e.End.By != "agent" || e.End.Message != "done" {
		t.Fatalf("ended execution: %+v end %+v", e, e.End)
	}
	if len(v.Controls) != 2 { // fork, retry
		t.Fatalf("controls of an ended execution: %v", v.Controls)
	}

	// The pending approval was cancelled and its action never ran.
	got, err := s.projected(agent, waiting, 60*time.Second)
	if err != nil || got.States.Outcome != lifecycle.OutcomeNotStarted || got.Approval == nil || got.Approval.Status != actionflow.ApprovalCancelled {
		t.Fatalf("waiting action: %+v %+v %v", got.States, got.Approval, err)
	}
	if s.exists(t, "never") {
		t.Fatal("the cancelled approval's command ran")
	}
	// The started action finished and recorded its result.
	got, err = s.settled(agent, running, 60*time.Second)
	if err != nil || got.States.Outcome != lifecycle.OutcomeSucceeded || got.Receipt == nil {
		t.Fatalf("in-flight action: %+v %v", got.States, err)
	}
	// A new action of the ended execution is refused with the reason.
	refusedAction, err := s.settled(agent, s.submitTo(t, agent, exec, "ls"), 60*time.Second)
	if err != nil || refusedAction.States.Outcome != lifecycle.OutcomeNotStarted || refusedAction.Decision == nil ||
		refusedAction.Decision.Reason.Code != "execution_ended" || refusedAction.Receipt == nil ||
		refusedAction.Receipt.ErrorCode != "permission_denied:execution_ended" {
		t.Fatalf("action after the end: %+v %+v %v", refusedAction.States, refusedAction.Decision, err)
	}
	// Ended, nothing active, nothing actionable: History, Completed.
	if row, ok := s.historyRow(t, exec); !ok || row.Status != activity.LabelCompleted {
		t.Fatalf("activity row of the ended execution: %+v %v", row, ok)
	}

	// A human ends another execution failed, through the commands route.
	second := bashAction(t, s, s.session, "ls")
	ver := s.execution(t, s.human, second.ExecutionID).Execution.Version
	if _, err := s.do("POST", "/v1/executions/"+string(second.ExecutionID)+"/commands", s.human,
		map[string]any{"command_id": "cmd_fail", "type": "end", "expected_version": ver,
			"payload": map[string]any{"status": "failed", "reason": "model_error", "message": "the provider answered 500"}}, &res, nil); err != nil || res.Status != "applied" {
		t.Fatalf("human end: %+v %v", res, err)
	}
	e := s.execution(t, s.human, second.ExecutionID).Execution
	if e.Status != actionflow.ExecFailed || e.End == nil || e.End.Reason != "model_error" || e.End.By != "human" {
		t.Fatalf("failed execution: %+v %+v", e, e.End)
	}
	if row, ok := s.historyRow(t, second.ExecutionID); !ok || row.Status != activity.LabelFailed {
		t.Fatalf("activity row of the failed execution: %+v %v", row, ok)
	}
	refusedAction, err = s.settled(agent, s.submitTo(t, agent, second.ExecutionID, "ls"), 60*time.Second)
	if err != nil || refusedAction.Decision == nil || refusedAction.Decision.Reason.Detail != "the execution has ended (failed: model_error)" {
		t.Fatalf("action after the failure: %+v %v", refusedAction.Decision, err)
	}

	// Cancellation wins: a cancelled execution cannot be ended.
	third := bashAction(t, s, s.session, "ls")
	ver = s.execution(t, s.human, third.ExecutionID).Execution.Version
	if _, err := s.do("POST", "/v1/executions/"+string(third.ExecutionID)+"/commands", s.human,
		map[string]any{"command_id": "cmd_cancel", "type": "cancel", "expected_version": ver}, &res, nil); err != nil || res.Status != "applied" {
		t.Fatalf("cancel: %+v %v", res, err)
	}
	ver = s.execution(t, agent, third.ExecutionID).Execution.Version
	if st, err := s.do("POST", "/v1/executions/"+string(third.ExecutionID)+"/end", agent, end("cmd_late", ver, completed), nil, nil); st != http.StatusConflict {
		t.Fatalf("end after cancel: %d %v", st, err)
	}
	if e := s.execution(t, agent, third.ExecutionID).Execution; e.Status != actionflow.ExecCancelled || e.End != nil {
		t.Fatalf("cancelled execution after a late end: %+v", e)
	}
}

// cli runs a client command of the lifecycle CLI against the stack.
func (s *serveStack) cli(token string, args ...string) (string, error) {
	root := &cobra.Command{Use: "lifecycle", SilenceErrors: true, SilenceUsage: true}
	clientcmd.AddTo(root)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"--api", s.base, "--token", token}, args...))
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

// The CLI's end command, with an agent token.
func TestEndThroughTheCLI(t *testing.T) {
	s := startServeStack(t)
	s.setPolicy(t, `{"version":"cli","allow":["Bash(ls *)"]}`)
	agent := s.agent(t, s.session)
	exec := bashAction(t, s, s.session, "ls").ExecutionID
	if out, err := s.cli(agent, "end", string(exec), "--status", "failed"); err == nil || !bytes.Contains([]byte(err.Error()), []byte("payload.reason")) {
		t.Fatalf("failed without a reason: %v %s", err, out)
	}
	out, err := s.cli(agent, "end", string(exec), "--status", "failed", "--reason", "aborted", "--message", "the user closed the tab", "--id", "cmd_cli")
	if err != nil || out != "cmd_cli end applied (execution version 2)\n" {
		t.Fatalf("end: %v %q", err, out)
	}
	e := s.execution(t, agent, exec).Execution
	if e.Status != actionflow.ExecFailed || e.End == nil || e.End.Reason != "aborted" || e.End.Message != "the user closed the tab" || e.End.By != "agent" {
		t.Fatalf("after the CLI end: %+v %+v", e, e.End)
	}
}

// An execution started with an iteration limit: the call that would exceed
// it is refused with iteration_limit and the execution ends failed with
// that reason, keeping its history; its pending approval is cancelled, and
// the branch is in History as Failed.
func TestIterationLimitThroughTheAPI(t *testing.T) {
	s := startServeStack(t)
	s.setPolicy(t, `{"version":"limit","allow":["Bash(ls *)"]}`)
	agent := s.agent(t, s.session)
	post := func(body map[string]any) (httpapi.ActionView, int, error) {
		n := s.calls.Add(1)
		body["tool"], body["tool_call_id"], body["interactive"] = "Bash", fmt.Sprintf("call_%d", n), true
		var v httpapi.ActionView
		st, err := s.do("POST", "/v1/sessions/"+string(s.session)+"/actions", agent, body, &v,
			map[string]string{"Idempotency-Key": fmt.Sprintf("key_%d", n)})
		return v, st, err
	}
	ls := map[string]any{"command": "ls"}
	for _, bad := range []struct {
		name  string
		limit int
	}{{"negative", -1}, {"above the bound", actionflow.MaxIterationLimit + 1}} {
		t.Run(bad.name, func(t *testing.T) {
			if _, st, _ := post(map[string]any{"arguments": ls, "iteration_limit": bad.limit}); st != http.StatusBadRequest {
				t.Fatalf("iteration_limit %d: %d", bad.limit, st)
			}
		})
	}
	first, _, err := post(map[string]any{"arguments": ls, "iteration_limit": 2})
	if err != nil {
		t.Fatal(err)
	}
	exec := first.ExecutionID
	if v, err := s.settled(agent, first.ActionID, 60*time.Second); err != nil || v.States.Outcome != lifecycle.OutcomeSucceeded {
		t.Fatalf("first call: %+v %v", v.States, err)
	}
	// The limit is fixed at the start.
	if _, st, _ := post(map[string]any{"arguments": ls, "execution_id": exec, "iteration_limit": 5}); st != http.StatusBadRequest {
		t.Fatalf("changing the limit: %d", st)
	}
	// The second call (the last iteration) waits for an approval.
	waiting := s.submitTo(t, agent, exec, "touch never")
	if v, err := s.settled(agent, waiting, 60*time.Second); err != nil || v.Approval == nil {
		t.Fatalf("second call: %+v %v", v, err)
	}
	if e := s.execution(t, agent, exec).Execution; e.IterationLimit != 2 || len(e.Iterations) != 2 || e.Status != actionflow.ExecRunning {
		t.Fatalf("after two calls: %+v", e)
	}
	// The third would exceed the limit: refused, and the execution fails.
	third, err := s.settled(agent, s.submitTo(t, agent, exec, "ls"), 60*time.Second)
	if err != nil || third.States.Outcome != lifecycle.OutcomeNotStarted || third.Decision == nil ||
		third.Decision.Reason.Code != "iteration_limit" || third.Receipt == nil || third.Receipt.ErrorCode != "permission_denied:iteration_limit" {
		t.Fatalf("third call: %+v %+v %v", third.States, third.Decision, err)
	}
	e := s.execution(t, agent, exec).Execution
	if e.Status != actionflow.ExecFailed || e.End == nil || e.End.Reason != "iteration_limit" || e.End.By != "system" || len(e.Iterations) != 2 {
		t.Fatalf("after the limit: %+v %+v", e, e.End)
	}
	// The pending approval of the ended execution was cancelled; the
	// history is kept (the first call's receipt is still there).
	if v, err := s.projected(agent, waiting, 60*time.Second); err != nil || v.Approval == nil || v.Approval.Status != actionflow.ApprovalCancelled ||
		v.States.Outcome != lifecycle.OutcomeNotStarted {
		t.Fatalf("waiting call: %+v %+v %v", v.States, v.Approval, err)
	}
	if v, err := s.settled(agent, first.ActionID, time.Minute); err != nil || v.Receipt == nil || v.Receipt.Outcome != lifecycle.OutcomeSucceeded {
		t.Fatalf("history of the first call: %+v %v", v.Receipt, err)
	}
	// Later calls are refused as calls of an ended execution.
	later, err := s.settled(agent, s.submitTo(t, agent, exec, "ls"), 60*time.Second)
	if err != nil || later.Decision == nil || later.Decision.Reason.Code != "execution_ended" ||
		later.Decision.Reason.Detail != "the execution has ended (failed: iteration_limit)" {
		t.Fatalf("later call: %+v %v", later.Decision, err)
	}
	if row, ok := s.historyRow(t, exec); !ok || row.Status != activity.LabelFailed {
		t.Fatalf("activity row: %+v %v", row, ok)
	}
	// An execution without a limit counts nothing.
	free := bashAction(t, s, s.session, "ls")
	if e := s.execution(t, agent, free.ExecutionID).Execution; e.IterationLimit != 0 || len(e.Iterations) != 0 {
		t.Fatalf("unlimited execution: %+v", e)
	}
}
