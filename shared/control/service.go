package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/store"
)

// Config wires a Service.
type Config struct {
	// Flow is the action lifecycle (the store, the clock, the event log).
	Flow *actionflow.Service
	// LeaseTTL bounds one activation's ownership of an execution (default 30s).
	LeaseTTL time.Duration
	Logger   *slog.Logger
}

// Service is the one command service: every transport (HTTP API, CLI,
// restart recovery) sends execution controls through it.
type Service struct {
	flow *actionflow.Service
	st   store.Store
	ttl  time.Duration
	log  *slog.Logger
}

// New builds a Service.
func New(cfg Config) (*Service, error) {
	if cfg.Flow == nil {
		return nil, errors.New("control: Config.Flow is required")
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Service{flow: cfg.Flow, st: cfg.Flow.Store(), ttl: cfg.LeaseTTL, log: cfg.Logger}, nil
}

// Keys: a command is EXEC#<execution_id> / CMD#<command_id>; while it is
// accepted (not applied or rejected yet) it is in the sparse open index
// under "OPEN#CMD", sorted by execution, acceptance time and id.
const (
	cmdSKPrefix  = "CMD#"
	openCommands = "OPEN#CMD"
)

func commandKey(exec ids.ExecutionID, id ids.CommandID) store.Key {
	return store.Key{PK: store.ExecPK(string(exec)), SK: cmdSKPrefix + string(id)}
}

func metaKey(exec ids.ExecutionID) store.Key {
	return store.Key{PK: store.ExecPK(string(exec)), SK: "META"}
}

func commandItem(r Record) store.Item {
	k := commandKey(r.ExecutionID, r.CommandID)
	body, _ := json.Marshal(r)
	it := store.Item{PK: k.PK, SK: k.SK, Version: r.Version, Body: body}
	if r.Status == StatusAccepted {
		it.GSI2PK = openCommands
		it.GSI2SK = string(r.ExecutionID) + "#" + r.AcceptedAt.UTC().Format(time.RFC3339Nano) + "#" + string(r.CommandID)
	}
	return it
}

func decodeRecord(it store.Item) (Record, error) {
	var r Record
	if err := json.Unmarshal(it.Body, &r); err != nil {
		return r, fmt.Errorf("decode command %s: %w", it.Key(), err)
	}
	r.Version = it.Version
	return r, nil
}

func (s *Service) getRecord(ctx context.Context, exec ids.ExecutionID, id ids.CommandID) (Record, error) {
	it, err := s.st.Get(ctx, commandKey(exec, id))
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return Record{}, &actionflow.NotFoundError{What: "command " + string(id) + " of execution " + string(exec)}
		}
		return Record{}, fmt.Errorf("get command %s: %w", id, err)
	}
	return decodeRecord(it)
}

// authorize: reads and controls are restricted to the owning session. A
// human of the session or an admin may send user controls; system
// controls come only from the system (restart recovery). An agent
// principal never controls an execution (routing an agent's request
// through the API does not grant human privileges); the one exception is
// End, which an agent sends for the executions of its own session.
func authorize(e actionflow.Execution, by actionflow.Principal, c Control, reading bool) error {
	switch by.Role {
	case "admin", "system":
	case "human":
		if by.Session != e.SessionID {
			return &actionflow.NotFoundError{What: "execution " + string(e.ExecutionID)} // another session's: not visible
		}
	case "agent":
		if by.Session != e.SessionID {
			return &actionflow.NotFoundError{What: "execution " + string(e.ExecutionID)}
		}
		if reading || c == End {
			return nil // an agent ends its own session's executions, nothing more
		}
		return &actionflow.ForbiddenError{Msg: "execution controls are sent by a human owner, not by an agent (an agent may only end its execution)"}
	default:
		return &actionflow.ForbiddenError{Msg: "unknown principal role " + by.Role}
	}
	if c.system() && by.Role != "system" {
		return &actionflow.ForbiddenError{Msg: string(c) + " is a system command"}
	}
	return nil
}

// View is an execution as the API shows it: its state and the controls it
// advertises now.
type View struct {
	Execution actionflow.Execution `json:"execution"`
	Controls  []Control            `json:"controls"`
}

// Get reads an execution and its advertised controls.
func (s *Service) Get(ctx context.Context, exec ids.ExecutionID, by actionflow.Principal) (View, error) {
	e, err := s.flow.GetExecution(ctx, exec)
	if err != nil {
		return View{}, err
	}
	if err := authorize(e, by, "", true); err != nil {
		return View{}, err
	}
	return View{Execution: e, Controls: Controls(e)}, nil
}

// Command reads one command record.
func (s *Service) Command(ctx context.Context, exec ids.ExecutionID, id ids.CommandID, by actionflow.Principal) (Record, error) {
	e, err := s.flow.GetExecution(ctx, exec)
	if err != nil {
		return Record{}, err
	}
	if err := authorize(e, by, "", true); err != nil {
		return Record{}, err
	}
	return s.getRecord(ctx, exec, id)
}

// Commands lists an execution's commands (all statuses), by command id.
func (s *Service) Commands(ctx context.Context, exec ids.ExecutionID, by actionflow.Principal) ([]Record, error) {
	e, err := s.flow.GetExecution(ctx, exec)
	if err != nil {
		return nil, err
	}
	if err := authorize(e, by, "", true); err != nil {
		return nil, err
	}
	var out []Record
	err = store.Each(ctx, s.st, store.ExecPK(string(exec)), store.QueryOptions{SKPrefix: cmdSKPrefix}, func(it store.Item) error {
		r, err := decodeRecord(it)
		out = append(out, r)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list commands of %s: %w", exec, err)
	}
	return out, nil
}

// Submit saves a command ("accepted") and, when it can take the
// execution's lease, applies it at once as the owner ("applied" or
// "rejected" with the reason). When another attempt owns the execution the
// record comes back accepted; that owner, or the recovery sweeper once the
// lease lapses, applies it.
//
// Errors: *actionflow.ValidationError (shape), *actionflow.NotFoundError
// (no such execution, or not visible to by), *actionflow.ForbiddenError,
// *StaleVersionError (nothing saved), *UnsupportedError (nothing saved),
// *actionflow.ConflictError code "command_id_reused" (the id was used for a
// different command; Current is the stored record). Repeating a command
// (same id and body) returns its record as it is now.
func (s *Service) Submit(ctx context.Context, exec ids.ExecutionID, cmd Command, by actionflow.Principal) (Record, error) {
	rec, err := s.accept(ctx, exec, cmd, by, nil)
	if err != nil || rec.Status != StatusAccepted {
		return rec, err
	}
	// Apply as the owner. When another activation holds the lease it may
	// have listed the pending commands before this one was saved, so the
	// lease is tried again for a short while (an activation of the command
	// service or of recovery is brief); after that the record stays
	// accepted and the owner, or the sweeper, applies it.
	wait := time.Millisecond
	deadline := time.Now().Add(ownedWait)
	for {
		if _, err := s.ApplyPending(ctx, exec); err != nil {
			if !lostOwnership(err) {
				return rec, err
			}
			// Another attempt took the execution over meanwhile; it applies
			// the saved command.
			s.log.Info("command accepted; the new owner applies it", "execution_id", exec, "command_id", cmd.ID, "error", err)
		}
		got, err := s.getRecord(ctx, exec, cmd.ID)
		if err != nil || got.Status != StatusAccepted || !time.Now().Before(deadline) {
			return got, err
		}
		select {
		case <-ctx.Done():
			return got, nil
		case <-time.After(wait):
		}
		if wait < 32*time.Millisecond {
			wait *= 2
		}
	}
}

// ownedWait is how long Submit keeps trying to apply a command saved
// while another activation held the execution's lease.
const ownedWait = 500 * time.Millisecond

func lostOwnership(err error) bool {
	return errors.As(err, new(*store.LeaseLostError)) || errors.As(err, new(*store.FenceError)) || errors.Is(err, ErrOwned)
}

// accept saves a command; cascade is set on a Cancel an ancestor's
// cancellation sends (descendants.go).
func (s *Service) accept(ctx context.Context, exec ids.ExecutionID, cmd Command, by actionflow.Principal, cascade *CascadeRef) (Record, error) {
	if err := validate(exec, cmd); err != nil {
		return Record{}, err
	}
	e, err := s.flow.GetExecution(ctx, exec)
	if err != nil {
		return Record{}, err
	}
	if err := authorize(e, by, cmd.Type, false); err != nil {
		return Record{}, err
	}
	digest := bodyDigest(cmd)
	same := func(r Record) (Record, error) {
		if r.BodyDigest == digest {
			return r, nil
		}
		return r, &actionflow.ConflictError{Code: "command_id_reused",
			Msg: "command id " + string(cmd.ID) + " was already used for a different command", Current: r}
	}
	// A repeat is recognised before the version check: the execution has
	// usually moved on because of this very command.
	if r, err := s.getRecord(ctx, exec, cmd.ID); err == nil {
		return same(r)
	} else if !errors.As(err, new(*actionflow.NotFoundError)) {
		return Record{}, err
	}
	rec := Record{ExecutionID: exec, CommandID: cmd.ID, Type: cmd.Type, ExpectedVersion: cmd.ExpectedVersion,
		Payload: cmd.Payload, BodyDigest: digest, Status: StatusAccepted, Principal: by, AcceptedAt: s.flow.Now(), Version: 1, Cascade: cascade}
	// A Cancel is never refused because another command moved the
	// version (cancellation takes precedence): it is saved against the
	// version it finds, re-read after each lost race. Every other command
	// is saved only against the version its sender saw.
	for race := 0; ; race++ {
		guard := cmd.ExpectedVersion
		if cmd.Type == Cancel {
			guard = e.Version
			if !cancelInEffect(e) {
				if err := Check(e, cmd.Type); err != nil {
					return Record{}, err
				}
			}
		} else {
			if e.Version != cmd.ExpectedVersion {
				return Record{}, &StaleVersionError{ExecutionID: exec, Expected: cmd.ExpectedVersion, Actual: e.Version}
			}
			if err := Check(e, cmd.Type); err != nil {
				return Record{}, err
			}
			if err := s.checkSavedPoint(ctx, e, cmd); err != nil {
				return Record{}, err
			}
		}
		// The command, the guard on the execution's version and its
		// command.accepted event are one transaction: the accepted command
		// is an entry of the session's decision log (who, from which
		// origin) or is not accepted. The command part comes first, so a
		// repeat reports its stored record even when META has moved on.
		ev, data := eventOf(e, "command.accepted", rec)
		_, err = s.flow.TransactWithEvent(ctx, []store.Write{store.PutOnceWrite(commandItem(rec)), store.CheckOf(metaKey(exec), guard)}, ev, data)
		var ce *store.ConflictError
		var vc *store.VersionConflictError
		switch {
		case errors.As(err, &ce):
			stored, derr := decodeRecord(ce.Existing)
			if derr != nil {
				return Record{}, derr
			}
			return same(stored)
		case errors.As(err, &vc) && cmd.Type == Cancel && race < maxCancelRaces:
			if e, err = s.flow.GetExecution(ctx, exec); err != nil {
				return Record{}, err
			}
			continue
		case errors.As(err, &vc):
			return Record{}, &StaleVersionError{ExecutionID: exec, Expected: cmd.ExpectedVersion, Actual: vc.Actual}
		case err != nil:
			return Record{}, fmt.Errorf("save command %s: %w", cmd.ID, err)
		}
		return rec, nil
	}
}

// maxCancelRaces bounds how often a Cancel re-reads an execution that
// other writers keep moving while it is being saved or applied. Every
// other command moves the version at most once per application, so a
// Cancel needs as many retries as commands can be applied in between;
// the bound only stops a livelock.
const maxCancelRaces = 64

// cancelInEffect: a cancellation was already applied (the execution is
// cancelling or cancelled). Another Cancel then applies as "already
// applied" instead of being refused.
func cancelInEffect(e actionflow.Execution) bool {
	return e.Status == actionflow.ExecCancelling || e.Status == actionflow.ExecCancelled
}

// checkSavedPoint refuses a Fork/Retry from a saved point the execution
// does not have (above its current checkpoint, or not kept) before
// anything is saved: a *actionflow.SavedPointError.
func (s *Service) checkSavedPoint(ctx context.Context, e actionflow.Execution, cmd Command) error {
	if cmd.Type != Fork && cmd.Type != Retry {
		return nil
	}
	p := decodeAs[ForkPayload](cmd.Payload)
	if p.CheckpointVersion == nil || *p.CheckpointVersion == 0 {
		return nil
	}
	_, err := s.flow.SavedPointState(ctx, e.ExecutionID, *p.CheckpointVersion)
	return err
}

func (s *Service) event(ctx context.Context, e actionflow.Execution, typ string, r Record) {
	ev, data := eventOf(e, typ, r)
	if _, err := s.flow.AppendEvent(ctx, ev, data); err != nil {
		s.log.Warn("command event not appended", "execution_id", e.ExecutionID, "command_id", r.CommandID, "type", typ, "error", err)
	}
}

// eventOf is the event of a command's step (accepted, applied, rejected):
// what was commanded, by whom and from which origin, and the execution's
// state it met.
func eventOf(e actionflow.Execution, typ string, r Record) (actionflow.Event, map[string]any) {
	data := map[string]any{"command_id": r.CommandID, "type": r.Type, "status": r.Status, "execution_status": e.Status,
		"execution_version": e.Version, "by": r.Principal}
	if r.Reason != "" {
		data["reason"] = r.Reason
	}
	if r.Child != "" {
		data["child_execution_id"] = r.Child
	}
	if r.Type.system() {
		data["restart"] = decodeAs[RestartPayload](r.Payload).Intent
	}
	return actionflow.Event{Type: typ, SessionID: e.SessionID, ExecutionID: e.ExecutionID}, data
}

// pending lists an execution's accepted commands in application order:
// cancellations first (cancellation takes precedence), then by acceptance.
func (s *Service) pending(ctx context.Context, exec ids.ExecutionID) ([]Record, error) {
	var out []Record
	after := ""
	for {
		page, err := s.st.QueryIndex(ctx, store.IndexOpen, openCommands, store.QueryOptions{SKPrefix: string(exec) + "#", After: after, Limit: store.MaxLimit})
		if err != nil {
			return nil, fmt.Errorf("list pending commands of %s: %w", exec, err)
		}
		for _, it := range page.Items {
			r, err := decodeRecord(it)
			if err != nil {
				return nil, err
			}
			if r.Status == StatusAccepted { // the index is eventually consistent in DynamoDB
				out = append(out, r)
			}
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	sort.SliceStable(out, func(i, j int) bool {
		ci, cj := out[i].Type == Cancel, out[j].Type == Cancel
		if ci != cj {
			return ci
		}
		return false // the index order (acceptance time, id) otherwise
	})
	return out, nil
}

// PendingExecutions lists executions with accepted, unapplied commands
// (for the sweeper: an applier that crashed, or a lease that was held).
func (s *Service) PendingExecutions(ctx context.Context) ([]ids.ExecutionID, error) {
	seen := map[ids.ExecutionID]bool{}
	var out []ids.ExecutionID
	after := ""
	for {
		page, err := s.st.QueryIndex(ctx, store.IndexOpen, openCommands, store.QueryOptions{After: after, Limit: store.MaxLimit})
		if err != nil {
			return nil, fmt.Errorf("list pending commands: %w", err)
		}
		for _, it := range page.Items {
			r, err := decodeRecord(it)
			if err != nil {
				return nil, err
			}
			if r.Status == StatusAccepted && !seen[r.ExecutionID] {
				seen[r.ExecutionID] = true
				out = append(out, r.ExecutionID)
			}
		}
		if page.Next == "" {
			return out, nil
		}
		after = page.Next
	}
}
