package actionflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/actionflow/flowtest"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

// ruleDecider decides by tool name; the real permission engine is tested in
// its own package and wired in by the stack.
type ruleDecider struct {
	byTool map[string]lifecycle.Permission
}

func (d ruleDecider) Decide(ctx context.Context, a actionflow.Action) (actionflow.Decision, error) {
	p, ok := d.byTool[a.Tool]
	if !ok {
		p = lifecycle.PermissionDeny
	}
	return actionflow.Decision{Permission: p, PolicyVersion: "v1", Reason: actionflow.Reason{Source: "test", Code: string(p)}}, nil
}
func (d ruleDecider) Revalidate(ctx context.Context, a actionflow.Action, prior actionflow.Decision, ap actionflow.Approval) (actionflow.Decision, error) {
	return actionflow.Decision{Permission: lifecycle.PermissionAllow, PolicyVersion: prior.PolicyVersion, Reason: actionflow.Reason{Source: "approval", Code: "approved"}}, nil
}
func (d ruleDecider) ApprovalCompleted(context.Context, actionflow.Action, actionflow.Approval) error {
	return nil
}

type countingExecutor struct {
	calls  atomic.Int64
	result actionflow.ToolResult
	err    error
}

func (e *countingExecutor) Execute(ctx context.Context, t actionflow.Task) (actionflow.ToolResult, error) {
	e.calls.Add(1)
	return e.result, e.err
}

type routes map[string]string

func (r routes) Route(tool string) (string, bool) { k, ok := r[tool]; return k, ok }

// recordedTasks records SendTask* calls: the port the state machine engine serves.
type recordedTasks struct {
	mu      sync.Mutex
	success map[string][]byte
	failure map[string]string
}

func (r *recordedTasks) SendTaskSuccess(ctx context.Context, token string, out []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.success[token] = out
	return nil
}
func (r *recordedTasks) SendTaskFailure(ctx context.Context, token, name, cause string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failure[token] = name
	return nil
}

type noStart struct{}

func (noStart) StartAction(context.Context, ids.ActionID, []byte) error { return nil }

type fixture struct {
	svc   *actionflow.Service
	st    store.Store
	exec  *countingExecutor
	tasks *recordedTasks
}

func newFixture(t *testing.T, opts ...func(*actionflow.Config)) fixture {
	t.Helper()
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ex := &countingExecutor{result: actionflow.ToolResult{Outcome: lifecycle.OutcomeSucceeded, Output: "done"}}
	tasks := &recordedTasks{success: map[string][]byte{}, failure: map[string]string{}}
	cfg := actionflow.Config{
		Store:     st,
		Decider:   ruleDecider{byTool: map[string]lifecycle.Permission{"noop": lifecycle.PermissionAllow, "risky": lifecycle.PermissionAsk, "Bash": lifecycle.PermissionAsk}},
		Router:    routes{"noop": "test", "risky": "test", "forbidden": "test", "Bash": "host"},
		Executors: map[string]actionflow.Executor{"test": ex},
		Starter:   noStart{}, Tasks: tasks,
	}
	for _, o := range opts {
		o(&cfg)
	}
	svc, err := actionflow.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return fixture{svc: svc, st: st, exec: ex, tasks: tasks}
}

func (f fixture) submit(t *testing.T, tool, args string) actionflow.Action {
	t.Helper()
	a, _, err := f.svc.Submit(context.Background(), actionflow.SubmitRequest{SessionID: "ses_1", ToolCallID: "call_1",
		Tool: tool, Arguments: json.RawMessage(args), Interactive: true, Principal: actionflow.Principal{Subject: "agent", Role: "agent"}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// earlierRecord makes the record step write what an earlier revision's
// record step wrote (delivery recorded, no event), its Project state left
// to run: flowtest.EarlierRecord.
func earlierRecord(c *actionflow.Config) {
	c.Store = &flowtest.FaultyStore{Store: c.Store, Rewrite: flowtest.EarlierRecord}
}

func in(a actionflow.Action) actionflow.StepInput {
	return actionflow.StepInput{ActionID: a.ActionID, ExecutionID: a.ExecutionID}
}

// finish runs the record step (which projects) as the state machine would.
func (f fixture) finish(t *testing.T, si actionflow.StepInput) actionflow.Action {
	t.Helper()
	ctx := context.Background()
	if _, err := f.svc.Record(ctx, si); err != nil {
		t.Fatalf("record: %v", err)
	}
	a, err := f.svc.GetAction(ctx, si.ActionID)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAllowPathExecutesOnceAndProjects(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.submit(t, "noop", `{"x":1}`)
	d, err := f.svc.Authorize(ctx, in(a))
	if err != nil || d.Permission != lifecycle.PermissionAllow {
		t.Fatalf("authorize: %+v %v", d, err)
	}
	si := in(a)
	si.Mode = "sync"
	res, err := f.svc.Dispatch(ctx, si)
	if err != nil || res.Outcome != lifecycle.OutcomeSucceeded {
		t.Fatalf("dispatch: %+v %v", res, err)
	}
	// A re-invoked dispatch (Lambda at-least-once) never calls the executor
	// again; it answers with the result the first attempt stored.
	again, err := f.svc.Dispatch(ctx, si)
	if err != nil || again.Outcome != lifecycle.OutcomeSucceeded || again.Output != "done" {
		t.Fatalf("second dispatch: %+v %v", again, err)
	}
	if n := f.exec.calls.Load(); n != 1 {
		t.Fatalf("executor called %d times", n)
	}
	si.Result = &res
	got := f.finish(t, si)
	want := lifecycle.States{Permission: lifecycle.PermissionAllow, Outcome: lifecycle.OutcomeSucceeded, Delivery: lifecycle.DeliveryProjected, Started: true}
	if got.States != want {
		t.Fatalf("states %+v, want %+v", got.States, want)
	}
	// Record again with a different (unknown) result: the sealed receipt stands.
	si.Result = &actionflow.ToolResult{Outcome: lifecycle.OutcomeUnknown, ErrorCode: "late"}
	if out, err := f.svc.Record(ctx, si); err != nil || out.Outcome != lifecycle.OutcomeSucceeded {
		t.Fatalf("re-record: %+v %v", out, err)
	}
	ck, _ := f.svc.GetCheckpoint(ctx, a.ExecutionID)
	if ck.Recorded != 1 {
		t.Fatalf("checkpoint folded %d receipts, want 1", ck.Recorded)
	}
}

func TestDenyPathNeverDispatches(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.submit(t, "forbidden", `{}`)
	d, err := f.svc.Authorize(ctx, in(a))
	if err != nil || d.Permission != lifecycle.PermissionDeny {
		t.Fatalf("authorize: %+v %v", d, err)
	}
	si := in(a)
	si.Mode = "sync"
	if _, err := f.svc.Dispatch(ctx, si); err == nil {
		t.Fatal("dispatch of a denied action succeeded")
	}
	got := f.finish(t, in(a))
	if f.exec.calls.Load() != 0 {
		t.Fatal("a denied action reached its executor")
	}
	if got.States.Outcome != lifecycle.OutcomeNotStarted || got.States.Permission != lifecycle.PermissionDeny {
		t.Fatalf("states %+v", got.States)
	}
	rc, _ := f.svc.GetReceipt(ctx, a.ActionID)
	if rc.ErrorCode != "permission_denied:deny" || rc.PolicyVersion != "v1" {
		t.Fatalf("receipt %+v", rc)
	}
}

func TestAskApproveRevalidateDispatch(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.submit(t, "risky", `{"cmd":"deploy"}`)
	if d, _ := f.svc.Authorize(ctx, in(a)); d.Permission != lifecycle.PermissionAsk {
		t.Fatalf("want ask, got %+v", d)
	}
	await := in(a)
	await.Mode, await.TaskToken = "await", "tok-1"
	w, err := f.svc.ApprovalStep(ctx, await)
	if err != nil {
		t.Fatal(err)
	}
	human := actionflow.Principal{Subject: "alice", Role: "human", Session: "ses_1", Origin: "ui"}
	agent := actionflow.Principal{Subject: "bot", Role: "agent", Session: "ses_1"}
	if _, err := f.svc.DecideApproval(ctx, w.ApprovalID, "approve", a.ArgsDigest, agent); !errors.As(err, new(*actionflow.ForbiddenError)) {
		t.Fatalf("agent approval: %v", err)
	}
	other := human
	other.Session = "ses_2"
	if _, err := f.svc.DecideApproval(ctx, w.ApprovalID, "approve", a.ArgsDigest, other); !errors.As(err, new(*actionflow.NotFoundError)) {
		t.Fatalf("cross-session approval: %v", err)
	}
	if _, err := f.svc.DecideApproval(ctx, w.ApprovalID, "approve", "sha256:nope", human); !errors.As(err, new(*actionflow.ValidationError)) {
		t.Fatalf("wrong digest: %v", err)
	}
	if _, err := f.svc.DecideApproval(ctx, w.ApprovalID, "approve", a.ArgsDigest, human); err != nil {
		t.Fatal(err)
	}
	var ce *actionflow.ConflictError
	if _, err := f.svc.DecideApproval(ctx, w.ApprovalID, "decline", a.ArgsDigest, human); !errors.As(err, &ce) || ce.Code != "already_decided" {
		t.Fatalf("second decision: %v", err)
	}
	if _, ok := f.tasks.success["tok-1"]; !ok {
		t.Fatal("approval did not complete the wait")
	}
	re := in(a)
	re.Mode = "revalidate"
	if d, err := f.svc.Authorize(ctx, re); err != nil || d.Permission != lifecycle.PermissionAllow {
		t.Fatalf("revalidate: %+v %v", d, err)
	}
	si := in(a)
	si.Mode = "sync"
	res, _ := f.svc.Dispatch(ctx, si)
	si.Result = &res
	got := f.finish(t, si)
	if got.States.Outcome != lifecycle.OutcomeSucceeded || f.exec.calls.Load() != 1 {
		t.Fatalf("states %+v calls %d", got.States, f.exec.calls.Load())
	}
}

func TestDeclinedApprovalNeverDispatches(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.submit(t, "risky", `{}`)
	f.svc.Authorize(ctx, in(a))
	await := in(a)
	await.Mode, await.TaskToken = "await", "tok-1"
	w, _ := f.svc.ApprovalStep(ctx, await)
	// A new wait supersedes the first: the old approval id resolves nothing.
	await.TaskToken = "tok-2"
	w2, _ := f.svc.ApprovalStep(ctx, await)
	human := actionflow.Principal{Subject: "alice", Role: "human", Session: "ses_1"}
	var ce *actionflow.ConflictError
	if _, err := f.svc.DecideApproval(ctx, w.ApprovalID, "approve", a.ArgsDigest, human); !errors.As(err, &ce) || ce.Code != "approval_superseded" {
		t.Fatalf("late answer to an old wait: %v", err)
	}
	if _, err := f.svc.DecideApproval(ctx, w2.ApprovalID, "decline", a.ArgsDigest, human); err != nil {
		t.Fatal(err)
	}
	if f.tasks.failure["tok-2"] != actionflow.ApprovalDeclined {
		t.Fatalf("failure %v", f.tasks.failure)
	}
	si := in(a)
	si.Error = &actionflow.CaughtError{Error: actionflow.ApprovalDeclined, Cause: "declined by alice"}
	got := f.finish(t, si)
	if f.exec.calls.Load() != 0 || got.States.Outcome != lifecycle.OutcomeNotStarted || got.States.Permission != lifecycle.PermissionDeny {
		t.Fatalf("declined: calls %d states %+v", f.exec.calls.Load(), got.States)
	}
}

func TestIdempotentSubmit(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	req := actionflow.SubmitRequest{SessionID: "ses_1", ToolCallID: "c1", Tool: "noop", Arguments: json.RawMessage(`{"a":1}`), IdempotencyKey: "k1"}
	a1, created, err := f.svc.Submit(ctx, req)
	if err != nil || !created {
		t.Fatal(err, created)
	}
	a2, created, err := f.svc.Submit(ctx, req)
	if err != nil || created || a2.ActionID != a1.ActionID {
		t.Fatalf("repeat: %v %v %s", err, created, a2.ActionID)
	}
	req.Arguments = json.RawMessage(`{"a":2}`)
	var ce *actionflow.ConflictError
	if _, _, err := f.svc.Submit(ctx, req); !errors.As(err, &ce) {
		t.Fatalf("different body: %v", err)
	}
}

func TestHostTaskOwnership(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.submit(t, "Bash", `{"command":"echo hi"}`)
	f.svc.Authorize(ctx, in(a))
	// (approval elided: force allow through revalidation path)
	await := in(a)
	await.Mode, await.TaskToken = "await", "tok-a"
	w, _ := f.svc.ApprovalStep(ctx, await)
	f.svc.DecideApproval(ctx, w.ApprovalID, "approve", a.ArgsDigest, actionflow.Principal{Subject: "h", Role: "human", Session: "ses_1"})
	re := in(a)
	re.Mode = "revalidate"
	if d, _ := f.svc.Authorize(ctx, re); d.Executor != "host" {
		t.Fatalf("executor %q", d.Executor)
	}
	pub := in(a)
	pub.Mode, pub.TaskToken = "publish", "tok-h"
	if _, err := f.svc.Dispatch(ctx, pub); err != nil {
		t.Fatal(err)
	}
	tasks, _ := f.svc.HostTasks(ctx, "ses_1", 10)
	if len(tasks) != 1 {
		t.Fatalf("host tasks %d", len(tasks))
	}
	task, err := f.svc.HostStart(ctx, a.ActionID, "att_1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.HostStart(ctx, a.ActionID, "att_2"); err == nil {
		t.Fatal("a second host claimed a started task")
	}
	ok := actionflow.ToolResult{Outcome: lifecycle.OutcomeSucceeded, Output: "hi\n"}
	if err := f.svc.HostResult(ctx, a.ActionID, "att_2", task.Fence, ok); err == nil {
		t.Fatal("a non-owner posted a result")
	}
	if err := f.svc.HostResult(ctx, a.ActionID, "att_1", task.Fence, ok); err != nil {
		t.Fatal(err)
	}
	if string(f.tasks.success["tok-h"]) == "" {
		t.Fatal("host result did not complete the dispatch wait")
	}
	got := f.finish(t, in(a)) // record reads the durable host result even without $.result
	if got.States.Outcome != lifecycle.OutcomeSucceeded {
		t.Fatalf("states %+v", got.States)
	}
}

func (f fixture) runSync(t *testing.T, tool, args string) actionflow.Action {
	t.Helper()
	ctx := context.Background()
	a := f.submit(t, tool, args)
	si := in(a)
	d, err := f.svc.Authorize(ctx, si)
	if err != nil {
		t.Fatal(err)
	}
	if d.Permission == lifecycle.PermissionAllow {
		si.Mode = "sync"
		res, err := f.svc.Dispatch(ctx, si)
		if err != nil {
			t.Fatal(err)
		}
		si.Mode, si.Result = "", &res
	}
	return f.finish(t, si)
}

// Deterministic failure: the output is returned, and an equivalent repeat
// (same repeat identity, same conditions) is suppressed until the
// execution-relevant input changes.
func TestDeterministicFailureSuppressesEquivalentRepeat(t *testing.T) {
	// Bash's contract (description is presentation-only), run synchronously here.
	f := newFixture(t, func(c *actionflow.Config) {
		c.Decider = ruleDecider{byTool: map[string]lifecycle.Permission{"Bash": lifecycle.PermissionAllow}}
		c.Router = routes{"Bash": "test"}
	})
	ctx := context.Background()
	f.exec.result = actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "exit_2", Output: "make: *** [test] Error 2"}
	submitIn := func(args string) actionflow.Action {
		a, _, err := f.svc.Submit(ctx, actionflow.SubmitRequest{SessionID: "ses_1", ExecutionID: "exe_fixed", ToolCallID: "c",
			Tool: "Bash", Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	run := func(args string) actionflow.Action {
		a := submitIn(args)
		si := in(a)
		if d, _ := f.svc.Authorize(ctx, si); d.Permission == lifecycle.PermissionAllow {
			si.Mode = "sync"
			res, _ := f.svc.Dispatch(ctx, si)
			si.Mode, si.Result = "", &res
		}
		return f.finish(t, si)
	}
	first := run(`{"command":"make test","description":"run the tests"}`)
	rc, _ := f.svc.GetReceipt(ctx, first.ActionID)
	if first.States.Outcome != lifecycle.OutcomeFailed || rc.Output == "" {
		t.Fatalf("failure output not returned: %+v %+v", first.States, rc)
	}
	again := run(`{"description":"run the tests again please","command":"make test"}`)
	if again.States.Outcome != lifecycle.OutcomeNotStarted || again.Decision.Reason.Code != "repeat_suppressed" {
		t.Fatalf("equivalent repeat ran: %+v %+v", again.States, again.Decision.Reason)
	}
	changed := run(`{"command":"make test -k"}`)
	if changed.States.Outcome != lifecycle.OutcomeFailed {
		t.Fatalf("changed input was suppressed: %+v", changed.States)
	}
	if n := f.exec.calls.Load(); n != 2 {
		t.Fatalf("executor calls %d, want 2", n)
	}
}

// An executor error after start evidence is an unknown outcome: evidence
// preserved, reconciliation required, never retried.
func TestUnknownSideEffectIsNeverRetried(t *testing.T) {
	f := newFixture(t)
	f.exec.err = errors.New("connection reset after request sent")
	a := f.runSync(t, "noop", `{}`)
	rc, _ := f.svc.GetReceipt(context.Background(), a.ActionID)
	if a.States.Outcome != lifecycle.OutcomeUnknown || rc.Start == nil || rc.Reconciliation == "" {
		t.Fatalf("states %+v receipt %+v", a.States, rc)
	}
	si := in(a)
	si.Mode = "sync"
	if res, _ := f.svc.Dispatch(context.Background(), si); res.Outcome != lifecycle.OutcomeUnknown || f.exec.calls.Load() != 1 {
		t.Fatalf("retried an unknown side effect: %+v calls %d", res, f.exec.calls.Load())
	}
}
