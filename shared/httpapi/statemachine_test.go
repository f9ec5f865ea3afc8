package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// inTestStateMachine is a stand-in for the embedded Step Functions engine
// used only by these tests: it runs the actionflow steps of one action in
// the order statemachines/action-lifecycle.asl.json gives them, in one
// goroutine per action, and serves the task-token waits (AwaitApproval,
// DispatchHost) through SendTaskSuccess/SendTaskFailure. It implements no
// Retry and no timeouts; it exists so the API can be tested before the
// real engine is wired.
type inTestStateMachine struct {
	svc     *actionflow.Service
	ctx     context.Context
	wg      sync.WaitGroup
	mu      sync.Mutex
	started map[ids.ActionID]bool
	waits   map[string]chan taskAnswer
	next    atomic.Int64
}

type taskAnswer struct {
	output []byte
	err    *actionflow.CaughtError
}

func newInTestStateMachine(ctx context.Context) *inTestStateMachine {
	return &inTestStateMachine{ctx: ctx, started: map[ids.ActionID]bool{}, waits: map[string]chan taskAnswer{}}
}

// StartAction starts the run of an action once (execution name = action id).
func (m *inTestStateMachine) StartAction(_ context.Context, id ids.ActionID, input []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started[id] {
		return nil
	}
	var in actionflow.StepInput
	if err := json.Unmarshal(input, &in); err != nil {
		return err
	}
	m.started[id] = true
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.run(in)
	}()
	return nil
}

func (m *inTestStateMachine) SendTaskSuccess(_ context.Context, token string, out []byte) error {
	return m.answer(token, taskAnswer{output: out})
}

func (m *inTestStateMachine) SendTaskFailure(_ context.Context, token, name, cause string) error {
	return m.answer(token, taskAnswer{err: &actionflow.CaughtError{Error: name, Cause: cause}})
}

func (m *inTestStateMachine) answer(token string, a taskAnswer) error {
	m.mu.Lock()
	ch, ok := m.waits[token]
	delete(m.waits, token)
	m.mu.Unlock()
	if !ok {
		return actionflow.ErrTaskGone
	}
	ch <- a
	return nil
}

func (m *inTestStateMachine) token() (string, chan taskAnswer) {
	tok := fmt.Sprintf("tok-%d", m.next.Add(1))
	ch := make(chan taskAnswer, 1)
	m.mu.Lock()
	m.waits[tok] = ch
	m.mu.Unlock()
	return tok, ch
}

// wait blocks on a task token until it is answered or the test ends.
func (m *inTestStateMachine) wait(ch chan taskAnswer) (taskAnswer, bool) {
	select {
	case a := <-ch:
		return a, true
	case <-m.ctx.Done():
		return taskAnswer{}, false
	}
}

// caught is what a Catch puts in $.error: the Go type name is the error name.
func caught(err error) *actionflow.CaughtError {
	name := fmt.Sprintf("%T", err)
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	return &actionflow.CaughtError{Error: name, Cause: err.Error()}
}

// run follows the ASL: Authorize -> PermissionChoice -> [AwaitApproval ->
// Revalidate -> RevalidatedChoice] -> ExecutorChoice -> DispatchSync |
// DispatchHost -> RecordOutcome -> Project. Every Catch goes to RecordOutcome.
func (m *inTestStateMachine) run(in actionflow.StepInput) {
	ctx := m.ctx
	base := actionflow.StepInput{ActionID: in.ActionID, ExecutionID: in.ExecutionID}
	rec := base
	defer func() {
		if ctx.Err() != nil {
			return
		}
		if _, err := m.svc.Record(ctx, rec); err != nil {
			return
		}
		m.svc.Project(ctx, base)
	}()
	step := base
	step.Mode = "initial"
	d, err := m.svc.Authorize(ctx, step)
	if err != nil {
		rec.Error = caught(err)
		return
	}
	if d.Permission == lifecycle.PermissionAsk {
		tok, ch := m.token()
		step = base
		step.Mode, step.TaskToken = "await", tok
		if _, err := m.svc.ApprovalStep(ctx, step); err != nil {
			rec.Error = caught(err)
			return
		}
		a, ok := m.wait(ch)
		if !ok {
			return
		}
		if a.err != nil {
			rec.Error = a.err
			return
		}
		step = base
		step.Mode = "revalidate"
		if d, err = m.svc.Authorize(ctx, step); err != nil {
			rec.Error = caught(err)
			return
		}
	}
	if d.Permission != lifecycle.PermissionAllow {
		return
	}
	if d.Executor == actionflow.ExecutorHost {
		tok, ch := m.token()
		step = base
		step.Mode, step.TaskToken = "publish", tok
		if _, err := m.svc.Dispatch(ctx, step); err != nil {
			rec.Error = caught(err)
			return
		}
		a, ok := m.wait(ch)
		if !ok {
			return
		}
		if a.err != nil {
			rec.Error = a.err
			return
		}
		var res actionflow.ToolResult
		if err := json.Unmarshal(a.output, &res); err != nil {
			rec.Error = caught(err)
			return
		}
		rec.Result = &res
		return
	}
	step = base
	step.Mode = "sync"
	res, err := m.svc.Dispatch(ctx, step)
	if err != nil {
		rec.Error = caught(err)
		return
	}
	rec.Result = &res
}
