package actionflow

import (
	"context"
	"fmt"
	"strings"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/store"
)

// SessionRecords are the lifecycle records of one session, read together
// for read models (the Activity view): every execution, action, current
// approval wait (task token removed) and receipt.
type SessionRecords struct {
	Executions []Execution `json:"executions"`
	Actions    []Action    `json:"actions"`
	Approvals  []Approval  `json:"approvals"`
	Receipts   []Receipt   `json:"receipts"`
}

// maxSessionItems bounds one SessionRecords read, so a runaway session cannot
// make a read unbounded; the bound is far above any conversation's size.
const maxSessionItems = 50000

// ListSessionRecords reads a session's records through the session index.
// Items of kinds it does not know (other packages may index their own
// records under the session) are skipped.
func (s *Service) ListSessionRecords(ctx context.Context, session ids.SessionID) (SessionRecords, error) {
	var out SessionRecords
	after, n := "", 0
	for {
		page, err := s.cfg.Store.QueryIndex(ctx, store.IndexSession, sessionPK(session), store.QueryOptions{After: after, Limit: store.MaxLimit})
		if err != nil {
			return out, fmt.Errorf("list records of %s: %w", session, err)
		}
		for _, it := range page.Items {
			if err := out.add(s, it); err != nil {
				return out, err
			}
		}
		n += len(page.Items)
		if page.Next == "" {
			return out, nil
		}
		if n >= maxSessionItems {
			return out, fmt.Errorf("list records of %s: more than %d items", session, maxSessionItems)
		}
		after = page.Next
	}
}

func (r *SessionRecords) add(s *Service, it store.Item) error {
	switch {
	case strings.HasPrefix(it.GSI1SK, "EXEC#"):
		e, err := decode[Execution](it, "execution")
		if err != nil {
			return err
		}
		e.Version = it.Version
		r.Executions = append(r.Executions, e)
	case strings.HasPrefix(it.GSI1SK, "ACTION#"):
		a, err := decodeAction(it)
		if err != nil {
			return err
		}
		r.Actions = append(r.Actions, a)
	case strings.HasPrefix(it.GSI1SK, "APPROVAL#"):
		ap, err := decode[Approval](it, "approval")
		if err != nil {
			return err
		}
		ap.Version = it.Version
		r.Approvals = append(r.Approvals, s.ApprovalView(ap))
	case strings.HasPrefix(it.GSI1SK, "RECEIPT#"):
		rc, err := decode[Receipt](it, "receipt")
		if err != nil {
			return err
		}
		r.Receipts = append(r.Receipts, rc)
	}
	return nil
}
