package actionflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/openprogram/lifecycle/shared/faults"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store"
)

// ProjectOutput is the project step's result.
type ProjectOutput struct {
	States lifecycle.States `json:"states"`
	Seq    int64            `json:"seq"`
}

// Project is the project step: it marks delivery projected (the action
// item takes the receipt's outcome) and publishes the projection event.
// Repeating it republishes the same event (subscribers deduplicate by
// action_id); it never changes the outcome.
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
	event := func(a *Action) (Event, any) {
		return Event{Type: "action.projected", SessionID: a.SessionID, ExecutionID: a.ExecutionID, ActionID: a.ActionID},
			map[string]any{"states": a.States, "outcome": rc.Outcome, "error_code": rc.ErrorCode, "tool": a.Tool}
	}
	// The projected state and its event are written together; a repeat
	// (already projected) appends the same event again for the publisher.
	a, ev, changed, err := s.updateWithEvent(ctx, in.ActionID, nil, 0, func(a *Action) error {
		st, err := ApplyReceipt(a.States, rc)
		if err != nil {
			return &PermanentError{Code: "illegal_transition", Msg: err.Error()}
		}
		if st, err = st.WithDelivery(lifecycle.DeliveryProjected); err != nil {
			return &PermanentError{Code: "illegal_transition", Msg: err.Error()}
		}
		if st == a.States {
			return errStop
		}
		a.States = st
		return nil
	}, event)
	if err != nil {
		return ProjectOutput{}, err
	}
	if !changed {
		e, data := event(&a)
		if ev, err = s.appendEvent(ctx, e, data); err != nil {
			return ProjectOutput{}, err
		}
	}
	if s.cfg.Publisher != nil {
		if err := s.cfg.Publisher.Publish(ctx, ev); err != nil {
			return ProjectOutput{}, &TransientError{Msg: fmt.Sprintf("publish projection of %s: %v", a.ActionID, err)}
		}
	}
	if err := faults.At(ctx, faults.AfterProjection); err != nil {
		return ProjectOutput{}, err
	}
	return ProjectOutput{States: a.States, Seq: ev.Seq}, nil
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
