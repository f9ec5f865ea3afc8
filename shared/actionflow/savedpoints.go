package actionflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/openprogram/lifecycle/shared/failures"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/store"
)

// A saved point is one checkpoint version an execution wrote, kept for
// good: EXEC#<execution_id> / CKPT#<version, 20 digits>. The saved points
// are the checkpoint: writing version N+1 is one put-once of CKPT#<N+1>,
// which is the compare-and-swap on the version (a writer that read N and
// lost the race to another finds CKPT#<N+1> taken, reads again and
// retries), and the checkpoint is the newest of them (a Query of the
// execution's CKPT items, descending, limit 1: consistent on both stores).
// It is put in the transaction of the change it folds (record's fold with
// the action's delivery `recorded`, a reconciliation with its action and
// event, a Fork/Retry child's first checkpoint with the child), so a
// version exists only with its change. Fork and Retry may start from any
// of them, or from 0 (the start: an empty checkpoint).
//
// Stores written before kept a head item EXEC#<execution_id> / CKPT,
// compare-and-swapped in the same transaction as the saved point of the
// version it wrote (and, before saved points were kept, alone):
// GetCheckpoint reads the newest version wherever it is, and the next
// write is that version + 1, a saved point like any other. The head is
// then never written again.
//
// Size: one item per checkpoint version (one per receipt folded, one per
// reconciliation), about 200 bytes (the recent-failure map is bounded at
// 16 entries, so at most a few KB): one write unit. It is not bounded by
// count: any position of the execution may be forked, and an iteration
// limit is what bounds a run's length.

// SavedPoint is one immutable checkpoint version.
type SavedPoint struct {
	ExecutionID    ids.ExecutionID `json:"execution_id"`
	Version        int64           `json:"version"`
	Recorded       int64           `json:"recorded"`
	LastActionID   ids.ActionID    `json:"last_action_id,omitempty"`
	RecentFailures failures.Map    `json:"recent_failures"`
	Reconciled     int64           `json:"reconciled,omitempty"`
	At             time.Time       `json:"at"`
	// Revision is the revision of the receipt folded last.
	Revision ids.RevisionID `json:"revision,omitempty"`
	// Folded is a legacy head's bounded list of folded actions, carried
	// unchanged into the versions after it (never extended: the action's
	// delivery state, written in the fold's transaction, is what says an
	// action was folded).
	Folded []ids.ActionID `json:"folded,omitempty"`
	// Head marks a saved point written as the checkpoint itself. One
	// without it was written beside a head item of the same version,
	// which is read instead (it carries Revision and Folded).
	Head bool `json:"head,omitempty"`
}

const (
	savedPointSKPrefix = "CKPT#"
	// checkpointSKPrefix matches the saved points and a legacy head
	// ("CKPT" sorts before every "CKPT#…").
	checkpointSKPrefix = "CKPT"
)

func savedPointKey(id ids.ExecutionID, version int64) store.Key {
	return store.Key{PK: "EXEC#" + string(id), SK: fmt.Sprintf("%s%020d", savedPointSKPrefix, version)}
}

// legacyCheckpointKey is the head item stores written before kept beside
// the saved points; it is read, never written.
func legacyCheckpointKey(id ids.ExecutionID) store.Key {
	return store.Key{PK: "EXEC#" + string(id), SK: checkpointSKPrefix}
}

// checkpointWrites are the parts that write checkpoint version ck.Version
// (read at ck.Version-1): one put-once of its saved point. A writer that
// lost the race for that version gets a *store.ConflictError on it
// (checkpointRaceLost).
func checkpointWrites(ck Checkpoint) []store.Write {
	k := savedPointKey(ck.ExecutionID, ck.Version)
	sp := SavedPoint{ExecutionID: ck.ExecutionID, Version: ck.Version, Recorded: ck.Recorded, LastActionID: ck.LastActionID,
		RecentFailures: ck.RecentFailures, Reconciled: ck.Reconciled, At: ck.UpdatedAt, Revision: ck.Revision,
		Folded: ck.Folded, Head: true}
	return []store.Write{store.PutOnceWrite(store.Item{PK: k.PK, SK: k.SK, Version: 1, Body: encode(sp)})}
}

// checkpointRaceLost reports whether Transact(writes) failed because
// another writer wrote the same checkpoint version first: read again and
// retry, as for a version conflict.
func checkpointRaceLost(err error, writes []store.Write) bool {
	var te *store.TransactError
	var ce *store.ConflictError
	if !errors.As(err, &te) || !errors.As(err, &ce) || te.Index < 0 || te.Index >= len(writes) {
		return false
	}
	w := writes[te.Index].PutOnce
	return w != nil && strings.HasPrefix(w.SK, savedPointSKPrefix) && strings.HasPrefix(w.PK, "EXEC#")
}

// GetCheckpoint reads an execution's checkpoint: its newest version (a
// zero checkpoint when none yet). The newest is the last saved point;
// where a store written before holds a head item, the head is read when
// no saved point exists (versions written before saved points were kept)
// or when the last saved point was written beside it (same version; the
// head also carries Revision and Folded). This is the only place that
// rule is written.
func (s *Service) GetCheckpoint(ctx context.Context, id ids.ExecutionID) (Checkpoint, error) {
	page, err := s.cfg.Store.Query(ctx, "EXEC#"+string(id), store.QueryOptions{SKPrefix: checkpointSKPrefix, Descending: true, Limit: 1})
	if err != nil {
		return Checkpoint{}, fmt.Errorf("get checkpoint %s: %w", id, err)
	}
	if len(page.Items) == 0 {
		return Checkpoint{ExecutionID: id}, nil
	}
	it := page.Items[0]
	if it.SK == checkpointSKPrefix {
		return legacyCheckpoint(id, it)
	}
	sp, err := decode[SavedPoint](it, "saved point")
	if err != nil {
		return Checkpoint{}, err
	}
	if !sp.Head {
		head, err := s.cfg.Store.Get(ctx, legacyCheckpointKey(id))
		switch {
		case err == nil && head.Version >= sp.Version:
			return legacyCheckpoint(id, head)
		case err != nil && !errors.Is(err, store.ErrNotFound):
			return Checkpoint{}, fmt.Errorf("get checkpoint %s: %w", id, err)
		}
	}
	ck := sp.checkpoint()
	ck.ExecutionID = id
	return ck, nil
}

func legacyCheckpoint(id ids.ExecutionID, it store.Item) (Checkpoint, error) {
	ck, err := decode[Checkpoint](it, "checkpoint")
	ck.ExecutionID, ck.Version = id, it.Version
	return ck, err
}

func (sp SavedPoint) checkpoint() Checkpoint {
	return Checkpoint{ExecutionID: sp.ExecutionID, Version: sp.Version, Recorded: sp.Recorded, LastActionID: sp.LastActionID,
		RecentFailures: sp.RecentFailures, Reconciled: sp.Reconciled, Revision: sp.Revision, Folded: sp.Folded, UpdatedAt: sp.At}
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
	ck := sp.checkpoint()
	ck.Folded = nil
	return ck, nil
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
