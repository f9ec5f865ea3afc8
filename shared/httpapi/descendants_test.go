package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/apiclient"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// execution reads an execution through the API.
func (s *stack) execution(token string, id ids.ExecutionID) httpapi.ExecutionView {
	s.t.Helper()
	r := s.do(req{method: "GET", path: "/v1/executions/" + string(id), token: token})
	if r.status != http.StatusOK {
		s.t.Fatalf("execution %s: %d %s", id, r.status, r.body)
	}
	var ev httpapi.ExecutionView
	r.decode(s.t, &ev)
	return ev
}

// command sends a control command at the execution's current version.
func (s *stack) command(token string, exec ids.ExecutionID, id, typ, payload string) (resp, httpapi.CommandResult) {
	s.t.Helper()
	v := s.execution(token, exec).Execution.Version
	body := httpapi.CommandBody{CommandID: ids.CommandID(id), Type: typ, ExpectedVersion: &v}
	if payload != "" {
		body.Payload = json.RawMessage(payload)
	}
	path := "/v1/executions/" + string(exec) + "/commands"
	if typ == "end" {
		path = "/v1/executions/" + string(exec) + "/end"
	}
	r := s.do(req{method: "POST", path: path, token: token, body: body})
	var cr httpapi.CommandResult
	if r.status == http.StatusAccepted {
		r.decode(s.t, &cr)
	}
	return r, cr
}

func (s *stack) applied(token string, exec ids.ExecutionID, id, typ, payload string) httpapi.CommandResult {
	s.t.Helper()
	r, cr := s.command(token, exec, id, typ, payload)
	if r.status != http.StatusAccepted || cr.Status != "applied" {
		s.t.Fatalf("%s %s on %s: %d %s", typ, id, exec, r.status, r.body)
	}
	return cr
}

// waitStatus polls an execution until it has status want.
func (s *stack) waitStatus(token string, id ids.ExecutionID, want actionflow.ExecutionStatus) httpapi.ExecutionView {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ev := s.execution(token, id)
		if ev.Execution.Status == want {
			return ev
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("execution %s is %s, want %s", id, ev.Execution.Status, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCancelEndsTheExecutionAndItsDescendants (issue 12, "Execution
// controls that are still partial"): through the HTTP API on the embedded
// stack, an execution with a fork, a retry (of a failed fork) and a child
// task, each waiting on an approval, and a host tool already started in
// the parent. Cancelling the parent cancels every open descendant (their
// approvals cancelled, their actions not_started), leaves the failed fork
// alone, lists what it reached, and the started tool finishes and records
// before the parent is cancelled.
func TestCancelEndsTheExecutionAndItsDescendants(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	agent := s.token(auth.RoleAgent, "ses_1")
	human := s.token(auth.RoleHuman, "ses_1")
	in := func(exec ids.ExecutionID, tool, args, call string) map[string]any {
		b := submitBody(tool, args, call)
		if exec != "" {
			b["execution_id"] = string(exec)
		}
		return b
	}

	// The parent: a started host tool and an approval wait.
	host := apiclient.Host{Client: &apiclient.Client{BaseURL: s.url, Token: agent, HTTP: s.client}}
	// claim starts the host task of action a (the host worker's claim).
	claim := func(a ids.ActionID, attempt ids.AttemptID) actionflow.Task {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			tasks, err := host.Tasks(ctx, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range tasks {
				if id == a {
					task, err := host.Start(ctx, a, attempt)
					if err != nil {
						t.Fatal(err)
					}
					return task
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("the host task of %s was not published", a)
			}
		}
	}
	bash := s.submit(agent, "ses_1", "p-bash", in("", "Bash", `{"command":"echo still running"}`, "c1"))
	p := bash.ExecutionID
	task := claim(bash.ActionID, "att_1")
	pAsk := s.submit(agent, "ses_1", "p-ask", in(p, "risky", `{"n":"p"}`, "c2"))
	s.pendingApproval(agent, "ses_1", pAsk.ActionID)

	// A fork of the parent, continued, waiting on an approval.
	f := s.applied(human, p, "fork_f", "fork", "").ChildExecutionID
	s.applied(human, f, "continue_f", "continue", "")
	fAsk := s.submit(agent, "ses_1", "f-ask", in(f, "risky", `{"n":"f"}`, "c3"))
	s.pendingApproval(agent, "ses_1", fAsk.ActionID)
	// ... and running a host tool of its own.
	fBash := s.submit(agent, "ses_1", "f-bash", in(f, "Bash", `{"command":"echo fork"}`, "c5"))
	fTask := claim(fBash.ActionID, "att_2")

	// A child task of the parent (a job), waiting on an approval.
	j, err := s.svc.StartChildTask(ctx, p, actionflow.ChildTask{ExecutionID: "exe_job1", Kind: "job"})
	if err != nil {
		t.Fatal(err)
	}
	jAsk := s.submit(agent, "ses_1", "j-ask", in(j.ExecutionID, "risky", `{"n":"j"}`, "c4"))
	s.pendingApproval(agent, "ses_1", jAsk.ActionID)

	// A fork that failed (its agent ended it), and its retry.
	e := s.applied(human, p, "fork_e", "fork", "").ChildExecutionID
	s.applied(agent, e, "end_e", "end", `{"status":"failed","reason":"model_error"}`)
	rx := s.applied(human, e, "retry_r", "retry", "").ChildExecutionID

	// Cancel the parent.
	pv := s.execution(human, p).Execution.Version
	cr := s.applied(human, p, "cancel_p", "cancel", `{"reason":"stop the run"}`)
	var reached []string
	for _, d := range cr.Descendants {
		reached = append(reached, string(d.ExecutionID)+"<"+string(d.ParentID)+":"+d.Status)
	}
	sort.Strings(reached)
	want := []string{string(j.ExecutionID) + "<" + string(p) + ":applied", string(f) + "<" + string(p) + ":applied", string(rx) + "<" + string(e) + ":applied"}
	sort.Strings(want)
	if strings.Join(reached, ",") != strings.Join(want, ",") {
		t.Fatalf("the cancel reached %v, want %v", reached, want)
	}

	cases := []struct {
		name string
		exec ids.ExecutionID
		want actionflow.ExecutionStatus
		ask  ids.ActionID
	}{
		{"the fork waits for its started tool", f, actionflow.ExecCancelling, fAsk.ActionID},
		{"the child task", j.ExecutionID, actionflow.ExecCancelled, jAsk.ActionID},
		{"the retry of the failed fork", rx, actionflow.ExecCancelled, ""},
		{"the failed fork is left alone", e, actionflow.ExecFailed, ""},
		{"the parent waits for its started tool", p, actionflow.ExecCancelling, pAsk.ActionID},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.ask != "" {
				av := s.waitAction(agent, tc.ask)
				if av.States.Outcome != lifecycle.OutcomeNotStarted || av.Approval == nil || av.Approval.Status != actionflow.ApprovalCancelled {
					t.Fatalf("the pending approval of %s: outcome %s approval %+v", tc.exec, av.States.Outcome, av.Approval)
				}
			}
			if tc.want == actionflow.ExecCancelled {
				// The cancellation becomes cancelled once every action of the
				// execution has its receipt; the receipt of a closed action is
				// recorded by its state machine after the Cancel was applied,
				// so the owner (or, as here, the sweeper) confirms it.
				if _, err := s.es.Recovery.Sweep(ctx); err != nil {
					t.Fatal(err)
				}
			}
			ev := s.waitStatus(human, tc.exec, tc.want)
			if len(ev.Controls) != 0 && tc.want == actionflow.ExecCancelling {
				t.Fatalf("a cancelling execution advertises %v", ev.Controls)
			}
		})
	}
	if n := s.exec.calls.Load(); n != 0 {
		t.Fatalf("the executor ran %d times", n)
	}

	// The started tools finish and record; then the parent and the fork
	// are cancelled (the sweeper confirms the owners' shutdown).
	for _, st := range []struct {
		a       ids.ActionID
		attempt ids.AttemptID
		fence   int64
		out     string
	}{{bash.ActionID, "att_1", task.Fence, "still running\n"}, {fBash.ActionID, "att_2", fTask.Fence, "fork\n"}} {
		if err := host.Result(ctx, st.a, st.attempt, st.fence, actionflow.ToolResult{Outcome: lifecycle.OutcomeSucceeded, Output: st.out}); err != nil {
			t.Fatal(err)
		}
		if av := s.waitAction(agent, st.a); av.States.Outcome != lifecycle.OutcomeSucceeded || av.Receipt.Output != st.out {
			t.Fatalf("the started tool %s: %+v", st.a, av.States)
		}
	}
	if _, err := s.es.Recovery.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	s.waitStatus(human, p, actionflow.ExecCancelled)
	s.waitStatus(human, f, actionflow.ExecCancelled)

	// The same cancel again is the same command; nothing new reaches the
	// descendants.
	again := s.do(req{method: "POST", path: "/v1/executions/" + string(p) + "/commands", token: human,
		body: httpapi.CommandBody{CommandID: "cancel_p", Type: "cancel", ExpectedVersion: &pv, Payload: json.RawMessage(`{"reason":"stop the run"}`)}})
	var cr2 httpapi.CommandResult
	again.decode(t, &cr2)
	if again.status != http.StatusAccepted || len(cr2.Descendants) != len(cr.Descendants) {
		t.Fatalf("repeated cancel: %d %s", again.status, again.body)
	}
}

// TestForkAndRetryFromAnySavedPoint: every checkpoint version an
// execution wrote is listed by GET /v1/executions/{id} and may be forked
// or retried from; the child starts from that point's state and keeps the
// source's session, run and iteration limit; the source's history stays;
// a point the execution does not have is 409 saved_point_unavailable and
// saves nothing.
func TestForkAndRetryFromAnySavedPoint(t *testing.T) {
	s := newStack(t)
	agent := s.token(auth.RoleAgent, "ses_1")
	human := s.token(auth.RoleHuman, "ses_1")
	var actions []ids.ActionID
	var src ids.ExecutionID
	for i, call := range []string{"c1", "c2", "c3"} {
		b := submitBody("noop", `{"n":`+string(rune('1'+i))+`}`, call)
		if src == "" {
			b["iteration_limit"] = 10
		} else {
			b["execution_id"] = string(src)
		}
		v := s.submit(agent, "ses_1", "k"+call, b)
		src = v.ExecutionID
		s.waitAction(agent, v.ActionID)
		actions = append(actions, v.ActionID)
	}
	before := s.execution(human, src)
	if before.Checkpoint.Version != 3 || len(before.SavedPoints) != 4 {
		t.Fatalf("source: checkpoint %+v, saved points %+v", before.Checkpoint, before.SavedPoints)
	}
	for i, sp := range before.SavedPoints {
		want := ids.ActionID("")
		if i > 0 {
			want = actions[i-1]
		}
		if sp.Version != int64(i) || sp.LastActionID != want || sp.At.IsZero() {
			t.Fatalf("saved point %d: %+v", i, sp)
		}
	}
	cases := []struct {
		name     string
		typ      string
		payload  string
		point    int64
		recorded int64
		last     ids.ActionID
	}{
		{"fork from a middle saved point", "fork", `{"checkpoint_version":2}`, 2, 2, actions[1]},
		{"fork from the first receipt", "fork", `{"checkpoint_version":1}`, 1, 1, actions[0]},
		{"fork from the start", "fork", `{"checkpoint_version":0}`, 0, 0, ""},
		{"fork from the current checkpoint (default)", "fork", ``, 3, 3, actions[2]},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cr := s.applied(human, src, "cmd_"+string(rune('a'+i)), tc.typ, tc.payload)
			child := s.execution(human, cr.ChildExecutionID)
			e := child.Execution
			if e.ParentID != src || e.SessionID != "ses_1" || e.RunID != before.Execution.RunID || e.IterationLimit != 10 ||
				e.ForkPoint == nil || *e.ForkPoint != tc.point || e.Status != actionflow.ExecPaused {
				t.Fatalf("child %+v", e)
			}
			if child.Checkpoint.Recorded != tc.recorded || child.Checkpoint.LastActionID != tc.last || child.Checkpoint.Version != 1 {
				t.Fatalf("child checkpoint %+v", child.Checkpoint)
			}
			if len(child.SavedPoints) != 2 || child.SavedPoints[1].LastActionID != tc.last {
				t.Fatalf("child saved points %+v", child.SavedPoints)
			}
		})
	}
	t.Run("a saved point the execution does not have", func(t *testing.T) {
		mark := s.st.mark()
		r, _ := s.command(human, src, "cmd_x", "fork", `{"checkpoint_version":4}`)
		e := r.errorBody(t)
		cur, _ := e.Current.(map[string]any)
		if r.status != http.StatusConflict || e.Code != "saved_point_unavailable" || cur["checkpoint_version"] != float64(3) {
			t.Fatalf("fork from 4: %d %s", r.status, r.body)
		}
		if w := s.st.since(mark); len(w) != 0 {
			t.Fatalf("a refused fork wrote %+v", w)
		}
	})
	t.Run("retry of the ended source from a saved point", func(t *testing.T) {
		s.applied(agent, src, "end_src", "end", `{"status":"failed","reason":"model_error"}`)
		cr := s.applied(human, src, "retry_1", "retry", `{"checkpoint_version":2}`)
		child := s.execution(human, cr.ChildExecutionID)
		if child.Execution.BranchID != before.Execution.BranchID || child.Checkpoint.LastActionID != actions[1] {
			t.Fatalf("retry child %+v checkpoint %+v", child.Execution, child.Checkpoint)
		}
	})
	// The source's history stays.
	after := s.execution(human, src)
	if after.Checkpoint.Version != before.Checkpoint.Version || after.Checkpoint.LastActionID != before.Checkpoint.LastActionID ||
		!after.Checkpoint.UpdatedAt.Equal(*before.Checkpoint.UpdatedAt) || len(after.SavedPoints) != len(before.SavedPoints) {
		t.Fatalf("the source changed: %+v %+v", after.Checkpoint, after.SavedPoints)
	}
}

// TestForksRacingACancelOverHTTP: forks posted at the same moment as a
// cancel of their source, through the API. Each fork is applied (its child
// existed before the cancellation, so the cancellation reaches it),
// rejected at application, or refused (409); after the sweeper, no child
// of the cancelled source is left running or paused.
func TestForksRacingACancelOverHTTP(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	human := s.token(auth.RoleHuman, "ses_1")
	v := s.submit(human, "ses_1", "k", submitBody("noop", `{}`, "c1"))
	s.waitAction(human, v.ActionID)
	version := s.execution(human, v.ExecutionID).Execution.Version
	const ways = 12
	type answer struct {
		status int
		body   []byte
	}
	answers := make([]answer, ways)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < ways; i++ {
		typ := "fork"
		if i == ways/2 {
			typ = "cancel"
		}
		wg.Add(1)
		go func(i int, typ string) {
			defer wg.Done()
			<-start
			r := s.do(req{method: "POST", path: "/v1/executions/" + string(v.ExecutionID) + "/commands", token: human,
				body: httpapi.CommandBody{CommandID: ids.CommandID(fmt.Sprintf("cmd_%d", i)), Type: typ, ExpectedVersion: &version}})
			answers[i] = answer{r.status, r.body}
		}(i, typ)
	}
	close(start)
	wg.Wait()
	for i, a := range answers {
		if a.status != http.StatusAccepted && !(i != ways/2 && a.status == http.StatusConflict) {
			t.Fatalf("command %d: %d %s", i, a.status, a.body)
		}
	}
	if _, err := s.es.Recovery.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	s.waitStatus(human, v.ExecutionID, actionflow.ExecCancelled)
	kids, err := s.svc.Children(ctx, s.execution(human, v.ExecutionID).Execution)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range kids {
		s.waitStatus(human, id, actionflow.ExecCancelled)
	}
	t.Logf("%d of %d forks made a child before the cancellation", len(kids), ways-1)
}
