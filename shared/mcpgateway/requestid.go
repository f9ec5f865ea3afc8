package mcpgateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// requestIDHeader carries the JSON-RPC id of the tools/call a POST holds,
// from markRequests to the tool handler. The SDK does not hand a request's
// id to its handler, but it does hand it the POST's headers; a value the
// client sent under this name is always removed first.
const requestIDHeader = "X-Lifecycle-Mcp-Request-Id"

// maxBody bounds what markRequests reads (the SDK's own default).
const maxBody = mcp.DefaultMaxRequestBodyBytes

// markRequests copies the JSON-RPC id of a POSTed tools/call (or
// tasks/* request) into requestIDHeader. A batch holding more than one
// such request is refused: their handlers could not tell their ids apart,
// and without its id a retry could run a tool twice (batches are gone from
// the protocol since 2025-06-18).
func markRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(requestIDHeader)
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		r.Body.Close()
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		idsOf := callIDs(body)
		switch len(idsOf) {
		case 0:
		case 1:
			r.Header.Set(requestIDHeader, string(idsOf[0]))
		default:
			http.Error(w, "send one tools/call per request: a batch of several cannot be told apart on retry", http.StatusBadRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// callIDs returns the raw ids of the tools/call requests in a JSON-RPC
// message or batch (malformed input: none; the SDK answers it).
func callIDs(body []byte) []json.RawMessage {
	type msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	var msgs []msg
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if json.Unmarshal(trimmed, &msgs) != nil {
			return nil
		}
	} else {
		var m msg
		if json.Unmarshal(trimmed, &m) != nil {
			return nil
		}
		msgs = []msg{m}
	}
	var out []json.RawMessage
	for _, m := range msgs {
		if m.Method == "tools/call" && len(m.ID) > 0 && string(m.ID) != "null" {
			out = append(out, m.ID)
		}
	}
	return out
}
