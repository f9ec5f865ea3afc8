package actionflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/openprogram/lifecycle/shared/identity"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/store"
)

// Config wires a Service. Store is required; the rest are required by the
// steps that use them (a step without its dependency returns an error
// naming it, so a half-wired function fails loudly on first use).
type Config struct {
	Store     store.Store
	Decider   Decider
	Router    Router
	Executors map[string]Executor
	Starter   Starter
	Tasks     TaskCompleter
	Publisher Publisher
	Blobs     Blobs
	Contracts identity.Contracts
	Clock     Clock
	Logger    *slog.Logger
	Metrics   Metrics
	// LeaseTTL bounds an attempt's ownership of a dispatch (default 15 minutes).
	LeaseTTL time.Duration
	// ApprovalTimeout is how long an approval wait lasts; it must equal the
	// AwaitApproval state's TimeoutSeconds (default 24h).
	ApprovalTimeout time.Duration
	// InlineOutputBytes bounds output kept on the receipt; more goes to Blobs (default 8 KiB).
	InlineOutputBytes int
	// Workspace is the directory host tools run in, when this process can
	// see it (the embedded stack): prepare resolves path arguments against
	// it (.., symbolic links) and refuses those outside it. Empty (Lambda:
	// the workspace is on the agent's machine): only a relative path that
	// climbs out with ".." is refused at prepare; the host tool checks the
	// rest when it runs.
	Workspace string
	// Process is this process's activation when host workers run inside it
	// (the embedded stack): their claims carry it (HostStartLocal), so the
	// next process can close a claim its predecessor's worker never
	// finished (CloseAbandonedHost). Empty in Lambda.
	Process ids.AttemptID
	// Defaults, if set, gives the session policy's iteration limit and idle
	// timeout of executions that start without their own (nil: none, off).
	Defaults SessionDefaults
	// Notify, if set, hears every event appended to a session log, after it
	// is durable (in-process wake-ups for live streams; not a delivery path).
	Notify func(Event)
	// RunWork, if set, closes what an ending execution left open beyond
	// its actions (model requests: package modelreq); see CloseUnstarted.
	RunWork RunCloser
	// Revisions, if set, decides the revision each action's state machine
	// starts on (revisions.go) and starts it there instead of Starter.
	Revisions Revisions
	// RevisionPolicy is the policy of executions started from now on
	// (KeepOriginal when empty).
	RevisionPolicy string
}

// Service is the action lifecycle: one flow, one step per method, each step
// idempotent and safe to run twice with the same input (Step Functions and
// Lambda deliver at least once).
type Service struct {
	cfg Config
	log *slog.Logger
}

// New builds a Service.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("actionflow: Config.Store is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.RevisionPolicy == "" {
		cfg.RevisionPolicy = KeepOriginal
	}
	if !ValidRevisionPolicy(cfg.RevisionPolicy) {
		return nil, fmt.Errorf("actionflow: revision policy %q is not %s or %s", cfg.RevisionPolicy, KeepOriginal, UseLatest)
	}
	if cfg.Contracts == nil {
		cfg.Contracts = identity.Builtin
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NopMetrics{}
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 15 * time.Minute
	}
	if cfg.ApprovalTimeout <= 0 {
		cfg.ApprovalTimeout = 24 * time.Hour
	}
	if cfg.InlineOutputBytes <= 0 {
		cfg.InlineOutputBytes = 8 << 10
	}
	return &Service{cfg: cfg, log: cfg.Logger}, nil
}

// Store returns the service's store.
func (s *Service) Store() store.Store { return s.cfg.Store }

func (s *Service) now() time.Time { return s.cfg.Clock().UTC() }

func (s *Service) logFor(a *Action) *slog.Logger {
	return s.log.With("action_id", a.ActionID, "execution_id", a.ExecutionID, "session_id", a.SessionID)
}

// StepInput is what every Task state passes to its handler: identities only.
// Handlers read everything else from the store, so a replayed input can
// never carry stale state.
type StepInput struct {
	ActionID    ids.ActionID    `json:"action_id"`
	ExecutionID ids.ExecutionID `json:"execution_id"`
	// Mode selects the variant of a step (authorize: initial|revalidate;
	// approval: await|expire; dispatch: sync|publish).
	Mode      string `json:"mode,omitempty"`
	TaskToken string `json:"task_token,omitempty"`
	// Result is the dispatch output, for record.
	Result *ToolResult `json:"result,omitempty"`
	// Error is a failure caught by a Catch (ResultPath $.error).
	Error *CaughtError `json:"error,omitempty"`
}

// CaughtError is the {Error, Cause} object Step Functions passes to a Catch.
type CaughtError struct {
	Error string `json:"Error"`
	Cause string `json:"Cause"`
}

// Event is one entry of a session's event log and one projection event.
type Event struct {
	Seq         int64           `json:"seq,omitempty"`
	Type        string          `json:"type"`
	SessionID   ids.SessionID   `json:"session_id"`
	ExecutionID ids.ExecutionID `json:"execution_id,omitempty"`
	ActionID    ids.ActionID    `json:"action_id,omitempty"`
	At          time.Time       `json:"at"`
	Data        json.RawMessage `json:"data,omitempty"`
}

func (s *Service) appendEvent(ctx context.Context, ev Event, data any) (Event, error) {
	ev, w := s.eventWrite(ev, data)
	seq, err := s.cfg.Store.Append(ctx, w.Append.Stream, w.Append.Body)
	if err != nil {
		return ev, fmt.Errorf("append %s event: %w", ev.Type, err)
	}
	return s.logged(ev, seq), nil
}

// eventWrite stamps ev and returns it with the append of it to its
// session's log, to write alone or as part of a transaction.
func (s *Service) eventWrite(ev Event, data any) (Event, store.Write) {
	ev.At = s.now()
	if data != nil {
		ev.Data = encode(data)
	}
	return ev, store.AppendOf(SessionStream(ev.SessionID), encode(ev))
}

// logged completes an event whose append is durable: its sequence number,
// and the in-process notification.
func (s *Service) logged(ev Event, seq int64) Event {
	ev.Seq = seq
	if s.cfg.Notify != nil {
		s.cfg.Notify(ev)
	}
	return ev
}

// ReadEvents returns a session's events after a position.
func (s *Service) ReadEvents(ctx context.Context, session ids.SessionID, after int64, limit int) ([]Event, error) {
	entries, err := s.cfg.Store.ReadLog(ctx, SessionStream(session), after, limit)
	if err != nil {
		return nil, fmt.Errorf("read events of %s: %w", session, err)
	}
	out := make([]Event, 0, len(entries))
	for _, e := range entries {
		var ev Event
		if err := json.Unmarshal(e.Body, &ev); err != nil {
			return nil, fmt.Errorf("decode event %d of %s: %w", e.Seq, session, err)
		}
		ev.Seq = e.Seq
		out = append(out, ev)
	}
	return out, nil
}

// --- typed access to the table ---

func (s *Service) getAction(ctx context.Context, id ids.ActionID) (Action, error) {
	it, err := s.cfg.Store.Get(ctx, actionKey(id))
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return Action{}, &NotFoundError{What: "action " + string(id)}
		}
		return Action{}, fmt.Errorf("get action %s: %w", id, err)
	}
	return decodeAction(it)
}

// GetAction reads an action.
func (s *Service) GetAction(ctx context.Context, id ids.ActionID) (Action, error) {
	return s.getAction(ctx, id)
}

func (s *Service) actionItem(a Action) store.Item {
	it := store.Item{
		PK: actionKey(a.ActionID).PK, SK: actionKey(a.ActionID).SK,
		Version: a.Version, Fence: a.Fence,
		GSI1PK: sessionPK(a.SessionID), GSI1SK: "ACTION#" + string(a.ActionID),
		Body: actionBody(a),
	}
	switch {
	case !a.States.Terminal():
		it.GSI2PK, it.GSI2SK = openActionsIndex, a.CreatedAt.UTC().Format(time.RFC3339Nano)+"#"+string(a.ActionID)
	case a.States.Outcome == lifecycle.OutcomeUnknown:
		it.GSI2PK, it.GSI2SK = reconcilePrefix+string(a.ExecutionID), a.CreatedAt.UTC().Format(time.RFC3339Nano)+"#"+string(a.ActionID)
	}
	return it
}

// saveAction writes a with compare-and-swap on its version (fence > 0 for
// owner writes) and bumps a.Version.
func (s *Service) saveAction(ctx context.Context, a *Action, fence int64) error {
	w, undo := s.actionWrite(a, fence)
	if err := s.cfg.Store.CompareAndSwap(ctx, w.CAS.Item, w.CAS.Expected, w.CAS.Fence); err != nil {
		undo()
		return fmt.Errorf("save action %s: %w", a.ActionID, err)
	}
	return nil
}

// actionWrite moves a to its next version (an owner write when fence > 0)
// and returns the compare-and-swap that stores it, and undo, which puts a
// back as it was when that write is not made.
func (s *Service) actionWrite(a *Action, fence int64) (store.Write, func()) {
	expected, prevFence, prevAt := a.Version, a.Fence, a.UpdatedAt
	a.Version++
	a.UpdatedAt = s.now()
	if fence > 0 {
		a.Fence = fence
	}
	return store.CASOf(s.actionItem(*a), expected, fence), func() { a.Version, a.Fence, a.UpdatedAt = expected, prevFence, prevAt }
}

// updateAction re-reads and applies mutate until the CAS wins (bounded).
// mutate returning errStop ends without writing.
func (s *Service) updateAction(ctx context.Context, id ids.ActionID, fence int64, mutate func(a *Action) error) (Action, error) {
	return s.updateLoaded(ctx, id, nil, fence, mutate)
}

// updateLoaded is updateAction starting from an action the caller already
// read (saving a read); a lost race re-reads it from the store.
func (s *Service) updateLoaded(ctx context.Context, id ids.ActionID, loaded *Action, fence int64, mutate func(a *Action) error) (Action, error) {
	a, _, _, err := s.updateWithEvent(ctx, id, loaded, fence, mutate, nil)
	return a, err
}

var errStop = errors.New("nothing to write")

// updateWithEvent is updateLoaded whose write also appends the event that
// event(a) describes (from the action as it will be saved), in one
// transaction: the change and its event are durable together or not at
// all, so a crash between them cannot lose the event. With a nil event it
// is a single compare-and-swap. When mutate stops (errStop) nothing is
// written and changed is false.
func (s *Service) updateWithEvent(ctx context.Context, id ids.ActionID, loaded *Action, fence int64,
	mutate func(a *Action) error, event func(a *Action) (Event, any)) (saved Action, ev Event, changed bool, err error) {
	for i := 0; ; i++ {
		var a Action
		if i == 0 && loaded != nil {
			a = *loaded
		} else if a, err = s.getAction(ctx, id); err != nil {
			return a, ev, false, err
		}
		if err := mutate(&a); err != nil {
			if errors.Is(err, errStop) {
				return a, ev, false, nil
			}
			return a, ev, false, err
		}
		if event == nil {
			err = s.saveAction(ctx, &a, fence)
		} else {
			cas, undo := s.actionWrite(&a, fence)
			e, data := event(&a)
			var w store.Write
			e, w = s.eventWrite(e, data)
			var seqs []int64
			if seqs, err = s.cfg.Store.Transact(ctx, []store.Write{cas, w}); err != nil {
				undo()
				err = fmt.Errorf("save action %s with its %s event: %w", a.ActionID, e.Type, err)
			} else {
				ev = s.logged(e, seqs[1])
			}
		}
		var vc *store.VersionConflictError
		if errors.As(err, &vc) && i < 8 {
			continue
		}
		return a, ev, err == nil, err
	}
}

func (s *Service) getReceipt(ctx context.Context, id ids.ActionID) (Receipt, error) {
	it, err := s.cfg.Store.Get(ctx, receiptKey(id))
	if err != nil {
		return Receipt{}, err
	}
	return decode[Receipt](it, "receipt")
}

// GetReceipt reads an action's receipt (store.ErrNotFound when none yet).
func (s *Service) GetReceipt(ctx context.Context, id ids.ActionID) (Receipt, error) {
	return s.getReceipt(ctx, id)
}

func (s *Service) getApproval(ctx context.Context, action ids.ActionID) (Approval, error) {
	it, err := s.cfg.Store.Get(ctx, approvalKey(action))
	if err != nil {
		return Approval{}, err
	}
	ap, err := decode[Approval](it, "approval")
	ap.Version = it.Version
	return ap, err
}

func (s *Service) approvalItem(ap Approval) store.Item {
	k := approvalKey(ap.ActionID)
	it := store.Item{PK: k.PK, SK: k.SK, Version: ap.Version,
		GSI1PK: sessionPK(ap.SessionID), GSI1SK: "APPROVAL#" + string(ap.ApprovalID),
		Body: encode(ap)}
	if ap.Status == ApprovalPending {
		it.GSI2PK, it.GSI2SK = pendingApprovalsPK+string(ap.SessionID), string(ap.ApprovalID)
	}
	return it
}

// AppendEvent appends a canonical event to its session's log and publishes
// it (best effort: the durable log is authoritative, subscribers re-read
// it). Control commands and restart decisions are recorded through it.
func (s *Service) AppendEvent(ctx context.Context, ev Event, data any) (Event, error) {
	ev, err := s.appendEvent(ctx, ev, data)
	if err != nil {
		return ev, err
	}
	if s.cfg.Publisher != nil {
		if perr := s.cfg.Publisher.Publish(ctx, ev); perr != nil {
			s.log.Warn("event not published; it is in the durable log", "type", ev.Type, "seq", ev.Seq, "error", perr)
		}
	}
	return ev, nil
}

// TransactWithEvent applies writes and the append of ev (with data) to its
// session's log as one store transaction, then publishes ev like
// AppendEvent. A state change and the event announcing it are never
// separated: both are written, or neither (a failed condition is the
// store's *TransactError naming the part).
func (s *Service) TransactWithEvent(ctx context.Context, writes []store.Write, ev Event, data any) (Event, error) {
	ev, w := s.eventWrite(ev, data)
	seqs, err := s.cfg.Store.Transact(ctx, append(append([]store.Write(nil), writes...), w))
	if err != nil {
		return ev, fmt.Errorf("write with its %s event: %w", ev.Type, err)
	}
	ev = s.logged(ev, seqs[len(seqs)-1])
	if s.cfg.Publisher != nil {
		if perr := s.cfg.Publisher.Publish(ctx, ev); perr != nil {
			s.log.Warn("event not published; it is in the durable log", "type", ev.Type, "seq", ev.Seq, "error", perr)
		}
	}
	return ev, nil
}

// Now is the service's clock (UTC).
func (s *Service) Now() time.Time { return s.now() }
