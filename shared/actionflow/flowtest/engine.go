package flowtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/faults"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/store"
)

// Machine statuses, as Step Functions names them.
const (
	Running   = "RUNNING"
	Succeeded = "SUCCEEDED"
	Failed    = "FAILED"
	TimedOut  = "TIMED_OUT"
	Aborted   = "ABORTED"
)

// CrashMode says what an injected crash (faults.CrashError) in a handler means.
type CrashMode int

const (
	// Resume: the process died. The engine stops at once (ErrCrashed) and
	// the machine stays at the state; a new engine re-invokes it, as the
	// embedded engine does after a restart.
	Resume CrashMode = iota
	// Catch: the Lambda died. Step Functions sees a Lambda.Unknown error,
	// which no Retry names, and the state's Catch routes it, as in AWS.
	Catch
)

// ErrCrashed: an injected crash stopped this engine; build a new one (and
// new services) over the same store to continue.
var ErrCrashed = errors.New("engine crashed at an injected fault point")

// Engine runs action state machines. Drive it with Run/Drain; waits are
// completed with SendTaskSuccess/SendTaskFailure (it is the
// actionflow.TaskCompleter) or TimeOut.
type Engine struct {
	Store store.Store
	// Flow is the handlers; set after building the service (the service
	// needs the engine as its Starter and TaskCompleter).
	Flow *actionflow.Service
	Mode CrashMode
	// OnTransition, if set, is called after every durable state change.
	OnTransition func(name ids.ActionID, from, to string)
}

var (
	_ actionflow.Starter       = (*Engine)(nil)
	_ actionflow.TaskCompleter = (*Engine)(nil)
)

type completion struct {
	Success bool            `json:"success"`
	Output  json.RawMessage `json:"output,omitempty"`
	Error   string          `json:"error,omitempty"`
	Cause   string          `json:"cause,omitempty"`
}

// machine is one execution of the state machine, kept in the store.
type machine struct {
	Name ids.ActionID `json:"name"`
	// Action is the action it runs when that is not its name (a machine
	// an approval handed the action off to).
	Action   ids.ActionID                `json:"action,omitempty"`
	Exec     ids.ExecutionID             `json:"execution_id"`
	Status   string                      `json:"status"`
	State    string                      `json:"state"`
	Decision *actionflow.AuthorizeOutput `json:"decision,omitempty"`
	Result   *actionflow.ToolResult      `json:"result,omitempty"`
	Error    *actionflow.CaughtError     `json:"error,omitempty"`
	// Token of the current wait; Waiting once its task function returned.
	Token   string      `json:"token,omitempty"`
	Waiting bool        `json:"waiting,omitempty"`
	Done    *completion `json:"done,omitempty"`
	Tokens  int         `json:"tokens"`
	Cause   string      `json:"cause,omitempty"`
	// Seq orders machines by start, so Drain runs them in a repeatable
	// order (names are ULIDs, random within a millisecond).
	Seq     int64 `json:"seq"`
	version int64
}

const machinesRunning = "TESTSFN#RUNNING"

func machineKey(name ids.ActionID) store.Key {
	return store.Key{PK: "TESTSFN#" + string(name), SK: "META"}
}

func (m machine) item() store.Item {
	k := machineKey(m.Name)
	b, _ := json.Marshal(m)
	it := store.Item{PK: k.PK, SK: k.SK, Version: m.version, Body: b}
	if m.Status == Running {
		it.GSI2PK, it.GSI2SK = machinesRunning, fmt.Sprintf("%020d", m.Seq)
	}
	return it
}

func (e *Engine) get(ctx context.Context, name ids.ActionID) (machine, error) {
	it, err := e.Store.Get(ctx, machineKey(name))
	if err != nil {
		return machine{}, err
	}
	var m machine
	if err := json.Unmarshal(it.Body, &m); err != nil {
		return m, err
	}
	m.version = it.Version
	return m, nil
}

func (e *Engine) save(ctx context.Context, m *machine, from string) error {
	expected := m.version
	m.version++
	if err := e.Store.CompareAndSwap(ctx, m.item(), expected, 0); err != nil {
		m.version = expected
		return fmt.Errorf("save machine %s: %w", m.Name, err)
	}
	if e.OnTransition != nil && from != m.State {
		e.OnTransition(m.Name, from, m.State)
	}
	return nil
}

// StartAction starts the machine named after the action (idempotent by name).
func (e *Engine) StartAction(ctx context.Context, a ids.ActionID, input []byte) error {
	var in actionflow.StepInput
	if err := json.Unmarshal(input, &in); err != nil {
		return err
	}
	if st, err := e.Status(ctx, a); err != nil || st != "" {
		return err // started before: idempotent by name
	}
	seq, err := e.Store.Append(ctx, "TESTSFN#STARTS", []byte(a))
	if err != nil {
		return err
	}
	m := machine{Name: a, Exec: in.ExecutionID, Status: Running, State: "Authorize", Seq: seq, version: 1}
	if in.ActionID != a {
		m.Action = in.ActionID
	}
	err = e.Store.PutOnce(ctx, m.item())
	if errors.Is(err, store.ErrConflict) {
		return nil
	}
	return err
}

// Status returns a machine's status ("" when it was never started).
func (e *Engine) Status(ctx context.Context, a ids.ActionID) (string, error) {
	m, err := e.get(ctx, a)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	return m.Status, err
}

// State returns a machine's current state name.
func (e *Engine) State(ctx context.Context, a ids.ActionID) (string, error) {
	m, err := e.get(ctx, a)
	return m.State, err
}

// Stop aborts a running machine.
func (e *Engine) Stop(ctx context.Context, a ids.ActionID, cause string) error {
	return e.finish(ctx, a, Aborted, cause)
}

// Fail ends a running machine as FAILED (a test's stand-in for an
// execution that died for a reason outside the handlers).
func (e *Engine) Fail(ctx context.Context, a ids.ActionID, cause string) error {
	return e.finish(ctx, a, Failed, cause)
}

func (e *Engine) finish(ctx context.Context, a ids.ActionID, status, cause string) error {
	m, err := e.get(ctx, a)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil || m.Status != Running {
		return err
	}
	from := m.State
	m.Status, m.Cause = status, cause
	return e.save(ctx, &m, from)
}

func (e *Engine) complete(ctx context.Context, token string, c completion) error {
	name, _, ok := strings.Cut(token, "|")
	if !ok {
		return fmt.Errorf("%w: malformed token", actionflow.ErrTaskGone)
	}
	m, err := e.get(ctx, ids.ActionID(name))
	if err != nil {
		return fmt.Errorf("%w: %v", actionflow.ErrTaskGone, err)
	}
	if m.Status != Running || m.Token != token || m.Done != nil {
		return fmt.Errorf("%w: %s", actionflow.ErrTaskGone, token)
	}
	m.Done = &c
	return e.save(ctx, &m, m.State)
}

func (e *Engine) SendTaskSuccess(ctx context.Context, token string, output []byte) error {
	return e.complete(ctx, token, completion{Success: true, Output: output})
}

func (e *Engine) SendTaskFailure(ctx context.Context, token, name, cause string) error {
	return e.complete(ctx, token, completion{Error: name, Cause: cause})
}

// TimeOut fires the timeout of the machine's current wait (States.Timeout).
func (e *Engine) TimeOut(ctx context.Context, a ids.ActionID) error {
	m, err := e.get(ctx, a)
	if err != nil {
		return err
	}
	return e.complete(ctx, m.Token, completion{Error: "States.Timeout", Cause: "the wait timed out"})
}

// RunningMachines lists running machines.
func (e *Engine) RunningMachines(ctx context.Context) ([]ids.ActionID, error) {
	var out []ids.ActionID
	after := ""
	for {
		page, err := e.Store.QueryIndex(ctx, store.IndexOpen, machinesRunning, store.QueryOptions{After: after, Limit: store.MaxLimit})
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			out = append(out, ids.ActionID(strings.TrimPrefix(it.PK, "TESTSFN#")))
		}
		if page.Next == "" {
			return out, nil
		}
		after = page.Next
	}
}

// Drain runs every running machine until none can progress without a
// wait being completed. It returns ErrCrashed (wrapped) if a crash stopped
// this engine.
func (e *Engine) Drain(ctx context.Context) error {
	for {
		names, err := e.RunningMachines(ctx)
		if err != nil {
			return err
		}
		progressed := false
		for _, n := range names {
			p, err := e.Run(ctx, n)
			if err != nil {
				return err
			}
			progressed = progressed || p
		}
		if !progressed {
			return nil
		}
	}
}

// Run advances one machine until it waits or ends; progressed reports
// whether anything changed.
func (e *Engine) Run(ctx context.Context, name ids.ActionID) (progressed bool, err error) {
	for {
		p, err := e.step(ctx, name)
		if err != nil || !p {
			return progressed, err
		}
		progressed = true
	}
}

func errorName(err error) string {
	var crash *faults.CrashError
	if errors.As(err, &crash) {
		return "Lambda.Unknown"
	}
	for _, n := range []struct {
		target any
		name   string
	}{
		{new(*actionflow.TransientError), "TransientError"},
		{new(*actionflow.NotStartedError), "NotStartedError"},
		{new(*actionflow.PermanentError), "PermanentError"},
		{new(*actionflow.CheckpointError), "CheckpointError"},
	} {
		if errors.As(err, n.target) {
			return n.name
		}
	}
	return "Lambda.Unknown"
}

// invoke calls a handler with the state's Retry policy (immediately, no
// backoff). A crash in Resume mode stops the engine.
func (e *Engine) invoke(retries map[string]int, call func() error) (*actionflow.CaughtError, error) {
	attempts := map[string]int{}
	for {
		err := call()
		if err == nil {
			return nil, nil
		}
		var crash *faults.CrashError
		if errors.As(err, &crash) && e.Mode == Resume {
			return nil, fmt.Errorf("%w: %v", ErrCrashed, err)
		}
		name := errorName(err)
		if max, ok := retries[name]; ok && attempts[name] < max {
			attempts[name]++
			continue
		}
		return &actionflow.CaughtError{Error: name, Cause: err.Error()}, nil
	}
}

var (
	transientRetry = map[string]int{"TransientError": 6}
	dispatchRetry  = map[string]int{"NotStartedError": 5}
	recordRetry    = map[string]int{"TransientError": 6, "CheckpointError": 3}
)

func (e *Engine) in(m machine, mode string) actionflow.StepInput {
	id := m.Name
	if m.Action != "" {
		id = m.Action
	}
	return actionflow.StepInput{ActionID: id, ExecutionID: m.Exec, Mode: mode, Result: m.Result, Error: m.Error}
}

// step performs one state of machine name.
func (e *Engine) step(ctx context.Context, name ids.ActionID) (bool, error) {
	m, err := e.get(ctx, name)
	if err != nil {
		return false, err
	}
	if m.Status != Running {
		return false, nil
	}
	from := m.State
	goTo := func(state string) (bool, error) {
		m.State = state
		m.Token, m.Waiting, m.Done = "", false, nil
		return true, e.save(ctx, &m, from)
	}
	end := func(status string) (bool, error) {
		m.Status = status
		return true, e.save(ctx, &m, from)
	}
	switch m.State {
	case "Authorize", "Revalidate":
		mode := "initial"
		if m.State == "Revalidate" {
			mode = "revalidate"
		}
		var out actionflow.AuthorizeOutput
		caught, err := e.invoke(transientRetry, func() error {
			var err error
			out, err = e.Flow.Authorize(ctx, e.in(m, mode))
			return err
		})
		if err != nil {
			return false, err
		}
		if caught != nil {
			m.Error = caught
			return goTo("RecordOutcome")
		}
		m.Decision = &out
		switch {
		case out.Permission == "allow":
			return goTo(executorState(out))
		case out.Permission == "ask" && m.State == "Authorize":
			return goTo("AwaitApproval")
		}
		return goTo("RecordOutcome")
	case "AwaitApproval", "DispatchHost", "AwaitAnswer":
		if m.Done != nil {
			d := *m.Done
			if d.Success {
				if m.State == "AwaitApproval" {
					return goTo("Revalidate")
				}
				if m.State == "AwaitAnswer" {
					return goTo("DispatchSync") // ResultPath $.answer: $.result stays null
				}
				var res actionflow.ToolResult
				if err := json.Unmarshal(d.Output, &res); err != nil {
					return false, err
				}
				m.Result = &res
				return goTo("RecordOutcome")
			}
			m.Error = &actionflow.CaughtError{Error: d.Error, Cause: d.Cause}
			if d.Error == "States.Timeout" && m.State == "AwaitApproval" {
				return goTo("ExpireApproval")
			}
			if d.Error == "States.Timeout" && m.State == "AwaitAnswer" {
				return goTo("ExpireQuestion")
			}
			return goTo("RecordOutcome")
		}
		if m.Waiting {
			return false, nil
		}
		// Enter the wait: a fresh token, durable before the task function runs.
		m.Tokens++
		m.Token = string(m.Name) + "|" + m.State + "|" + strconv.Itoa(m.Tokens)
		if err := e.save(ctx, &m, from); err != nil {
			return false, err
		}
		in := e.in(m, "await")
		retry := transientRetry
		if m.State == "DispatchHost" {
			in.Mode, retry = "publish", dispatchRetry
		}
		if m.State == "AwaitAnswer" {
			in.Mode, retry = "ask", dispatchRetry
		}
		in.TaskToken = m.Token
		caught, err := e.invoke(retry, func() error {
			var err error
			if m.State == "AwaitApproval" {
				_, err = e.Flow.ApprovalStep(ctx, in)
			} else {
				_, err = e.Flow.Dispatch(ctx, in)
			}
			return err
		})
		if err != nil {
			return false, err
		}
		// Re-read: the function may have completed its own wait already.
		if m, err = e.get(ctx, name); err != nil {
			return false, err
		}
		if caught != nil {
			m.Error = caught
			return goTo("RecordOutcome")
		}
		m.Waiting = true
		return true, e.save(ctx, &m, from)
	case "ExpireQuestion":
		in := e.in(m, "expire_question")
		caught, err := e.invoke(transientRetry, func() error {
			_, err := e.Flow.Dispatch(ctx, in)
			return err
		})
		if err != nil {
			return false, err
		}
		_ = caught // ResultPath $.expire_error: $.error stays States.Timeout
		return goTo("RecordOutcome")
	case "ExpireApproval":
		in := e.in(m, "expire")
		caught, err := e.invoke(transientRetry, func() error {
			_, err := e.Flow.ApprovalStep(ctx, in)
			return err
		})
		if err != nil {
			return false, err
		}
		_ = caught // ResultPath $.expire_error: $.error stays States.Timeout
		return goTo("RecordOutcome")
	case "DispatchSync":
		var res actionflow.ToolResult
		caught, err := e.invoke(dispatchRetry, func() error {
			var err error
			res, err = e.Flow.Dispatch(ctx, e.in(m, "sync"))
			return err
		})
		if err != nil {
			return false, err
		}
		if caught != nil {
			m.Error = caught
		} else {
			m.Result = &res
		}
		return goTo("RecordOutcome")
	case "RecordOutcome":
		caught, err := e.invoke(recordRetry, func() error {
			_, err := e.Flow.Record(ctx, e.in(m, ""))
			return err
		})
		if err != nil {
			return false, err
		}
		if caught != nil {
			m.State, m.Cause = "RuntimeFailure", caught.Error+": "+caught.Cause
			return end(Failed)
		}
		return end(Succeeded) // RecordOutcome is the last state (End): it projects too
	}
	return false, fmt.Errorf("machine %s: unknown state %q", name, m.State)
}

func executorState(out actionflow.AuthorizeOutput) string {
	if out.Executor == actionflow.ExecutorHost {
		return "DispatchHost"
	}
	if out.Executor == actionflow.ExecutorQuestion {
		return "AwaitAnswer"
	}
	return "DispatchSync"
}

// Graph is the engine's state graph: state -> every state it can go to.
// Its test compares it with the ASL file.
var Graph = map[string][]string{
	"Authorize":      {"DispatchHost", "DispatchSync", "AwaitApproval", "AwaitAnswer", "RecordOutcome"},
	"AwaitApproval":  {"Revalidate", "ExpireApproval", "RecordOutcome"},
	"ExpireApproval": {"RecordOutcome"},
	"Revalidate":     {"DispatchHost", "DispatchSync", "AwaitAnswer", "RecordOutcome"},
	"DispatchSync":   {"RecordOutcome"},
	"DispatchHost":   {"RecordOutcome"},
	"AwaitAnswer":    {"DispatchSync", "ExpireQuestion", "RecordOutcome"},
	"ExpireQuestion": {"RecordOutcome"},
	"RecordOutcome":  {"RuntimeFailure"},
	"RuntimeFailure": nil,
}
