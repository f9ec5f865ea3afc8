package modelreq

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"unicode/utf8"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/store"
)

// StartReport is an agent's report that it dispatched a model request.
type StartReport struct {
	RequestID string `json:"request_id"`
	Provider  string `json:"provider"`
	Model     string `json:"model"`
}

// Bounds of reported fields.
const (
	MaxNameLen    = 128  // provider, model
	MaxMessageLen = 4096 // a completion's message
)

var (
	// namePattern: provider and model names ("bedrock",
	// "anthropic.claude-3-5-sonnet-20241022-v2:0", "openai/gpt-4o").
	namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$`)
	// errorCodePattern: lower-case letters, digits and underscores, like
	// the End command's reason codes.
	errorCodePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
)

// Validate names the first wrong field.
func (s StartReport) Validate() error {
	if err := ids.Validate("request_id", s.RequestID); err != nil {
		return &actionflow.ValidationError{Field: "request_id", Msg: err.Error()}
	}
	for _, f := range []struct{ name, v string }{{"provider", s.Provider}, {"model", s.Model}} {
		switch {
		case f.v == "":
			return &actionflow.ValidationError{Field: f.name, Msg: f.name + " is required"}
		case len(f.v) > MaxNameLen:
			return &actionflow.ValidationError{Field: f.name, Msg: fmt.Sprintf("%s is %d bytes long, more than %d", f.name, len(f.v), MaxNameLen)}
		case !namePattern.MatchString(f.v):
			return &actionflow.ValidationError{Field: f.name, Msg: f.name + " has characters outside letters, digits and . _ : / @ + -"}
		}
	}
	return nil
}

// Validate names the first wrong field. A failed request needs an
// error_code (a failure is never reported as an answer without saying
// why); "open" is not a completion.
func (c Completion) Validate() error {
	switch {
	case c.Status == "":
		return &actionflow.ValidationError{Field: "status", Msg: "status is required: completed, failed, cancelled or incomplete"}
	case !c.Status.Terminal():
		return &actionflow.ValidationError{Field: "status", Msg: fmt.Sprintf("status %q is not one of completed, failed, cancelled, incomplete", c.Status)}
	case c.Usage.InputTokens < 0:
		return &actionflow.ValidationError{Field: "usage.input_tokens", Msg: "input_tokens must not be negative"}
	case c.Usage.OutputTokens < 0:
		return &actionflow.ValidationError{Field: "usage.output_tokens", Msg: "output_tokens must not be negative"}
	case c.Status == Failed && c.ErrorCode == "":
		return &actionflow.ValidationError{Field: "error_code", Msg: "a failed request needs an error_code (e.g. provider_error, rate_limited)"}
	case c.ErrorCode != "" && !errorCodePattern.MatchString(c.ErrorCode):
		return &actionflow.ValidationError{Field: "error_code", Msg: "error_code is 1 to 64 lower-case letters, digits and underscores, starting with a letter"}
	case len(c.Message) > MaxMessageLen:
		return &actionflow.ValidationError{Field: "message", Msg: fmt.Sprintf("message is %d bytes long, more than %d", len(c.Message), MaxMessageLen)}
	case !utf8.ValidString(c.Message):
		return &actionflow.ValidationError{Field: "message", Msg: "message is not valid UTF-8"}
	}
	return nil
}

// admits reports whether execution e still takes new model requests: it
// is running or paused (a pause holds tool calls, not the agent's model
// calls). A cancelling, cancelled, completed or failed execution does not.
func admits(e actionflow.Execution) bool {
	return e.Status == actionflow.ExecRunning || e.Status == actionflow.ExecPaused
}

func endedError(e actionflow.Execution, current any) error {
	return &actionflow.ConflictError{Code: "execution_ended", Current: current,
		Msg: fmt.Sprintf("execution %s is %s: it takes no new model requests", e.ExecutionID, e.Status)}
}

// Report records an agent's started model request on execution e, once.
// created is true when this call wrote it (with its model_request.started
// event). The same report again returns the stored record; another
// provider or model under the same request_id is a *actionflow.ConflictError
// "conflict" carrying the stored record. An execution that takes no new
// requests (ended, cancelling) is "execution_ended". A report that races
// the execution's end is closed incomplete by whichever comes second (the
// end's CloseExecution, or this call's re-read of the execution), so no
// request of an ended execution stays open.
func (l *Ledger) Report(ctx context.Context, e actionflow.Execution, s StartReport) (Record, bool, error) {
	if err := s.Validate(); err != nil {
		return Record{}, false, err
	}
	for i := 0; i < 2; i++ {
		stored, err := l.get(ctx, e.ExecutionID, s.RequestID)
		switch {
		case err == nil:
			if stored.Provider != s.Provider || stored.Model != s.Model || stored.Purpose != PurposeAgent {
				return stored, false, &actionflow.ConflictError{Code: "conflict", Current: stored,
					Msg: fmt.Sprintf("model request %s was reported with provider %q and model %q", s.RequestID, stored.Provider, stored.Model)}
			}
			return stored, false, nil
		case !errors.Is(err, store.ErrNotFound):
			return Record{}, false, fmt.Errorf("read model request %s: %w", s.RequestID, err)
		}
		if !admits(e) {
			return Record{}, false, endedError(e, nil)
		}
		r, err := l.Start(ctx, Record{RequestID: s.RequestID, SessionID: e.SessionID, ExecutionID: e.ExecutionID,
			Provider: s.Provider, Model: s.Model, Purpose: PurposeAgent})
		if errors.Is(err, store.ErrConflict) {
			continue // a racing report of the same id wrote first: compare with it
		}
		if err != nil {
			return Record{}, false, err
		}
		if l.Flow == nil {
			return r, true, nil
		}
		// The execution may have ended between the read the caller made
		// and this write, after its end listed the open requests.
		now, err := l.Flow.GetExecution(ctx, e.ExecutionID)
		if err != nil {
			return r, true, err
		}
		if !admits(now) {
			closed, _, err := l.finish(ctx, e.ExecutionID, r.RequestID, Completion{Status: Incomplete, ErrorCode: CodeNoTerminalEvent,
				Message: "no terminal event: the execution ended as the request was reported"})
			if err != nil {
				return r, true, err
			}
			return closed, true, endedError(now, closed)
		}
		return r, true, nil
	}
	return Record{}, false, fmt.Errorf("report model request %s: lost the race twice", s.RequestID)
}

// Finish records the completion of an agent's model request of execution
// e, once, with its model_request.completed event, and returns the stored
// record. The same completion again returns the stored record; a
// different one after a completion was stored (including the incomplete
// closing written when the execution ended) is a *actionflow.ConflictError
// "conflict" carrying the first. A request the execution does not have is
// a *actionflow.NotFoundError (whether another execution has one of that
// id is never said).
func (l *Ledger) Finish(ctx context.Context, e actionflow.Execution, requestID string, c Completion) (Record, error) {
	if err := ids.Validate("request_id", requestID); err != nil {
		return Record{}, &actionflow.ValidationError{Field: "request_id", Msg: err.Error()}
	}
	if err := c.Validate(); err != nil {
		return Record{}, err
	}
	r, closed, err := l.finish(ctx, e.ExecutionID, requestID, c)
	if errors.Is(err, store.ErrNotFound) {
		return Record{}, &actionflow.NotFoundError{What: "model request " + requestID + " of execution " + string(e.ExecutionID)}
	}
	if err != nil {
		return Record{}, err
	}
	if closed && r.completion() != c {
		return r, &actionflow.ConflictError{Code: "conflict", Current: r,
			Msg: fmt.Sprintf("model request %s was already completed %s", requestID, r.Status)}
	}
	return r, nil
}
