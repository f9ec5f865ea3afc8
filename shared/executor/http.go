package executor

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// HTTP posts the authorized task to a webhook.
//
// Request: POST URL, JSON body {action_id, execution_id, session_id,
// tool_call_id, tool, arguments, args_digest}, headers Idempotency-Key
// (the action id), X-Lifecycle-Timestamp (unix seconds) and
// X-Lifecycle-Signature: "sha256=" + hex(HMAC-SHA256(secret, timestamp + "." + body)).
//
// Response: 2xx -> succeeded with the body as output; 4xx -> failed (a
// deterministic refusal by the tool); anything else, including timeouts and
// 5xx, -> an error (outcome unknown: the request may have had effects).
type HTTP struct {
	URL       string
	Secret    []byte
	Client    *http.Client
	MaxOutput int64 // bytes read from the response (default 1 MiB)
	Now       func() time.Time
}

var _ actionflow.Executor = (*HTTP)(nil)

// Sign computes the signature header value of a webhook body.
func Sign(secret []byte, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(timestamp))
	m.Write([]byte("."))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func (h *HTTP) Execute(ctx context.Context, t actionflow.Task) (actionflow.ToolResult, error) {
	body, err := json.Marshal(map[string]any{
		"action_id": t.ActionID, "execution_id": t.ExecutionID, "session_id": t.SessionID,
		"tool_call_id": t.ToolCallID, "tool": t.Tool, "arguments": json.RawMessage(t.Arguments), "args_digest": t.ArgsDigest,
	})
	if err != nil {
		return actionflow.ToolResult{}, fmt.Errorf("encode webhook body: %w", err)
	}
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	ts := strconv.FormatInt(now().Unix(), 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return actionflow.ToolResult{}, fmt.Errorf("webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", t.IdempotencyKey)
	req.Header.Set("X-Lifecycle-Timestamp", ts)
	req.Header.Set("X-Lifecycle-Signature", Sign(h.Secret, ts, body))
	client := h.Client
	if client == nil {
		client = &http.Client{Timeout: 60 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return actionflow.ToolResult{}, fmt.Errorf("webhook %s: %w", h.URL, err)
	}
	defer resp.Body.Close()
	limit := h.MaxOutput
	if limit <= 0 {
		limit = 1 << 20
	}
	out, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return actionflow.ToolResult{}, fmt.Errorf("webhook %s: read response: %w", h.URL, err)
	}
	truncated := int64(len(out)) > limit
	if truncated {
		out = out[:limit]
	}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return actionflow.ToolResult{Outcome: lifecycle.OutcomeSucceeded, Output: string(out), Truncated: truncated}, nil
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return actionflow.ToolResult{Outcome: lifecycle.OutcomeFailed, ErrorCode: "http_" + strconv.Itoa(resp.StatusCode),
			Error: "the webhook refused the call", Output: string(out), Truncated: truncated}, nil
	default:
		return actionflow.ToolResult{}, fmt.Errorf("webhook %s answered %d: outcome unknown", h.URL, resp.StatusCode)
	}
}
