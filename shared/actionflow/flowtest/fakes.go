package flowtest

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store"
)

// Policy is the permission the Decider gives a tool.
type Policy string

const (
	Allow Policy = "allow"
	Ask   Policy = "ask"
	Deny  Policy = "deny"
	// Block is a classifier refusal: deny, counted on the session's
	// refusal counter (once per action, however often authorize runs).
	Block Policy = "block"
)

// PolicyVersion is the policy version of every decision (and the counter epoch).
const PolicyVersion = "v1"

// Decider decides by tool name. Unknown tools are denied.
type Decider struct {
	ByTool map[string]Policy
	Store  store.Store // for refusal counters (Block, and Allow resets)
}

func (d Decider) Decide(ctx context.Context, a actionflow.Action) (actionflow.Decision, error) {
	p, ok := d.ByTool[a.Tool]
	if !ok {
		p = Deny
	}
	dec := actionflow.Decision{PolicyVersion: PolicyVersion, Reason: actionflow.Reason{Source: "rule", Code: string(p)}}
	switch p {
	case Allow:
		dec.Permission = lifecycle.PermissionAllow
	case Ask:
		dec.Permission = lifecycle.PermissionAsk
	case Deny:
		dec.Permission = lifecycle.PermissionDeny
	case Block:
		dec.Permission = lifecycle.PermissionDeny
		dec.Reason = actionflow.Reason{Source: "classifier", Code: "risk_blocked"}
	}
	if d.Store != nil && (p == Block || p == Allow) {
		op := store.CounterAllow
		if p == Block {
			op = store.CounterBlock
		}
		if _, _, err := d.Store.ApplyCounter(ctx, store.CounterKey{SessionID: string(a.SessionID), Epoch: PolicyVersion}, string(a.ActionID), op); err != nil {
			return dec, fmt.Errorf("refusal counter: %w", err)
		}
	}
	return dec, nil
}

func (d Decider) Revalidate(ctx context.Context, a actionflow.Action, prior actionflow.Decision, ap actionflow.Approval) (actionflow.Decision, error) {
	return actionflow.Decision{Permission: lifecycle.PermissionAllow, PolicyVersion: prior.PolicyVersion,
		Reason: actionflow.Reason{Source: "approval", Code: "approved"}}, nil
}

func (d Decider) ApprovalCompleted(context.Context, actionflow.Action, actionflow.Approval) error {
	return nil
}

// Routes maps tools to executor kinds.
type Routes map[string]string

func (r Routes) Route(tool string) (string, bool) { k, ok := r[tool]; return k, ok }

// Call is one entry of an executor's own log.
type Call struct {
	ActionID ids.ActionID
	Result   actionflow.ToolResult
}

// Executor is a mutating executor that keeps its own log of every call:
// the external system's view of what ran, to check receipts against.
type Executor struct {
	mu    sync.Mutex
	calls []Call
	// Outcome it reports (default succeeded).
	Outcome lifecycle.Outcome
}

func (e *Executor) Execute(ctx context.Context, t actionflow.Task) (actionflow.ToolResult, error) {
	res := e.Run(t.ActionID)
	return res, nil
}

// Run records one execution of action id and returns its result (also the
// host tools' runner in tests).
func (e *Executor) Run(id ids.ActionID) actionflow.ToolResult {
	e.mu.Lock()
	defer e.mu.Unlock()
	o := e.Outcome
	if o == "" {
		o = lifecycle.OutcomeSucceeded
	}
	res := actionflow.ToolResult{Outcome: o, Output: "ran " + string(id)}
	if o == lifecycle.OutcomeFailed {
		res.ErrorCode = "tool_failed"
	}
	e.calls = append(e.calls, Call{ActionID: id, Result: res})
	return res
}

// Calls returns how often each action ran.
func (e *Executor) Calls() map[ids.ActionID]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[ids.ActionID]int{}
	for _, c := range e.calls {
		out[c.ActionID]++
	}
	return out
}

// Log returns the log in call order.
func (e *Executor) Log() []Call {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Call(nil), e.calls...)
}

// Total is the number of calls.
func (e *Executor) Total() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.calls)
}

// Sorted returns ids in order (deterministic iteration of maps in tests).
func Sorted[T ~string](m map[T]int) []T {
	out := make([]T, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Bus is the event bus double (EventBridge on AWS): it keeps what was
// published and fails every publish while Fail is set.
type Bus struct {
	mu        sync.Mutex
	published []actionflow.Event
	fail      error
}

// Publish records ev, or fails.
func (b *Bus) Publish(_ context.Context, ev actionflow.Event) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail != nil {
		return b.fail
	}
	b.published = append(b.published, ev)
	return nil
}

// Fail makes every publish fail with err (nil: succeed again).
func (b *Bus) Fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fail = err
}

// Published returns the events published of one type ("" for all), in order.
func (b *Bus) Published(typ string) []actionflow.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []actionflow.Event
	for _, ev := range b.published {
		if typ == "" || ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}
