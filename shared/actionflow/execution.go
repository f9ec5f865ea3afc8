package actionflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/store"
)

// ExecutionStatus of an execution.
type ExecutionStatus string

const (
	ExecRunning    ExecutionStatus = "running"
	ExecPaused     ExecutionStatus = "paused"
	ExecCancelling ExecutionStatus = "cancelling"
	ExecCancelled  ExecutionStatus = "cancelled"
	ExecCompleted  ExecutionStatus = "completed"
	ExecFailed     ExecutionStatus = "failed"
)

// Open reports whether the execution can still change (running, paused or
// cancelling); open executions are listed in the sparse open index.
func (st ExecutionStatus) Open() bool {
	return st == ExecRunning || st == ExecPaused || st == ExecCancelling
}

// Pause owners: who paused an execution. Only a restart-owned pause is ever
// resumed automatically (package recovery); every other pause needs an
// explicit Continue.
const (
	PauseByUser    = "user"    // Pause command, or the end of a Step
	PauseByRestart = "restart" // orderly shutdown or restart recovery
	PauseByFork    = "fork"    // an agent_chat child of Fork/Retry starts paused
	// PauseByRevision (revisions.go): the revision policy could not select
	// a revision to run on (incompatible or unavailable).
)

// CommandRef names the control command whose application produced an
// execution version (completion idempotency: see package control).
type CommandRef struct {
	ID   ids.CommandID `json:"id"`
	Type string        `json:"type"`
	// Version is the execution version the command's application wrote.
	Version int64 `json:"version"`
}

// Execution is one task run: the exact target of control commands.
type Execution struct {
	ExecutionID ids.ExecutionID `json:"execution_id"`
	SessionID   ids.SessionID   `json:"session_id"`
	RunID       ids.RunID       `json:"run_id"`
	// ParentID is the execution a fork or retry was created from.
	ParentID ids.ExecutionID `json:"parent_id,omitempty"`
	// BranchID is the conversation branch (one Activity row per branch).
	BranchID string `json:"branch_id"`
	// StartedRevision is the revision the execution started on (empty: it
	// started before revisions were recorded). Fixed at start.
	StartedRevision ids.RevisionID `json:"started_revision,omitempty"`
	// ActiveRevision is the revision its next action starts on: the
	// started one, or the last one use_latest adopted (revisions.go).
	ActiveRevision ids.RevisionID `json:"active_revision,omitempty"`
	// RevisionPolicy is KeepOriginal or UseLatest, set from the configured
	// default at start and changed only by the set_revision_policy command.
	RevisionPolicy string `json:"revision_policy,omitempty"`
	// RevisionBlock is why the revision policy paused it (nil: it did not).
	RevisionBlock *RevisionBlock  `json:"revision_block,omitempty"`
	Kind          string          `json:"kind"` // agent_chat | job | function
	Status        ExecutionStatus `json:"status"`
	// Title is the short human title the client gave when the execution
	// started (Activity's branch heading); empty: none. Fixed at start.
	Title string `json:"title,omitempty"`
	// PauseOwner: PauseByUser, PauseByRestart or PauseByFork (only a
	// restart-owned pause resumes automatically).
	PauseOwner string `json:"pause_owner,omitempty"`
	// PauseReason says why, for the UI (e.g. "step", "shutdown", "restart_window_expired").
	PauseReason string `json:"pause_reason,omitempty"`
	// StepBudget > 0: run that many declared steps, then pause (Step control).
	StepBudget int `json:"step_budget,omitempty"`
	// StepAdmitted is the last action a Step admitted, so a re-invoked
	// authorize of that action is admitted again instead of being refused
	// by the pause its own admission caused.
	StepAdmitted ids.ActionID `json:"step_admitted,omitempty"`
	// Steering holds instructions for work that has not run yet.
	Steering []string `json:"steering,omitempty"`
	// Restart is the restart continuation intent (nil: none).
	Restart *RestartIntent `json:"restart,omitempty"`
	// ForkPoint is the saved point (checkpoint version) a fork/retry starts from.
	ForkPoint *int64 `json:"fork_point,omitempty"`
	// IterationLimit bounds the iterations (tool calls admitted to
	// authorization) of the execution; 0: no limit. It is set when the
	// execution starts. The call that would exceed it is refused and the
	// execution ends failed with reason iteration_limit.
	IterationLimit int `json:"iteration_limit,omitempty"`
	// IterationLimitSource says where the limit came from: "submission"
	// (the call that started the execution named it) or "session_policy"
	// (the session policy's default when the execution started).
	IterationLimitSource string `json:"iteration_limit_source,omitempty"`
	// IdleTimeoutSeconds > 0: the recovery sweeper ends the execution
	// failed with reason abandoned once it has been idle that long (see
	// package recovery for what idle means). Copied from the session
	// policy when the execution starts; 0: off.
	IdleTimeoutSeconds int64 `json:"idle_timeout_seconds,omitempty"`
	// Iterations are the actions counted against IterationLimit (kept only
	// when a limit is set, so a re-invoked authorization counts once).
	Iterations []ids.ActionID `json:"iterations,omitempty"`
	// End says how an ended (completed or failed) execution ended: the End
	// command that ended it. Nil while the execution is open, and for a
	// cancellation.
	End *EndInfo `json:"end,omitempty"`
	// LastCommand is the command whose application wrote this version.
	LastCommand *CommandRef `json:"last_command,omitempty"`
	// Attempt is the attempt that last owned the execution (held its lease
	// EXEC#<id> when it wrote).
	Attempt      ids.AttemptID `json:"attempt,omitempty"`
	CreatedAt    time.Time     `json:"created_at"`
	UpdatedAt    time.Time     `json:"updated_at"`
	LastActivity time.Time     `json:"last_activity"`
	Version      int64         `json:"version"`
	// Fence is the item's stored fence (the last owner write's lease fence).
	// It is kept on every write so an unfenced write never erases it.
	Fence int64 `json:"-"`
}

// MaxTitleRunes bounds an execution's title (a heading, not a message).
const MaxTitleRunes = 120

// ValidateTitle checks an execution title: at most MaxTitleRunes runes of
// valid UTF-8, not blank, with no control character and no bidirectional
// formatting character (which could make a heading read as something it
// is not). The empty string is "no title" and valid.
func ValidateTitle(title string) error {
	if title == "" {
		return nil
	}
	if !utf8.ValidString(title) {
		return &ValidationError{Field: "title", Msg: "must be valid UTF-8"}
	}
	if n := utf8.RuneCountInString(title); n > MaxTitleRunes {
		return &ValidationError{Field: "title", Msg: fmt.Sprintf("%d characters, more than %d", n, MaxTitleRunes)}
	}
	if strings.TrimSpace(title) == "" {
		return &ValidationError{Field: "title", Msg: "must not be blank (omit it for no title)"}
	}
	for i, r := range title {
		if unicode.IsControl(r) || bidiFormatting(r) {
			return &ValidationError{Field: "title", Msg: fmt.Sprintf("control or bidirectional formatting character %U at byte %d; a title is one plain line", r, i)}
		}
	}
	return nil
}

// bidiFormatting: the explicit directional embeddings, overrides and
// isolates (U+202A-U+202E, U+2066-U+2069) and the line/paragraph separators.
func bidiFormatting(r rune) bool {
	return (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) || r == 0x2028 || r == 0x2029
}

// MaxIterationLimit bounds an execution's iteration limit (the counted
// actions are kept on the execution item).
const MaxIterationLimit = 1000

// EndInfo is how an execution ended (End command): completed, or failed
// with a reason code (iteration_limit, model_error, aborted, ...) and a
// message, and who ended it.
type EndInfo struct {
	Status  ExecutionStatus `json:"status"`
	Reason  string          `json:"reason,omitempty"`
	Message string          `json:"message,omitempty"`
	By      string          `json:"by"` // the principal's role: agent, human, admin
	At      time.Time       `json:"at"`
}

// RestartIntent records when automatic continuation is allowed after an
// interruption. A nil Deadline is unlimited (window -1); a window of 0
// stores Deadline = At, which no later start-up is before.
type RestartIntent struct {
	Deadline *time.Time `json:"deadline"`
	// Reason: "shutdown" (orderly stop requested a cooperative pause) or
	// "abandoned" (the owning attempt vanished without one).
	Reason string `json:"reason"`
	// At is what the window is measured from: the shutdown intent or the
	// abandoned attempt's last durable activity, never the next start-up.
	At time.Time `json:"at"`
	// Window is the configured window when the intent was made ("-1", "0", "2h0m0s").
	Window string `json:"window"`
	// CheckpointVersion is the checkpoint the interrupted attempt left: a
	// second interruption before new progress keeps this intent (and its
	// deadline) instead of making a new one.
	CheckpointVersion int64 `json:"checkpoint_version"`
	// Attempt is the interrupted attempt.
	Attempt ids.AttemptID `json:"attempt,omitempty"`
	// Outcome of the last start-up decision: "" (pending), "resumed",
	// "expired" or "blocked"; Blocked names what keeps it explicit.
	Outcome string `json:"outcome,omitempty"`
	Blocked string `json:"blocked,omitempty"`
}

// openExecutionsIndex lists open executions (sparse GSI2) for start-up
// recovery and cancellation follow-up.
const openExecutionsIndex = "OPEN#EXEC"

func executionItem(e Execution) store.Item {
	k := executionKey(e.ExecutionID)
	it := store.Item{PK: k.PK, SK: k.SK, Version: e.Version, Fence: e.Fence,
		GSI1PK: sessionPK(e.SessionID), GSI1SK: "EXEC#" + string(e.ExecutionID),
		Body: encode(e)}
	if e.Status.Open() {
		it.GSI2PK, it.GSI2SK = openExecutionsIndex, e.CreatedAt.UTC().Format(time.RFC3339Nano)+"#"+string(e.ExecutionID)
	}
	return it
}

// GetExecution reads an execution.
func (s *Service) GetExecution(ctx context.Context, id ids.ExecutionID) (Execution, error) {
	it, err := s.cfg.Store.Get(ctx, executionKey(id))
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return Execution{}, &NotFoundError{What: "execution " + string(id)}
		}
		return Execution{}, fmt.Errorf("get execution %s: %w", id, err)
	}
	return decodeExecution(it)
}

func decodeExecution(it store.Item) (Execution, error) {
	e, err := decode[Execution](it, "execution")
	e.Version, e.Fence = it.Version, it.Fence
	return e, err
}

// SaveExecution writes e with compare-and-swap on expected (0: create).
// fence > 0 makes it an owner write (the caller holds the execution lease
// EXEC#<id> with that fence): the store rejects it with a *store.FenceError
// once a newer owner wrote. fence == 0 is an unfenced write that keeps the
// stored fence (the lifecycle's own admission writes, e.g. a Step's budget).
func (s *Service) SaveExecution(ctx context.Context, e *Execution, expected, fence int64) error {
	prevVersion, prevFence := e.Version, e.Fence
	e.Version = expected + 1
	e.UpdatedAt = s.now()
	if fence > 0 {
		e.Fence = fence
	}
	if err := s.cfg.Store.CompareAndSwap(ctx, executionItem(*e), expected, fence); err != nil {
		e.Version, e.Fence = prevVersion, prevFence
		return fmt.Errorf("save execution %s: %w", e.ExecutionID, err)
	}
	return nil
}

// PutExecution creates an execution that must not exist yet (Fork/Retry
// children, whose id is derived from the command). A *store.VersionConflictError
// means it exists.
func (s *Service) PutExecution(ctx context.Context, e *Execution) error {
	return s.SaveExecution(ctx, e, 0, 0)
}

// Sources of an execution's iteration limit.
const (
	LimitFromSubmission    = "submission"
	LimitFromSessionPolicy = "session_policy"
)

// ensureExecution returns the execution, creating it (running, with the
// iteration limit and title) when absent. A new execution without its own
// limit takes the session policy's, and the policy's idle timeout: both
// are fixed from then on.
func (s *Service) ensureExecution(ctx context.Context, id ids.ExecutionID, session ids.SessionID, iterationLimit int, title string) (Execution, error) {
	e, err := s.GetExecution(ctx, id)
	var nf *NotFoundError
	if errors.As(err, &nf) {
		var def ExecutionDefaults
		if s.cfg.Defaults != nil {
			if def, err = s.cfg.Defaults.ExecutionDefaults(ctx, session); err != nil {
				return Execution{}, fmt.Errorf("session defaults of %s: %w", session, err)
			}
		}
		source := ""
		switch {
		case iterationLimit > 0:
			source = LimitFromSubmission
		case def.IterationLimit > 0:
			iterationLimit, source = def.IterationLimit, LimitFromSessionPolicy
		}
		now := s.now()
		e = Execution{ExecutionID: id, SessionID: session, RunID: ids.NewRunID(), BranchID: string(id),
			Kind: "agent_chat", Status: ExecRunning, IterationLimit: iterationLimit, IterationLimitSource: source,
			IdleTimeoutSeconds: def.IdleTimeoutSeconds, Title: title, CreatedAt: now, LastActivity: now}
		if s.cfg.Revisions != nil {
			live, err := s.cfg.Revisions.Live(ctx)
			if err != nil {
				return Execution{}, fmt.Errorf("live revision: %w", err)
			}
			e.StartedRevision, e.ActiveRevision, e.RevisionPolicy = live, live, s.cfg.RevisionPolicy
		}
		err = s.SaveExecution(ctx, &e, 0, 0)
		var vc *store.VersionConflictError
		if errors.As(err, &vc) {
			return s.GetExecution(ctx, id)
		}
		return e, err
	}
	return e, err
}
