package control

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/gowebpki/jcs"
	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
)

// Control is one execution control command type.
type Control string

// The user controls (specification 003, section 4), and the two system
// commands restart recovery records through the same service.
const (
	Pause    Control = "pause"
	Continue Control = "continue"
	Step     Control = "step"
	Steer    Control = "steer"
	Cancel   Control = "cancel"
	Fork     Control = "fork"
	Retry    Control = "retry"
	// End ends an execution: completed, or failed with a reason code and a
	// message. A human owner sends it from the UI (it is advertised on a
	// running or paused execution); an agent of the owning session may
	// send it too (the only control it may send).
	End Control = "end"
	// SetRevisionPolicy changes the execution's revision policy
	// (keep_original or use_latest; package actionflow, revisions.go). It
	// is a setting, not an advertised control: it never starts, pauses or
	// continues anything by itself.
	SetRevisionPolicy Control = "set_revision_policy"

	// Shutdown is the orderly stop's cooperative pause (owner "restart").
	Shutdown Control = "shutdown"
	// Restart is a start-up decision over an interrupted execution.
	Restart Control = "restart"
)

// UserControls are the controls a human may send, in display order.
var UserControls = []Control{Pause, Continue, Step, Steer, End, Cancel, Fork, Retry}

func (c Control) system() bool { return c == Shutdown || c == Restart }

func (c Control) known() bool {
	for _, u := range UserControls {
		if c == u {
			return true
		}
	}
	return c == SetRevisionPolicy || c.system()
}

// Command is a control request: Type applied to one execution, made
// idempotent by ID and stale-rejecting by ExpectedVersion (the execution
// version the sender saw).
type Command struct {
	ID              ids.CommandID   `json:"command_id"`
	Type            Control         `json:"type"`
	ExpectedVersion int64           `json:"expected_version"`
	Payload         json.RawMessage `json:"payload,omitempty"`
}

// Status of a command: saved, took effect, or refused when its owner came
// to apply it.
type Status string

const (
	StatusAccepted Status = "accepted"
	StatusApplied  Status = "applied"
	StatusRejected Status = "rejected"
)

// Record is a saved command and what became of it.
type Record struct {
	ExecutionID     ids.ExecutionID      `json:"execution_id"`
	CommandID       ids.CommandID        `json:"command_id"`
	Type            Control              `json:"type"`
	ExpectedVersion int64                `json:"expected_version"`
	Payload         json.RawMessage      `json:"payload,omitempty"`
	BodyDigest      string               `json:"body_digest"`
	Status          Status               `json:"status"`
	Reason          string               `json:"reason,omitempty"`
	Principal       actionflow.Principal `json:"principal"`
	// ResultVersion is the execution version the application wrote (for
	// Fork/Retry, which leave the source untouched: the source version it
	// was applied at).
	ResultVersion int64 `json:"result_version,omitempty"`
	// Child is the execution a Fork or Retry created.
	Child ids.ExecutionID `json:"child_execution_id,omitempty"`
	// Descendants are the execution descendants an applied Cancel reached
	// (package doc, "Cancel and descendants").
	Descendants []Descendant `json:"descendants,omitempty"`
	// Cascade is set on a Cancel an ancestor's cancellation sent.
	Cascade    *CascadeRef `json:"cascade,omitempty"`
	AcceptedAt time.Time   `json:"accepted_at"`
	DoneAt     *time.Time  `json:"done_at,omitempty"`
	Version    int64       `json:"-"`
}

// Payloads of the commands that take one.
type (
	// StepPayload: run Steps declared steps (default 1, at most MaxSteps), then pause.
	StepPayload struct {
		Steps int `json:"steps,omitempty"`
	}
	// SteerPayload: instructions for work that has not run yet.
	SteerPayload struct {
		Instructions string `json:"instructions"`
	}
	// CancelPayload: an optional reason shown with the cancellation.
	CancelPayload struct {
		Reason string `json:"reason,omitempty"`
	}
	// ForkPayload names the saved point (checkpoint version) to start from.
	// Fork defaults to the current checkpoint, Retry to the start (0).
	ForkPayload struct {
		CheckpointVersion *int64 `json:"checkpoint_version,omitempty"`
	}
	// EndPayload: how the execution ends. Status "completed" or "failed";
	// a failure needs a reason code (iteration_limit, model_error, aborted,
	// ...: lower case, digits and underscores); Message is for people.
	EndPayload struct {
		Status  actionflow.ExecutionStatus `json:"status"`
		Reason  string                     `json:"reason,omitempty"`
		Message string                     `json:"message,omitempty"`
	}
	// ContinuePayload: optionally the revision policy the execution
	// continues under (the version-fenced Continue chooses policy).
	ContinuePayload struct {
		RevisionPolicy string `json:"revision_policy,omitempty"`
	}
	// RevisionPolicyPayload: the policy set_revision_policy sets.
	RevisionPolicyPayload struct {
		Policy string `json:"policy"`
	}
	// RestartPayload is a restart decision (Shutdown: the intent only).
	RestartPayload struct {
		Intent actionflow.RestartIntent `json:"intent"`
	}
)

// Bounds of Step and Steer.
const (
	MaxSteps            = 100
	MaxSteerBytes       = 8 << 10
	MaxSteeringEntries  = 64
	maxCancelReasonSize = 1 << 10
	MaxEndMessageBytes  = 4 << 10
)

// endReason is the shape of an End reason code.
var endReason = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

func decodePayload(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &actionflow.ValidationError{Field: "payload", Msg: err.Error()}
	}
	return nil
}

// validate checks a command's shape (not the execution's state).
func validate(execID ids.ExecutionID, c Command) error {
	if err := ids.Validate("execution_id", string(execID)); err != nil {
		return &actionflow.ValidationError{Field: "execution_id", Msg: err.Error()}
	}
	if err := ids.Validate("command_id", string(c.ID)); err != nil {
		return &actionflow.ValidationError{Field: "command_id", Msg: err.Error()}
	}
	if !c.Type.known() {
		return &actionflow.ValidationError{Field: "type", Msg: fmt.Sprintf("%q is not one of %v or %s", c.Type, UserControls, SetRevisionPolicy)}
	}
	if c.ExpectedVersion < 1 {
		return &actionflow.ValidationError{Field: "expected_version", Msg: "required: the execution version the command was made against (>= 1)"}
	}
	switch c.Type {
	case Pause:
		if err := decodePayload(c.Payload, &struct{}{}); err != nil {
			return err
		}
	case Continue:
		var p ContinuePayload
		if err := decodePayload(c.Payload, &p); err != nil {
			return err
		}
		if p.RevisionPolicy != "" && !actionflow.ValidRevisionPolicy(p.RevisionPolicy) {
			return &actionflow.ValidationError{Field: "payload.revision_policy", Msg: fmt.Sprintf("%q is not %s or %s", p.RevisionPolicy, actionflow.KeepOriginal, actionflow.UseLatest)}
		}
	case SetRevisionPolicy:
		var p RevisionPolicyPayload
		if err := decodePayload(c.Payload, &p); err != nil {
			return err
		}
		if !actionflow.ValidRevisionPolicy(p.Policy) {
			return &actionflow.ValidationError{Field: "payload.policy", Msg: fmt.Sprintf("required: %s or %s (got %q)", actionflow.KeepOriginal, actionflow.UseLatest, p.Policy)}
		}
	case Step:
		var p StepPayload
		if err := decodePayload(c.Payload, &p); err != nil {
			return err
		}
		if p.Steps < 0 || p.Steps > MaxSteps {
			return &actionflow.ValidationError{Field: "payload.steps", Msg: fmt.Sprintf("must be 1..%d", MaxSteps)}
		}
	case Steer:
		var p SteerPayload
		if err := decodePayload(c.Payload, &p); err != nil {
			return err
		}
		if strings.TrimSpace(p.Instructions) == "" || len(p.Instructions) > MaxSteerBytes {
			return &actionflow.ValidationError{Field: "payload.instructions", Msg: fmt.Sprintf("required, at most %d bytes", MaxSteerBytes)}
		}
	case Cancel:
		var p CancelPayload
		if err := decodePayload(c.Payload, &p); err != nil {
			return err
		}
		if len(p.Reason) > maxCancelReasonSize {
			return &actionflow.ValidationError{Field: "payload.reason", Msg: fmt.Sprintf("at most %d bytes", maxCancelReasonSize)}
		}
	case End:
		var p EndPayload
		if err := decodePayload(c.Payload, &p); err != nil {
			return err
		}
		switch p.Status {
		case actionflow.ExecCompleted, actionflow.ExecFailed:
		default:
			return &actionflow.ValidationError{Field: "payload.status", Msg: fmt.Sprintf("%q is not completed or failed", p.Status)}
		}
		if p.Status == actionflow.ExecFailed && p.Reason == "" {
			return &actionflow.ValidationError{Field: "payload.reason", Msg: "required when the status is failed (a code such as iteration_limit, model_error, aborted)"}
		}
		if p.Reason != "" && !endReason.MatchString(p.Reason) {
			return &actionflow.ValidationError{Field: "payload.reason", Msg: "a code of lower-case letters, digits and underscores, at most 64 characters"}
		}
		if len(p.Message) > MaxEndMessageBytes {
			return &actionflow.ValidationError{Field: "payload.message", Msg: fmt.Sprintf("at most %d bytes", MaxEndMessageBytes)}
		}
	case Fork, Retry:
		var p ForkPayload
		if err := decodePayload(c.Payload, &p); err != nil {
			return err
		}
		if p.CheckpointVersion != nil && *p.CheckpointVersion < 0 {
			return &actionflow.ValidationError{Field: "payload.checkpoint_version", Msg: "must be >= 0"}
		}
	case Shutdown, Restart:
		var p RestartPayload
		if err := decodePayload(c.Payload, &p); err != nil {
			return err
		}
	}
	return nil
}

// bodyDigest identifies a command's content: the same command id with the
// same digest is a repeat, with another digest a conflict.
func bodyDigest(c Command) string {
	payload := json.RawMessage("null")
	if len(bytes.TrimSpace(c.Payload)) > 0 {
		if canon, err := jcs.Transform(c.Payload); err == nil {
			payload = canon
		}
	}
	b, _ := json.Marshal(map[string]any{"type": c.Type, "expected_version": c.ExpectedVersion, "payload": payload})
	canon, _ := jcs.Transform(b)
	sum := sha256.Sum256(canon)
	return fmt.Sprintf("sha256:%x", sum)
}

func decodeAs[T any](raw json.RawMessage) T {
	var v T
	_ = decodePayload(raw, &v) // validated on submit
	return v
}
