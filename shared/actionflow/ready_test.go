package actionflow_test

import (
	"context"
	"errors"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// readyExecutor is an executor that must reach its tool before a call.
type readyExecutor struct {
	countingExecutor
	notReady error
	asked    int
}

func (e *readyExecutor) Ready(ctx context.Context, tool string) error {
	e.asked++
	return e.notReady
}

// TestDispatchAsksReadinessBeforeStartEvidence: an executor that cannot
// reach its tool fails dispatch NotStarted with no start evidence, so the
// retried dispatch may call it and, after the retries, the receipt is
// not_started; a ready one runs once.
func TestDispatchAsksReadinessBeforeStartEvidence(t *testing.T) {
	for _, c := range []struct {
		name     string
		notReady error
		outcome  lifecycle.Outcome
		calls    int64
	}{
		{"not ready is not_started", errors.New("server not reachable"), lifecycle.OutcomeNotStarted, 0},
		{"ready runs", nil, lifecycle.OutcomeSucceeded, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			ex := &readyExecutor{countingExecutor: countingExecutor{result: actionflow.ToolResult{Outcome: lifecycle.OutcomeSucceeded, Output: "done"}},
				notReady: c.notReady}
			f := newFixture(t, func(cfg *actionflow.Config) { cfg.Executors = map[string]actionflow.Executor{"test": ex} })
			ctx := context.Background()
			a := f.submit(t, "noop", `{}`)
			if _, err := f.svc.Authorize(ctx, in(a)); err != nil {
				t.Fatal(err)
			}
			si := in(a)
			si.Mode = "sync"
			res, err := f.svc.Dispatch(ctx, si)
			var ns *actionflow.NotStartedError
			if c.notReady != nil {
				if !errors.As(err, &ns) || ns.Code != "executor_not_ready" {
					t.Fatalf("dispatch: %+v %v, want NotStartedError executor_not_ready", res, err)
				}
				si.Error = &actionflow.CaughtError{Error: "NotStartedError", Cause: err.Error()}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				si.Result = &res
			}
			got := f.finish(t, si)
			if got.States.Outcome != c.outcome || got.States.Started != (c.notReady == nil) {
				t.Fatalf("states %+v, want outcome %s", got.States, c.outcome)
			}
			if n := ex.calls.Load(); n != c.calls || ex.asked != 1 {
				t.Fatalf("executor called %d times (want %d), asked ready %d times", n, c.calls, ex.asked)
			}
		})
	}
}
