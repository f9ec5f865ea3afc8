package actionflow

import (
	"context"
	"errors"
	"fmt"
	"time"

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

// Execution is one task run: the exact target of control commands.
type Execution struct {
	ExecutionID ids.ExecutionID `json:"execution_id"`
	SessionID   ids.SessionID   `json:"session_id"`
	RunID       ids.RunID       `json:"run_id"`
	// ParentID is the execution a fork or retry was created from.
	ParentID ids.ExecutionID `json:"parent_id,omitempty"`
	// BranchID is the conversation branch (one Activity row per branch).
	BranchID   string          `json:"branch_id"`
	RevisionID ids.RevisionID  `json:"revision_id,omitempty"`
	Kind       string          `json:"kind"` // agent_chat | job | function
	Status     ExecutionStatus `json:"status"`
	// PauseOwner: "user" or "restart" (only a restart-owned pause resumes automatically).
	PauseOwner string `json:"pause_owner,omitempty"`
	// StepBudget > 0: run that many declared steps, then pause (Step control).
	StepBudget int `json:"step_budget,omitempty"`
	// Steering holds instructions for work that has not run yet.
	Steering []string `json:"steering,omitempty"`
	// Restart is the restart continuation intent (nil: none).
	Restart *RestartIntent `json:"restart,omitempty"`
	// ForkPoint is the saved point (checkpoint version) a fork/retry starts from.
	ForkPoint    *int64    `json:"fork_point,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
	LastActivity time.Time `json:"last_activity"`
	Version      int64     `json:"version"`
}

// RestartIntent records when automatic continuation is allowed. A nil
// Deadline is unlimited (window -1).
type RestartIntent struct {
	Deadline *time.Time `json:"deadline"`
	Reason   string     `json:"reason"`
	At       time.Time  `json:"at"`
}

func executionItem(e Execution) store.Item {
	k := executionKey(e.ExecutionID)
	return store.Item{PK: k.PK, SK: k.SK, Version: e.Version,
		GSI1PK: sessionPK(e.SessionID), GSI1SK: "EXEC#" + string(e.ExecutionID),
		Body: encode(e)}
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
	e, err := decode[Execution](it, "execution")
	e.Version = it.Version
	return e, err
}

// SaveExecution writes e with compare-and-swap on expected (0: create).
func (s *Service) SaveExecution(ctx context.Context, e *Execution, expected int64) error {
	e.Version = expected + 1
	e.UpdatedAt = s.now()
	if err := s.cfg.Store.CompareAndSwap(ctx, executionItem(*e), expected, 0); err != nil {
		e.Version = expected
		return fmt.Errorf("save execution %s: %w", e.ExecutionID, err)
	}
	return nil
}

// ensureExecution returns the execution, creating it (running) when absent.
func (s *Service) ensureExecution(ctx context.Context, id ids.ExecutionID, session ids.SessionID) (Execution, error) {
	e, err := s.GetExecution(ctx, id)
	var nf *NotFoundError
	if errors.As(err, &nf) {
		now := s.now()
		e = Execution{ExecutionID: id, SessionID: session, RunID: ids.NewRunID(), BranchID: string(id),
			Kind: "agent_chat", Status: ExecRunning, CreatedAt: now, LastActivity: now}
		err = s.SaveExecution(ctx, &e, 0)
		var vc *store.VersionConflictError
		if errors.As(err, &vc) {
			return s.GetExecution(ctx, id)
		}
		return e, err
	}
	return e, err
}
