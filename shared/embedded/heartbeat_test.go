package embedded_test

import (
	"context"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/hosttools"
	"github.com/openprogram/lifecycle/shared/hostworker"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/sfnlocal"
)

// The DispatchHost heartbeat on the embedded engine, with the real ASL file
// (HeartbeatSeconds 60) on a fake clock: a claimed task whose worker stops
// heartbeating is recorded unknown about a minute later and never handed
// out again; a task nobody claimed yet survives missed heartbeats (it is
// published again) and runs once a worker comes; a worker that heartbeats
// keeps its task for as long as the tool runs.
func TestDispatchHostHeartbeat(t *testing.T) {
	cases := []struct {
		name string
		// claim: a worker claims the task before the clock moves; beat: it
		// heartbeats every 40 s of the 4 minutes that pass; finish: a worker
		// posts the result afterwards (claiming first if nobody did).
		claim, beat, finish bool
		outcome             lifecycle.Outcome
		errorCode           string
	}{
		{name: "claimed, the worker died: unknown after the heartbeat timeout", claim: true,
			outcome: lifecycle.OutcomeUnknown, errorCode: "start_evidence_without_result"},
		{name: "published, nobody claimed for minutes: still runs once a worker comes", finish: true,
			outcome: lifecycle.OutcomeSucceeded},
		{name: "claimed, the worker heartbeats for minutes: its result counts", claim: true, beat: true, finish: true,
			outcome: lifecycle.OutcomeSucceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			clock := sfnlocal.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			s := startWithPolicy(t, t.TempDir(), t.TempDir(), `{"version":"v1","allow":["Bash(echo *)"]}`, func(c *embedded.Config) {
				c.EngineClock, c.Clock, c.SweepInterval = clock, clock.Now, -1
			})
			defer s.Close(ctx)
			a := submit(t, s, "Bash", `{"command":"echo hi"}`)
			published := func() bool {
				tasks, err := s.Service.HostTasks(ctx, "", 100)
				return err == nil && len(tasks) == 1 && tasks[0].ActionID == a.ActionID
			}
			poll(t, clock, 0, published)
			var task actionflow.Task
			attempt := ids.NewAttemptID()
			// A worker's claim: a listing may still show a task whose wait
			// just ended (wait_ended); the worker tries again at its next
			// listing, once the task is published again.
			claim := func() {
				var err error
				poll(t, clock, time.Second, func() bool {
					task, err = s.Service.HostStart(ctx, a.ActionID, attempt)
					return err == nil
				})
			}
			if tc.claim {
				claim()
			}
			for elapsed := time.Duration(0); elapsed < 4*time.Minute; elapsed += 40 * time.Second {
				advance(clock, 40*time.Second)
				if tc.beat {
					if err := s.Service.HostHeartbeat(ctx, a.ActionID, attempt, task.Fence); err != nil {
						t.Fatalf("heartbeat after %s: %v", elapsed+40*time.Second, err)
					}
				}
				// Let a timed-out wait go through its retry delay and publish.
				poll(t, clock, time.Second, func() bool { return published() || terminalNow(s, a.ActionID) || tc.beat })
			}
			if tc.finish {
				if !tc.claim {
					if !published() {
						t.Fatal("the unclaimed task is no longer offered to workers")
					}
					claim()
				}
				if err := s.Service.HostResult(ctx, a.ActionID, attempt, task.Fence, actionflow.ToolResult{Outcome: lifecycle.OutcomeSucceeded, Output: "hi"}); err != nil {
					t.Fatalf("result: %v", err)
				}
			}
			poll(t, clock, time.Second, func() bool { return terminalNow(s, a.ActionID) })
			got, _ := s.Service.GetAction(ctx, a.ActionID)
			rc, err := s.Service.GetReceipt(ctx, a.ActionID)
			if err != nil || got.States.Outcome != tc.outcome || rc.ErrorCode != tc.errorCode {
				t.Fatalf("states %+v, receipt %s/%s (%v); want %s/%s", got.States, rc.Outcome, rc.ErrorCode, err, tc.outcome, tc.errorCode)
			}
			if published() {
				t.Fatal("a recorded action is still offered to workers")
			}
			if _, err := s.Service.HostStart(ctx, a.ActionID, ids.NewAttemptID()); err == nil {
				t.Fatal("a second claim was accepted")
			}
		})
	}
}

func terminalNow(s *embedded.Stack, id ids.ActionID) bool {
	a, err := s.Service.GetAction(context.Background(), id)
	return err == nil && a.States.Terminal()
}

// poll waits (real time, generous) for cond, moving the fake clock by step
// every few polls so retry delays elapse.
func poll(t *testing.T, clock *sfnlocal.FakeClock, step time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; !cond(); i++ {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		if step > 0 && i%10 == 9 {
			clock.Advance(step)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// advance moves the fake clock in 5 s steps, each time until the engine
// handled what fell due (its next timer lies in the future again), so a
// timeout, its retry delay and the new publish all happen within d.
func advance(clock *sfnlocal.FakeClock, d time.Duration) {
	for moved := time.Duration(0); moved < d; moved += 5 * time.Second {
		clock.Advance(5 * time.Second)
		start := time.Now()
		for time.Since(start) < 5*time.Second {
			next, ok := clock.NextDue()
			if (ok && next.After(clock.Now())) || (!ok && time.Since(start) > 100*time.Millisecond) {
				break // re-armed, or nothing left to arm (the execution ended)
			}
			time.Sleep(2 * time.Millisecond)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// The host worker heartbeats while its tool runs: minutes of engine time
// pass during one run (the fake clock races ahead of the tool), and the
// result still counts. Without the worker's heartbeat the wait lapses and
// the action ends unknown.
func TestHostWorkerHeartbeatsWhileTheToolRuns(t *testing.T) {
	ctx := context.Background()
	clock := sfnlocal.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	ws := t.TempDir()
	s := startWithPolicy(t, t.TempDir(), ws, `{"version":"v1","allow":["Bash(sleep *)"]}`, func(c *embedded.Config) {
		c.EngineClock, c.Clock, c.SweepInterval = clock, clock.Now, -1
	})
	defer s.Close(ctx)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	w := &hostworker.Worker{Host: hostworker.Direct{Service: s.Service}, Runner: hosttools.Runner{Workspace: ws},
		Poll: 50 * time.Millisecond, HeartbeatEvery: 10 * time.Millisecond}
	go func() {
		defer close(done)
		w.Run(wctx)
	}()
	defer func() { cancel(); <-done }()
	a := submit(t, s, "Bash", `{"command":"sleep 2"}`)
	waitFor(t, s, a.ActionID, func(a actionflow.Action) bool { return a.States.Started })
	// 20 s of engine time every 100 ms while the tool sleeps 2 s: about
	// 400 s pass, far beyond HeartbeatSeconds (60), during one run.
	moved := time.Duration(0)
	for !terminalNow(s, a.ActionID) {
		time.Sleep(100 * time.Millisecond)
		clock.Advance(20 * time.Second)
		moved += 20 * time.Second
		if moved > time.Hour {
			t.Fatal("the action did not finish")
		}
	}
	got, _ := s.Service.GetAction(ctx, a.ActionID)
	if got.States.Outcome != lifecycle.OutcomeSucceeded || moved < 3*time.Minute {
		t.Fatalf("after %s of engine time: %+v", moved, got.States)
	}
}
