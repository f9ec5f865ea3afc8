package main

// End-to-end harness: `lifecycle serve` in process (real SQLite store,
// embedded engine, permission engine, host worker running real bash in a
// temporary workspace), driven over its HTTP API only. Tests of any
// permission class use it:
//
//	s := startServeStack(t)
//	s.setPolicy(t, `{"version":"v1","allow":["Bash(ls *)"],"deny":["Bash(touch *)"]}`)
//	v := bashAction(t, s, s.session, "ls &>/dev/null touch m")
//	s.exists(t, "m") // what the host's bash did in s.workspace

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// serveStack is a running `lifecycle serve` of a test.
type serveStack struct {
	base      string // http://127.0.0.1:port
	stateDir  string
	workspace string
	// session is the session serve printed its human token for.
	session ids.SessionID
	human   string
	issuer  *auth.Issuer
	client  *http.Client
	calls   atomic.Int64 // tool call and idempotency key counter
}

// startServeStack starts `lifecycle serve` on a free loopback port with a fresh
// state directory and workspace; it is stopped (orderly) at the end of the
// test. opts adjust serve's options (e.g. --mcp-servers).
func startServeStack(t *testing.T, opts ...func(*serveOptions)) *serveStack {
	t.Helper()
	return startServeStackIn(t, t.TempDir(), opts...)
}

// startServeStackIn is startServeStack with the state directory and the
// workspace under dir.
func startServeStackIn(t *testing.T, dir string, opts ...func(*serveOptions)) *serveStack {
	t.Helper()
	s := &serveStack{stateDir: filepath.Join(dir, "state"), workspace: filepath.Join(dir, "ws"), session: "ses_e2e",
		client: &http.Client{Timeout: 60 * time.Second}}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	o := serveOptions{addr: "127.0.0.1:0", stateDir: s.stateDir, workspace: s.workspace, session: string(s.session),
		restartWindow: "-1", logLevel: "error", sweep: time.Minute}
	for _, f := range opts {
		f(&o)
	}
	s.stateDir, s.workspace = o.stateDir, o.workspace
	go func() {
		done <- serve(ctx, o, pw)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	api := regexp.MustCompile(`API\s+(http://\S+)/v1`)
	human := regexp.MustCompile(`Human token\s+(\S+)`)
	sc := bufio.NewScanner(pr)
	for sc.Scan() && (s.base == "" || s.human == "") {
		if m := api.FindStringSubmatch(sc.Text()); m != nil {
			s.base = m[1]
		}
		if m := human.FindStringSubmatch(sc.Text()); m != nil {
			s.human = m[1]
		}
	}
	if s.base == "" || s.human == "" {
		t.Fatal("serve did not print its API address and human token")
	}
	go io.Copy(io.Discard, pr)
	keys, err := auth.LoadOrCreateKeys(s.stateDir)
	if err != nil {
		t.Fatal(err)
	}
	if s.issuer, err = auth.NewIssuer(keys); err != nil {
		t.Fatal(err)
	}
	return s
}

// agent is an agent token of the session.
func (s *serveStack) agent(t testing.TB, session ids.SessionID) string {
	t.Helper()
	tok, err := s.issuer.Issue(auth.RoleAgent, session, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// do sends one API request and decodes a JSON answer into out (if not nil).
// It returns an error instead of failing, so goroutines may call it.
func (s *serveStack) do(method, path, token string, body, out any, hdr map[string]string) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decode %s: %w", method, path, raw, err)
		}
	}
	return resp.StatusCode, nil
}

// setPolicy replaces the policy of the stack's session (as its human).
func (s *serveStack) setPolicy(t testing.TB, policy string) {
	t.Helper()
	var cur struct {
		Version int64 `json:"version"`
	}
	if _, err := s.do("GET", "/v1/sessions/"+string(s.session)+"/policy", s.human, nil, &cur, nil); err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"expected_version": cur.Version, "policy": json.RawMessage(policy)}
	if _, err := s.do("PUT", "/v1/sessions/"+string(s.session)+"/policy", s.human, body, nil, nil); err != nil {
		t.Fatalf("set policy %s: %v", policy, err)
	}
}

// submit submits one tool call as the session's agent (interactive: an
// ask waits for a human) and returns its action id.
func (s *serveStack) submit(session ids.SessionID, token, tool string, args any) (ids.ActionID, error) {
	n := s.calls.Add(1)
	var v httpapi.ActionView
	_, err := s.do("POST", "/v1/sessions/"+string(session)+"/actions", token,
		map[string]any{"tool": tool, "tool_call_id": fmt.Sprintf("call_%d", n), "interactive": true, "arguments": args},
		&v, map[string]string{"Idempotency-Key": fmt.Sprintf("key_%d", n)})
	return v.ActionID, err
}

// settled waits (long-polling GET /v1/actions/{id}) until the action is
// projected or parked on an ask, for at most within.
func (s *serveStack) settled(token string, id ids.ActionID, within time.Duration) (httpapi.ActionView, error) {
	return s.waitAction(token, id, within, "settled", func(v httpapi.ActionView) bool {
		return v.States.Delivery == lifecycle.DeliveryProjected || (v.States.Permission == lifecycle.PermissionAsk && v.Approval != nil)
	})
}

// projected waits until the action's outcome is projected (an ask whose
// approval was cancelled is settled before its action is closed).
func (s *serveStack) projected(token string, id ids.ActionID, within time.Duration) (httpapi.ActionView, error) {
	return s.waitAction(token, id, within, "projected", func(v httpapi.ActionView) bool {
		return v.States.Delivery == lifecycle.DeliveryProjected
	})
}

// waitAction long-polls the action until done says so, for at most within.
func (s *serveStack) waitAction(token string, id ids.ActionID, within time.Duration, what string, done func(httpapi.ActionView) bool) (httpapi.ActionView, error) {
	deadline := time.Now().Add(within)
	for {
		var v httpapi.ActionView
		if _, err := s.do("GET", "/v1/actions/"+string(id)+"?wait=5", token, nil, &v, nil); err != nil {
			return v, err
		}
		if done(v) {
			return v, nil
		}
		if time.Now().After(deadline) {
			return v, fmt.Errorf("action %s not %s after %s: %+v", id, what, within, v.States)
		}
	}
}

// bashAction submits a Bash command as the agent of session and waits for
// it to settle (the permission decided and, unless it is an ask waiting for
// a human, the outcome); it returns the whole action (decision, start
// evidence, receipt).
func bashAction(t testing.TB, s *serveStack, session ids.SessionID, command string) httpapi.ActionView {
	t.Helper()
	tok := s.agent(t, session)
	id, err := s.submit(session, tok, "Bash", map[string]any{"command": command})
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.settled(tok, id, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// path is a path in the workspace.
func (s *serveStack) path(name string) string { return filepath.Join(s.workspace, name) }

// exists reports whether the workspace holds name (a marker a command made).
func (s *serveStack) exists(t testing.TB, name string) bool {
	t.Helper()
	_, err := os.Stat(s.path(name))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}
