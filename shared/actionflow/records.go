package actionflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/openprogram/lifecycle/shared/failures"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/sandbox"
	"github.com/openprogram/lifecycle/shared/store"
)

// Keys of the logical table (see shared/store/SCHEMA.md).
func actionKey(id ids.ActionID) store.Key {
	return store.Key{PK: "ACTION#" + string(id), SK: "META"}
}
func receiptKey(id ids.ActionID) store.Key {
	return store.Key{PK: "ACTION#" + string(id), SK: "RECEIPT"}
}
func approvalKey(id ids.ActionID) store.Key {
	return store.Key{PK: "ACTION#" + string(id), SK: "APPROVAL"}
}
func executionKey(id ids.ExecutionID) store.Key {
	return store.Key{PK: "EXEC#" + string(id), SK: "META"}
}
func sessionPK(id ids.SessionID) string { return "SESSION#" + string(id) }

// SessionStream is the session's event log stream (resumable positions for the UI).
func SessionStream(id ids.SessionID) string { return sessionPK(id) }

// Index partitions (sparse GSI2).
const (
	// openActionsIndex holds every action that is not terminal yet (no
	// projected outcome): the recovery sweeper's work list.
	openActionsIndex   = "OPEN#ACTION"
	hostTasksIndex     = "OPEN#HOSTTASK"
	pendingApprovalsPK = "PENDING#"
	// reconcilePrefix + execution id holds the projected actions whose
	// outcome is unknown: unresolved external effects that keep an
	// execution from continuing automatically after a restart.
	reconcilePrefix = "RECONCILE#"
)

// ApprovalIDFor makes a fresh approval id for a wait on action: the action
// id, a dot, and a new ULID. Fresh per wait, so a late answer to an old wait
// can never resolve a new one, and decodable to its action.
func ApprovalIDFor(action ids.ActionID) ids.ApprovalID {
	return ids.ApprovalID(string(action) + "." + strings.TrimPrefix(ids.New("w"), "w_"))
}

// ActionOfApproval decodes the action id of an approval id.
func ActionOfApproval(id ids.ApprovalID) (ids.ActionID, bool) {
	i := strings.LastIndexByte(string(id), '.')
	if i <= 0 {
		return "", false
	}
	return ids.ActionID(id[:i]), true
}

// Reason says who or what decided a permission.
type Reason struct {
	// Source: hard_constraint, deny_rule, ask_rule, allow_rule, grant, mode,
	// classifier, counter, fallback, revalidation, visibility, approval,
	// execution_control, no_executor, invalid_arguments, runtime.
	Source string `json:"source"`
	Code   string `json:"code"`
	Rule   string `json:"rule,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Refusals is the session's refusal counter (this policy version) after
	// an automatic review's block counted this action: the owner sees how
	// close the run is to the fallback, and an audit can match counts to
	// refusals.
	Refusals *Refusals `json:"refusals,omitempty"`
}

// Refusals are the automatic-review refusal counts of a session and policy
// version.
type Refusals struct {
	Consecutive int64 `json:"consecutive"`
	Total       int64 `json:"total"`
}

// Decision is the permission decision bound to one exact operation.
type Decision struct {
	Permission    lifecycle.Permission `json:"permission"`
	Reason        Reason               `json:"reason"`
	PolicyVersion string               `json:"policy_version"`
	ArgsDigest    string               `json:"args_digest"`
	ActionID      ids.ActionID         `json:"action_id"`
	ExecutionID   ids.ExecutionID      `json:"execution_id"`
	ToolCallID    ids.ToolCallID       `json:"tool_call_id"`
	// Fallback: an ask produced by the refusal fallback (classifier blocks).
	Fallback bool `json:"fallback,omitempty"`
	// Resolution tells the model or the user what would change the answer.
	Resolution string    `json:"resolution,omitempty"`
	Executor   string    `json:"executor,omitempty"`
	Mode       string    `json:"mode"` // initial | revalidate
	DecidedAt  time.Time `json:"decided_at"`
	// Engine is the decider's own record of the decision (policy and
	// context digests, file preconditions), opaque here, kept so
	// revalidation compares exactly what was decided.
	Engine json.RawMessage `json:"engine,omitempty"`

	// Sandbox is the profile a host tool call runs in (allow; for an ask,
	// the profile that runs once approved), chosen by the policy
	// (permission.Decision.Sandbox).
	Sandbox *sandbox.Profile `json:"sandbox,omitempty"`

	// Risk is the decider's risk assessment of an ask (level and plain
	// reasons), shown with its approval; it never changes the decision.
	Risk *Risk `json:"risk,omitempty"`
}

// Risk is how risky an asked call looks to the deterministic reviewer
// (permission.Risk): a level (low, medium, high) and plain reasons; a
// model's reasons, where one is configured, are marked model_generated.
type Risk struct {
	Level    string       `json:"level"`
	Reasons  []RiskReason `json:"reasons"`
	Assessor string       `json:"assessor,omitempty"`
}

// RiskReason is one reason of a Risk.
type RiskReason struct {
	Text           string `json:"text"`
	Category       string `json:"category,omitempty"`
	Source         string `json:"source"`
	ModelGenerated bool   `json:"model_generated,omitempty"`
}

// StartEvidence is written immediately before the executor is called.
type StartEvidence struct {
	AttemptID ids.AttemptID `json:"attempt_id"`
	Fence     int64         `json:"fence"`
	StartedAt time.Time     `json:"started_at"`
	Executor  string        `json:"executor"`
	// Process is the activation of the lifecycle process whose in-process
	// host worker claimed the task (the embedded stack; empty for a remote
	// worker). A later process knows from it that the worker died with its
	// process and that no result can come.
	Process ids.AttemptID `json:"process,omitempty"`
}

// HostTask is an authorized task published for a host worker.
type HostTask struct {
	TaskToken   string    `json:"task_token"`
	PublishedAt time.Time `json:"published_at"`
}

// Action is the intent of one tool call and its three states.
type Action struct {
	ActionID    ids.ActionID    `json:"action_id"`
	ExecutionID ids.ExecutionID `json:"execution_id"`
	SessionID   ids.SessionID   `json:"session_id"`
	RunID       ids.RunID       `json:"run_id,omitempty"`
	ToolCallID  ids.ToolCallID  `json:"tool_call_id"`
	Tool        string          `json:"tool"`
	Arguments   json.RawMessage `json:"arguments"`
	ArgsDigest  string          `json:"args_digest"`
	// RequestDigest binds the idempotency key to the submitted body.
	RequestDigest string `json:"request_digest"`
	Interactive   bool   `json:"interactive"`
	Origin        string `json:"origin"` // principal that submitted it
	// Invalid is what prepare found wrong with the arguments: the action
	// is refused at its first authorization, before any permission rule.
	Invalid    *InvalidArguments `json:"invalid,omitempty"`
	States     lifecycle.States  `json:"states"`
	Decision   *Decision         `json:"decision,omitempty"`
	ApprovalID ids.ApprovalID    `json:"approval_id,omitempty"`
	Start      *StartEvidence    `json:"start,omitempty"`
	Host       *HostTask         `json:"host,omitempty"`
	// Revision is the revision its state machine was started on (empty:
	// not started yet, or started before revisions were recorded); its
	// receipt keeps it (provenance).
	Revision ids.RevisionID `json:"revision,omitempty"`
	// Machine names its current state machine execution when that is not
	// the action id: the machine an approval handed it off to (Handoff).
	Machine string `json:"machine,omitempty"`
	// Handoff records the last move of the action to another revision's
	// machine at its approval boundary (revisions.go, use_latest).
	Handoff *Handoff `json:"handoff,omitempty"`
	// Result is the dispatch result as the owning attempt learned it (the
	// sync executor's return, or the result a host worker posted), written
	// by that attempt with its fence before the state machine hears of it,
	// so it survives a lost Lambda response or SendTaskSuccess.
	Result *ToolResult `json:"result,omitempty"`
	// Closed marks an action that will never be dispatched. It is written
	// (compare-and-swap on the action) before a not_started receipt is
	// sealed and when its execution is cancelled, so a dispatch claim racing
	// it loses: either the start evidence or the closure is written, never both.
	Closed *Closure `json:"closed,omitempty"`
	// ReconciledBy is the person whose reconciliation established the
	// outcome of an action that was unknown (States.Reconciled); the record
	// itself is ACTION#<id>/RECONCILIATION.
	ReconciledBy *Principal `json:"reconciled_by,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
	UpdatedAt    time.Time  `json:"updated_at"`
	Version      int64      `json:"-"`
	// Fence is the item's stored fence, kept on every write so an unfenced
	// write never erases the dispatch attempt's fence.
	Fence int64 `json:"-"`

	// InitialDecision is the first decision of an action whose Decision
	// a revalidation replaced (an ask that was approved): what policy
	// replay compares against.
	InitialDecision *Decision `json:"initial_decision,omitempty"`
}

// MachineName is the name of the action's current state machine
// execution: the action id, or the machine it was handed off to.
func (a Action) MachineName() string {
	if a.Machine != "" {
		return a.Machine
	}
	return string(a.ActionID)
}

// Handoff is an action's move, at an approved approval and before any
// start evidence, from the machine of one revision to a new machine of
// the revision its execution adopted.
type Handoff struct {
	FromMachine  string         `json:"from_machine"`
	FromRevision ids.RevisionID `json:"from_revision"`
	// FromWait identifies the old machine's approval wait (a digest of
	// its task token, never the token): that wait is never completed (its
	// machine is stopped), so the decision is not resent there.
	FromWait   string         `json:"from_wait"`
	ApprovalID ids.ApprovalID `json:"approval_id"`
	At         time.Time      `json:"at"`
}

// Closure says why an action will never be dispatched.
type Closure struct {
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// ApprovalStatus of one wait.
type ApprovalStatus string

const (
	ApprovalPending      ApprovalStatus = "pending"
	ApprovalApproved     ApprovalStatus = "approved"
	ApprovalDeclinedSt   ApprovalStatus = "declined"
	ApprovalExpired      ApprovalStatus = "expired"
	ApprovalCancelled    ApprovalStatus = "cancelled"
	ApprovalSupersededSt ApprovalStatus = "superseded"
)

// Principal is an authenticated caller.
type Principal struct {
	Subject string        `json:"subject"`
	Role    string        `json:"role"` // agent | human | admin | system
	Session ids.SessionID `json:"session,omitempty"`
	// Origin is how the call arrived: api, ui, cli, system.
	Origin string `json:"origin,omitempty"`
}

// Approval is one durable approval wait.
type Approval struct {
	ApprovalID    ids.ApprovalID  `json:"approval_id"`
	ActionID      ids.ActionID    `json:"action_id"`
	ExecutionID   ids.ExecutionID `json:"execution_id"`
	SessionID     ids.SessionID   `json:"session_id"`
	Tool          string          `json:"tool"`
	Arguments     json.RawMessage `json:"arguments"`
	ArgsDigest    string          `json:"args_digest"`
	PolicyVersion string          `json:"policy_version"`
	Reason        Reason          `json:"reason"`
	Fallback      bool            `json:"fallback,omitempty"`
	Status        ApprovalStatus  `json:"status"`
	// TaskToken completes the Step Functions wait; never shown to clients.
	TaskToken string     `json:"task_token"`
	DecidedBy *Principal `json:"decided_by,omitempty"`
	DecidedAt *time.Time `json:"decided_at,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	Version   int64      `json:"-"`

	// Risk is the ask decision's risk assessment, shown to the person.
	Risk *Risk `json:"risk,omitempty"`
}

// ToolResult is what an executor reports.
type ToolResult struct {
	Outcome   lifecycle.Outcome `json:"outcome"`
	ErrorCode string            `json:"error_code,omitempty"`
	Error     string            `json:"error,omitempty"`
	// Output is the bounded inline output; larger output goes to the blob
	// store and ResultRef points at it.
	Output       string `json:"output,omitempty"`
	Truncated    bool   `json:"truncated,omitempty"`
	ResultRef    string `json:"result_ref,omitempty"`
	ResultDigest string `json:"result_digest,omitempty"`
	ExitCode     *int   `json:"exit_code,omitempty"`
	// Shell is the shell that ran a host Bash command: its absolute path
	// and version ("/usr/bin/bash 5.2.15(1)-release"), the dialect the
	// permission engine analysed.
	Shell string `json:"shell,omitempty"`
	// Sandbox is the sandbox profile a host tool actually ran in (mode
	// "off": unconfined, because the policy said so).
	Sandbox *sandbox.Profile `json:"sandbox,omitempty"`
	// Validation carries structured details of invalid arguments.
	Validation []FieldProblem `json:"validation,omitempty"`
}

// FieldProblem is one structured validation detail.
type FieldProblem struct {
	Field   string `json:"field"`
	Problem string `json:"problem"`
}

// Receipt is the write-once, authoritative result of an action.
type Receipt struct {
	ActionID      ids.ActionID    `json:"action_id"`
	ExecutionID   ids.ExecutionID `json:"execution_id"`
	SessionID     ids.SessionID   `json:"session_id"`
	ToolCallID    ids.ToolCallID  `json:"tool_call_id"`
	Tool          string          `json:"tool"`
	ArgsDigest    string          `json:"args_digest"`
	PolicyVersion string          `json:"policy_version"`
	// Revision is the revision whose state machine produced the receipt.
	Revision ids.RevisionID `json:"revision,omitempty"`
	Start    *StartEvidence `json:"start,omitempty"`
	// ToolResult is the sealed result (its fields appear at the top level
	// of the receipt's JSON).
	ToolResult
	// Reconciliation is set when the outcome is unknown: what a human must check.
	Reconciliation string `json:"reconciliation,omitempty"`
	// Digest identifies the receipt's content: the same digest again is an
	// idempotent repeat, a different one a conflict.
	Digest     string    `json:"digest"`
	RecordedAt time.Time `json:"recorded_at"`
	RecordedBy string    `json:"recorded_by"` // record | recover
}

// Checkpoint is an execution's continuation cursor.
type Checkpoint struct {
	ExecutionID ids.ExecutionID `json:"execution_id"`
	// Recorded counts receipts folded into this checkpoint.
	Recorded     int64        `json:"recorded"`
	LastActionID ids.ActionID `json:"last_action_id,omitempty"`
	// Folded is the bounded list of action ids folded in that stores
	// written before kept on the checkpoint's head item, carried unchanged
	// since (never extended). The action's own delivery state, written in
	// the same transaction as the fold, is what says an action was folded;
	// this list covers stores written before the two were one transaction.
	Folded         []ids.ActionID `json:"folded,omitempty"`
	RecentFailures failures.Map   `json:"recent_failures"`
	// Reconciled counts reconciliations of unknown outcomes folded in. They
	// do not touch RecentFailures: a person's account is not a
	// deterministic failure of the executor.
	Reconciled int64 `json:"reconciled,omitempty"`
	// Revision is the revision of the receipt folded last (provenance of
	// this version of the cursor).
	Revision  ids.RevisionID `json:"revision,omitempty"`
	UpdatedAt time.Time      `json:"updated_at"`
	Version   int64          `json:"-"`
}

func (c *Checkpoint) folded(id ids.ActionID) bool {
	for _, f := range c.Folded {
		if f == id {
			return true
		}
	}
	return false
}

func decode[T any](it store.Item, what string) (T, error) {
	var v T
	if err := json.Unmarshal(it.Body, &v); err != nil {
		return v, fmt.Errorf("decode %s %s: %w", what, it.Key(), err)
	}
	return v, nil
}

// encode writes records without HTML escaping, so stored arguments read
// back exactly as submitted ("a > b", not "a \u003e b").
func encode(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("encode %T: %v", v, err)) // only plain structs are encoded
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
