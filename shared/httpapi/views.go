package httpapi

import (
	"encoding/json"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/modelreq"
)

// ActionView is an action as clients see it: its intent, three states,
// decision (with the reason), current approval wait, start evidence and
// receipt. Task tokens and the idempotency digest are never shown.
type ActionView struct {
	ActionID    ids.ActionID              `json:"action_id"`
	ExecutionID ids.ExecutionID           `json:"execution_id"`
	SessionID   ids.SessionID             `json:"session_id"`
	RunID       ids.RunID                 `json:"run_id,omitempty"`
	ToolCallID  ids.ToolCallID            `json:"tool_call_id"`
	Tool        string                    `json:"tool"`
	Arguments   json.RawMessage           `json:"arguments"`
	ArgsDigest  string                    `json:"args_digest"`
	Interactive bool                      `json:"interactive"`
	Origin      string                    `json:"origin"`
	States      lifecycle.States          `json:"states"`
	Decision    *actionflow.Decision      `json:"decision,omitempty"`
	Approval    *ApprovalView             `json:"approval,omitempty"`
	Start       *actionflow.StartEvidence `json:"start,omitempty"`
	// HostPublishedAt: when the task was published for a host worker.
	HostPublishedAt *time.Time          `json:"host_published_at,omitempty"`
	Receipt         *actionflow.Receipt `json:"receipt,omitempty"`
	// Reconciliation is a human's resolution of an unknown outcome
	// (states.reconciled); the receipt beside it still says unknown.
	Reconciliation *actionflow.Reconciliation `json:"reconciliation,omitempty"`
	CreatedAt      time.Time                  `json:"created_at"`
	UpdatedAt      time.Time                  `json:"updated_at"`
	// Links: where its state machine execution can be looked at.
	Links *ActionLinks `json:"links,omitempty"`
	// Revision is the revision its state machine runs (or ran) on;
	// Handoff, its move at an approval to the revision its execution
	// adopted (use_latest).
	Revision ids.RevisionID      `json:"revision,omitempty"`
	Handoff  *actionflow.Handoff `json:"handoff,omitempty"`
}

func actionView(a actionflow.Action, ap *actionflow.Approval, rc *actionflow.Receipt) ActionView {
	v := ActionView{ActionID: a.ActionID, ExecutionID: a.ExecutionID, SessionID: a.SessionID, RunID: a.RunID,
		ToolCallID: a.ToolCallID, Tool: a.Tool, Arguments: a.Arguments, ArgsDigest: a.ArgsDigest, Interactive: a.Interactive,
		Origin: a.Origin, States: a.States, Decision: a.Decision, Start: a.Start, Receipt: rc,
		Revision: a.Revision, Handoff: a.Handoff, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}
	if a.Decision != nil {
		// The decider's own record (policy and trusted-context digests,
		// file preconditions) stays inside: clients get the decision and
		// its reason.
		d := *a.Decision
		d.Engine = nil
		v.Decision = &d
	}
	if ap != nil {
		av := approvalView(*ap)
		v.Approval = &av
	}
	if a.Host != nil {
		t := a.Host.PublishedAt
		v.HostPublishedAt = &t
	}
	return v
}

// ApprovalView is an approval wait without its task token.
type ApprovalView struct {
	ApprovalID    ids.ApprovalID            `json:"approval_id"`
	ActionID      ids.ActionID              `json:"action_id"`
	ExecutionID   ids.ExecutionID           `json:"execution_id"`
	SessionID     ids.SessionID             `json:"session_id"`
	Tool          string                    `json:"tool"`
	Arguments     json.RawMessage           `json:"arguments"`
	ArgsDigest    string                    `json:"args_digest"`
	PolicyVersion string                    `json:"policy_version"`
	Reason        actionflow.Reason         `json:"reason"`
	Fallback      bool                      `json:"fallback,omitempty"`
	Status        actionflow.ApprovalStatus `json:"status"`
	DecidedBy     *actionflow.Principal     `json:"decided_by,omitempty"`
	DecidedAt     *time.Time                `json:"decided_at,omitempty"`
	CreatedAt     time.Time                 `json:"created_at"`
	ExpiresAt     time.Time                 `json:"expires_at"`

	// Risk is the deterministic reviewer's assessment of the asked call
	// (level, plain reasons; a model's marked model_generated).
	Risk *actionflow.Risk `json:"risk,omitempty"`
}

func approvalView(ap actionflow.Approval) ApprovalView {
	return ApprovalView{ApprovalID: ap.ApprovalID, ActionID: ap.ActionID, ExecutionID: ap.ExecutionID, SessionID: ap.SessionID,
		Tool: ap.Tool, Arguments: ap.Arguments, ArgsDigest: ap.ArgsDigest, PolicyVersion: ap.PolicyVersion, Reason: ap.Reason,
		Fallback: ap.Fallback, Status: ap.Status, DecidedBy: ap.DecidedBy, DecidedAt: ap.DecidedAt, CreatedAt: ap.CreatedAt, ExpiresAt: ap.ExpiresAt,
		Risk: ap.Risk}
}

// currentView converts a conflict's Current (an approval) to its view, so
// a 409 never carries a task token.
func currentView(cur any) any {
	switch c := cur.(type) {
	case actionflow.Approval:
		return approvalView(c)
	case *actionflow.Approval:
		return approvalView(*c)
	case actionflow.Action:
		return actionView(c, nil, nil)
	}
	return cur
}

// HostTaskView is a published host task waiting for a worker.
type HostTaskView struct {
	ActionID    ids.ActionID    `json:"action_id"`
	ExecutionID ids.ExecutionID `json:"execution_id"`
	SessionID   ids.SessionID   `json:"session_id"`
	ToolCallID  ids.ToolCallID  `json:"tool_call_id"`
	Tool        string          `json:"tool"`
	ArgsDigest  string          `json:"args_digest"`
	PublishedAt time.Time       `json:"published_at"`
}

// TaskView is a claimed host task: what to run and the fence to post with.
type TaskView struct {
	ActionID       ids.ActionID    `json:"action_id"`
	ExecutionID    ids.ExecutionID `json:"execution_id"`
	SessionID      ids.SessionID   `json:"session_id"`
	ToolCallID     ids.ToolCallID  `json:"tool_call_id"`
	Tool           string          `json:"tool"`
	Arguments      json.RawMessage `json:"arguments"`
	ArgsDigest     string          `json:"args_digest"`
	AttemptID      ids.AttemptID   `json:"attempt_id"`
	Fence          int64           `json:"fence"`
	IdempotencyKey string          `json:"idempotency_key"`
}

// Task converts the view back to the lifecycle's task (the HTTP client).
func (t TaskView) Task() actionflow.Task {
	return actionflow.Task{ActionID: t.ActionID, ExecutionID: t.ExecutionID, SessionID: t.SessionID, ToolCallID: t.ToolCallID,
		Tool: t.Tool, Arguments: []byte(t.Arguments), ArgsDigest: t.ArgsDigest, AttemptID: t.AttemptID, Fence: t.Fence,
		IdempotencyKey: t.IdempotencyKey}
}

func taskView(t actionflow.Task) TaskView {
	return TaskView{ActionID: t.ActionID, ExecutionID: t.ExecutionID, SessionID: t.SessionID, ToolCallID: t.ToolCallID,
		Tool: t.Tool, Arguments: json.RawMessage(t.Arguments), ArgsDigest: t.ArgsDigest, AttemptID: t.AttemptID, Fence: t.Fence,
		IdempotencyKey: t.IdempotencyKey}
}

// ExecutionView is an execution with its checkpoint summary and the
// controls it advertises (only those may be offered).
type ExecutionView struct {
	Execution  actionflow.Execution `json:"execution"`
	Checkpoint CheckpointView       `json:"checkpoint"`
	// SavedPoints are the positions a Fork or Retry may start from: 0
	// (the start) and every checkpoint version kept, oldest first (the
	// newest actionflow.MaxListedSavedPoints).
	SavedPoints []SavedPointView `json:"saved_points"`
	// SavedPointsTruncated: older saved points exist than those listed.
	SavedPointsTruncated bool     `json:"saved_points_truncated,omitempty"`
	Controls             []string `json:"controls"`
	// ModelRequests are the execution's model requests, oldest first.
	ModelRequests []modelreq.Record `json:"model_requests"`
}

// SavedPointView is one saved point: a checkpoint version, the last
// action folded into it and when it was written.
type SavedPointView struct {
	Version      int64        `json:"version"`
	LastActionID ids.ActionID `json:"last_action_id,omitempty"`
	At           time.Time    `json:"at"`
}

// CheckpointView summarizes an execution's continuation cursor.
type CheckpointView struct {
	Version      int64        `json:"version"`
	Recorded     int64        `json:"recorded"`
	LastActionID ids.ActionID `json:"last_action_id,omitempty"`
	// Reconciled counts reconciliations of unknown outcomes folded in.
	Reconciled int64 `json:"reconciled,omitempty"`
	// Revision is the revision of the receipt folded last.
	Revision  ids.RevisionID `json:"revision,omitempty"`
	UpdatedAt *time.Time     `json:"updated_at,omitempty"`
}
