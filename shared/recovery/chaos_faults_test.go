//go:build faultinject

package recovery_test

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/actionflow/flowtest"
	"github.com/openprogram/lifecycle/shared/faults"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store"
)

// TestChaos runs a few hundred actions of every kind (allowed, approved,
// declined, denied, classifier-blocked; sync and host executors) while
// workers are killed at random injected points and the stack restarts (a
// new engine and new services over the same store, under either crash
// semantics), then checks invariants over the whole store.
//
// Deterministic for a seed: CHAOS_SEED=<n> replays a run; the seed is
// logged, and printed again on failure.
func TestChaos(t *testing.T) {
	seed := chaosSeed(t)
	defer faults.Reset()
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	const (
		total     = 240
		crashRate = 0.04
	)
	ctx := context.Background()
	f := newFixture(t)
	// A process in catch mode survives its handlers' crashes (the state's
	// Catch routes them), so it lives longer; resume is picked more often,
	// and any process is also killed between operations now and then.
	mode := func() flowtest.CrashMode {
		if rng.IntN(5) < 3 {
			return flowtest.Resume
		}
		return flowtest.Catch
	}
	f.w.Mode = mode()
	f.start(t)
	injected := 0
	for _, p := range faults.Points {
		faults.Arm(p, func(context.Context) bool {
			if rng.Float64() < crashRate {
				injected++
				return true
			}
			return false
		})
	}

	sessions := []ids.SessionID{"ses_a", "ses_b", "ses_c", "ses_d"}
	execs := map[ids.SessionID][]ids.ExecutionID{}
	tools := []struct {
		tool   string
		weight int
	}{
		{flowtest.ToolWrite, 40}, {flowtest.ToolHost, 20}, {flowtest.ToolAsk, 12}, {flowtest.ToolAskHost, 6},
		{flowtest.ToolBlocked, 12}, {flowtest.ToolForbidden, 10},
	}
	pick := func() string {
		n := rng.IntN(100)
		for _, tl := range tools {
			if n < tl.weight {
				return tl.tool
			}
			n -= tl.weight
		}
		return flowtest.ToolWrite
	}
	var submitted []actionflow.Action
	crashes := 0
	for len(submitted) < total {
		var err error
		switch op := rng.IntN(10); {
		case op < 4:
			for range 1 + rng.IntN(4) {
				s := sessions[rng.IntN(len(sessions))]
				var exec ids.ExecutionID
				if es := execs[s]; len(es) > 0 && rng.IntN(10) < 7 {
					exec = es[rng.IntN(len(es))]
				}
				a, serr := f.p.Submit(ctx, s, exec, pick(), `{"n":`+strconv.Itoa(len(submitted))+`}`)
				if serr != nil {
					t.Fatalf("submit: %v", serr)
				}
				if exec == "" {
					execs[s] = append(execs[s], a.ExecutionID)
				}
				submitted = append(submitted, a)
			}
		case op < 6:
			err = f.p.Engine.Drain(ctx)
		case op < 7:
			_, err = f.p.RunHostTasks(ctx)
		case op < 8:
			decision := "approve"
			if rng.IntN(4) == 0 {
				decision = "decline"
			}
			_, err = f.p.DecidePending(ctx, sessions[rng.IntN(len(sessions))], decision)
		default:
			_, err = f.sw.Sweep(ctx)
		}
		if err != nil && !isCrash(err) {
			t.Fatalf("after %d actions: %v", len(submitted), err)
		}
		if err != nil || rng.IntN(100) < 3 {
			crashes++
			f.restart(t, mode())
		}
	}
	f.settle(t)
	t.Logf("%d actions, %d injected faults, %d process restarts, %d executor calls", len(submitted), injected, crashes, f.w.Sync.Total()+f.w.Host.Total())
	if injected < 20 || crashes < 5 {
		t.Fatalf("only %d faults and %d restarts: the run does not exercise recovery", injected, crashes)
	}

	checkInvariants(t, f.p.Flow, f.p.Store, submitted, f.w.Sync, f.w.Host, sessions)
}

// checkInvariants checks, over the whole store: every action's executor ran
// at most once; every action ends with a projected receipt consistent with
// the executors' own logs; refusal counters equal the distinct classifier
// refusals; no session's event sequence has gaps or duplicates; every
// receipt is folded into its checkpoint exactly once; nothing was marked
// completed by a repair.
func checkInvariants(t *testing.T, flow *actionflow.Service, st store.Store, submitted []actionflow.Action, syncExec, hostExec *flowtest.Executor, sessions []ids.SessionID) {
	t.Helper()
	ctx := context.Background()
	syncCalls, hostCalls := syncExec.Calls(), hostExec.Calls()
	logged := map[ids.ActionID]actionflow.ToolResult{}
	for _, c := range append(syncExec.Log(), hostExec.Log()...) {
		logged[c.ActionID] = c.Result
	}
	blocked := map[ids.SessionID]int64{}
	perExec := map[ids.ExecutionID]int64{}
	outcomes := map[lifecycle.Outcome]int{}
	for _, sub := range submitted {
		id := sub.ActionID
		calls := syncCalls[id] + hostCalls[id]
		// Every allowed action's executor ran at most once.
		if calls > 1 {
			t.Errorf("%s (%s): executor ran %d times", id, sub.Tool, calls)
		}
		a, err := flow.GetAction(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := flow.GetReceipt(ctx, id)
		// Every action ends with a receipt consistent with the executor's log.
		if err != nil || !a.States.Terminal() || a.States.Outcome != rc.Outcome {
			t.Errorf("%s (%s): receipt %+v (%v), states %+v", id, sub.Tool, rc.Outcome, err, a.States)
			continue
		}
		outcomes[rc.Outcome]++
		switch {
		case calls == 1 && rc.Outcome == lifecycle.OutcomeSucceeded:
			if rc.Output != logged[id].Output {
				t.Errorf("%s: receipt output %q, executor said %q", id, rc.Output, logged[id].Output)
			}
		case calls == 1 && rc.Outcome == lifecycle.OutcomeUnknown:
		case calls == 0 && rc.Outcome == lifecycle.OutcomeNotStarted:
			if rc.Start != nil {
				t.Errorf("%s: not_started with start evidence", id)
			}
		case calls == 0 && rc.Outcome == lifecycle.OutcomeUnknown:
			if rc.Start == nil {
				t.Errorf("%s: unknown without start evidence", id)
			}
		default:
			t.Errorf("%s (%s): outcome %s with %d executor calls", id, sub.Tool, rc.Outcome, calls)
		}
		if (sub.Tool == flowtest.ToolBlocked || sub.Tool == flowtest.ToolForbidden) && (calls != 0 || rc.Outcome != lifecycle.OutcomeNotStarted) {
			t.Errorf("%s: a denied action ran (%d calls, %s)", id, calls, rc.Outcome)
		}
		if rc.Outcome == lifecycle.OutcomeUnknown && rc.Reconciliation == "" {
			t.Errorf("%s: unknown without reconciliation", id)
		}
		// A classifier refusal (not an execution-control or repeat refusal,
		// which never reach the classifier) is what the counter counts.
		if rc.ErrorCode == "permission_denied:risk_blocked" {
			blocked[sub.SessionID]++
		}
		perExec[sub.ExecutionID]++
	}
	// Counters equal the number of distinct refusals.
	for _, s := range sessions {
		c, err := st.GetCounter(ctx, store.CounterKey{SessionID: string(s), Epoch: flowtest.PolicyVersion})
		if err != nil {
			t.Fatal(err)
		}
		if c.Total != blocked[s] {
			t.Errorf("%s: refusal counter %d, distinct refusals %d", s, c.Total, blocked[s])
		}
		// No event sequence has gaps or duplicates.
		checkEventLog(t, flow, s)
	}
	// Every receipt is folded into its checkpoint exactly once; no
	// execution was marked completed by a repair.
	for exec, n := range perExec {
		ck, _ := flow.GetCheckpoint(ctx, exec)
		if ck.Recorded != n {
			t.Errorf("%s: checkpoint folded %d receipts for %d actions", exec, ck.Recorded, n)
		}
		if e, _ := flow.GetExecution(ctx, exec); e.Status == actionflow.ExecCompleted {
			t.Errorf("%s: marked completed", exec)
		}
	}
	t.Logf("outcomes: %v", outcomes)
}

// chaosSeed is CHAOS_SEED or the default; it is logged, and logged again
// when the test fails.
func chaosSeed(t *testing.T) uint64 {
	seed := uint64(20261130)
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CHAOS_SEED=%q: %v", s, err)
		}
		seed = n
	}
	t.Logf("chaos seed %d", seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("failed with CHAOS_SEED=%d", seed)
		}
	})
	return seed
}
