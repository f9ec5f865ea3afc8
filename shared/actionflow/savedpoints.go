package actionflow

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/openprogram/lifecycle/shared/failures"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/store"
)

// A saved point is one checkpoint version an execution wrote, kept for
// good: EXEC#<execution_id> / CKPT#<version, 20 digits>. It is put once in
// the same transaction as the checkpoint compare-and-swap that wrote that
// version (record's fold, a reconciliation, a Fork/Retry child's first
// checkpoint), so a saved point never exists without its checkpoint
// version having been written, and no checkpoint version written since
// saved points exist lacks one. Fork and Retry may start from any of
// them, or from 0 (the start: an empty checkpoint).
//
// Size: one item per checkpoint version (one per receipt folded, one per
// reconciliation), about the size of the checkpoint without its folded
// list (the recent-failure map is bounded at 16 entries, so at most a few
// KB; typically ~200 bytes). It is not bounded by count: any position of
// the execution may be forked, and an iteration limit is what bounds a
// run's length.

// SavedPoint is one immutable checkpoint version.
type SavedPoint struct {
	ExecutionID    ids.ExecutionID `json:"execution_id"`
	Version        int64           `json:"version"`
	Recorded       int64           `json:"recorded"`
	LastActionID   ids.ActionID    `json:"last_action_id,omitempty"`
	RecentFailures failures.Map    `json:"recent_failures"`
	Reconciled     int64           `json:"reconciled,omitempty"`
	At             time.Time       `json:"at"`
}

const savedPointSKPrefix = "CKPT#"

func savedPointKey(id ids.ExecutionID, version int64) store.Key {
	return store.Key{PK: "EXEC#" + string(id), SK: fmt.Sprintf("%s%020d", savedPointSKPrefix, version)}
}

// savedPointWrite is the put-once part that keeps checkpoint version
// ck.Version; it goes in the transaction that writes that version.
func savedPointWrite(ck Checkpoint) store.Write {
	k := savedPointKey(ck.ExecutionID, ck.Version)
	sp := SavedPoint{ExecutionID: ck.ExecutionID, Version: ck.Version, Recorded: ck.Recorded, LastActionID: ck.LastActionID,
		RecentFailures: ck.RecentFailures, Reconciled: ck.Reconciled, At: ck.UpdatedAt}
	return store.PutOnceWrite(store.Item{PK: k.PK, SK: k.SK, Version: 1, Body: encode(sp)})
}

// SavedPointError: a Fork or Retry named a saved point the execution does
// not have: above its current checkpoint, or a version written before
// saved points were kept.
type SavedPointError struct {
	ExecutionID ids.ExecutionID
	Requested   int64
	Current     int64
}

func (e *SavedPointError) Error() string {
	if e.Requested > e.Current {
		return fmt.Sprintf("execution %s has no saved point %d: its current checkpoint is %d (allowed: 0 to %d)",
			e.ExecutionID, e.Requested, e.Current, e.Current)
	}
	return fmt.Sprintf("execution %s has no saved point %d: it was written before saved points were kept (allowed: 0, %d, and the versions GET /v1/executions/%s lists)",
		e.ExecutionID, e.Requested, e.Current, e.ExecutionID)
}

// SavedPointState returns the checkpoint state of execution from at saved
// point version: 0 is the start (an empty checkpoint), the current version
// is the checkpoint itself, any other version is its saved point. A
// version above the current checkpoint, or one not kept, is a
// *SavedPointError. Nothing is written; the source's history stays.
func (s *Service) SavedPointState(ctx context.Context, from ids.ExecutionID, version int64) (Checkpoint, error) {
	cur, err := s.GetCheckpoint(ctx, from)
	if err != nil {
		return Checkpoint{}, err
	}
	switch {
	case version == 0:
		return Checkpoint{ExecutionID: from}, nil
	case version < 0 || version > cur.Version:
		return Checkpoint{}, &SavedPointError{ExecutionID: from, Requested: version, Current: cur.Version}
	case version == cur.Version:
		cur.Folded = nil // it names the source's actions, not a child's
		return cur, nil
	}
	it, err := s.cfg.Store.Get(ctx, savedPointKey(from, version))
	if errors.Is(err, store.ErrNotFound) {
		return Checkpoint{}, &SavedPointError{ExecutionID: from, Requested: version, Current: cur.Version}
	}
	if err != nil {
		return Checkpoint{}, fmt.Errorf("get saved point %s@%d: %w", from, version, err)
	}
	sp, err := decode[SavedPoint](it, "saved point")
	if err != nil {
		return Checkpoint{}, err
	}
	return Checkpoint{ExecutionID: from, Version: sp.Version, Recorded: sp.Recorded, LastActionID: sp.LastActionID,
		RecentFailures: sp.RecentFailures, Reconciled: sp.Reconciled, UpdatedAt: sp.At}, nil
}

// MaxListedSavedPoints bounds SavedPoints: the newest ones are listed.
const MaxListedSavedPoints = 1000

// SavedPoints lists an execution's saved points, oldest first: version 0
// (the start, at the execution's creation) and every kept checkpoint
// version, at most MaxListedSavedPoints of them (the newest; truncated
// reports that older ones exist).
func (s *Service) SavedPoints(ctx context.Context, e Execution) (points []SavedPoint, truncated bool, err error) {
	page, err := s.cfg.Store.Query(ctx, "EXEC#"+string(e.ExecutionID), store.QueryOptions{SKPrefix: savedPointSKPrefix,
		Limit: MaxListedSavedPoints, Descending: true})
	if err != nil {
		return nil, false, fmt.Errorf("list saved points of %s: %w", e.ExecutionID, err)
	}
	for i := len(page.Items) - 1; i >= 0; i-- {
		sp, err := decode[SavedPoint](page.Items[i], "saved point")
		if err != nil {
			return nil, false, err
		}
		points = append(points, sp)
	}
	// Version 0, the start, is always allowed.
	points = append([]SavedPoint{{ExecutionID: e.ExecutionID, At: e.CreatedAt}}, points...)
	return points, page.Next != "", nil
}
