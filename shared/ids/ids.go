package ids

import (
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
)

// The identifiers of the control plane. Each is its own type so that an
// execution id can never be passed where an action id is expected.
type (
	// SessionID is conversation scope and authorization; never a control target.
	SessionID string
	// RunID groups an original execution with its forks and retries.
	RunID string
	// ExecutionID is the exact target of a control command.
	ExecutionID string
	// AttemptID is one activation of a worker for an execution.
	AttemptID string
	// RevisionID is an immutable version of a program and its tool contracts.
	RevisionID string
	// ActionID identifies one tool call passing through the lifecycle; it is
	// also the Step Functions execution name, so a repeated start is idempotent.
	ActionID string
	// ToolCallID is the model's own id for the tool call.
	ToolCallID string
	// CommandID makes a control command idempotent.
	CommandID string
	// ApprovalID identifies one approval wait; fresh for every wait.
	ApprovalID string
)

// MaxLen bounds every identifier (Step Functions execution names allow 80).
const MaxLen = 80

// Validate reports whether s is usable as an identifier of the named kind:
// 1..80 characters from [A-Za-z0-9_.-]. The store's key separator '#', the
// ':' that Step Functions execution names refuse, and anything that would
// need escaping in an ARN or URL path are refused.
func Validate(kind, s string) error {
	if s == "" {
		return fmt.Errorf("%s is empty", kind)
	}
	if len(s) > MaxLen {
		return fmt.Errorf("%s is %d characters long, more than %d", kind, len(s), MaxLen)
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
		default:
			return fmt.Errorf("%s %q has character %q at %d; allowed are letters, digits and _ . -", kind, s, r, i)
		}
	}
	return nil
}

// New returns a fresh, time-ordered identifier with the given prefix, e.g.
// New("act") = "act_01JD...". ULIDs sort by creation time, which keeps
// listings in creation order without a separate timestamp key.
func New(prefix string) string {
	id := ulid.MustNew(ulid.Timestamp(time.Now()), rand.Reader)
	return prefix + "_" + strings.ToLower(id.String())
}

func NewActionID() ActionID       { return ActionID(New("act")) }
func NewExecutionID() ExecutionID { return ExecutionID(New("exe")) }
func NewRunID() RunID             { return RunID(New("run")) }
func NewAttemptID() AttemptID     { return AttemptID(New("att")) }
func NewApprovalID() ApprovalID   { return ApprovalID(New("apr")) }
func NewCommandID() CommandID     { return CommandID(New("cmd")) }
func NewSessionID() SessionID     { return SessionID(New("ses")) }
