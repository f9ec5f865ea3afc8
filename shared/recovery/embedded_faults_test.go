//go:build faultinject

package recovery_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/actionflow/flowtest"
	"github.com/openprogram/lifecycle/shared/control"
	embeddedstack "github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/executor"
	"github.com/openprogram/lifecycle/shared/faults"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/recovery"
	"github.com/openprogram/lifecycle/shared/sfnclient"
	"github.com/openprogram/lifecycle/shared/sfnlocal"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

// embedded drives shared/embedded's Stack over one store file: the SQLite
// store, the real engine (sfnlocal) running the ASL file, the lifecycle
// handlers, the command service and the sweeper, with the test's fake
// clock, the host work done by the test (its own log) and the periodic
// sweep left to the test. A process is killed when an injected fault fires
// in any function the engine invokes: the invocation never returns, the
// stack is stopped hard (its in-flight invocations abandoned, no orderly
// pause) and a new stack starts over the same file.
type embedded struct {
	t     *testing.T
	dir   string
	clock *sfnlocal.FakeClock
	sync  *flowtest.Executor
	host  *flowtest.Executor
	log   *slog.Logger

	db    *sqlitestore.Store
	stack *embeddedstack.Stack
	sfn   *sfnclient.Client
	flow  *actionflow.Service
	ctl   *control.Service
	sw    *recovery.Sweeper

	crashMu sync.Mutex
	crashed chan struct{}
	died    bool
}

func newEmbedded(t *testing.T) *embedded {
	e := &embedded{t: t, dir: t.TempDir(),
		clock: sfnlocal.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)),
		sync:  &flowtest.Executor{}, host: &flowtest.Executor{},
		log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	e.start()
	t.Cleanup(e.kill)
	return e
}

// crash marks this process dead; the first caller closes the channel.
func (e *embedded) crash() {
	e.crashMu.Lock()
	defer e.crashMu.Unlock()
	if !e.died {
		e.died = true
		close(e.crashed)
	}
}

func (e *embedded) dead() bool {
	e.crashMu.Lock()
	defer e.crashMu.Unlock()
	return e.died
}

// crashing makes an invocation that hit an injected fault hang until the
// engine is stopped (its result is then abandoned), exactly what a killed
// process leaves behind.
func (e *embedded) crashing(name string, f sfnlocal.LambdaFunc) sfnlocal.LambdaFunc {
	return func(ctx context.Context, payload []byte) ([]byte, error) {
		out, err := f(ctx, payload)
		if errors.As(err, new(*faults.CrashError)) {
			e.crash()
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return out, err
	}
}

func (e *embedded) start() {
	t := e.t
	t.Helper()
	e.crashMu.Lock()
	e.crashed, e.died = make(chan struct{}), false
	e.crashMu.Unlock()
	db, err := sqlitestore.Open(filepath.Join(e.dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	e.db = db
	st, err := embeddedstack.Start(context.Background(), embeddedstack.Config{
		StateDir: e.dir, Store: db, NoHostWorker: true,
		Decider: flowtest.Decider{Store: db, ByTool: map[string]flowtest.Policy{flowtest.ToolWrite: flowtest.Allow, flowtest.ToolAsk: flowtest.Ask,
			flowtest.ToolForbidden: flowtest.Deny, flowtest.ToolBlocked: flowtest.Block, flowtest.ToolHost: flowtest.Allow, flowtest.ToolAskHost: flowtest.Ask}},
		Routes: executor.Routes{flowtest.ToolWrite: "sync", flowtest.ToolAsk: "sync", flowtest.ToolForbidden: "sync", flowtest.ToolBlocked: "sync",
			flowtest.ToolHost: actionflow.ExecutorHost, flowtest.ToolAskHost: actionflow.ExecutorHost},
		Executors:     map[string]actionflow.Executor{"sync": e.sync},
		EngineClock:   e.clock,
		Clock:         e.clock.Now,
		SweepInterval: -1, // the test sweeps
		WrapFunction:  e.crashing,
		Logger:        e.log,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.stack, e.flow, e.ctl, e.sw, e.sfn = st, st.Service, st.Control, st.Recovery, st.SFNClient
	_, err = e.sw.Sweep(context.Background())
	e.do(err)
}

// kill stops the process without any orderly shutdown: in-flight
// invocations are abandoned, nothing is paused, leases are left to lapse.
func (e *embedded) kill() {
	if e.stack == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e.stack.Close(ctx)
	e.db.Close()
	e.stack = nil
}

// restart kills the process and starts a new one after every lease of the
// old one lapsed; a crash during start-up recovery restarts again.
func (e *embedded) restart() {
	for i := 0; ; i++ {
		if i > 20 {
			e.t.Fatal("start-up keeps crashing")
		}
		e.kill()
		e.clock.Advance(20 * time.Minute)
		e.start()
		if !e.dead() {
			return
		}
	}
}

// settled: every open action is either at a wait that needs someone
// (approval pending, host task published or claimed) or its machine ended.
func (e *embedded) settled(ctx context.Context) (bool, error) {
	open, _, err := e.flow.OpenActions(ctx, "", 1000)
	if err != nil {
		return false, err
	}
	for _, a := range open {
		st, err := e.sfn.Status(ctx, a.ActionID)
		if err != nil {
			return false, err
		}
		if st != "RUNNING" {
			continue
		}
		if _, err := e.flow.GetReceipt(ctx, a.ActionID); err == nil {
			return false, nil // recording or projecting
		}
		if a.Host != nil && a.Result == nil {
			continue // a host's turn
		}
		if ap, err := e.flow.GetApproval(ctx, a.ActionID); err == nil && ap.Status == actionflow.ApprovalPending && a.States.Permission == "ask" {
			continue // a human's turn
		}
		return false, nil
	}
	return true, nil
}

// wait lets the engine run until everything settled, or the process died.
// It reports whether the process is alive.
func (e *embedded) wait() bool {
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for idle := 0; ; idle++ {
		if e.dead() {
			return false
		}
		ok, err := e.settled(ctx)
		if err != nil && !e.dead() {
			e.t.Fatal(err)
		}
		if ok {
			return true
		}
		if time.Now().After(deadline) {
			e.t.Fatal("the engine did not settle")
		}
		select {
		case <-e.crashed:
		case <-time.After(2 * time.Millisecond):
		}
		if idle%500 == 499 {
			e.clock.Advance(time.Minute) // a retry delay may be pending on the fake clock
		}
	}
}

// do runs a step of the test (host work, decisions, sweeps); an injected
// crash in it kills the process.
func (e *embedded) do(err error) {
	if err == nil {
		return
	}
	if !isCrash(err) {
		e.t.Fatal(err)
	}
	e.crash()
}

// finish runs everything to the end with faults disarmed (dead hosts time
// out after their hour; waits get approved) and checks that it settled.
func (e *embedded) finish() {
	faults.Reset()
	ctx := context.Background()
	for i := 0; i < 30; i++ {
		if e.dead() {
			e.restart()
		}
		e.wait()
		_, err := e.flow.PendingApprovals(ctx, session)
		if err != nil {
			e.t.Fatal(err)
		}
		e.runHosts()
		e.decideAll("approve")
		e.wait()
		if _, err := e.sw.Sweep(ctx); err != nil {
			e.t.Fatal(err)
		}
		e.wait()
		open, _, _ := e.flow.OpenActions(ctx, "", 1000)
		if len(open) == 0 {
			return
		}
		e.clock.Advance(61 * time.Minute) // dead hosts' waits time out
	}
	open, _, _ := e.flow.OpenActions(ctx, "", 1000)
	e.t.Fatalf("%d actions still open", len(open))
}

func (e *embedded) runHosts() {
	ctx := context.Background()
	tasks, err := e.flow.HostTasks(ctx, "", 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, a := range tasks {
		if e.dead() {
			return
		}
		attempt := ids.NewAttemptID()
		task, err := e.flow.HostStart(ctx, a.ActionID, attempt)
		if err != nil {
			if isCrash(err) {
				e.crash()
				return
			}
			continue
		}
		e.do(e.flow.HostResult(ctx, a.ActionID, attempt, task.Fence, e.host.Run(task.ActionID)))
	}
}

func (e *embedded) decideAll(decision string) {
	ctx := context.Background()
	for _, s := range []ids.SessionID{session, "ses_a", "ses_b", "ses_c", "ses_d"} {
		aps, err := e.flow.PendingApprovals(ctx, s)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, ap := range aps {
			_, err := e.flow.DecideApproval(ctx, ap.ApprovalID, decision, ap.ArgsDigest, flowtest.Human(s))
			if err != nil && !errors.As(err, new(*actionflow.ConflictError)) {
				e.t.Fatal(err)
			}
		}
	}
}

// TestEmbeddedChaos runs a few hundred actions of every kind through the
// embedded stack (the real engine over SQLite) while processes are killed
// at random injected points and between operations, restarting each time
// with a new engine and new services over the same file, then checks the
// invariants over the whole store. The seed (CHAOS_SEED) fixes the
// choices; the engine's goroutines make the interleaving vary between runs,
// which the invariants must survive anyway.
func TestEmbeddedChaos(t *testing.T) {
	seed := chaosSeed(t)
	defer faults.Reset()
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 0xe4bed))
	intn := func(n int) int {
		mu.Lock()
		defer mu.Unlock()
		return rng.IntN(n)
	}
	const total = 200
	injected := 0
	for _, p := range faults.Points {
		faults.Arm(p, func(context.Context) bool {
			if intn(100) < 3 {
				mu.Lock()
				injected++
				mu.Unlock()
				return true
			}
			return false
		})
	}
	ctx := context.Background()
	e := newEmbedded(t)
	sessions := []ids.SessionID{"ses_a", "ses_b", "ses_c", "ses_d"}
	execs := map[ids.SessionID][]ids.ExecutionID{}
	tools := []string{flowtest.ToolWrite, flowtest.ToolWrite, flowtest.ToolWrite, flowtest.ToolWrite, flowtest.ToolHost, flowtest.ToolHost,
		flowtest.ToolAsk, flowtest.ToolAskHost, flowtest.ToolBlocked, flowtest.ToolForbidden}
	var submitted []actionflow.Action
	restarts := 0
	for len(submitted) < total {
		if e.dead() {
			restarts++
			e.restart()
			continue
		}
		switch op := intn(10); {
		case op < 4:
			for range 1 + intn(4) {
				s := sessions[intn(len(sessions))]
				var exec ids.ExecutionID
				if es := execs[s]; len(es) > 0 && intn(10) < 7 {
					exec = es[intn(len(es))]
				}
				a, _, err := e.flow.Submit(ctx, actionflow.SubmitRequest{SessionID: s, ExecutionID: exec, ToolCallID: ids.ToolCallID(ids.New("call")),
					Tool: tools[intn(len(tools))], Arguments: []byte(fmt.Sprintf(`{"n":%d}`, len(submitted))), Interactive: true,
					Principal: actionflow.Principal{Subject: "agent", Role: "agent", Session: s}})
				if err != nil {
					t.Fatalf("submit: %v", err)
				}
				if exec == "" {
					execs[s] = append(execs[s], a.ExecutionID)
				}
				submitted = append(submitted, a)
			}
		case op < 6:
			e.wait()
		case op < 7:
			e.runHosts()
		case op < 8:
			decision := "approve"
			if intn(4) == 0 {
				decision = "decline"
			}
			e.decideAll(decision)
		case op < 9:
			_, err := e.sw.Sweep(ctx)
			e.do(err)
		default:
			if intn(3) == 0 {
				e.crash() // killed between operations
			}
		}
	}
	e.finish()
	mu.Lock()
	t.Logf("%d actions, %d injected faults, %d process restarts, %d executor calls", len(submitted), injected, restarts, e.sync.Total()+e.host.Total())
	if injected < 10 || restarts < 5 {
		t.Fatalf("only %d faults and %d restarts: the run does not exercise recovery", injected, restarts)
	}
	mu.Unlock()
	checkInvariants(t, e.flow, e.db, submitted, e.sync, e.host, sessions)
}
