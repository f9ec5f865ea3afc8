//go:build faultinject

package recovery_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow/flowtest"
	"github.com/openprogram/lifecycle/shared/faults"
	"github.com/openprogram/lifecycle/shared/ids"
)

// isCrash: an injected fault stopped a handler (the process "died").
func isCrash(err error) bool {
	return errors.As(err, new(*faults.CrashError)) || errors.Is(err, flowtest.ErrCrashed)
}

// restart kills the current process and starts a new one over the same
// store (a new engine, new services), running start-up recovery. A crash
// during start-up recovery restarts again.
func (f *fixture) restart(t *testing.T, mode flowtest.CrashMode) {
	t.Helper()
	for i := 0; ; i++ {
		if i > 50 {
			t.Fatal("start-up recovery keeps crashing")
		}
		f.p.Crash()
		// The restart comes after every lease of the dead process lapsed
		// (dispatch leases last 15 minutes), so only durable evidence, not a
		// still-held lease, stands between a restart and a second dispatch.
		f.w.Clock.Advance(20 * time.Minute)
		f.w.Mode = mode
		f.start(t)
		_, err := f.sw.Startup(context.Background(), ids.NewAttemptID())
		if err == nil {
			_, err = f.sw.Sweep(context.Background()) // what Run does first
		}
		if err == nil {
			return
		}
		if !isCrash(err) {
			t.Fatalf("start-up recovery: %v", err)
		}
	}
}

// settle runs everything to its end with faults disarmed: machines, host
// work, approvals (approve), dead host waits timing out, sweeps.
func (f *fixture) settle(t *testing.T) {
	t.Helper()
	faults.Reset()
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		f.drain(t)
		if _, err := f.p.RunHostTasks(ctx); err != nil {
			t.Fatal(err)
		}
		for _, s := range f.sessions(t) {
			if _, err := f.p.DecidePending(ctx, s, "approve"); err != nil {
				t.Fatal(err)
			}
		}
		f.drain(t)
		f.timeOutDeadHosts(t)
		f.drain(t)
		if _, err := f.sw.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		f.drain(t)
		running, _ := f.p.Engine.RunningMachines(ctx)
		open, _, _ := f.p.Flow.OpenActions(ctx, "", 1000)
		if len(running) == 0 && len(open) == 0 {
			return
		}
	}
	running, _ := f.p.Engine.RunningMachines(ctx)
	open, _, _ := f.p.Flow.OpenActions(ctx, "", 1000)
	t.Fatalf("did not settle: %d machines running, %d actions open", len(running), len(open))
}

// timeOutDeadHosts fires the DispatchHost timeout of tasks whose host
// claimed them (start evidence) and died before posting a result: the
// hour-long wait ends, as it would.
func (f *fixture) timeOutDeadHosts(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	names, err := f.p.Engine.RunningMachines(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		st, _ := f.p.Engine.State(ctx, n)
		a, err := f.p.Flow.GetAction(ctx, n)
		if err != nil || st != "DispatchHost" || a.Start == nil || a.Result != nil {
			continue
		}
		if err := f.p.Engine.TimeOut(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *fixture) sessions(t *testing.T) []ids.SessionID {
	t.Helper()
	seen := map[ids.SessionID]bool{}
	var out []ids.SessionID
	after := ""
	for {
		page, next, err := f.p.Flow.OpenActions(context.Background(), after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range page {
			if !seen[a.SessionID] {
				seen[a.SessionID] = true
				out = append(out, a.SessionID)
			}
		}
		if next == "" {
			return out
		}
		after = next
	}
}
