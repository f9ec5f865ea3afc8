package modelreq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

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

// Record is one model request's accounting record.
type Record struct {
	RequestID   string          `json:"request_id"`
	SessionID   ids.SessionID   `json:"session_id,omitempty"`
	ExecutionID ids.ExecutionID `json:"execution_id,omitempty"`
	Provider    string          `json:"provider"`
	Model       string          `json:"model"`
	Purpose     string          `json:"purpose"`
	Status      Status          `json:"status"`
	Error       string          `json:"error,omitempty"`
	StartedAt   time.Time       `json:"started_at"`
	CompletedAt *time.Time      `json:"completed_at,omitempty"`
	Version     int64           `json:"-"`
}

func key(id string) store.Key { return store.Key{PK: "MODELREQ#" + id, SK: "META"} }

// openIndex lists requests still open (for Sweep).
const openIndex = "OPEN#MODELREQ"

// Ledger records model requests in the store.
type Ledger struct {
	Store store.Store
	Clock func() time.Time
}

func (l *Ledger) now() time.Time {
	if l.Clock != nil {
		return l.Clock().UTC()
	}
	return time.Now().UTC()
}

func item(r Record) store.Item {
	k := key(r.RequestID)
	it := store.Item{PK: k.PK, SK: k.SK, Version: r.Version}
	it.Body, _ = json.Marshal(r)
	if r.Status == Open {
		it.GSI2PK, it.GSI2SK = openIndex, r.StartedAt.Format(time.RFC3339Nano)+"#"+r.RequestID
	}
	return it
}

// Start writes the started record once. A second Start of the same id is
// an error (request ids are unique; reuse would hide a duplicate dispatch).
func (l *Ledger) Start(ctx context.Context, r Record) (Record, error) {
	if r.RequestID == "" {
		r.RequestID = ids.New("req")
	}
	r.Status, r.StartedAt, r.Version = Open, l.now(), 1
	if err := l.Store.PutOnce(ctx, item(r)); err != nil {
		return r, fmt.Errorf("start model request %s: %w", r.RequestID, err)
	}
	return r, nil
}

// Complete closes an open request exactly once and returns the stored
// record; completing an already closed request returns the first
// completion unchanged.
func (l *Ledger) Complete(ctx context.Context, requestID string, st Status, cause error) (Record, error) {
	if st == Open {
		return Record{}, errors.New("complete with status open")
	}
	for i := 0; i < 8; i++ {
		it, err := l.Store.Get(ctx, key(requestID))
		if err != nil {
			return Record{}, fmt.Errorf("complete model request %s: %w", requestID, err)
		}
		var r Record
		if err := json.Unmarshal(it.Body, &r); err != nil {
			return Record{}, err
		}
		r.Version = it.Version
		if r.Status != Open {
			return r, nil
		}
		now := l.now()
		r.Status, r.CompletedAt = st, &now
		if cause != nil {
			r.Error = cause.Error()
		}
		expected := r.Version
		r.Version++
		err = l.Store.CompareAndSwap(ctx, item(r), expected, 0)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return r, fmt.Errorf("complete model request %s: %w", requestID, err)
		}
		return r, nil
	}
	return Record{}, fmt.Errorf("complete model request %s: too many concurrent completions", requestID)
}

// Get reads a record.
func (l *Ledger) Get(ctx context.Context, requestID string) (Record, error) {
	it, err := l.Store.Get(ctx, key(requestID))
	if err != nil {
		return Record{}, err
	}
	var r Record
	err = json.Unmarshal(it.Body, &r)
	r.Version = it.Version
	return r, err
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

// Sweep closes requests left open before cutoff (their process was lost) as
// incomplete. It returns how many it closed.
func (l *Ledger) Sweep(ctx context.Context, cutoff time.Time) (int, error) {
	page, err := l.Store.QueryIndex(ctx, store.IndexOpen, openIndex, store.QueryOptions{Limit: 1000})
	if err != nil {
		return 0, fmt.Errorf("list open model requests: %w", err)
	}
	n := 0
	for _, it := range page.Items {
		var r Record
		if err := json.Unmarshal(it.Body, &r); err != nil {
			return n, err
		}
		if r.Status != Open || !r.StartedAt.Before(cutoff) {
			continue
		}
		if _, err := l.Complete(ctx, r.RequestID, Incomplete, errors.New("no terminal event: the request was lost")); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
