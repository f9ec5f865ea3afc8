package actionflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store"
)

// ProjectOutput is the project step's result.
type ProjectOutput struct {
	States lifecycle.States `json:"states"`
	Seq    int64            `json:"seq"`
}

// Project completes the delivery of an action whose receipt is sealed: it
// is the record step without sealing (Record folds, projects and publishes
// in one step since the two became one transaction). The recovery sweeper
// uses it to project an action a machine left recorded and to publish
// again the event of one projected by a machine that failed before its
// publish; the embedded engine still serves it as the `project` Task of
// executions started on an earlier revision's definition. On an action
// projected already it only publishes the stored action.projected event
// again (subscribers deduplicate by action_id); it never changes the
// outcome and never folds a receipt twice.
func (s *Service) Project(ctx context.Context, in StepInput) (ProjectOutput, error) {
	out, err := s.project(ctx, in)
	return out, stepError("project "+string(in.ActionID), err)
}

func (s *Service) project(ctx context.Context, in StepInput) (ProjectOutput, error) {
	rc, err := s.getReceipt(ctx, in.ActionID)
	if errors.Is(err, store.ErrNotFound) {
		return ProjectOutput{}, &PermanentError{Code: "no_receipt", Msg: "nothing to project: no receipt is sealed"}
	}
	if err != nil {
		return ProjectOutput{}, err
	}
	a, err := s.getAction(ctx, in.ActionID)
	if err != nil {
		return ProjectOutput{}, err
	}
	out, err := s.finishRecord(ctx, a, rc)
	if err != nil {
		return ProjectOutput{}, err
	}
	return ProjectOutput{States: out.States, Seq: out.Seq}, nil
}

// projectedStates derives the states of an action whose receipt is
// folded and projected: the receipt's outcome, delivery projected.
func projectedStates(st lifecycle.States, rc Receipt) (lifecycle.States, error) {
	st, err := ApplyReceipt(st, rc)
	if err != nil {
		return st, err
	}
	return st.WithDelivery(lifecycle.DeliveryProjected)
}

// projectionEventOf is the action.projected event of a, projected.
func projectionEventOf(a *Action, rc Receipt) (Event, any) {
	return Event{Type: "action.projected", SessionID: a.SessionID, ExecutionID: a.ExecutionID, ActionID: a.ActionID},
		map[string]any{"states": a.States, "outcome": rc.Outcome, "error_code": rc.ErrorCode, "tool": a.Tool}
}

// projectionEvent returns the action.projected event of an action that is
// projected already, as stored in its session's log, for publishing
// again. It looks back from the end of the log (where a repeat, which
// follows the projection by seconds, finds it) over a bounded number of
// entries, and stops at entries written well before the action's last
// change; when it does not find it there, it appends the event again (a
// duplicate in the log, as every repeat appended before the lookup).
func (s *Service) projectionEvent(ctx context.Context, a Action, rc Receipt) (Event, error) {
	after := ""
	for page := 0; page < projectionLookbackPages; page++ {
		pg, err := s.cfg.Store.Query(ctx, SessionStream(a.SessionID), store.QueryOptions{SKPrefix: store.LogSKPrefix,
			After: after, Limit: projectionLookbackPage, Descending: true})
		if err != nil {
			return Event{}, fmt.Errorf("look up the projection event of %s: %w", a.ActionID, err)
		}
		for _, it := range pg.Items {
			var ev Event
			if err := json.Unmarshal(it.Body, &ev); err != nil {
				continue // not an event this code wrote; never ours
			}
			if ev.Type == "action.projected" && ev.ActionID == a.ActionID {
				if ev.Seq, err = store.ParseLogSK(it.SK); err != nil {
					return Event{}, err
				}
				return ev, nil
			}
			if ev.At.Before(a.UpdatedAt.Add(-projectionLookbackSkew)) {
				page = projectionLookbackPages // older than the projection: not there
				break
			}
		}
		if pg.Next == "" {
			break
		}
		after = pg.Next
	}
	e, data := projectionEventOf(&a, rc)
	return s.appendEvent(ctx, e, data)
}

// The look-back of projectionEvent: at most 4 pages of 50 entries, and no
// entry stamped more than a minute (clock skew between writers) before the
// action's last write, which is the projection's own.
const (
	projectionLookbackPages = 4
	projectionLookbackPage  = 50
	projectionLookbackSkew  = time.Minute
)

// publishProjection publishes the projection event (EventBridge on AWS). A
// failure is transient: the state machine's Retry repeats the whole step,
// which finds the action projected and publishes the stored event again.
func (s *Service) publishProjection(ctx context.Context, ev Event) error {
	if s.cfg.Publisher == nil {
		return nil
	}
	if err := s.cfg.Publisher.Publish(ctx, ev); err != nil {
		return &TransientError{Msg: fmt.Sprintf("publish projection of %s: %v", ev.ActionID, err)}
	}
	return nil
}

// ApplyReceipt derives the states an action has once its receipt is sealed
// (outcome + recorded), through the one set of transition rules.
func ApplyReceipt(st lifecycle.States, rc Receipt) (lifecycle.States, error) {
	var err error
	if rc.Outcome == lifecycle.OutcomeNotStarted && st.Permission == lifecycle.PermissionAsk {
		// A declined or expired wait ends the ask as a deny.
		if st, err = st.WithPermission(lifecycle.PermissionDeny); err != nil {
			return st, err
		}
	}
	if rc.Start != nil && !st.Started {
		if st, err = st.WithStart(); err != nil {
			return st, err
		}
	}
	if st, err = st.WithOutcome(rc.Outcome); err != nil {
		return st, err
	}
	if st.Delivery == lifecycle.DeliveryPending {
		return st.WithDelivery(lifecycle.DeliveryRecorded)
	}
	return st, nil
}
