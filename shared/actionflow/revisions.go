package actionflow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store"
)

// Revision policies of an execution (specification 003, "Function versions
// and durable continuation"): which revision the state machine of each of
// its later actions starts on.
const (
	// KeepOriginal: every action starts on the execution's active revision
	// (the one it started on, or the one it last adopted under use_latest).
	KeepOriginal = "keep_original"
	// UseLatest: at the next safe boundary (a new action of the execution,
	// or the first one after Continue) the live revision is adopted when it
	// can resume the active one; when it cannot, the execution pauses.
	UseLatest = "use_latest"
)

// ValidRevisionPolicy reports whether p names a policy.
func ValidRevisionPolicy(p string) bool { return p == KeepOriginal || p == UseLatest }

// Pause reasons of a revision block (PauseOwner PauseByRevision).
const (
	// RevisionIncompatible: use_latest found a live revision that cannot
	// resume the active one (the block lists the differences).
	RevisionIncompatible = "revision_incompatible"
	// RevisionUnavailable: the revision the execution must run on is no
	// longer loadable (registry or engine); new code is never run instead.
	RevisionUnavailable = "revision_unavailable"
)

// PauseByRevision owns a pause a revision block caused. Like a user pause
// it needs an explicit Continue (never resumed automatically).
const PauseByRevision = "revision"

// ErrRevisionUnavailable: the revision asked for cannot be started (not
// in the registry, or the engine has no such version). Revisions adapters
// wrap it.
var ErrRevisionUnavailable = errors.New("revision unavailable")

// Revisions is the deployment's view of revisions (in serve: the registry
// of published state machine versions and the engine): what is live, what
// can resume what, and starting an action's machine on one revision's
// version.
type Revisions interface {
	// Live is the revision the deployment runs now (what the live alias
	// points to).
	Live(ctx context.Context) (ids.RevisionID, error)
	// CanResume says whether candidate can resume an execution whose
	// active revision is active; when not, the differences say why, one
	// per line, for people.
	CanResume(ctx context.Context, candidate, active ids.RevisionID) (ok bool, differences []string, err error)
	// StartOn starts the state machine execution named machine (the
	// action id, or the machine of a handoff; idempotent by name) on
	// rev's state machine version. An error wrapping
	// ErrRevisionUnavailable means rev is not loadable; nothing started.
	StartOn(ctx context.Context, machine string, rev ids.RevisionID, input []byte) error
	// Stop stops the state machine execution named machine (a handed-off
	// action's old machine); one that does not exist or ended is no error.
	Stop(ctx context.Context, machine, cause string) error
}

// RevisionBlock is why an execution is paused by its revision policy.
type RevisionBlock struct {
	// Reason: RevisionIncompatible or RevisionUnavailable.
	Reason string `json:"reason"`
	// Active is the execution's active revision; Candidate the live
	// revision use_latest could not adopt (incompatible), or the one that
	// could not be loaded (unavailable).
	Active    ids.RevisionID `json:"active,omitempty"`
	Candidate ids.RevisionID `json:"candidate,omitempty"`
	// Differences are the specific reasons, for people.
	Differences []string `json:"differences"`
	// Held are the actions prepared while the block stood: none started;
	// Continue (or the recovery sweeper) starts them after selecting again.
	Held []ids.ActionID `json:"held,omitempty"`
}

// maxHeld bounds RevisionBlock.Held (the sweeper starts the rest too).
const maxHeld = 64

// RevisionPolicyOf is e's policy, the configured default when unset.
func (s *Service) RevisionPolicyOf(e Execution) string {
	if e.RevisionPolicy != "" {
		return e.RevisionPolicy
	}
	return s.cfg.RevisionPolicy
}

// startOnRevision chooses the revision action a's machine starts on by
// its execution's policy and starts it there, recording the choice on the
// action (provenance of its receipt) and, when use_latest adopts the live
// revision, on the execution. It starts nothing while the execution is
// blocked by its revision policy: a's id is added to the block's held
// actions, and Continue (or the recovery sweeper) starts it after
// selecting again.
//
// An action whose revision is recorded was selected already: its machine
// may be running there, so starting again is the idempotent restart of
// that machine, never a new selection.
func (s *Service) startOnRevision(ctx context.Context, a Action, in []byte) error {
	if a.Revision != "" {
		return s.startRecorded(ctx, a, in)
	}
	for i := 0; ; i++ {
		e, err := s.GetExecution(ctx, a.ExecutionID)
		if err != nil {
			return err
		}
		if a.Closed != nil || !e.Status.Open() || e.Status == ExecCancelling {
			// It will not run: its machine only records not_started, on the
			// revision the execution already runs (no selection, no adoption).
			rev := e.ActiveRevision
			if rev == "" {
				if rev, err = s.cfg.Revisions.Live(ctx); err != nil {
					return fmt.Errorf("live revision: %w", err)
				}
			}
			return s.startRecordedOn(ctx, a, rev, in)
		}
		if e.Status == ExecPaused && e.PauseOwner == PauseByRevision {
			err = s.holdForRevision(ctx, e, a.ActionID, nil)
		} else {
			rev, block, serr := s.selectRevision(ctx, e)
			switch {
			case serr != nil:
				return serr
			case block != nil:
				err = s.holdForRevision(ctx, e, a.ActionID, block)
			case rev != e.ActiveRevision:
				if err = s.adoptRevision(ctx, e, rev, a.ActionID); err == nil {
					continue // adopted: start on it (read again)
				}
			default:
				return s.startRecordedOn(ctx, a, rev, in)
			}
		}
		var vc *store.VersionConflictError
		if errors.As(err, &vc) && i < 8 {
			continue // the execution moved: decide again
		}
		return err
	}
}

// submitRevision is the revision a new action of e will start on when
// that is fixed already at submission, or "" when the start must select
// it: the active revision of a running keep_original execution. Only
// use_latest adopts another revision, so a deployment between submission
// and start (a new live revision) does not change it, and it is exactly
// what selectRevision returns at the start; the action is submitted under
// the policy the execution has then. Under use_latest (the live revision
// may change before the start), before revisions were recorded, and for
// an execution that is not running (paused, blocked, ending) the start
// selects, as before. A revision that cannot be loaded when the machine
// starts is cleared and the action held (startRecorded), as for one the
// start selected.
func (s *Service) submitRevision(e Execution) ids.RevisionID {
	if s.cfg.Revisions == nil || e.ActiveRevision == "" || e.Status != ExecRunning || s.RevisionPolicyOf(e) != KeepOriginal {
		return ""
	}
	return e.ActiveRevision
}

// selectRevision is the revision e's next action starts on, or the block
// that keeps it from starting.
func (s *Service) selectRevision(ctx context.Context, e Execution) (ids.RevisionID, *RevisionBlock, error) {
	active := e.ActiveRevision
	live, err := s.cfg.Revisions.Live(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("live revision: %w", err)
	}
	if active == "" {
		// Started before revisions were recorded: nothing older is known
		// to keep, so the live revision becomes the active one (recorded,
		// with an event), never labelled as what it started on.
		return live, nil, nil
	}
	if s.RevisionPolicyOf(e) != UseLatest || live == active {
		return active, nil, nil
	}
	ok, diffs, err := s.cfg.Revisions.CanResume(ctx, live, active)
	if errors.Is(err, ErrRevisionUnavailable) {
		return "", &RevisionBlock{Reason: RevisionUnavailable, Active: active, Candidate: live, Differences: []string{err.Error()}}, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("can %s resume %s: %w", live, active, err)
	}
	if !ok {
		if len(diffs) == 0 {
			diffs = []string{"revision " + string(live) + " does not declare that it can resume " + string(active)}
		}
		return "", &RevisionBlock{Reason: RevisionIncompatible, Active: active, Candidate: live, Differences: diffs}, nil
	}
	return live, nil, nil
}

// startRecordedOn records rev on the action (provenance of its receipt)
// and starts its machine there. A revision the deployment cannot load
// pauses the execution (revision_unavailable) instead.
func (s *Service) startRecordedOn(ctx context.Context, a Action, rev ids.RevisionID, in []byte) error {
	if a.Revision != rev {
		var err error
		a, err = s.updateAction(ctx, a.ActionID, 0, func(x *Action) error {
			if x.Revision != "" {
				return errStop // selected by a concurrent start: that one stands
			}
			x.Revision = rev
			return nil
		})
		if err != nil {
			return fmt.Errorf("record revision of %s: %w", a.ActionID, err)
		}
	}
	return s.startRecorded(ctx, a, in)
}

// startRecorded starts a's machine on a.Revision (after stopping the
// machine a handoff moved it from, in case a crash came between the
// handoff's record and that stop). When that revision
// cannot be loaded nothing started: the recorded revision is cleared (so
// Continue selects again) and the execution pauses revision_unavailable;
// new code is never run in its place.
func (s *Service) startRecorded(ctx context.Context, a Action, in []byte) error {
	if a.Handoff != nil {
		if err := s.cfg.Revisions.Stop(ctx, a.Handoff.FromMachine, "handed off to revision "+string(a.Revision)); err != nil {
			return fmt.Errorf("stop %s before its handoff: %w", a.Handoff.FromMachine, err)
		}
	}
	err := s.cfg.Revisions.StartOn(ctx, a.MachineName(), a.Revision, in)
	if !errors.Is(err, ErrRevisionUnavailable) {
		return err
	}
	if _, uerr := s.updateAction(ctx, a.ActionID, 0, func(x *Action) error {
		if x.Revision != a.Revision || x.Start != nil || x.Closed != nil || x.Handoff != nil {
			return errStop // a handed-off machine keeps its revision: Continue selects again at its approval
		}
		x.Revision = ""
		return nil
	}); uerr != nil {
		return fmt.Errorf("clear the unavailable revision of %s: %w", a.ActionID, uerr)
	}
	for i := 0; i < 8; i++ {
		e, gerr := s.GetExecution(ctx, a.ExecutionID)
		if gerr != nil {
			return gerr
		}
		block := &RevisionBlock{Reason: RevisionUnavailable, Active: e.ActiveRevision, Candidate: a.Revision,
			Differences: []string{err.Error()}}
		herr := s.holdForRevision(ctx, e, a.ActionID, block)
		var vc *store.VersionConflictError
		if !errors.As(herr, &vc) {
			return herr
		}
	}
	return fmt.Errorf("pause %s for an unavailable revision: the execution kept moving", a.ExecutionID)
}

// holdForRevision pauses e by block (nil: it is already blocked) and adds
// the action to the held ones, with the execution.paused event. A
// cancelling or ended execution is not paused: its authorization closes
// the action, and no code of any revision runs for it.
func (s *Service) holdForRevision(ctx context.Context, e Execution, held ids.ActionID, block *RevisionBlock) error {
	if !e.Status.Open() || e.Status == ExecCancelling {
		return nil // left for the execution's end to close (CloseUnstarted)
	}
	next := e
	if block == nil {
		if e.RevisionBlock == nil {
			return nil
		}
		b := *e.RevisionBlock
		block = &b
	} else if e.RevisionBlock != nil {
		block.Held = e.RevisionBlock.Held
	}
	if slices.Contains(block.Held, held) && e.Status == ExecPaused && e.PauseOwner == PauseByRevision {
		return nil // already held
	}
	if !slices.Contains(block.Held, held) && len(block.Held) < maxHeld {
		block.Held = append(slices.Clone(block.Held), held)
	}
	next.Status, next.PauseOwner, next.PauseReason, next.StepBudget = ExecPaused, PauseByRevision, block.Reason, 0
	next.RevisionBlock = block
	next.LastActivity = s.now()
	return s.saveExecutionWithEvent(ctx, &next, e.Version, Event{Type: "execution.paused", SessionID: e.SessionID, ExecutionID: e.ExecutionID, ActionID: held},
		map[string]any{"reason": block.Reason, "revision_block": block, "execution_version": e.Version + 1})
}

// adoptRevision makes rev e's active revision (use_latest at a safe
// boundary, before the action's machine starts), with the
// execution.revision_adopted event.
func (s *Service) adoptRevision(ctx context.Context, e Execution, rev ids.RevisionID, at ids.ActionID) error {
	next := e
	next.ActiveRevision = rev
	return s.saveExecutionWithEvent(ctx, &next, e.Version, Event{Type: "execution.revision_adopted", SessionID: e.SessionID, ExecutionID: e.ExecutionID, ActionID: at},
		map[string]any{"from": e.ActiveRevision, "to": rev, "policy": s.RevisionPolicyOf(e), "execution_version": e.Version + 1})
}

// saveExecutionWithEvent writes next (compare-and-swap on expected,
// unfenced: the lifecycle's own admission write) and its event in one
// transaction.
func (s *Service) saveExecutionWithEvent(ctx context.Context, next *Execution, expected int64, ev Event, data any) error {
	prevVersion, prevAt := next.Version, next.UpdatedAt
	next.Version, next.UpdatedAt = expected+1, s.now()
	ev, w := s.eventWrite(ev, data)
	seqs, err := s.cfg.Store.Transact(ctx, []store.Write{store.CASOf(executionItem(*next), expected, 0), w})
	if err != nil {
		next.Version, next.UpdatedAt = prevVersion, prevAt
		return fmt.Errorf("save execution %s with its %s event: %w", next.ExecutionID, ev.Type, err)
	}
	ev = s.logged(ev, seqs[len(seqs)-1])
	if s.cfg.Publisher != nil {
		if perr := s.cfg.Publisher.Publish(ctx, ev); perr != nil {
			s.log.Warn("event not published", "type", ev.Type, "execution_id", ev.ExecutionID, "error", perr)
		}
	}
	return nil
}

// StartHeld starts the actions of exec a revision block held (prepared,
// no revision selected, not closed), selecting their revision now, and
// carries approved approvals held at their boundary to their machines
// (ResendDecision): what Continue does after clearing the block. The recovery sweeper starts any
// it misses (their machines do not exist). Idempotent.
func (s *Service) StartHeld(ctx context.Context, exec ids.ExecutionID) error {
	if s.cfg.Revisions == nil {
		return nil
	}
	after := ""
	for {
		page, next, err := s.OpenActions(ctx, after, store.MaxLimit)
		if err != nil {
			return err
		}
		for _, a := range page {
			if a.ExecutionID != exec || a.Start != nil || a.Closed != nil {
				continue
			}
			var err error
			switch {
			case a.Revision == "":
				err = s.start(ctx, a)
			case a.States.Permission == lifecycle.PermissionAsk:
				_, err = s.ResendDecision(ctx, a.ActionID) // an approved wait held at its boundary
			}
			if err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		after = next
	}
}

// resumeApproved carries an approved approval of a to its machine: the
// approval boundary is a safe boundary (no start evidence exists), so the
// revision is selected again there, as for a new action.
//
//   - the selected revision is the one a's machine runs (keep_original,
//     or use_latest with nothing newer): the decision completes that
//     machine's wait (SendTaskSuccess);
//   - use_latest adopted a newer compatible revision: a is handed off.
//     The handoff is recorded on the action (its new machine, its
//     revision, the old wait), the old machine is stopped before it
//     revalidates, and a machine of the adopted revision starts; its
//     approval step finds the approved approval and completes its own
//     wait at once (awaitApproval), so the rest of the action (revalidate,
//     dispatch, record) runs on the adopted revision;
//   - the execution is blocked (incompatible, unavailable): nothing is
//     sent, the approval stays approved, a is held, and Continue brings it
//     back here.
//
// sent reports whether a wait was completed or a handoff made.
func (s *Service) resumeApproved(ctx context.Context, a Action, ap Approval) (sent bool, err error) {
	success := func() error {
		return s.cfg.Tasks.SendTaskSuccess(ctx, ap.TaskToken, encode(AwaitOutput{ApprovalID: ap.ApprovalID, Status: ap.Status}))
	}
	if s.cfg.Revisions == nil || a.Revision == "" {
		return true, success()
	}
	if a.Handoff != nil && a.Handoff.FromWait == waitDigest(ap.TaskToken) {
		return false, nil // the handed-off machine's approval step takes it from here
	}
	for i := 0; ; i++ {
		e, err := s.GetExecution(ctx, a.ExecutionID)
		if err != nil {
			return false, err
		}
		if !e.Status.Open() || e.Status == ExecCancelling {
			return true, success() // its revalidation refuses it on the machine it has
		}
		if e.Status == ExecPaused && e.PauseOwner == PauseByRevision {
			err = s.holdForRevision(ctx, e, a.ActionID, nil)
		} else {
			rev, block, serr := s.selectRevision(ctx, e)
			switch {
			case serr != nil:
				return false, serr
			case block != nil:
				err = s.holdForRevision(ctx, e, a.ActionID, block)
			case rev != e.ActiveRevision:
				if err = s.adoptRevision(ctx, e, rev, a.ActionID); err == nil {
					continue
				}
			case rev == a.Revision:
				return true, success()
			default:
				return true, s.handOff(ctx, a, ap, rev)
			}
		}
		var vc *store.VersionConflictError
		if errors.As(err, &vc) && i < 8 {
			continue
		}
		return false, err
	}
}

// handOff moves a, approved and without start evidence, to a machine of
// rev: record, stop the old machine, start the new one (startRecorded).
// A crash anywhere is finished by the recovery sweeper, which starts the
// recorded machine (stopping the old one first) when it does not exist.
func (s *Service) handOff(ctx context.Context, a Action, ap Approval, rev ids.RevisionID) error {
	from, fromRev := a.MachineName(), a.Revision
	saved, _, _, err := s.updateWithEvent(ctx, a.ActionID, nil, 0, func(x *Action) error {
		if x.Start != nil || x.Closed != nil || x.Revision == rev {
			return errStop // closed by a cancellation (its wait was failed), or handed off already
		}
		n := 1
		if x.Handoff != nil {
			if i := strings.LastIndex(x.Machine, "-r"); i >= 0 {
				n, _ = strconv.Atoi(x.Machine[i+2:])
				n++
			}
		}
		x.Handoff = &Handoff{FromMachine: from, FromRevision: fromRev, FromWait: waitDigest(ap.TaskToken), ApprovalID: ap.ApprovalID, At: s.now()}
		x.Machine, x.Revision = fmt.Sprintf("%s-r%d", x.ActionID, n), rev
		return nil
	}, func(x *Action) (Event, any) {
		return Event{Type: "action.handed_off", SessionID: x.SessionID, ExecutionID: x.ExecutionID, ActionID: x.ActionID},
			map[string]any{"from_machine": from, "from_revision": fromRev, "machine": x.Machine, "revision": rev, "approval_id": ap.ApprovalID}
	})
	if err != nil {
		return fmt.Errorf("hand %s off to %s: %w", a.ActionID, rev, err)
	}
	if saved.Revision != rev || saved.Closed != nil {
		return nil // not handed off: closed meanwhile
	}
	s.logFor(&saved).Info("approved action handed off to the adopted revision", "from_machine", from, "from_revision", fromRev,
		"machine", saved.Machine, "revision", rev)
	return s.startRecorded(ctx, saved, encode(StepInput{ActionID: saved.ActionID, ExecutionID: saved.ExecutionID}))
}

// waitDigest identifies a task token without keeping it.
func waitDigest(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:12])
}

// Pinned is an open execution as the revisions listing shows it.
type Pinned struct {
	ExecutionID    ids.ExecutionID `json:"execution_id"`
	SessionID      ids.SessionID   `json:"session_id"`
	Status         ExecutionStatus `json:"status"`
	RevisionPolicy string          `json:"revision_policy"`
	ActiveRevision ids.RevisionID  `json:"active_revision,omitempty"`
	// PauseReason is set when its revision policy paused it.
	PauseReason string `json:"pause_reason,omitempty"`
}

// OpenOnRevisions groups the open executions by the revisions they are
// pinned to: their active revision (what their next action starts on),
// the one they started on, and the recorded revision of each of their
// open actions (a machine may be running there). A revision with an
// entry is in use: its state machine version must stay loadable.
func (s *Service) OpenOnRevisions(ctx context.Context) (map[ids.RevisionID][]Pinned, error) {
	out := map[ids.RevisionID][]Pinned{}
	execs := map[ids.ExecutionID]Pinned{}
	add := func(rev ids.RevisionID, p Pinned) {
		if rev == "" || p.ExecutionID == "" {
			return
		}
		for _, q := range out[rev] {
			if q.ExecutionID == p.ExecutionID {
				return
			}
		}
		out[rev] = append(out[rev], p)
	}
	after := ""
	for {
		page, next, err := s.OpenExecutions(ctx, after, store.MaxLimit)
		if err != nil {
			return nil, err
		}
		for _, e := range page {
			p := Pinned{ExecutionID: e.ExecutionID, SessionID: e.SessionID, Status: e.Status, RevisionPolicy: s.RevisionPolicyOf(e), ActiveRevision: e.ActiveRevision}
			if e.PauseOwner == PauseByRevision {
				p.PauseReason = e.PauseReason
			}
			execs[e.ExecutionID] = p
			add(e.ActiveRevision, p)
			add(e.StartedRevision, p)
		}
		if next == "" {
			break
		}
		after = next
	}
	after = ""
	for {
		page, next, err := s.OpenActions(ctx, after, store.MaxLimit)
		if err != nil {
			return nil, err
		}
		for _, a := range page {
			p, ok := execs[a.ExecutionID]
			if !ok {
				p = Pinned{ExecutionID: a.ExecutionID, SessionID: a.SessionID} // its execution ended; the machine may still run
			}
			add(a.Revision, p)
			if a.Handoff != nil && a.Start == nil {
				add(a.Handoff.FromRevision, p) // its old machine may not be stopped yet
			}
		}
		if next == "" {
			return out, nil
		}
		after = next
	}
}
