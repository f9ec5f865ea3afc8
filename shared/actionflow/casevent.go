package actionflow

import (
	"context"

	"github.com/openprogram/lifecycle/shared/store"
)

// casWithEvent replaces an item (compare-and-swap on expected) and appends
// the event that records the change, in one store transaction: a decision
// (an approval's, a question's answer) and its entry of the session's hash
// chain exist together or not at all, so the decision log cannot miss a
// decision or hold one twice. A lost compare-and-swap is the store's
// *TransactError wrapping its *VersionConflictError (errors.As finds it).
func (s *Service) casWithEvent(ctx context.Context, it store.Item, expected int64, ev Event, data any) (Event, error) {
	ev, w := s.eventWrite(ev, data)
	seqs, err := s.cfg.Store.Transact(ctx, []store.Write{store.CASOf(it, expected, 0), w})
	if err != nil {
		return ev, err
	}
	return s.logged(ev, seqs[1]), nil
}

// OpenExecutionsIndex is the open-work index partition (store.IndexOpen)
// of executions that are running, paused or cancelling; each item's GSI1PK
// is its session's partition (the decision log anchor reads it).
const OpenExecutionsIndex = openExecutionsIndex
