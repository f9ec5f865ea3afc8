package control_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/control"
	"github.com/openprogram/lifecycle/shared/ids"
)

// TestCancelWinsTheRace (issue 11, point 4): 32 commands sent at once at
// the same expected_version, cancels among pauses, continues, steps and
// steers, through the real command service and store. Whatever wins the
// version, every Cancel is applied (never refused as stale, never left
// accepted) and the execution ends cancelled; the other commands are
// applied, rejected at application, or refused with 409-class errors
// (stale version, control unavailable), never anything else.
func TestCancelWinsTheRace(t *testing.T) {
	others := []struct {
		typ     control.Control
		payload string
	}{{control.Pause, ""}, {control.Continue, ""}, {control.Step, `{"steps":2}`}, {control.Steer, `{"instructions":"go left"}`}}
	cases := []struct {
		name    string
		from    actionflow.ExecutionStatus
		cancels int
	}{
		{"running, one cancel among 31", actionflow.ExecRunning, 1},
		{"paused, one cancel among 31", actionflow.ExecPaused, 1},
		{"running, 8 cancels among 24", actionflow.ExecRunning, 8},
		{"paused, 8 cancels among 24", actionflow.ExecPaused, 8},
	}
	const ways, rounds = 32, 4
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			for round := 0; round < rounds; round++ {
				id := ids.ExecutionID(fmt.Sprintf("exe_%d", round))
				e := f.execution(t, id, "agent_chat", tc.from)
				start := make(chan struct{})
				type result struct {
					c   control.Command
					rec control.Record
					err error
				}
				results := make([]result, ways)
				var wg sync.WaitGroup
				for i := 0; i < ways; i++ {
					c := cmd(fmt.Sprintf("cmd_%d", i), control.Cancel, e.Version, "")
					// Spread the cancels over the batch: first, middle, last.
					if i*tc.cancels%ways >= tc.cancels {
						o := others[i%len(others)]
						c = cmd(fmt.Sprintf("cmd_%d", i), o.typ, e.Version, o.payload)
					}
					wg.Add(1)
					go func(i int, c control.Command) {
						defer wg.Done()
						<-start
						rec, err := f.svc.Submit(ctx, id, c, human)
						results[i] = result{c, rec, err}
					}(i, c)
				}
				close(start)
				wg.Wait()
				n := 0
				for _, r := range results {
					if r.c.Type == control.Cancel {
						n++
						if r.err != nil || (r.rec.Status != control.StatusApplied && r.rec.Status != control.StatusAccepted) {
							t.Fatalf("round %d: cancel %s: %+v %v", round, r.c.ID, r.rec, r.err)
						}
						// Saved is not enough: it takes effect (accepted only
						// while an owner that is about to apply it holds the lease).
						applied(t, f, id, r.c.ID)
						continue
					}
					switch {
					case r.err == nil: // applied, rejected at application, or saved for the owner
					case errors.As(r.err, new(*control.StaleVersionError)), errors.As(r.err, new(*control.UnsupportedError)):
					default:
						t.Fatalf("round %d: %s %s: %+v %v", round, r.c.Type, r.c.ID, r.rec, r.err)
					}
				}
				if n != tc.cancels {
					t.Fatalf("sent %d cancels, want %d", n, tc.cancels)
				}
				if got := f.get(t, id); got.Status != actionflow.ExecCancelled {
					t.Fatalf("round %d: the execution ended %s", round, got.Status)
				}
			}
		})
	}
}

// applied waits (generously) for a saved command to be applied.
func applied(t *testing.T, f fixture, exec ids.ExecutionID, id ids.CommandID) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := f.svc.Command(context.Background(), exec, id, human)
		if err == nil && r.Status == control.StatusApplied {
			return
		}
		if err != nil || r.Status == control.StatusRejected || time.Now().After(deadline) {
			t.Fatalf("command %s: %+v %v", id, r, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCancelAtAStaleVersion: a Cancel made against a version another
// command moved is applied; a Pause made against it is refused as stale;
// a Cancel of an execution already cancelled is applied (already in
// effect), not refused.
func TestCancelAtAStaleVersion(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	e := f.execution(t, "exe_1", "agent_chat", actionflow.ExecRunning)
	if r, err := f.svc.Submit(ctx, "exe_1", cmd("steer", control.Steer, e.Version, `{"instructions":"x"}`), human); err != nil || r.Status != control.StatusApplied {
		t.Fatalf("steer: %+v %v", r, err)
	}
	if _, err := f.svc.Submit(ctx, "exe_1", cmd("pause", control.Pause, e.Version, ""), human); !errors.As(err, new(*control.StaleVersionError)) {
		t.Fatalf("stale pause: %v", err)
	}
	r, err := f.svc.Submit(ctx, "exe_1", cmd("cancel", control.Cancel, e.Version, ""), human)
	if err != nil || r.Status != control.StatusApplied {
		t.Fatalf("stale cancel: %+v %v", r, err)
	}
	again, err := f.svc.Submit(ctx, "exe_1", cmd("cancel2", control.Cancel, e.Version, ""), human)
	if err != nil || again.Status != control.StatusApplied || again.ResultVersion != f.get(t, "exe_1").Version {
		t.Fatalf("cancel of a cancelled execution: %+v %v", again, err)
	}
	if got := f.get(t, "exe_1"); got.Status != actionflow.ExecCancelled {
		t.Fatalf("status %s", got.Status)
	}
}
