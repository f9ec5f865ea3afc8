package control

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
)

// Cancel and descendants (specification 003, table 4: "Cancel: end the
// selected execution and its execution descendants").
//
// An execution's descendants are its children (Fork/Retry children and
// child tasks, linked from its partition by actionflow.CreateChild),
// their children, and so on. When a Cancel is applied to an execution,
// after its own unstarted actions are closed, each child is handled:
//
//   - running or paused: a Cancel of its own is saved on it through this
//     same command service (accept, then applied by its owner: at once when
//     its lease is free, else by that owner or the sweeper), with a command
//     id derived from (parent, the parent's Cancel, child), so a repeated or
//     recovered cancellation saves the same command and a saved one is never
//     applied twice. That Cancel, when applied, does the same for the
//     child's own children.
//   - cancelling: its own cancellation is in effect and reaches its
//     descendants (the sweeper finishes it); nothing is sent.
//   - ended (cancelled, completed, failed): left alone, but its children
//     are handled as above, so a running retry of a failed fork is reached.
//
// Depth is bounded by MaxCancelDepth (counted from the Cancel a person
// sent). The applied Cancel's record lists the descendants it reached
// (Record.Descendants), with what became of the command sent to each.
//
// No descendant escapes: a child is created only in a transaction that
// checks its parent's version as its creator read it (Fork and Retry are
// not available on a cancelling execution, a child task only under a
// running or paused one), and the children are listed by a strongly
// consistent query of the parent's partition after the parent's
// cancelling version was written. So a child either existed before that
// version (and is listed) or its creation failed and was decided again
// against the cancelling parent (and refused). A Fork or Retry saved
// before the Cancel and applied after it (its expected version is below
// the version the Cancel wrote) is rejected: cancellation takes
// precedence. One sent after the cancellation (against the cancelled
// version), or a Fork/Retry of an ended descendant the walk has passed, is
// new deliberate work, as a Retry of a cancelled execution is.
//
// A cancellation stopped part-way (a crash, a store failure) is finished
// by the next application of the same Cancel (the sweeper's Reconcile):
// the derived ids make every save a repeat, a descendant already reached
// is listed from its stored Cancel, and one whose Cancel is still
// accepted is applied by its owner then.

// MaxCancelDepth bounds how many generations below the cancelled
// execution a cancellation reaches.
const MaxCancelDepth = 32

// Descendant is one execution descendant a Cancel reached.
type Descendant struct {
	ExecutionID ids.ExecutionID `json:"execution_id"`
	ParentID    ids.ExecutionID `json:"parent_id"`
	// Depth: 1 for a child of the cancelled execution, 2 for a grandchild...
	Depth int `json:"depth"`
	// CommandID is the Cancel saved on it (empty when its own cancellation
	// was already in effect).
	CommandID ids.CommandID `json:"command_id,omitempty"`
	// Status: that Cancel's status (accepted: its owner applies it;
	// applied), or "cancelling" when its own cancellation was in effect.
	Status string `json:"status"`
}

// CascadeRef names the cancellation that sent a descendant's Cancel.
type CascadeRef struct {
	// ExecutionID and CommandID: the ancestor and its Cancel.
	ExecutionID ids.ExecutionID `json:"execution_id"`
	CommandID   ids.CommandID   `json:"command_id"`
	// Depth of the receiving execution below the execution a person cancelled.
	Depth int `json:"depth"`
}

// DescendantCancelID is the id of the Cancel that parent's Cancel cmd
// sends to child: derived, so a repeated or recovered cancellation saves
// the same command (a repeat returns the stored record).
func DescendantCancelID(parent ids.ExecutionID, cmd ids.CommandID, child ids.ExecutionID) ids.CommandID {
	sum := sha256.Sum256([]byte(string(parent) + "\x00" + string(cmd) + "\x00" + string(child)))
	return ids.CommandID("cxl_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:16])))
}

// cancelDescendants handles the children of e for the cancellation root
// (a Cancel applied to e, or to an ancestor when e is an ended descendant
// the walk passes through); depth is e's depth below the execution a
// person cancelled.
func (s *Service) cancelDescendants(ctx context.Context, e actionflow.Execution, root Record, depth int) ([]Descendant, error) {
	if depth >= MaxCancelDepth {
		s.log.Warn("cancellation reaches no deeper", "execution_id", e.ExecutionID, "command_id", root.CommandID, "depth", depth)
		return nil, nil
	}
	kids, err := s.flow.Children(ctx, e)
	if err != nil {
		return nil, err
	}
	var out []Descendant
	for _, id := range kids {
		c, err := s.flow.GetExecution(ctx, id)
		if err != nil {
			return out, fmt.Errorf("cancel descendant %s of %s: %w", id, e.ExecutionID, err)
		}
		d := Descendant{ExecutionID: id, ParentID: e.ExecutionID, Depth: depth + 1}
		if c.Status != actionflow.ExecRunning && c.Status != actionflow.ExecPaused {
			// Cancelled (or cancelling) by this very cancellation in an
			// earlier run of it (a recovered or repeated cancellation):
			// listed as then, nothing sent again.
			rec, err := s.getRecord(ctx, id, DescendantCancelID(e.ExecutionID, root.CommandID, id))
			if err == nil && rec.Status == StatusAccepted {
				// Saved, and applied only part-way (its own descendants
				// failed): applied again by its owner now.
				rec, err = s.cancelDescendant(ctx, e, c, root, depth+1)
			}
			if err == nil {
				d.CommandID, d.Status = rec.CommandID, string(rec.Status)
				out = append(out, d)
				out = append(out, rec.Descendants...)
				continue
			}
			if !errors.As(err, new(*actionflow.NotFoundError)) {
				return out, err
			}
		}
		switch c.Status {
		case actionflow.ExecRunning, actionflow.ExecPaused:
			rec, err := s.cancelDescendant(ctx, e, c, root, depth+1)
			if err != nil {
				return out, err
			}
			d.CommandID, d.Status = rec.CommandID, string(rec.Status)
			out = append(out, d)
			out = append(out, rec.Descendants...)
		case actionflow.ExecCancelling:
			d.Status = string(actionflow.ExecCancelling)
			out = append(out, d)
		default: // ended: left alone; its own descendants are still reached
			more, err := s.cancelDescendants(ctx, c, root, depth+1)
			if err != nil {
				return out, err
			}
			out = append(out, more...)
		}
	}
	return out, nil
}

// cancelDescendant saves (and, when it can take the descendant's lease,
// applies) the derived Cancel of descendant c, sent by the cancellation
// root through parent. The descendant's owner rules hold: when another
// attempt owns c the record stays accepted and that owner (which looks
// for accepted commands again before it lets the lease go), or the
// sweeper, applies it. Unlike Submit it does not wait for a busy owner:
// the parent's owner is working meanwhile, and the saved Cancel is
// already durable.
func (s *Service) cancelDescendant(ctx context.Context, parent, c actionflow.Execution, root Record, depth int) (Record, error) {
	id := DescendantCancelID(parent.ExecutionID, root.CommandID, c.ExecutionID)
	payload, _ := json.Marshal(CancelPayload{Reason: fmt.Sprintf("cancelled with execution %s (command %s)", root.ExecutionID, root.CommandID)})
	cmd := Command{ID: id, Type: Cancel, ExpectedVersion: c.Version, Payload: payload}
	rec, err := s.accept(ctx, c.ExecutionID, cmd, root.Principal, &CascadeRef{ExecutionID: root.ExecutionID, CommandID: root.CommandID, Depth: depth})
	var ce *actionflow.ConflictError
	if errors.As(err, &ce) {
		// Saved before against another version of c: the same derived
		// Cancel (a Cancel is applied whatever the version).
		if stored, ok := ce.Current.(Record); ok && stored.Type == Cancel {
			rec, err = stored, nil
		}
	}
	if err != nil {
		return rec, fmt.Errorf("cancel descendant %s: %w", c.ExecutionID, err)
	}
	if rec.Status != StatusAccepted {
		return rec, nil
	}
	if _, err := s.ApplyPending(ctx, c.ExecutionID); err != nil && !lostOwnership(err) {
		return rec, fmt.Errorf("cancel descendant %s: %w", c.ExecutionID, err)
	}
	return s.getRecord(ctx, c.ExecutionID, id)
}
