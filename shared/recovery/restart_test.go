package recovery_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/actionflow/flowtest"
	"github.com/openprogram/lifecycle/shared/control"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/recovery"
	"github.com/openprogram/lifecycle/shared/store"
)

func window(w recovery.Window) func(*recovery.Config) {
	return func(c *recovery.Config) { c.Window = w }
}

// runningExecution makes an execution with one completed action (its last
// durable activity is now).
func (f *fixture) runningExecution(t *testing.T) actionflow.Execution {
	t.Helper()
	a := f.submit(t, flowtest.ToolWrite)
	f.drain(t)
	e, err := f.p.Flow.GetExecution(context.Background(), a.ExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (f *fixture) exec(t *testing.T, id ids.ExecutionID) actionflow.Execution {
	t.Helper()
	e, err := f.p.Flow.GetExecution(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestRestartWindow(t *testing.T) {
	cases := []struct {
		name     string
		window   recovery.Window
		shutdown bool // orderly shutdown; otherwise abandoned (crash)
		gap      time.Duration
		want     string
	}{
		{"unlimited after a crash", recovery.Unlimited(), false, 1000 * time.Hour, recovery.Resumed},
		{"unlimited after a shutdown", recovery.Unlimited(), true, 1000 * time.Hour, recovery.Resumed},
		{"disabled after a shutdown", recovery.Within(0), true, time.Second, recovery.Expired},
		{"disabled after a crash", recovery.Within(0), false, time.Second, recovery.Expired},
		{"2h, shutdown 1h ago", recovery.Within(2 * time.Hour), true, time.Hour, recovery.Resumed},
		{"2h, shutdown 3h ago", recovery.Within(2 * time.Hour), true, 3 * time.Hour, recovery.Expired},
		{"2h, crash 1h after the last activity", recovery.Within(2 * time.Hour), false, time.Hour, recovery.Resumed},
		{"2h, crash 3h after the last activity", recovery.Within(2 * time.Hour), false, 3 * time.Hour, recovery.Expired},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t, window(tc.window))
			e := f.runningExecution(t)
			ck, _ := f.p.Flow.GetCheckpoint(ctx, e.ExecutionID)
			if tc.shutdown {
				if _, err := f.sw.Shutdown(ctx, "att_a"); err != nil {
					t.Fatal(err)
				}
				if got := f.exec(t, e.ExecutionID); got.Status != actionflow.ExecPaused || got.PauseOwner != actionflow.PauseByRestart {
					t.Fatalf("after shutdown: %s %q", got.Status, got.PauseOwner)
				}
			}
			f.w.Clock.Advance(tc.gap)
			f.start(t, window(tc.window))
			if _, err := f.sw.Startup(ctx, "att_b"); err != nil {
				t.Fatal(err)
			}
			got := f.exec(t, e.ExecutionID)
			if got.Restart == nil || got.Restart.Outcome != tc.want {
				t.Fatalf("restart %+v", got.Restart)
			}
			if (tc.window == recovery.Unlimited()) != (got.Restart.Deadline == nil) {
				t.Fatalf("deadline %v with window %s", got.Restart.Deadline, tc.window)
			}
			switch tc.want {
			case recovery.Resumed:
				if got.Status != actionflow.ExecRunning {
					t.Fatalf("resumed but %s", got.Status)
				}
			case recovery.Expired:
				if got.Status != actionflow.ExecPaused || got.PauseOwner != actionflow.PauseByRestart || got.PauseReason != "restart_window_expired" {
					t.Fatalf("expired but %s %q %q", got.Status, got.PauseOwner, got.PauseReason)
				}
				// Expiry keeps the checkpoint for a manual Continue.
				if now, _ := f.p.Flow.GetCheckpoint(ctx, e.ExecutionID); now.Version != ck.Version || now.Recorded != ck.Recorded {
					t.Fatalf("checkpoint changed: %+v -> %+v", ck, now)
				}
				r, err := f.ctl.Submit(ctx, e.ExecutionID, control.Command{ID: "cmd_continue", Type: control.Continue, ExpectedVersion: got.Version}, flowtest.Human(session))
				if err != nil || r.Status != control.StatusApplied {
					t.Fatalf("manual continue: %+v %v", r, err)
				}
			}
		})
	}
}

func TestRestartingAgainDoesNotExtendTheWindow(t *testing.T) {
	for _, progress := range []bool{false, true} {
		name := "no progress in between: the first deadline stands"
		if progress {
			name = "progress in between: a new interruption"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			w := window(recovery.Within(2 * time.Hour))
			f := newFixture(t, w)
			e := f.runningExecution(t)
			if _, err := f.sw.Shutdown(ctx, "att_a"); err != nil {
				t.Fatal(err)
			}
			f.w.Clock.Advance(time.Hour)
			f.start(t, w)
			if _, err := f.sw.Startup(ctx, "att_b"); err != nil {
				t.Fatal(err)
			}
			if got := f.exec(t, e.ExecutionID); got.Restart.Outcome != recovery.Resumed {
				t.Fatalf("first restart: %+v", got.Restart)
			}
			// A command is durable activity, but not a new effect: it does not
			// start a new interruption window.
			cur := f.exec(t, e.ExecutionID)
			if r, err := f.ctl.Submit(ctx, e.ExecutionID, control.Command{ID: "cmd_steer", Type: control.Steer, ExpectedVersion: cur.Version,
				Payload: []byte(`{"instructions":"keep going"}`)}, flowtest.Human(session)); err != nil || r.Status != control.StatusApplied {
				t.Fatal(r, err)
			}
			if progress {
				if _, err := f.p.Submit(ctx, session, e.ExecutionID, flowtest.ToolWrite, `{"again":1}`); err != nil {
					t.Fatal(err)
				}
				f.drain(t)
			}
			// Crash (no shutdown), restart 1.5h later: 2.5h after the shutdown.
			f.w.Clock.Advance(90 * time.Minute)
			f.start(t, w)
			if _, err := f.sw.Startup(ctx, "att_c"); err != nil {
				t.Fatal(err)
			}
			got := f.exec(t, e.ExecutionID)
			want := recovery.Expired
			if progress {
				want = recovery.Resumed
			}
			if got.Restart.Outcome != want {
				t.Fatalf("second restart: %+v, want %s", got.Restart, want)
			}
		})
	}
}

func TestRepeatedStartupIsIdempotent(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	e := f.runningExecution(t)
	if _, err := f.sw.Startup(ctx, "att_b"); err != nil {
		t.Fatal(err)
	}
	first := f.exec(t, e.ExecutionID)
	events := checkEventLog(t, f.p.Flow, session)
	calls := f.w.Sync.Total()
	for i, attempt := range []ids.AttemptID{"att_b", "att_c", "att_d"} {
		f.start(t)
		rep, err := f.sw.Startup(ctx, attempt)
		if err != nil {
			t.Fatal(err)
		}
		got := f.exec(t, e.ExecutionID)
		if got.Version != first.Version {
			t.Fatalf("start-up %d rewrote the execution: %+v", i+2, rep)
		}
	}
	if n := checkEventLog(t, f.p.Flow, session); n != events {
		t.Fatalf("repeated start-ups appended %d events", n-events)
	}
	if f.w.Sync.Total() != calls {
		t.Fatal("a start-up dispatched")
	}
}

func TestOnlyARestartOwnedPauseResumes(t *testing.T) {
	cases := []struct {
		name    string
		opts    []func(*recovery.Config)
		setup   func(t *testing.T, f *fixture) ids.ExecutionID
		status  actionflow.ExecutionStatus
		outcome string
		blocked string
		then    func(t *testing.T, f *fixture, id ids.ExecutionID)
	}{
		{"a user pause stays", nil, func(t *testing.T, f *fixture) ids.ExecutionID {
			e := f.runningExecution(t)
			if _, err := f.ctl.Submit(context.Background(), e.ExecutionID, control.Command{ID: "p", Type: control.Pause, ExpectedVersion: e.Version}, flowtest.Human(session)); err != nil {
				t.Fatal(err)
			}
			return e.ExecutionID
		}, actionflow.ExecPaused, "", "", nil},
		{"a fork child stays paused", nil, func(t *testing.T, f *fixture) ids.ExecutionID {
			e := f.runningExecution(t)
			r, err := f.ctl.Submit(context.Background(), e.ExecutionID, control.Command{ID: "f", Type: control.Fork, ExpectedVersion: e.Version}, flowtest.Human(session))
			if err != nil {
				t.Fatal(err)
			}
			return r.Child
		}, actionflow.ExecPaused, "", "", nil},
		{"a cancellation is never continued", nil, func(t *testing.T, f *fixture) ids.ExecutionID {
			a := f.submit(t, flowtest.ToolHost)
			f.drain(t)
			if _, err := f.p.Flow.HostStart(context.Background(), a.ActionID, "att_host"); err != nil {
				t.Fatal(err)
			}
			e := f.exec(t, a.ExecutionID)
			if _, err := f.ctl.Submit(context.Background(), e.ExecutionID, control.Command{ID: "c", Type: control.Cancel, ExpectedVersion: e.Version}, flowtest.Human(session)); err != nil {
				t.Fatal(err)
			}
			return e.ExecutionID
		}, actionflow.ExecCancelling, "", "", nil},
		{"an unanswered approval blocks until answered", nil, func(t *testing.T, f *fixture) ids.ExecutionID {
			a := f.submit(t, flowtest.ToolAsk)
			f.drain(t)
			return a.ExecutionID
		}, actionflow.ExecPaused, recovery.Blocked, recovery.BlockedApproval, func(t *testing.T, f *fixture, id ids.ExecutionID) {
			// The answer is still accepted and runs the approved action; the
			// next sweep resumes the execution (within its window).
			if n, err := f.p.DecidePending(context.Background(), session, "approve"); err != nil || n != 1 {
				t.Fatal(n, err)
			}
			f.drain(t)
			if _, err := f.sw.Sweep(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := f.exec(t, id); got.Status != actionflow.ExecRunning || got.Restart.Outcome != recovery.Resumed || f.w.Sync.Total() != 1 {
				t.Fatalf("after the answer: %s %+v, calls %d", got.Status, got.Restart, f.w.Sync.Total())
			}
		}},
		{"an unresolved effect blocks", nil, func(t *testing.T, f *fixture) ids.ExecutionID {
			ctx := context.Background()
			a := f.submit(t, flowtest.ToolHost)
			f.drain(t)
			if _, err := f.p.Flow.HostStart(ctx, a.ActionID, "att_host"); err != nil {
				t.Fatal(err)
			}
			if err := f.p.Engine.TimeOut(ctx, a.ActionID); err != nil { // the host never answered
				t.Fatal(err)
			}
			f.drain(t)
			return a.ExecutionID
		}, actionflow.ExecPaused, recovery.Blocked, recovery.BlockedUnresolved, nil},
		{"an incompatible revision blocks", []func(*recovery.Config){func(c *recovery.Config) { c.Revision = "rev_new" }}, func(t *testing.T, f *fixture) ids.ExecutionID {
			e := f.runningExecution(t)
			e.ActiveRevision = "rev_old"
			if err := f.p.Flow.SaveExecution(context.Background(), &e, e.Version, 0); err != nil {
				t.Fatal(err)
			}
			return e.ExecutionID
		}, actionflow.ExecPaused, recovery.Blocked, recovery.BlockedIncompatible, nil},
		{"a compatible revision continues", []func(*recovery.Config){func(c *recovery.Config) {
			c.Revision, c.Compatible = "rev_new", func(r ids.RevisionID) bool { return r == "rev_old" }
		}}, func(t *testing.T, f *fixture) ids.ExecutionID {
			e := f.runningExecution(t)
			e.ActiveRevision = "rev_old"
			if err := f.p.Flow.SaveExecution(context.Background(), &e, e.Version, 0); err != nil {
				t.Fatal(err)
			}
			return e.ExecutionID
		}, actionflow.ExecRunning, recovery.Resumed, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t, tc.opts...)
			id := tc.setup(t, f)
			before := f.exec(t, id)
			f.start(t, tc.opts...)
			if _, err := f.sw.Startup(ctx, "att_b"); err != nil {
				t.Fatal(err)
			}
			got := f.exec(t, id)
			if got.Status != tc.status {
				t.Fatalf("status %s, want %s", got.Status, tc.status)
			}
			if tc.outcome == "" {
				if got.Version != before.Version {
					t.Fatalf("restart recovery touched it: %+v", got.Restart)
				}
			} else if got.Restart == nil || got.Restart.Outcome != tc.outcome || got.Restart.Blocked != tc.blocked {
				t.Fatalf("restart %+v, want %s/%s", got.Restart, tc.outcome, tc.blocked)
			}
			if tc.then != nil {
				tc.then(t, f, id)
			}
		})
	}
}

// TestShutdownRetriesARacingVersionThreeTimes: the orderly stop's pause
// retries a racing execution write at most three times within its attempt.
func TestShutdownRetriesARacingVersionThreeTimes(t *testing.T) {
	for _, races := range []int{3, 4} {
		t.Run(map[int]string{3: "three races: paused", 4: "four races: left running"}[races], func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t)
			e := f.runningExecution(t)
			n := 0
			f.faulty.Before = func(op string, it store.Item) {
				if op != "put" || !strings.Contains(it.SK, "CMD#shutdown.") || n >= races {
					return
				}
				n++
				cur := f.exec(t, e.ExecutionID)
				cur.LastActivity = f.w.Clock.Now()
				if err := f.p.Flow.SaveExecution(ctx, &cur, cur.Version, 0); err != nil {
					t.Error(err)
				}
			}
			reps, err := f.sw.Shutdown(ctx, "att_a")
			got := f.exec(t, e.ExecutionID)
			if races <= 3 {
				if err != nil || got.Status != actionflow.ExecPaused || got.PauseOwner != actionflow.PauseByRestart {
					t.Fatalf("%+v %v: %s", reps, err, got.Status)
				}
			} else if err == nil || got.Status != actionflow.ExecRunning {
				t.Fatalf("after %d races: %+v %v: %s", races, reps, err, got.Status)
			}
		})
	}
}
