package actionflow

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/store"
)

// An execution's children (Fork/Retry children and child tasks) are
// linked from its own partition: EXEC#<parent> / CHILD#<child_id>, put
// once in the same transaction as the child's META, with a Check of the
// parent's META version. So a child exists only beside the parent
// version its creator decided against (a parent that moved to cancelling
// meanwhile fails the transaction and the creator decides again), and
// the parent's children are listed by a strongly consistent Query of one
// partition, never through an eventually consistent index: a Cancel that
// moved the parent to cancelling and then lists its children sees every
// child created before it.

const childSKPrefix = "CHILD#"

func childKey(parent, child ids.ExecutionID) store.Key {
	return store.Key{PK: "EXEC#" + string(parent), SK: childSKPrefix + string(child)}
}

// ChildLink is the parent's record of one child.
type ChildLink struct {
	ParentID  ids.ExecutionID `json:"parent_id"`
	ChildID   ids.ExecutionID `json:"child_id"`
	Kind      string          `json:"kind"`
	CreatedAt time.Time       `json:"created_at"`
}

// ParentMovedError: the parent's version moved after the child's creator
// read it; nothing was written. Read the parent again and decide again
// (it may be cancelling now).
type ParentMovedError struct {
	ParentID ids.ExecutionID
	Expected int64
	Actual   int64
}

func (e *ParentMovedError) Error() string {
	return fmt.Sprintf("parent execution %s moved from version %d to %d while a child was being created", e.ParentID, e.Expected, e.Actual)
}
func (e *ParentMovedError) Is(t error) bool { return t == store.ErrConflict }

// CreateChild creates execution child of parent, as it was read (at
// parent.Version), with checkpoint ck as its first checkpoint (version 1,
// kept as its saved point 1) when ck is not nil: one transaction of the
// child's META, the parent's link, the child's checkpoint and saved point,
// and a Check of the parent's version. created is false when a child of
// this parent with this id already exists (an earlier run of the same
// command; the child id is derived from it). A parent that moved is a
// *ParentMovedError.
func (s *Service) CreateChild(ctx context.Context, parent Execution, child *Execution, ck *Checkpoint) (created bool, err error) {
	if child.ParentID != parent.ExecutionID || child.SessionID != parent.SessionID {
		return false, fmt.Errorf("create child %s: it must name parent %s and its session", child.ExecutionID, parent.ExecutionID)
	}
	now := s.now()
	child.Version, child.UpdatedAt = 1, now
	if child.CreatedAt.IsZero() {
		child.CreatedAt = now
	}
	lk := childKey(parent.ExecutionID, child.ExecutionID)
	writes := []store.Write{
		store.PutOnceWrite(executionItem(*child)),
		store.PutOnceWrite(store.Item{PK: lk.PK, SK: lk.SK, Version: 1,
			Body: encode(ChildLink{ParentID: parent.ExecutionID, ChildID: child.ExecutionID, Kind: child.Kind, CreatedAt: child.CreatedAt})}),
		store.CheckOf(executionKey(parent.ExecutionID), parent.Version),
	}
	if ck != nil {
		c := *ck
		c.ExecutionID, c.Version, c.UpdatedAt, c.Folded = child.ExecutionID, 1, now, nil
		writes = append(writes, checkpointWrites(c)...)
	}
	_, err = s.cfg.Store.Transact(ctx, writes)
	var te *store.TransactError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &te) && te.Index == 0:
		var ce *store.ConflictError
		if errors.As(err, &ce) {
			got, gerr := s.GetExecution(ctx, child.ExecutionID)
			if gerr != nil {
				return false, gerr
			}
			if got.ParentID != parent.ExecutionID {
				return false, fmt.Errorf("child %s exists with parent %q, not %s: %w", child.ExecutionID, got.ParentID, parent.ExecutionID, err)
			}
			*child = got
			return false, nil
		}
	case errors.As(err, &te) && te.Index == 2:
		var vc *store.VersionConflictError
		if errors.As(err, &vc) {
			return false, &ParentMovedError{ParentID: parent.ExecutionID, Expected: parent.Version, Actual: vc.Actual}
		}
	}
	return false, fmt.Errorf("create child %s of %s: %w", child.ExecutionID, parent.ExecutionID, err)
}

// Children lists the ids of an execution's children: its links, and (for
// children created before links were written) the session's executions
// naming it as parent. Sorted by id.
func (s *Service) Children(ctx context.Context, parent Execution) ([]ids.ExecutionID, error) {
	seen := map[ids.ExecutionID]bool{}
	err := store.Each(ctx, s.cfg.Store, store.ExecPK(string(parent.ExecutionID)), store.QueryOptions{SKPrefix: childSKPrefix}, func(it store.Item) error {
		seen[ids.ExecutionID(strings.TrimPrefix(it.SK, childSKPrefix))] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list children of %s: %w", parent.ExecutionID, err)
	}
	all, err := s.ExecutionsOfSession(ctx, parent.SessionID)
	if err != nil {
		return nil, err
	}
	for _, e := range all {
		if e.ParentID == parent.ExecutionID {
			seen[e.ExecutionID] = true
		}
	}
	out := make([]ids.ExecutionID, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// ChildTask asks for a child task: a job or function execution started by
// a running (or paused) execution, on its starter's branch.
type ChildTask struct {
	ExecutionID ids.ExecutionID
	Kind        string // job | function
}

// StartChildTask creates a child task of parent: same session, run,
// revision and branch, status running. Its starter must be open and not
// cancelling (a cancellation reaches every child created before it, and
// none is created after). Repeating it for the same id returns the child.
func (s *Service) StartChildTask(ctx context.Context, parentID ids.ExecutionID, req ChildTask) (Execution, error) {
	if err := ids.Validate("execution_id", string(req.ExecutionID)); err != nil {
		return Execution{}, &ValidationError{Field: "execution_id", Msg: err.Error()}
	}
	if req.Kind != "job" && req.Kind != "function" {
		return Execution{}, &ValidationError{Field: "kind", Msg: fmt.Sprintf("%q is not job or function", req.Kind)}
	}
	for i := 0; ; i++ {
		p, err := s.GetExecution(ctx, parentID)
		if err != nil {
			return Execution{}, err
		}
		if p.Status != ExecRunning && p.Status != ExecPaused {
			if got, gerr := s.GetExecution(ctx, req.ExecutionID); gerr == nil && got.ParentID == parentID {
				return got, nil // started before the starter moved on
			}
			return Execution{}, &ConflictError{Code: "parent_not_running",
				Msg: fmt.Sprintf("execution %s is %s; a child task is started only by a running or paused execution", parentID, p.Status), Current: p}
		}
		child := Execution{ExecutionID: req.ExecutionID, SessionID: p.SessionID, RunID: p.RunID, ParentID: p.ExecutionID,
			BranchID: p.BranchID, StartedRevision: p.ActiveRevision, ActiveRevision: p.ActiveRevision, RevisionPolicy: p.RevisionPolicy, Kind: req.Kind, Status: ExecRunning, LastActivity: s.now()}
		_, err = s.CreateChild(ctx, p, &child, nil)
		var pm *ParentMovedError
		if errors.As(err, &pm) && i < maxParentRaces {
			continue
		}
		return child, err
	}
}

// maxParentRaces bounds how often a child's creator reads its parent
// again after the parent moved (admissions count iterations on the
// parent; every one moves its version).
const maxParentRaces = 32
