package mcpdownstream_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/mcpdownstream"
)

// TestStreamableHTTPServer: a URL server over the real Streamable HTTP
// transport, on loopback: the configured headers reach it; a request cut
// off after it was sent is unknown; a server gone before the call is
// not reachable (not_started).
func TestStreamableHTTPServer(t *testing.T) {
	d := newDownstream(t)
	var cutOff atomic.Int32
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return d.srv }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer downstream-key" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"cut-me-off"`)) {
				// The request arrived; the connection dies before any answer.
				cutOff.Add(1)
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()

	start := func(headers map[string]string) (*mcpdownstream.Pool, mcpdownstream.Status) {
		cfg := mcpdownstream.Config{Servers: map[string]mcpdownstream.ServerConfig{"web": {URL: srv.URL + "/mcp", Headers: headers}}}
		p, st := mcpdownstream.Start(context.Background(), cfg, mcpdownstream.Options{Logger: quiet()})
		t.Cleanup(func() { p.Close() })
		return p, st[0]
	}

	if _, st := start(map[string]string{"Authorization": "Bearer wrong"}); st.Err == nil || st.Transport != "http" ||
		!strings.Contains(st.Err.Error(), "401") && !strings.Contains(strings.ToLower(st.Err.Error()), "unauthorized") {
		t.Fatalf("wrong credentials: %+v", st)
	}

	p, st := start(map[string]string{"Authorization": "Bearer downstream-key"})
	if st.Err != nil || st.Tools != 5 {
		t.Fatalf("start: %+v", st)
	}
	res, err := call(t, p, "mcp__web__echo", `{"text":"over http"}`)
	if err != nil || res.Outcome != lifecycle.OutcomeSucceeded || res.Output != "echo: over http" {
		t.Fatalf("echo: %+v %v", res, err)
	}
	res, err = call(t, p, "mcp__web__echo", `{"text":"cut-me-off"}`)
	if err == nil || !strings.Contains(err.Error(), "may have run") {
		t.Fatalf("a request cut off after it was sent: %+v %v, want an error (outcome unknown)", res, err)
	}
	if n := cutOff.Load(); n != 1 {
		t.Fatalf("the cut-off request reached the server %d times; it must never be sent again", n)
	}
	t.Logf("cut off: %v", err)

	srv.Close()
	err = p.Ready(context.Background(), "mcp__web__echo")
	var nr *mcpdownstream.NotReachableError
	if !errors.As(err, &nr) || nr.Server != "web" {
		t.Fatalf("Ready with the server gone: %v", err)
	}
}
