package embedded_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/decider"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/permission/riskreview"
	"github.com/openprogram/lifecycle/shared/store"
)

type fixedPolicy struct{ p *permission.Policy }

func (f fixedPolicy) Policy(context.Context, ids.SessionID) (*permission.Policy, error) {
	return f.p, nil
}

type countingExecutor struct{ calls atomic.Int64 }

func (c *countingExecutor) Execute(ctx context.Context, t actionflow.Task) (actionflow.ToolResult, error) {
	c.calls.Add(1)
	return actionflow.ToolResult{Outcome: lifecycle.OutcomeSucceeded, Output: "mutated"}, nil
}

const policy = `{"version":"v1","allow":["noop","mutate"],"deny":["forbidden"]}`

func start(t *testing.T, dir, workspace string, ex *countingExecutor, opts ...func(*embedded.Config)) *embedded.Stack {
	t.Helper()
	lazy := &lazyDecider{}
	cfg := embedded.Config{
		StateDir: dir, Workspace: workspace, Decider: lazy,
		Routes:    map[string]string{"mutate": "counting", "forbidden": "counting"},
		Executors: map[string]actionflow.Executor{"counting": ex},
	}
	for _, o := range opts {
		o(&cfg)
	}
	s, err := embedded.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SweepInterval < 0 {
		// The test sweeps (and may move the clock): the start-up sweep,
		// which runs in the background, must not run after its set-up
		// (an idle test once saw it end an execution it was about to
		// cancel, on a loaded machine).
		select {
		case <-s.StartupSwept():
		case <-time.After(time.Minute):
			t.Fatal("the start-up sweep did not finish in a minute")
		}
	}
	eng, err := permission.NewEngine(permission.Config{Classifier: riskreview.New(), Counters: s.Store})
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(workspace)
	lazy.d = &decider.Decider{Engine: eng, Policies: fixedPolicy{permission.MustParsePolicy(policy)}, ProjectRoot: abs, WorkingDir: abs}
	return s
}

// lazyDecider lets the test build the permission engine over the stack's own store.
type lazyDecider struct{ d *decider.Decider }

func (l *lazyDecider) Decide(ctx context.Context, a actionflow.Action) (actionflow.Decision, error) {
	return l.d.Decide(ctx, a)
}
func (l *lazyDecider) Revalidate(ctx context.Context, a actionflow.Action, p actionflow.Decision, ap actionflow.Approval) (actionflow.Decision, error) {
	return l.d.Revalidate(ctx, a, p, ap)
}
func (l *lazyDecider) ApprovalCompleted(ctx context.Context, a actionflow.Action, ap actionflow.Approval) error {
	return l.d.ApprovalCompleted(ctx, a, ap)
}

func submit(t *testing.T, s *embedded.Stack, tool, args string) actionflow.Action {
	t.Helper()
	a, _, err := s.Service.Submit(context.Background(), actionflow.SubmitRequest{SessionID: "ses_e2e", ToolCallID: ids.ToolCallID(ids.New("call")),
		Tool: tool, Arguments: json.RawMessage(args), Interactive: true, Principal: actionflow.Principal{Subject: "agent", Role: "agent"}})
	if err != nil {
		t.Fatalf("submit %s: %v", tool, err)
	}
	return a
}

func waitFor(t *testing.T, s *embedded.Stack, id ids.ActionID, cond func(actionflow.Action) bool) actionflow.Action {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		a, err := s.Service.GetAction(context.Background(), id)
		if err == nil && cond(a) {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("action %s never reached the condition: %+v (err %v)", id, a.States, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func terminal(a actionflow.Action) bool { return a.States.Terminal() }

func pending(t *testing.T, s *embedded.Stack, id ids.ActionID) actionflow.Approval {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ap, err := s.Service.GetApproval(context.Background(), id)
		if err == nil && ap.Status == actionflow.ApprovalPending {
			return ap
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no pending approval for %s", id)
	return actionflow.Approval{}
}

func TestEndToEndAllowAskDeny(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	ex := &countingExecutor{}
	s := start(t, dir, ws, ex)
	defer s.Close(context.Background())
	ctx := context.Background()
	human := actionflow.Principal{Subject: "alice", Role: "human", Session: "ses_e2e", Origin: "test"}

	allowed := submit(t, s, "mutate", `{"target":"a"}`)
	denied := submit(t, s, "forbidden", `{}`)
	asked := submit(t, s, "Write", `{"file_path":"notes/hello.txt","content":"hi"}`)
	declined := submit(t, s, "Write", `{"file_path":"notes/never.txt","content":"no"}`)

	got := waitFor(t, s, allowed.ActionID, terminal)
	if got.States != (lifecycle.States{Permission: lifecycle.PermissionAllow, Outcome: lifecycle.OutcomeSucceeded, Delivery: lifecycle.DeliveryProjected, Started: true}) {
		t.Fatalf("allowed: %+v", got.States)
	}
	got = waitFor(t, s, denied.ActionID, terminal)
	if got.States.Permission != lifecycle.PermissionDeny || got.States.Outcome != lifecycle.OutcomeNotStarted || got.States.Started {
		t.Fatalf("denied: %+v", got.States)
	}

	ap := pending(t, s, asked.ActionID)
	if _, err := s.Service.DecideApproval(ctx, ap.ApprovalID, actionflow.DecisionApprove, ap.ArgsDigest, human); err != nil {
		t.Fatal(err)
	}
	got = waitFor(t, s, asked.ActionID, terminal)
	if got.States.Outcome != lifecycle.OutcomeSucceeded {
		t.Fatalf("approved write: %+v", got.States)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "notes", "hello.txt")); err != nil || string(b) != "hi" {
		t.Fatalf("host tool did not write the file: %q %v", b, err)
	}

	ap = pending(t, s, declined.ActionID)
	if _, err := s.Service.DecideApproval(ctx, ap.ApprovalID, actionflow.DecisionDecline, ap.ArgsDigest, human); err != nil {
		t.Fatal(err)
	}
	got = waitFor(t, s, declined.ActionID, terminal)
	if got.States.Outcome != lifecycle.OutcomeNotStarted || got.States.Started {
		t.Fatalf("declined: %+v", got.States)
	}
	if _, err := os.Stat(filepath.Join(ws, "notes", "never.txt")); !os.IsNotExist(err) {
		t.Fatal("a declined approval was dispatched")
	}
	if n := ex.calls.Load(); n != 1 {
		t.Fatalf("mutating executor called %d times, want exactly 1", n)
	}
	// Receipts are sealed for every action.
	for _, id := range []ids.ActionID{allowed.ActionID, denied.ActionID, asked.ActionID, declined.ActionID} {
		if _, err := s.Service.GetReceipt(ctx, id); err != nil {
			t.Fatalf("receipt of %s: %v", id, err)
		}
	}
}

// A pending approval survives a restart of the whole stack (new engine, new
// service, same store file) and the answer completes the original wait.
func TestPendingApprovalSurvivesRestart(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	ex := &countingExecutor{}
	s := start(t, dir, ws, ex)
	a := submit(t, s, "Write", `{"file_path":"after-restart.txt","content":"ok"}`)
	ap := pending(t, s, a.ActionID)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	s2 := start(t, dir, ws, ex)
	defer s2.Close(context.Background())
	human := actionflow.Principal{Subject: "alice", Role: "human", Session: "ses_e2e"}
	if _, err := s2.Service.DecideApproval(context.Background(), ap.ApprovalID, actionflow.DecisionApprove, ap.ArgsDigest, human); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, s2, a.ActionID, terminal)
	if got.States.Outcome != lifecycle.OutcomeSucceeded {
		t.Fatalf("after restart: %+v", got.States)
	}
	var _ store.Store = s2.Store
}

// One process per state directory: a second stack on the same directory
// is refused while the first runs, and allowed once it stopped.
func TestStateDirIsExclusive(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	ex := &countingExecutor{}
	s := start(t, dir, ws, ex)
	_, err := embedded.Start(context.Background(), embedded.Config{StateDir: dir, NoHostWorker: true, Decider: &lazyDecider{}})
	if !errors.Is(err, embedded.ErrStateDirBusy) {
		t.Fatalf("second stack on the same directory: %v", err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	s2 := start(t, dir, ws, ex)
	s2.Close(context.Background())
}
