package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
)

// SystemPrincipal is the principal of restart recovery's commands.
var SystemPrincipal = actionflow.Principal{Subject: "recovery", Role: "system", Origin: "system"}

// SubmitOwned saves a system command (Shutdown or Restart) with a fixed
// command id and applies it at once as owner o, which the caller holds. The
// fixed id makes it happen once per interruption: a repeat finds the saved
// record (applying it if a crash stopped it after the save). A racing
// execution write (a Step's admission, say) surfaces as *StaleVersionError
// before anything is saved; the caller re-reads and retries.
func (s *Service) SubmitOwned(ctx context.Context, o Owner, id ids.CommandID, typ Control, expected int64, intent actionflow.RestartIntent) (Record, error) {
	if !typ.system() {
		return Record{}, &actionflow.ValidationError{Field: "type", Msg: string(typ) + " is not a system command"}
	}
	payload, err := json.Marshal(RestartPayload{Intent: intent})
	if err != nil {
		return Record{}, err
	}
	rec, err := s.accept(ctx, o.ExecutionID, Command{ID: id, Type: typ, ExpectedVersion: expected, Payload: payload}, SystemPrincipal, nil)
	var ce *actionflow.ConflictError
	if errors.As(err, &ce) {
		// The same interruption already decided (with other evidence then):
		// that decision stands.
		if r, ok := ce.Current.(Record); ok {
			rec, err = r, nil
		}
	}
	if err != nil || rec.Status != StatusAccepted {
		return rec, err
	}
	return s.apply(ctx, o, rec)
}

// systemTransition applies a Shutdown or Restart decision, re-checking
// that the execution is still the restart's to decide: a user pause, a
// cancellation or an ended execution is never overridden.
func systemTransition(e actionflow.Execution, r Record) (*actionflow.Execution, string) {
	intent := decodeAs[RestartPayload](r.Payload).Intent
	next := e
	next.Restart = &intent
	switch r.Type {
	case Shutdown:
		if e.Status != actionflow.ExecRunning {
			return nil, fmt.Sprintf("not_running: the execution is %s", e.Status)
		}
		// A Step in progress keeps its budget across the restart.
		next.Status, next.PauseOwner, next.PauseReason = actionflow.ExecPaused, actionflow.PauseByRestart, "shutdown"
	case Restart:
		restartOwned := e.Status == actionflow.ExecRunning || (e.Status == actionflow.ExecPaused && e.PauseOwner == actionflow.PauseByRestart)
		if !restartOwned {
			owner := e.PauseOwner
			if owner == "" {
				owner = "none"
			}
			return nil, fmt.Sprintf("not_restart_owned: the execution is %s (pause owner %s)", e.Status, owner)
		}
		switch intent.Outcome {
		case "resumed":
			next.Status, next.PauseOwner, next.PauseReason = actionflow.ExecRunning, "", ""
		case "expired":
			next.Status, next.PauseOwner, next.PauseReason = actionflow.ExecPaused, actionflow.PauseByRestart, "restart_window_expired"
		case "blocked":
			next.Status, next.PauseOwner, next.PauseReason = actionflow.ExecPaused, actionflow.PauseByRestart, "blocked: "+intent.Blocked
		default:
			return nil, fmt.Sprintf("bad_decision: %q", intent.Outcome)
		}
	}
	return &next, ""
}

// Reconcile applies what is pending for one execution as a fresh attempt:
// accepted commands (a crashed applier, or a lease that was held) and the
// completion of a cancellation. It is what the sweeper calls.
func (s *Service) Reconcile(ctx context.Context, exec ids.ExecutionID) error {
	o, err := s.Acquire(ctx, exec, ids.NewAttemptID())
	if errors.Is(err, ErrOwned) {
		return nil
	}
	if err != nil {
		return err
	}
	defer s.Release(context.WithoutCancel(ctx), o)
	if _, err := s.ApplyOwned(ctx, o); err != nil {
		return err
	}
	e, err := s.flow.GetExecution(ctx, exec)
	if err != nil {
		return err
	}
	if e.Status == actionflow.ExecCancelling {
		_, err := s.cancelActions(ctx, o, e, nil)
		return err
	}
	return nil
}
