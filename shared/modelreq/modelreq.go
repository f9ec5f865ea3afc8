package modelreq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/store"
)

// Status of a model request.
type Status string

const (
	Open       Status = "open"
	Completed  Status = "completed"
	Failed     Status = "failed"
	Cancelled  Status = "cancelled"
	Incomplete Status = "incomplete"
)

// Terminal reports whether st is a completion status.
func (st Status) Terminal() bool {
	return st == Completed || st == Failed || st == Cancelled || st == Incomplete
}

// Purposes: who dispatched the request.
const (
	// PurposeAgent: the agent's own model call, reported through the API.
	// It lives in the agent's process, not in this service's.
	PurposeAgent = "agent"
	// PurposeReviewer: the automatic reviewer's model call (Bedrock), made
	// inside this service's process.
	PurposeReviewer = "reviewer"
)

// Error codes of completions the service writes itself.
const (
	// CodeNoTerminalEvent: the request was closed incomplete because no
	// terminal event came (its execution ended or was cancelled first, or
	// the process that made it was lost).
	CodeNoTerminalEvent = "no_terminal_event"
	// CodeProviderError: the reviewer's provider call returned an error.
	CodeProviderError = "provider_error"
	// CodeCancelled: the reviewer's caller was cancelled.
	CodeCancelled = "cancelled"
)

// Usage is the token usage the provider reported.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// Record is one model request's accounting record.
type Record struct {
	RequestID   string          `json:"request_id"`
	SessionID   ids.SessionID   `json:"session_id,omitempty"`
	ExecutionID ids.ExecutionID `json:"execution_id,omitempty"`
	// ActionID is the action a reviewer request reviewed.
	ActionID  ids.ActionID `json:"action_id,omitempty"`
	Provider  string       `json:"provider"`
	Model     string       `json:"model"`
	Purpose   string       `json:"purpose"`
	Status    Status       `json:"status"`
	Usage     Usage        `json:"usage"`
	ErrorCode string       `json:"error_code,omitempty"`
	Message   string       `json:"message,omitempty"`
	StartedAt time.Time    `json:"started_at"`
	// CompletedAt is set once, with the completion.
	CompletedAt *time.Time `json:"completed_at,omitempty"`
	Version     int64      `json:"-"`
}

// Completion is how a request ended.
type Completion struct {
	Status    Status `json:"status"`
	Usage     Usage  `json:"usage"`
	ErrorCode string `json:"error_code,omitempty"`
	Message   string `json:"message,omitempty"`
}

// completion is the completion r stores.
func (r Record) completion() Completion {
	return Completion{Status: r.Status, Usage: r.Usage, ErrorCode: r.ErrorCode, Message: r.Message}
}

// key addresses a record. A request of an execution lives in the
// execution's partition (request ids are the agent's, unique within its
// execution; another execution's request of the same id is another
// record, never found through this one); a request outside any execution
// (the reviewer's) has its own partition.
func key(exec ids.ExecutionID, id string) store.Key {
	if exec != "" {
		return store.Key{PK: store.ExecPK(string(exec)), SK: skPrefix + id}
	}
	return store.Key{PK: skPrefix + id, SK: "META"}
}

const (
	skPrefix = "MODELREQ#"
	// openIndex lists requests still open (for Sweep).
	openIndex = "OPEN#MODELREQ"
)

// Ledger records model requests in the store. With Flow set, every
// started and completed record is written in one transaction with its
// model_request.started / model_request.completed event in the session's
// log (so each request has exactly one of each, even under repeats and
// races); without it (or without a session) only the record is written.
type Ledger struct {
	Store store.Store
	Flow  *actionflow.Service
	Clock func() time.Time
}

// ForFlow is the ledger of a lifecycle service: its store, its clock and
// its session event logs.
func ForFlow(flow *actionflow.Service) *Ledger {
	return &Ledger{Store: flow.Store(), Flow: flow, Clock: flow.Now}
}

var _ actionflow.RunCloser = (*Ledger)(nil)

func (l *Ledger) now() time.Time {
	if l.Clock != nil {
		return l.Clock().UTC()
	}
	return time.Now().UTC()
}

func item(r Record) store.Item {
	k := key(r.ExecutionID, r.RequestID)
	it := store.Item{PK: k.PK, SK: k.SK, Version: r.Version}
	it.Body, _ = json.Marshal(r)
	if r.SessionID != "" {
		it.GSI1PK, it.GSI1SK = store.SessionPK(string(r.SessionID)), skPrefix+r.StartedAt.Format(time.RFC3339Nano)+"#"+r.RequestID
	}
	if r.Status == Open {
		it.GSI2PK, it.GSI2SK = openIndex, r.StartedAt.Format(time.RFC3339Nano)+"#"+r.RequestID
	}
	return it
}

func decodeRecord(it store.Item) (Record, error) {
	var r Record
	if err := json.Unmarshal(it.Body, &r); err != nil {
		return r, fmt.Errorf("decode model request %s: %w", it.Key(), err)
	}
	r.Version = it.Version
	return r, nil
}

// write applies w with r's event (typ) in one transaction when the ledger
// has a flow and r a session; otherwise w alone.
func (l *Ledger) write(ctx context.Context, w store.Write, r Record, typ string) error {
	if l.Flow == nil || r.SessionID == "" {
		if w.PutOnce != nil {
			return l.Store.PutOnce(ctx, *w.PutOnce)
		}
		return l.Store.CompareAndSwap(ctx, w.CAS.Item, w.CAS.Expected, w.CAS.Fence)
	}
	_, err := l.Flow.TransactWithEvent(ctx, []store.Write{w},
		actionflow.Event{Type: typ, SessionID: r.SessionID, ExecutionID: r.ExecutionID, ActionID: r.ActionID}, r)
	return err
}

// Start writes the started record once (with its model_request.started
// event). A second Start of the same id is an error wrapping the store's
// *store.ConflictError (request ids are unique; reuse would hide a
// duplicate dispatch).
func (l *Ledger) Start(ctx context.Context, r Record) (Record, error) {
	if r.RequestID == "" {
		r.RequestID = ids.New("req")
	}
	r.Status, r.StartedAt, r.Version = Open, l.now(), 1
	r.CompletedAt, r.ErrorCode, r.Message, r.Usage = nil, "", "", Usage{}
	if err := l.write(ctx, store.PutOnceWrite(item(r)), r, "model_request.started"); err != nil {
		return r, fmt.Errorf("start model request %s: %w", r.RequestID, err)
	}
	return r, nil
}

// Complete closes an open request outside any execution (the reviewer's)
// exactly once and returns the stored record; completing an already closed
// request returns the first completion unchanged.
func (l *Ledger) Complete(ctx context.Context, requestID string, st Status, cause error) (Record, error) {
	c := Completion{Status: st}
	if cause != nil {
		c.Message = cause.Error()
	}
	switch st {
	case Failed:
		c.ErrorCode = CodeProviderError
	case Cancelled:
		c.ErrorCode = CodeCancelled
	case Incomplete:
		c.ErrorCode = CodeNoTerminalEvent
	}
	r, _, err := l.finish(ctx, "", requestID, c)
	return r, err
}

// finish moves an open request to c (compare-and-swap from open, with its
// model_request.completed event) and returns the stored record; closed
// reports that the record was already terminal (then it is returned
// unchanged, whatever c says).
func (l *Ledger) finish(ctx context.Context, exec ids.ExecutionID, requestID string, c Completion) (r Record, closed bool, err error) {
	if !c.Status.Terminal() {
		return Record{}, false, fmt.Errorf("complete model request %s with status %q", requestID, c.Status)
	}
	for i := 0; i < 8; i++ {
		r, err := l.get(ctx, exec, requestID)
		if err != nil {
			return Record{}, false, fmt.Errorf("complete model request %s: %w", requestID, err)
		}
		if r.Status != Open {
			return r, true, nil
		}
		now := l.now()
		r.Status, r.Usage, r.ErrorCode, r.Message, r.CompletedAt = c.Status, c.Usage, c.ErrorCode, c.Message, &now
		expected := r.Version
		r.Version++
		err = l.write(ctx, store.CASOf(item(r), expected, 0), r, "model_request.completed")
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return r, false, fmt.Errorf("complete model request %s: %w", requestID, err)
		}
		return r, false, nil
	}
	return Record{}, false, fmt.Errorf("complete model request %s: too many concurrent completions", requestID)
}

func (l *Ledger) get(ctx context.Context, exec ids.ExecutionID, requestID string) (Record, error) {
	it, err := l.Store.Get(ctx, key(exec, requestID))
	if err != nil {
		return Record{}, err
	}
	return decodeRecord(it)
}

// Get reads a request outside any execution (the reviewer's).
func (l *Ledger) Get(ctx context.Context, requestID string) (Record, error) {
	return l.get(ctx, "", requestID)
}

// StatusOf classifies a call's error: nil -> completed; a cancelled or
// expired caller context -> cancelled; io.ErrUnexpectedEOF / io.EOF ->
// incomplete; anything else -> failed.
func StatusOf(ctx context.Context, err error) Status {
	switch {
	case err == nil:
		return Completed
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		return Cancelled
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return Incomplete
	}
	return Failed
}

// Do accounts one request around call: started before, completed after,
// with the status StatusOf(call's error). call's error is returned
// unchanged (never retried, never masked). A call that reports a
// successful transport but no terminal event must return io.ErrUnexpectedEOF.
func (l *Ledger) Do(ctx context.Context, r Record, call func(ctx context.Context) error) (Record, error) {
	r, err := l.Start(ctx, r)
	if err != nil {
		return r, err
	}
	callErr := call(ctx)
	done, cerr := l.Complete(context.WithoutCancel(ctx), r.RequestID, StatusOf(ctx, callErr), callErr)
	if callErr != nil {
		return done, callErr
	}
	return done, cerr
}

// Sweep closes, as incomplete (no_terminal_event), the open requests
// nobody will complete: those this service's own processes made and lost
// (open ones started before cutoff whose purpose is not the agent's), and
// the agent's requests of an execution that has ended (the end's closing
// was interrupted by a crash). An agent's request of a running or paused
// execution is left open whatever its age: it lives in the agent's
// process, which a crash of this service does not end, and its
// execution's end closes it (CloseExecution). It returns how many it
// closed.
func (l *Ledger) Sweep(ctx context.Context, cutoff time.Time) (int, error) {
	n, after := 0, ""
	for {
		page, err := l.Store.QueryIndex(ctx, store.IndexOpen, openIndex, store.QueryOptions{After: after, Limit: store.MaxLimit})
		if err != nil {
			return n, fmt.Errorf("list open model requests: %w", err)
		}
		for _, it := range page.Items {
			r, err := decodeRecord(it)
			if err != nil {
				return n, err
			}
			msg := "no terminal event: the process that made the request was lost"
			switch {
			case r.Status != Open:
				continue
			case r.Purpose == PurposeAgent:
				if ended, err := l.executionEnded(ctx, r.ExecutionID); err != nil {
					return n, err
				} else if !ended {
					continue
				}
				msg = "no terminal event: the execution ended before the request's completion was reported"
			case !r.StartedAt.Before(cutoff):
				continue
			}
			_, closed, err := l.finish(ctx, r.ExecutionID, r.RequestID, Completion{Status: Incomplete, ErrorCode: CodeNoTerminalEvent, Message: msg})
			if err != nil {
				return n, err
			}
			if !closed {
				n++
			}
		}
		if page.Next == "" {
			return n, nil
		}
		after = page.Next
	}
}

// executionEnded reports whether an agent request's execution takes no
// more requests (ended, cancelling or cancelled). Without a flow nothing
// is known, so nothing is closed.
func (l *Ledger) executionEnded(ctx context.Context, exec ids.ExecutionID) (bool, error) {
	if l.Flow == nil || exec == "" {
		return false, nil
	}
	e, err := l.Flow.GetExecution(ctx, exec)
	var nf *actionflow.NotFoundError
	if errors.As(err, &nf) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the execution of a model request: %w", err)
	}
	return !admits(e), nil
}

// CloseExecution closes, as incomplete (no_terminal_event), every request
// of exec still open: its execution ended (reason "execution_ended") or
// was cancelled ("execution_cancelled") before the completion was
// reported. actionflow.CloseUnstarted calls it on every end of an
// execution. It never replays anything and never authorizes a retry: it
// only writes the missing completion. Idempotent.
func (l *Ledger) CloseExecution(ctx context.Context, exec ids.ExecutionID, reason string) error {
	rs, err := l.ListExecution(ctx, exec)
	if err != nil {
		return err
	}
	msg := "no terminal event: the execution ended before the request's completion was reported"
	if reason == "execution_cancelled" {
		msg = "no terminal event: the execution was cancelled before the request's completion was reported"
	}
	for _, r := range rs {
		if r.Status != Open {
			continue
		}
		if _, _, err := l.finish(ctx, exec, r.RequestID, Completion{Status: Incomplete, ErrorCode: CodeNoTerminalEvent, Message: msg}); err != nil {
			return err
		}
	}
	return nil
}

// ListExecution lists the requests of an execution, oldest first (a
// strongly consistent read of the execution's partition).
func (l *Ledger) ListExecution(ctx context.Context, exec ids.ExecutionID) ([]Record, error) {
	out := []Record{}
	err := store.Each(ctx, l.Store, store.ExecPK(string(exec)), store.QueryOptions{SKPrefix: skPrefix}, func(it store.Item) error {
		r, err := decodeRecord(it)
		out = append(out, r)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list model requests of %s: %w", exec, err)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].StartedAt.Equal(out[j].StartedAt) {
			return out[i].StartedAt.Before(out[j].StartedAt)
		}
		return out[i].RequestID < out[j].RequestID
	})
	return out, nil
}

// ListSession lists the requests of a session (the agent's and the
// reviewer's), oldest first, through the session index.
func (l *Ledger) ListSession(ctx context.Context, session ids.SessionID) ([]Record, error) {
	out := []Record{}
	err := store.EachInIndex(ctx, l.Store, store.IndexSession, store.SessionPK(string(session)), store.QueryOptions{SKPrefix: skPrefix}, func(it store.Item) error {
		r, err := decodeRecord(it)
		out = append(out, r)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list model requests of %s: %w", session, err)
	}
	return out, nil
}

// RunActivity implements recovery.RunActivity: the latest start or
// completion of the execution's model requests, and whether one is still
// open (the agent is waiting for its model, not gone).
func (l *Ledger) RunActivity(ctx context.Context, exec ids.ExecutionID) (last time.Time, open bool, err error) {
	rs, err := l.ListExecution(ctx, exec)
	if err != nil {
		return time.Time{}, false, err
	}
	for _, r := range rs {
		if r.Status == Open {
			open = true
		}
		if r.StartedAt.After(last) {
			last = r.StartedAt
		}
		if r.CompletedAt != nil && r.CompletedAt.After(last) {
			last = *r.CompletedAt
		}
	}
	return last, open, nil
}
