package actionflow

import (
	"context"
	"errors"
	"time"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/sandbox"
)

// Decider makes permission decisions (the permission engine behind an
// adapter that loads the session's live policy and trusted context).
type Decider interface {
	// Decide decides an action on its first authorization.
	Decide(ctx context.Context, a Action) (Decision, error)
	// Revalidate re-checks an action after an approval, immediately before
	// dispatch: policy version, exact digest, approval identity, preconditions.
	Revalidate(ctx context.Context, a Action, prior Decision, ap Approval) (Decision, error)
	// ApprovalCompleted tells the decider an approval it asked for finished
	// (refusal counters reset on approved fallback waits).
	ApprovalCompleted(ctx context.Context, a Action, ap Approval) error
}

// Task is an authorized operation handed to an executor.
type Task struct {
	ActionID    ids.ActionID    `json:"action_id"`
	ExecutionID ids.ExecutionID `json:"execution_id"`
	SessionID   ids.SessionID   `json:"session_id"`
	ToolCallID  ids.ToolCallID  `json:"tool_call_id"`
	Tool        string          `json:"tool"`
	Arguments   []byte          `json:"arguments"`
	ArgsDigest  string          `json:"args_digest"`
	AttemptID   ids.AttemptID   `json:"attempt_id"`
	Fence       int64           `json:"fence"`
	// IdempotencyKey is the action id: executors that support idempotency
	// (lambda, http) pass it on so a provider can deduplicate.
	IdempotencyKey string `json:"idempotency_key"`
	// Sandbox is the profile a host tool runs in, as the decision chose it
	// (nil: sandbox.Default()).
	Sandbox *sandbox.Profile `json:"sandbox,omitempty"`
}

// Executor runs an authorized task. It is called only after start evidence
// is durable, so a returned error means the operation may have started
// (outcome unknown), whatever the error says: an executor that can know
// before the call that it cannot send implements Readier.
// A deterministic tool failure is a ToolResult with Outcome failed, not an error.
type Executor interface {
	Execute(ctx context.Context, t Task) (ToolResult, error)
}

// Readier is an executor that must make sure it can send a call before
// dispatch writes start evidence (a downstream MCP server to start or
// reconnect). Dispatch calls Ready first: an error means nothing was sent,
// and dispatch fails with a *NotStartedError (safe to retry) instead of
// writing start evidence.
type Readier interface {
	Ready(ctx context.Context, tool string) error
}

// Router says which executor kind runs a tool ("host" for tools run by a
// host worker through a task-token wait).
type Router interface {
	Route(tool string) (kind string, ok bool)
}

// ExecutorHost is the kind of tools run by a host worker.
const ExecutorHost = "host"

// Starter starts the state machine execution of an action (execution name =
// action id, so a repeated start is idempotent).
type Starter interface {
	StartAction(ctx context.Context, a ids.ActionID, input []byte) error
}

// ErrTaskGone: the wait a task token belonged to is over (timed out,
// stopped, already completed).
var ErrTaskGone = errors.New("task token no longer waiting")

// ErrTaskTimedOut: the wait ended because it timed out (it also matches
// ErrTaskGone). Any other ended wait was completed or stopped by someone
// else, e.g. the sweeper resending the same durable decision.
var ErrTaskTimedOut = errors.New("task token wait timed out")

// TaskCompleter completes task-token waits (Step Functions SendTask*).
type TaskCompleter interface {
	SendTaskSuccess(ctx context.Context, token string, output []byte) error
	SendTaskFailure(ctx context.Context, token, errorName, cause string) error
}

// Publisher publishes projection events (EventBridge in AWS, an in-process
// bus locally) to the UI and subscribers.
type Publisher interface {
	Publish(ctx context.Context, ev Event) error
}

// Blobs stores results too large for an item.
type Blobs interface {
	Put(ctx context.Context, key string, data []byte) (ref string, err error)
	Get(ctx context.Context, ref string) ([]byte, error)
}

// ExecutionDefaults are what an execution that starts without its own
// settings runs under: its session policy's iteration limit (0: none)
// and idle timeout (seconds, 0: off). They are copied onto the execution
// when it starts, so a later policy change never alters a running one.
type ExecutionDefaults struct {
	IterationLimit     int
	IdleTimeoutSeconds int64
}

// SessionDefaults gives a session's ExecutionDefaults
// (*policystore.Store).
type SessionDefaults interface {
	ExecutionDefaults(ctx context.Context, session ids.SessionID) (ExecutionDefaults, error)
}

// Clock is time, replaceable in tests.
type Clock func() time.Time

// RunCloser closes what an ending execution left open outside its actions:
// the model requests its agent reported started and never completed
// (package modelreq implements it). It is called from CloseUnstarted, the
// one step every end of an execution passes through (End, the iteration
// limit, Cancel), so it must be idempotent. reason is CloseUnstarted's
// ("execution_ended", "execution_cancelled").
type RunCloser interface {
	CloseExecution(ctx context.Context, exec ids.ExecutionID, reason string) error
}

// RunClosers closes with each in turn (model requests, managed processes);
// the first error stops it (CloseUnstarted is repeated until it succeeds).
type RunClosers []RunCloser

func (cs RunClosers) CloseExecution(ctx context.Context, exec ids.ExecutionID, reason string) error {
	for _, c := range cs {
		if err := c.CloseExecution(ctx, exec, reason); err != nil {
			return err
		}
	}
	return nil
}
