package embedded_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/activity"
	"github.com/openprogram/lifecycle/shared/control"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/modelreq"
	"github.com/openprogram/lifecycle/shared/policystore"
	"github.com/openprogram/lifecycle/shared/recovery"
	"github.com/openprogram/lifecycle/shared/store"
)

// fakeClock is the lifecycle's clock in these tests: real time plus an
// offset the test moves forward.
type fakeClock struct{ offset atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *fakeClock) advance(d time.Duration) { c.offset.Add(int64(d)) }
func (c *fakeClock) clock() actionflow.Clock { return c.now }

// blockingExecutor runs a call whose arguments say "block" until released
// (an action in flight), answers unknown for one that says "lost", and
// succeeds at once otherwise.
type blockingExecutor struct {
	once    sync.Once
	started chan struct{}
	release chan struct{}
}

func newBlocking() *blockingExecutor {
	return &blockingExecutor{started: make(chan struct{}), release: make(chan struct{})}
}

func (b *blockingExecutor) Execute(ctx context.Context, t actionflow.Task) (actionflow.ToolResult, error) {
	if strings.Contains(string(t.Arguments), "lost") {
		return actionflow.ToolResult{Outcome: lifecycle.OutcomeUnknown, ErrorCode: "connection_reset"}, nil
	}
	if !strings.Contains(string(t.Arguments), "block") {
		return actionflow.ToolResult{Outcome: lifecycle.OutcomeSucceeded, Output: "done"}, nil
	}
	b.once.Do(func() { close(b.started) })
	select {
	case <-b.release:
		return actionflow.ToolResult{Outcome: lifecycle.OutcomeSucceeded, Output: "done"}, nil
	case <-ctx.Done():
		return actionflow.ToolResult{}, ctx.Err()
	}
}

const idleTimeout = time.Hour

var sweeper = actionflow.Principal{Subject: "alice", Role: "human", Session: "ses_e2e", Origin: "test"}

// idleStack is the embedded stack on the fake clock, with no periodic
// sweep (the test sweeps), and the session's policy idle timeout set.
func idleStack(t *testing.T, clk *fakeClock, block *blockingExecutor, idleSeconds int64) *embedded.Stack {
	t.Helper()
	s := start(t, t.TempDir(), t.TempDir(), &countingExecutor{}, func(c *embedded.Config) {
		c.Clock, c.SweepInterval, c.NoHostWorker = clk.clock(), -1, true
		c.Routes["mutate"] = "blocking"
		c.Executors["blocking"] = block
	})
	t.Cleanup(func() { s.Close(context.Background()) })
	if _, err := policystore.New(s.Store, nil).Put(context.Background(), "ses_e2e", 0, json.RawMessage(`{}`),
		policystore.Settings{IdleTimeoutSeconds: &idleSeconds}, sweeper); err != nil {
		t.Fatal(err)
	}
	return s
}

func sweep(t *testing.T, s *embedded.Stack) recovery.Report {
	t.Helper()
	rep, err := s.Recovery.Sweep(context.Background())
	if err != nil {
		t.Fatalf("sweep: %v (%+v)", err, rep)
	}
	return rep
}

func execution(t *testing.T, s *embedded.Stack, id ids.ExecutionID) actionflow.Execution {
	t.Helper()
	e, err := s.Service.GetExecution(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func abandoned(e actionflow.Execution) bool {
	return e.Status == actionflow.ExecFailed && e.End != nil && e.End.Reason == recovery.ReasonAbandoned && e.End.By == "system"
}

// TestIdleTimeoutEndsAbandonedExecutions (issue 12): a running execution
// whose client vanished is ended failed with reason abandoned by the
// recovery sweeper once it has been idle for its session policy's idle
// timeout, through the End path (unstarted actions closed, the
// execution.ended event, Activity History), but never while something
// waits on someone else (an action in flight, a pending approval, a
// control not yet applied), never before the timeout, never when the
// policy leaves it off, and never over a Cancel.
func TestIdleTimeoutEndsAbandonedExecutions(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		idle int64 // the session policy's idle_timeout_seconds
		// setup submits and returns the execution; it may leave work open
		setup func(t *testing.T, s *embedded.Stack, clk *fakeClock, b *blockingExecutor) ids.ExecutionID
		// after runs once the clock passed the timeout, before the sweep
		// (nil: nothing)
		after     func(t *testing.T, s *embedded.Stack, clk *fakeClock, b *blockingExecutor, exec ids.ExecutionID)
		advance   time.Duration
		abandoned bool
		status    actionflow.ExecutionStatus
	}{
		{
			name: "idle past the timeout: failed, abandoned", idle: 3600, advance: idleTimeout + time.Minute, abandoned: true,
			setup: finishedCall,
		},
		{
			name: "just under the timeout: still running", idle: 3600, advance: idleTimeout - time.Minute, status: actionflow.ExecRunning,
			setup: finishedCall,
		},
		{
			name: "policy off (0): never", idle: 0, advance: 1000 * time.Hour, status: actionflow.ExecRunning,
			setup: finishedCall,
		},
		{
			name: "an action in flight is not idleness", idle: 3600, advance: 3 * idleTimeout, status: actionflow.ExecRunning,
			setup: func(t *testing.T, s *embedded.Stack, clk *fakeClock, b *blockingExecutor) ids.ExecutionID {
				a := submit(t, s, "mutate", `{"block":true}`)
				<-b.started
				return a.ExecutionID
			},
		},
		{
			name: "a pending approval is a person's wait, not the client's", idle: 3600, advance: 3 * idleTimeout, status: actionflow.ExecRunning,
			setup: func(t *testing.T, s *embedded.Stack, clk *fakeClock, b *blockingExecutor) ids.ExecutionID {
				a := submit(t, s, "Write", `{"file_path":"notes/a.txt","content":"x"}`)
				pending(t, s, a.ActionID)
				return a.ExecutionID
			},
		},
		{
			name: "an unknown outcome waits for a person's reconciliation", idle: 3600, advance: 3 * idleTimeout, status: actionflow.ExecRunning,
			setup: func(t *testing.T, s *embedded.Stack, clk *fakeClock, b *blockingExecutor) ids.ExecutionID {
				a := submit(t, s, "mutate", `{"lost":true}`)
				if got := waitFor(t, s, a.ActionID, terminal); got.States.Outcome != lifecycle.OutcomeUnknown {
					t.Fatalf("outcome %s", got.States.Outcome)
				}
				return a.ExecutionID
			},
		},
		{
			name: "the timeout runs from the last result, not from the start", idle: 3600, advance: idleTimeout - time.Minute, status: actionflow.ExecRunning,
			setup: func(t *testing.T, s *embedded.Stack, clk *fakeClock, b *blockingExecutor) ids.ExecutionID {
				first := submit(t, s, "mutate", `{}`)
				waitFor(t, s, first.ActionID, terminal)
				clk.advance(idleTimeout - time.Minute)
				next, _, err := s.Service.Submit(ctx, actionflow.SubmitRequest{SessionID: "ses_e2e", ExecutionID: first.ExecutionID,
					ToolCallID: "call_next", Tool: "mutate", Arguments: json.RawMessage(`{"n":2}`), Interactive: true,
					Principal: actionflow.Principal{Subject: "agent", Role: "agent"}})
				if err != nil {
					t.Fatal(err)
				}
				waitFor(t, s, next.ActionID, terminal)
				return first.ExecutionID
			},
		},
		{
			name: "a model request the agent started and has not completed is the agent at work", idle: 3600, advance: 3 * idleTimeout, status: actionflow.ExecRunning,
			setup: func(t *testing.T, s *embedded.Stack, clk *fakeClock, b *blockingExecutor) ids.ExecutionID {
				exec := finishedCall(t, s, clk, b)
				if _, _, err := modelreq.ForFlow(s.Service).Report(ctx, execution(t, s, exec), modelreq.StartReport{RequestID: "req_open", Provider: "openai", Model: "gpt-test"}); err != nil {
					t.Fatal(err)
				}
				return exec
			},
		},
		{
			name: "the timeout runs from the last model request, not from the last result", idle: 3600, advance: idleTimeout - time.Minute, status: actionflow.ExecRunning,
			setup: func(t *testing.T, s *embedded.Stack, clk *fakeClock, b *blockingExecutor) ids.ExecutionID {
				exec := finishedCall(t, s, clk, b)
				clk.advance(idleTimeout - time.Minute)
				models := modelreq.ForFlow(s.Service)
				e := execution(t, s, exec)
				if _, _, err := models.Report(ctx, e, modelreq.StartReport{RequestID: "req_done", Provider: "openai", Model: "gpt-test"}); err != nil {
					t.Fatal(err)
				}
				if _, err := models.Finish(ctx, e, "req_done", modelreq.Completion{Status: modelreq.Completed}); err != nil {
					t.Fatal(err)
				}
				return exec
			},
		},
		{
			name: "a paused execution waits for a person", idle: 3600, advance: 3 * idleTimeout, status: actionflow.ExecPaused,
			setup: func(t *testing.T, s *embedded.Stack, clk *fakeClock, b *blockingExecutor) ids.ExecutionID {
				exec := finishedCall(t, s, clk, b)
				e := execution(t, s, exec)
				if r, err := s.Control.Submit(ctx, exec, control.Command{ID: "pause_1", Type: control.Pause, ExpectedVersion: e.Version}, sweeper); err != nil || r.Status != control.StatusApplied {
					t.Fatalf("pause: %+v %v", r, err)
				}
				return exec
			},
		},
		{
			name: "a Cancel saved before the sweep wins", idle: 3600, advance: idleTimeout + time.Minute, status: actionflow.ExecCancelled,
			setup: finishedCall,
			after: func(t *testing.T, s *embedded.Stack, clk *fakeClock, b *blockingExecutor, exec ids.ExecutionID) {
				// Another activation holds the lease: the Cancel stays accepted
				// through the sweep, which must not end the execution under it.
				o, err := s.Control.Acquire(ctx, exec, ids.NewAttemptID())
				if err != nil {
					t.Fatal(err)
				}
				e := execution(t, s, exec)
				if r, err := s.Control.Submit(ctx, exec, control.Command{ID: "cancel_1", Type: control.Cancel, ExpectedVersion: e.Version}, sweeper); err != nil || r.Status != control.StatusAccepted {
					t.Fatalf("cancel: %+v %v", r, err)
				}
				sweep(t, s)
				if e := execution(t, s, exec); e.Status != actionflow.ExecRunning || e.End != nil {
					t.Fatalf("ended under a pending Cancel: %+v", e)
				}
				// A control waiting for its owner is not idleness: the sweep
				// does not even save an end beside it.
				cmds, err := s.Control.Commands(ctx, exec, sweeper)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range cmds {
					if c.Type == control.End {
						t.Fatalf("an idle end was saved beside a pending Cancel: %+v", c)
					}
				}
				s.Control.Release(ctx, o)
			},
		},
		{
			name: "an idle end still waiting for the owner loses to a Cancel sent after it", idle: 3600, advance: idleTimeout + time.Minute, status: actionflow.ExecCancelled,
			setup: finishedCall,
			after: func(t *testing.T, s *embedded.Stack, clk *fakeClock, b *blockingExecutor, exec ids.ExecutionID) {
				o, err := s.Control.Acquire(ctx, exec, ids.NewAttemptID())
				if err != nil {
					t.Fatal(err)
				}
				e := execution(t, s, exec)
				sweep(t, s) // saves the idle end; the lease holder has not applied it
				if r, err := s.Control.Command(ctx, exec, ids.CommandID("abandoned.v"+strconv.FormatInt(e.Version, 10)), sweeper); err != nil || r.Status != control.StatusAccepted {
					t.Fatalf("idle end: %+v %v", r, err)
				}
				if r, err := s.Control.Submit(ctx, exec, control.Command{ID: "cancel_1", Type: control.Cancel, ExpectedVersion: e.Version}, sweeper); err != nil || r.Status != control.StatusAccepted {
					t.Fatalf("cancel: %+v %v", r, err)
				}
				s.Control.Release(ctx, o)
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{}
			b := newBlocking()
			defer close(b.release)
			s := idleStack(t, clk, b, tc.idle)
			exec := tc.setup(t, s, clk, b)
			if e := execution(t, s, exec); e.IdleTimeoutSeconds != tc.idle || e.Status == actionflow.ExecFailed {
				t.Fatalf("execution as it started: %+v", e)
			}
			clk.advance(tc.advance)
			if tc.after != nil {
				tc.after(t, s, clk, b, exec)
			}
			sweep(t, s)
			sweep(t, s) // idempotent
			e := execution(t, s, exec)
			if got := abandoned(e); got != tc.abandoned {
				t.Fatalf("abandoned %v, want %v: %+v end %+v", got, tc.abandoned, e, e.End)
			}
			if !tc.abandoned {
				if e.Status != tc.status {
					t.Fatalf("status %s, want %s", e.Status, tc.status)
				}
				return
			}
			checkAbandoned(t, s, exec)
		})
	}
}

// finishedCall is an execution whose one call finished and whose client
// then said nothing more.
func finishedCall(t *testing.T, s *embedded.Stack, _ *fakeClock, _ *blockingExecutor) ids.ExecutionID {
	t.Helper()
	a := submit(t, s, "mutate", `{}`)
	waitFor(t, s, a.ActionID, terminal)
	return a.ExecutionID
}

// checkAbandoned: one execution.ended event naming the reason, a later
// call refused with execution_ended, and the branch in History, Failed.
func checkAbandoned(t *testing.T, s *embedded.Stack, exec ids.ExecutionID) {
	t.Helper()
	ctx := context.Background()
	evs, err := s.Service.ReadEvents(ctx, "ses_e2e", 0, store.MaxLimit)
	if err != nil {
		t.Fatal(err)
	}
	ended := 0
	for _, ev := range evs {
		if ev.Type == "execution.ended" && ev.ExecutionID == exec {
			ended++
		}
	}
	if ended != 1 {
		t.Fatalf("%d execution.ended events", ended)
	}
	late, _, err := s.Service.Submit(ctx, actionflow.SubmitRequest{SessionID: "ses_e2e", ExecutionID: exec, ToolCallID: "call_late",
		Tool: "mutate", Arguments: json.RawMessage(`{"late":true}`), Interactive: true, Principal: actionflow.Principal{Subject: "agent", Role: "agent"}})
	if err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, s, late.ActionID, terminal)
	if got.Decision == nil || got.Decision.Reason.Code != "execution_ended" || got.States.Outcome != lifecycle.OutcomeNotStarted {
		t.Fatalf("a call after the end: %+v", got.Decision)
	}
	recs, err := s.Service.ListSessionRecords(ctx, "ses_e2e")
	if err != nil {
		t.Fatal(err)
	}
	view := activity.Build(activity.FromRecords("ses_e2e", time.Now(), recs, nil))
	if view.Counts.History != 1 || len(view.History) != 1 || view.History[0].Status != activity.LabelFailed {
		t.Fatalf("activity: %+v", view.Counts)
	}
}
