package actionflow

import (
	"context"
	"fmt"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/store"
)

// historyPage bounds the one index read of History.Before: the session's
// most recent actions, of which those of the same execution count.
const historyPage = 128

// History reads an execution's earlier actions for reviewers that judge
// multi-step patterns (a download in one call, run by a later one). It is
// cheap on purpose: one descending page of the session index, never more.
type History struct {
	Store store.Store
}

// Before returns at most limit actions of a's execution submitted before
// a (action ids are time-ordered), most recent first, from the session's
// last historyPage actions.
func (h History) Before(ctx context.Context, a Action, limit int) ([]Action, error) {
	page, err := h.Store.QueryIndex(ctx, store.IndexSession, sessionPK(a.SessionID),
		store.QueryOptions{SKPrefix: "ACTION#", After: "ACTION#" + string(a.ActionID), Descending: true, Limit: historyPage})
	if err != nil {
		return nil, fmt.Errorf("read the actions before %s: %w", a.ActionID, err)
	}
	var out []Action
	for _, it := range page.Items {
		prior, err := decodeAction(it)
		if err != nil {
			return nil, err
		}
		if prior.ExecutionID != a.ExecutionID || prior.ActionID == a.ActionID {
			continue
		}
		out = append(out, prior)
		if len(out) == limit {
			break
		}
	}
	return out, nil
}

// EachOfSession calls fn with every action of a session, oldest id first
// (the session index, page by page; policy replay reads a window of them).
func (h History) EachOfSession(ctx context.Context, session ids.SessionID, fn func(Action) error) error {
	return store.EachInIndex(ctx, h.Store, store.IndexSession, sessionPK(session), store.QueryOptions{SKPrefix: "ACTION#", Limit: store.MaxLimit},
		func(it store.Item) error {
			a, err := decodeAction(it)
			if err != nil {
				return err
			}
			return fn(a)
		})
}
