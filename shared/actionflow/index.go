package actionflow

import (
	"context"
	"fmt"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/store"
)

// OpenActions returns one page of actions that are not terminal yet (no
// projected outcome), oldest first, from the sparse open index: the
// recovery sweeper's work list. Pass the returned cursor as after for the
// next page ("" when done). The index is eventually consistent in
// DynamoDB: callers re-read an action before acting on it.
func (s *Service) OpenActions(ctx context.Context, after string, limit int) ([]Action, string, error) {
	page, err := s.cfg.Store.QueryIndex(ctx, store.IndexOpen, openActionsIndex, store.QueryOptions{After: after, Limit: limit})
	if err != nil {
		return nil, "", fmt.Errorf("list open actions: %w", err)
	}
	out := make([]Action, 0, len(page.Items))
	for _, it := range page.Items {
		a, err := decodeAction(it)
		if err != nil {
			return nil, "", err
		}
		out = append(out, a)
	}
	return out, page.Next, nil
}

// OpenExecutions returns one page of open executions (running, paused,
// cancelling), oldest first.
func (s *Service) OpenExecutions(ctx context.Context, after string, limit int) ([]Execution, string, error) {
	page, err := s.cfg.Store.QueryIndex(ctx, store.IndexOpen, openExecutionsIndex, store.QueryOptions{After: after, Limit: limit})
	if err != nil {
		return nil, "", fmt.Errorf("list open executions: %w", err)
	}
	out := make([]Execution, 0, len(page.Items))
	for _, it := range page.Items {
		e, err := decodeExecution(it)
		if err != nil {
			return nil, "", err
		}
		out = append(out, e)
	}
	return out, page.Next, nil
}

// UnresolvedActions lists an execution's projected actions whose outcome
// is unknown: external effects that need reconciliation.
func (s *Service) UnresolvedActions(ctx context.Context, exec ids.ExecutionID) ([]Action, error) {
	var out []Action
	after := ""
	for {
		page, err := s.cfg.Store.QueryIndex(ctx, store.IndexOpen, reconcilePrefix+string(exec), store.QueryOptions{After: after, Limit: store.MaxLimit})
		if err != nil {
			return nil, fmt.Errorf("list unresolved actions of %s: %w", exec, err)
		}
		for _, it := range page.Items {
			a, err := decodeAction(it)
			if err != nil {
				return nil, err
			}
			out = append(out, a)
		}
		if page.Next == "" {
			return out, nil
		}
		after = page.Next
	}
}

// ExecutionsOfSession lists a session's executions (GSI1), oldest id first.
func (s *Service) ExecutionsOfSession(ctx context.Context, session ids.SessionID) ([]Execution, error) {
	var out []Execution
	after := ""
	for {
		page, err := s.cfg.Store.QueryIndex(ctx, store.IndexSession, sessionPK(session), store.QueryOptions{SKPrefix: "EXEC#", After: after, Limit: store.MaxLimit})
		if err != nil {
			return nil, fmt.Errorf("list executions of %s: %w", session, err)
		}
		for _, it := range page.Items {
			e, err := decodeExecution(it)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		if page.Next == "" {
			return out, nil
		}
		after = page.Next
	}
}
