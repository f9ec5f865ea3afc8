package apiclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/activity"
	"github.com/openprogram/lifecycle/shared/audit"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
)

// Client talks to one API endpoint with one token.
type Client struct {
	// BaseURL is the API root, e.g. http://127.0.0.1:8080.
	BaseURL string
	Token   string
	// Origin, if set, is sent as X-Lifecycle-Origin (provenance only).
	Origin string
	// HTTP defaults to a client without an overall timeout (long polls and
	// streams set their own bounds through the context).
	HTTP *http.Client
}

// Error is an error response that maps to no typed lifecycle error.
type Error struct {
	Status int
	Code   string
	Msg    string
	Field  string
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Msg) }

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

func (c *Client) newRequest(ctx context.Context, method, path string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.BaseURL, "/")+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if c.Origin != "" {
		req.Header.Set("X-Lifecycle-Origin", c.Origin)
	}
	return req, nil
}

// do sends a request and decodes a 2xx JSON answer into out.
func (c *Client) do(ctx context.Context, method, path string, hdr http.Header, body, out any) (*http.Response, error) {
	req, err := c.newRequest(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	res, err := c.httpClient().Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return res, fmt.Errorf("%s %s: read response: %w", method, path, err)
	}
	if res.StatusCode >= 300 {
		return res, errorOf(res.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return res, fmt.Errorf("%s %s: decode response: %w", method, path, err)
		}
	}
	return res, nil
}

// errorOf turns an error response into the lifecycle's typed error.
func errorOf(status int, body []byte) error {
	var eb struct {
		Error struct {
			Code    string          `json:"code"`
			Message string          `json:"message"`
			Field   string          `json:"field"`
			Current json.RawMessage `json:"current"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &eb); err != nil || eb.Error.Code == "" {
		return &Error{Status: status, Code: http.StatusText(status), Msg: strings.TrimSpace(string(body))}
	}
	d := eb.Error
	switch status {
	case http.StatusBadRequest:
		if d.Field != "" {
			return &actionflow.ValidationError{Field: d.Field, Msg: d.Message}
		}
	case http.StatusForbidden:
		return &actionflow.ForbiddenError{Msg: d.Message}
	case http.StatusNotFound:
		return &actionflow.NotFoundError{What: strings.TrimSuffix(d.Message, " not found")}
	case http.StatusConflict:
		ce := &actionflow.ConflictError{Code: d.Code, Msg: d.Message}
		if len(d.Current) > 0 {
			ce.Current = d.Current
		}
		return ce
	}
	return &Error{Status: status, Code: d.Code, Msg: d.Message, Field: d.Field}
}

func esc(s string) string { return url.PathEscape(s) }

// SubmitRequest is a tool call to submit.
type SubmitRequest struct {
	SessionID      ids.SessionID
	IdempotencyKey string
	Body           httpapi.SubmitBody
}

// Submit submits a tool call; replayed is true when the key named an
// existing submission.
func (c *Client) Submit(ctx context.Context, req SubmitRequest) (v httpapi.ActionView, replayed bool, err error) {
	hdr := http.Header{}
	hdr.Set(httpapi.IdempotencyHeader, req.IdempotencyKey)
	res, err := c.do(ctx, "POST", "/v1/sessions/"+esc(string(req.SessionID))+"/actions", hdr, req.Body, &v)
	if err != nil {
		return v, false, err
	}
	return v, res.Header.Get("Idempotent-Replayed") == "true", nil
}

// Action reads an action; wait > 0 long-polls until its outcome is known.
func (c *Client) Action(ctx context.Context, id ids.ActionID, wait time.Duration) (v httpapi.ActionView, err error) {
	p := "/v1/actions/" + esc(string(id))
	if wait > 0 {
		p += "?wait=" + seconds(wait)
	}
	_, err = c.do(ctx, "GET", p, nil, nil, &v)
	return v, err
}

// Approvals lists a session's pending approvals.
func (c *Client) Approvals(ctx context.Context, session ids.SessionID) ([]httpapi.ApprovalView, error) {
	var out httpapi.ApprovalList
	_, err := c.do(ctx, "GET", "/v1/sessions/"+esc(string(session))+"/approvals", nil, nil, &out)
	return out.Approvals, err
}

// Decide approves or declines an approval; digest is the args digest the
// person saw.
func (c *Client) Decide(ctx context.Context, id ids.ApprovalID, decision, digest string) (v httpapi.ApprovalView, err error) {
	_, err = c.do(ctx, "POST", "/v1/approvals/"+esc(string(id)), nil, httpapi.DecisionBody{Decision: decision, Digest: digest}, &v)
	return v, err
}

// Reconcile sends a person's reconciliation of an action whose outcome is
// unknown. applied is false when the same reconciliation was applied
// before (the stored record is returned); a different earlier one is a
// *actionflow.ConflictError "already_reconciled" carrying it.
func (c *Client) Reconcile(ctx context.Context, id ids.ActionID, req actionflow.ReconcileRequest) (rec actionflow.Reconciliation, applied bool, err error) {
	res, err := c.do(ctx, "POST", "/v1/actions/"+esc(string(id))+"/reconciliation", nil, req, &rec)
	if err != nil {
		return rec, false, err
	}
	return rec, res.StatusCode == http.StatusCreated, nil
}

// Execution reads an execution with its advertised controls.
func (c *Client) Execution(ctx context.Context, id ids.ExecutionID) (v httpapi.ExecutionView, err error) {
	_, err = c.do(ctx, "GET", "/v1/executions/"+esc(string(id)), nil, nil, &v)
	return v, err
}

// Command sends a control command.
func (c *Client) Command(ctx context.Context, id ids.ExecutionID, body httpapi.CommandBody) (v httpapi.CommandResult, err error) {
	_, err = c.do(ctx, "POST", "/v1/executions/"+esc(string(id))+"/commands", nil, body, &v)
	return v, err
}

// End ends an execution (the End command; an agent token may send it for
// its own session's executions).
func (c *Client) End(ctx context.Context, id ids.ExecutionID, body httpapi.CommandBody) (v httpapi.CommandResult, err error) {
	_, err = c.do(ctx, "POST", "/v1/executions/"+esc(string(id))+"/end", nil, body, &v)
	return v, err
}

// Activity reads a session's Activity view.
func (c *Client) Activity(ctx context.Context, session ids.SessionID) (v activity.Activity, err error) {
	_, err = c.do(ctx, "GET", "/v1/sessions/"+esc(string(session))+"/activity", nil, nil, &v)
	return v, err
}

// Tools lists the model-facing tools of a session.
func (c *Client) Tools(ctx context.Context, session ids.SessionID) (v httpapi.ToolsResponse, err error) {
	_, err = c.do(ctx, "GET", "/v1/tools?session_id="+url.QueryEscape(string(session)), nil, nil, &v)
	return v, err
}

// Policy reads a session's policy.
func (c *Client) Policy(ctx context.Context, session ids.SessionID) (v httpapi.PolicyView, err error) {
	_, err = c.do(ctx, "GET", "/v1/sessions/"+esc(string(session))+"/policy", nil, nil, &v)
	return v, err
}

// PutPolicy replaces a session's policy at expected version.
func (c *Client) PutPolicy(ctx context.Context, session ids.SessionID, body httpapi.PolicyBody) (v httpapi.PolicyView, err error) {
	_, err = c.do(ctx, "PUT", "/v1/sessions/"+esc(string(session))+"/policy", nil, body, &v)
	return v, err
}

// Events reads one batch of a session's events after a position, waiting
// up to wait for the first one.
func (c *Client) Events(ctx context.Context, session ids.SessionID, after int64, wait time.Duration) (v httpapi.EventBatch, err error) {
	p := fmt.Sprintf("/v1/sessions/%s/events?after=%d&wait=%s", esc(string(session)), after, seconds(wait))
	_, err = c.do(ctx, "GET", p, nil, nil, &v)
	return v, err
}

// Audit reads one page of a session's decision log (its hash chain) after
// a position, at most limit entries (0: the server's default).
func (c *Client) Audit(ctx context.Context, session ids.SessionID, after int64, limit int) (v httpapi.AuditPage, err error) {
	p := fmt.Sprintf("/v1/sessions/%s/audit?after=%d", esc(string(session)), after)
	if limit > 0 {
		p += fmt.Sprintf("&limit=%d", limit)
	}
	_, err = c.do(ctx, "GET", p, nil, nil, &v)
	return v, err
}

// AuditAll reads a session's whole decision log, calling fn for each
// entry in order.
func (c *Client) AuditAll(ctx context.Context, session ids.SessionID, fn func(audit.Entry) error) error {
	for after := int64(0); ; {
		page, err := c.Audit(ctx, session, after, 1000)
		if err != nil {
			return err
		}
		if len(page.Entries) == 0 {
			return nil
		}
		for _, e := range page.Entries {
			if err := fn(e); err != nil {
				return err
			}
		}
		after = page.Next
	}
}

// Follow streams a session's events (server-sent events) from a position,
// calling fn for each, until ctx ends or fn returns an error. A dropped
// connection is resumed from the last event seen (Last-Event-ID).
func (c *Client) Follow(ctx context.Context, session ids.SessionID, after int64, fn func(actionflow.Event) error) error {
	backoff := time.Duration(0)
	for {
		err := c.followOnce(ctx, session, &after, fn)
		if ctx.Err() != nil {
			return nil
		}
		var stop *stopError
		if errors.As(err, &stop) {
			return stop.err
		}
		if permanent(err) {
			return err
		}
		backoff = min(max(backoff*2, 250*time.Millisecond), 5*time.Second)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
	}
}

// permanent: a refusal that repeating the request cannot change.
func permanent(err error) bool {
	var ve *actionflow.ValidationError
	var fe *actionflow.ForbiddenError
	var nf *actionflow.NotFoundError
	var ae *Error
	return errors.As(err, &ve) || errors.As(err, &fe) || errors.As(err, &nf) ||
		(errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500)
}

type stopError struct{ err error }

func (e *stopError) Error() string { return e.err.Error() }

func (c *Client) followOnce(ctx context.Context, session ids.SessionID, after *int64, fn func(actionflow.Event) error) error {
	req, err := c.newRequest(ctx, "GET", "/v1/sessions/"+esc(string(session))+"/events", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", strconv.FormatInt(*after, 10))
	res, err := c.httpClient().Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		return errorOf(res.StatusCode, b)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var data []byte
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(data) == 0 {
				continue
			}
			var ev actionflow.Event
			if err := json.Unmarshal(data, &ev); err != nil {
				return fmt.Errorf("decode event: %w", err)
			}
			data = data[:0]
			*after = ev.Seq
			if err := fn(ev); err != nil {
				return &stopError{err: err}
			}
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return io.ErrUnexpectedEOF
}

func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}
